//! A notes server: shared state, typed and structured tools, a resource template, a prompt,
//! and both kinds of errors.
//!
//! ```sh
//! cargo run --example shared_state                    # http://127.0.0.1:8080/mcp
//! cargo run --example shared_state -- 127.0.0.1:0     # any free port
//! ```
//!
//! - `add_note` (typed): keeps a note, answers its id;
//! - `get_note` (structured): a note as `structuredContent`; an unknown id is a tool error the
//!   model reads (`HandlerError::tool`);
//! - `list_notes` (structured): every note's id and title;
//! - `export_notes` (typed): writes the notes to a file in the temporary directory; an I/O
//!   failure goes through `?` and is an internal error (logged here, masked for the client);
//! - `notes://{id}` (a typed resource template): one note as Markdown;
//! - `summarize_notes` (a typed prompt): asks the model to summarize every note.

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcp_server::prelude::*;

/// The state every handler shares (`builder().state(..)`, `ctx.state::<Notes>()`).
#[derive(Default)]
struct Notes {
    inner: Mutex<BTreeMap<u64, Note>>,
}

impl Notes {
    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<u64, Note>) -> R) -> Result<R, HandlerError> {
        let mut notes = self
            .inner
            .lock()
            .map_err(|_| HandlerError::internal("the notes lock is poisoned"))?;
        Ok(f(&mut notes))
    }

    /// Every note as Markdown.
    fn markdown(&self) -> Result<String, HandlerError> {
        self.with(|notes| notes.values().map(Note::markdown).collect())
    }
}

#[derive(Clone, serde::Serialize, schemars::JsonSchema)]
struct Note {
    id: u64,
    title: String,
    body: String,
}

impl Note {
    fn markdown(&self) -> String {
        format!("# {}\n\n{}\n", self.title, self.body)
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NewNote {
    /// A short title.
    title: String,
    /// The text of the note.
    body: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoteId {
    /// The id `add_note` answered.
    id: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct NoteList {
    notes: Vec<NoteTitle>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct NoteTitle {
    id: u64,
    title: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Export {
    /// The file name, inside the temporary directory.
    file: String,
}

/// The variables of `notes://{id}`.
#[derive(serde::Deserialize)]
struct NoteVars {
    id: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Summary {
    /// How to summarize (default: "in three bullet points").
    style: Option<String>,
}

fn unknown(id: impl std::fmt::Display) -> HandlerError {
    HandlerError::tool(format!("there is no note {id}: list_notes names them"))
}

/// The server: what this example serves (the tests of the examples use it too).
pub(crate) fn server() -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("notes")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("Keeps notes: add_note, list_notes, get_note; read notes://{id}.")
        .state(Notes::default())
        .tool(Tool::typed(
            "add_note",
            "Keeps a note and answers its id",
            |n: NewNote, ctx| async move {
                if n.title.trim().is_empty() {
                    return Err(HandlerError::tool("a note needs a title"));
                }
                let id = ctx.state::<Notes>()?.with(|notes| {
                    let id = notes.keys().next_back().map_or(1, |last| last + 1);
                    notes.insert(
                        id,
                        Note {
                            id,
                            title: n.title,
                            body: n.body,
                        },
                    );
                    id
                })?;
                Ok(format!("note {id} saved"))
            },
        ))
        .tool(Tool::structured("get_note", "One note", |i: NoteId, ctx| async move {
            let note = ctx.state::<Notes>()?.with(|notes| notes.get(&i.id).cloned())?;
            note.ok_or_else(|| unknown(i.id))
        }))
        .tool(Tool::structured(
            "list_notes",
            "The id and title of every note",
            |_: NoParams, ctx| async move {
                let notes = ctx.state::<Notes>()?.with(|notes| {
                    notes
                        .values()
                        .map(|n| NoteTitle {
                            id: n.id,
                            title: n.title.clone(),
                        })
                        .collect()
                })?;
                Ok(NoteList { notes })
            },
        ))
        .tool(Tool::typed(
            "export_notes",
            "Writes every note to a file",
            |e: Export, ctx| async move {
                if e.file.contains(['/', '\\']) || e.file.starts_with('.') {
                    return Err(HandlerError::tool("give a plain file name"));
                }
                let text = ctx.state::<Notes>()?.markdown()?;
                let path = std::env::temp_dir().join(e.file);
                // An I/O error is internal: the client sees "Internal tool error", the log the cause.
                std::fs::write(&path, text)?;
                Ok(format!("exported to {}", path.display()))
            },
        ))
        .resource_template(
            ResourceTemplate::typed("notes://{id}", "note", |uri, v: NoteVars, ctx| async move {
                // `id` is a number (a template variable that is not one is -32602 naming it); an
                // unknown note is "resource not found" (-32002 legacy, -32602 in 2026-07-28).
                let note = ctx.state::<Notes>()?.with(|notes| notes.get(&v.id).cloned())?;
                let note = note.ok_or_else(|| HandlerError::resource_not_found(uri.as_str()))?;
                Ok(ResourceContents::text(uri.clone(), "text/markdown", note.markdown()))
            })
            .description("One note, as Markdown")
            .mime_type("text/markdown"),
        )
        .prompt(Prompt::typed(
            "summarize_notes",
            "Summarizes every note",
            |s: Summary, ctx| async move {
                let text = ctx.state::<Notes>()?.markdown()?;
                let style = s.style.unwrap_or_else(|| "in three bullet points".into());
                Ok(GetPromptResult::default()
                    .with_description("A summary of the notes")
                    .user(format!("Summarize these notes {style}:\n\n{text}")))
            },
        ))
        .build()
}

/// `list_notes` takes no arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoParams {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());

    // Until Ctrl-C or SIGTERM, then the calls in flight drain; the address is logged.
    server()?.serve_http(&addr).await?;
    Ok(())
}
