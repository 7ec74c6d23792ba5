//! `notes-ours`: a notes MCP server on `mcp-server`, written the way its guides show.
//!
//! A weight fixture: the same notes server as `notes-rmcp` (on rmcp), each built with the
//! features such a user picks (Streamable HTTP without TLS, stdio), so that `cargo xtask weight`
//! compares the crates each compiles and the size of each stripped binary.
//!
//! ```text
//! NOTES_API_KEY=a-long-random-key notes-ours [ADDR]   # http://127.0.0.1:8080/mcp
//! notes-ours --stdio                                  # newline-delimited JSON-RPC on stdin/stdout
//! ```
//!
//! - `add_note {title, body}` (typed): keeps a note, answers its id as text;
//! - `list_notes` (structured): every note, as `structuredContent` with an output schema;
//! - `delete_note {id}`: asks the user to confirm (an elicitation form with a boolean) first;
//! - `export {format}`: reports progress over three steps and stops when the call is cancelled;
//! - `note://{id}` (a resource template): one note; an unknown one is "resource not found";
//! - `summarize {style?}` (a prompt): asks the model to summarize every note.
//!
//! Over HTTP the endpoint is `/mcp` inside an axum application beside `GET /health` (which reads
//! the same note store), behind a CORS layer; the MCP routes need the API key (`x-api-key:
//! <key>` or `Authorization: ApiKey <key>`). Ctrl-C shuts down gracefully.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use mcp_server::auth::{ApiKey, ApiKeyAuth};
use mcp_server::prelude::*;
use tower_http::cors::CorsLayer;

/// One note.
#[derive(Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Note {
    /// Its id, from 1.
    pub id: u64,
    /// A short title.
    pub title: String,
    /// The text of the note.
    pub body: String,
}

/// The note store, shared by the MCP handlers and the axum application.
#[derive(Clone, Default)]
pub struct Notes(Arc<RwLock<BTreeMap<u64, Note>>>);

impl Notes {
    fn read<R>(&self, f: impl FnOnce(&BTreeMap<u64, Note>) -> R) -> Result<R, HandlerError> {
        let notes = self
            .0
            .read()
            .map_err(|_| HandlerError::internal("the note store is poisoned"))?;
        Ok(f(&notes))
    }

    fn write<R>(&self, f: impl FnOnce(&mut BTreeMap<u64, Note>) -> R) -> Result<R, HandlerError> {
        let mut notes = self
            .0
            .write()
            .map_err(|_| HandlerError::internal("the note store is poisoned"))?;
        Ok(f(&mut notes))
    }

    fn len(&self) -> usize {
        self.0.read().map(|notes| notes.len()).unwrap_or_default()
    }
}

/// The input of `add_note`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NewNote {
    /// A short title.
    pub title: String,
    /// The text of the note.
    pub body: String,
}

/// The input of `delete_note`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoteId {
    /// The id `add_note` answered.
    pub id: u64,
}

/// `list_notes` takes no arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

/// The output of `list_notes`.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct NoteList {
    /// Every note, by id.
    pub notes: Vec<Note>,
}

/// The confirmation form of `delete_note`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Confirm {
    /// Really delete the note?
    pub confirm: bool,
}

/// The input of `export`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Export {
    /// The format: `markdown` or `json`.
    pub format: Format,
}

/// An export format.
#[derive(Clone, Copy, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// One Markdown section per note.
    Markdown,
    /// A JSON array of notes.
    Json,
}

/// The variables of `note://{id}`.
#[derive(serde::Deserialize)]
pub struct NoteVars {
    /// The note's id.
    pub id: String,
}

/// The arguments of the `summarize` prompt.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Summarize {
    /// How to summarize (default: "in three bullet points").
    pub style: Option<String>,
}

fn markdown(note: &Note) -> String {
    format!("# {}\n\n{}\n", note.title, note.body)
}

/// The MCP server over the given store.
pub fn server(notes: Notes) -> Result<McpServer, ServerError> {
    McpServer::builder()
        .name("notes")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("Keeps notes: add_note, list_notes, delete_note, export; read note://{id}.")
        .state(notes)
        .tool(Tool::typed(
            "add_note",
            "Keeps a note and answers its id",
            |n: NewNote, ctx| async move {
                let id = ctx.state::<Notes>()?.write(|notes| {
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
        .tool(
            Tool::structured("list_notes", "Every note", |_: NoArgs, ctx| async move {
                let notes = ctx.state::<Notes>()?.read(|notes| notes.values().cloned().collect())?;
                Ok(NoteList { notes })
            })
            .read_only(),
        )
        .tool(
            Tool::typed(
                "delete_note",
                "Deletes a note, once the user confirms",
                |d: NoteId, ctx| async move {
                    let store = ctx.state::<Notes>()?;
                    if !store.read(|notes| notes.contains_key(&d.id))? {
                        return Err(HandlerError::tool(format!("there is no note {}", d.id)));
                    }
                    match ctx.elicit::<Confirm>(format!("Delete note {}?", d.id)).await? {
                        Elicitation::Accept(Confirm { confirm: true }) => {
                            store.write(|notes| notes.remove(&d.id))?;
                            Ok(format!("note {} deleted", d.id))
                        }
                        Elicitation::Accept(_) | Elicitation::Decline | Elicitation::Cancel => {
                            Ok(format!("note {} kept", d.id))
                        }
                    }
                },
            )
            .destructive(true),
        )
        .tool(
            Tool::typed(
                "export",
                "Exports every note as Markdown or JSON",
                |e: Export, ctx| async move {
                    let notes: Vec<Note> = ctx.state::<Notes>()?.read(|notes| notes.values().cloned().collect())?;
                    let steps = ["collecting", "formatting", "writing"];
                    for (done, step) in steps.iter().enumerate() {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                            _ = ctx.cancellation().cancelled() => return Err(HandlerError::tool("export cancelled")),
                        }
                        ctx.progress((done + 1) as f64, Some(steps.len() as f64), Some(step))
                            .await;
                    }
                    Ok(match e.format {
                        Format::Markdown => notes.iter().map(markdown).collect::<String>(),
                        Format::Json => serde_json::to_string_pretty(&notes)?,
                    })
                },
            )
            .read_only(),
        )
        .resource_template(
            ResourceTemplate::typed("note://{id}", "note", |uri, v: NoteVars, ctx| async move {
                let note = match v.id.parse::<u64>() {
                    Ok(id) => ctx.state::<Notes>()?.read(|notes| notes.get(&id).cloned())?,
                    Err(_) => None,
                };
                match note {
                    Some(note) => Ok(ResourceContents::text(uri, "text/markdown", markdown(&note))),
                    None => Err(HandlerError::Rpc(RpcError::resource_not_found(ctx.era(), &uri))),
                }
            })
            .description("One note, as Markdown")
            .mime_type("text/markdown"),
        )
        .prompt(Prompt::typed(
            "summarize",
            "Summarizes every note",
            |s: Summarize, ctx| async move {
                let text: String = ctx
                    .state::<Notes>()?
                    .read(|notes| notes.values().map(markdown).collect())?;
                let style = s.style.unwrap_or_else(|| "in three bullet points".into());
                Ok(GetPromptResult::default()
                    .with_description("A summary of the notes")
                    .user(format!("Summarize these notes {style}:\n\n{text}")))
            },
        ))
        .build()
}

async fn health(State(notes): State<Notes>) -> String {
    format!("ok: {} notes", notes.len())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notes = Notes::default();
    let server = server(notes.clone())?;
    if std::env::args().any(|arg| arg == "--stdio") {
        server
            .serve_stdio_until(async { tokio::signal::ctrl_c().await.unwrap_or_default() })
            .await?;
        return Ok(());
    }
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let key = std::env::var("NOTES_API_KEY").unwrap_or_else(|_| "change-me-please".to_owned());

    let auth = ApiKeyAuth::builder().key(ApiKey::plain(key, "notes-client")).build()?;
    let (mcp, handle) = server.router(HttpConfig::default().auth(Arc::new(auth)))?.into_parts();
    let app = axum::Router::new()
        .route("/health", get(health))
        .with_state(notes)
        .merge(mcp) // the endpoint at /mcp
        .layer(CorsLayer::permissive());

    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("notes-ours on http://{}/mcp", listener.local_addr()?);
    let stop = handle.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.trigger();
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(handle.triggered())
        .await?;
    handle.shutdown().await;
    Ok(())
}
