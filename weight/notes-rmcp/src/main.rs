//! `notes-rmcp`: a notes MCP server on rmcp 3.11 (the official Rust SDK), written the way rmcp
//! documents it (`#[tool_router]`, `#[tool]`, `#[prompt_router]`, `#[prompt]`, `ServerHandler`).
//!
//! A weight fixture: the same notes server as `notes-ours` (on this library), each built with
//! the features such a user picks (Streamable HTTP without TLS, stdio), so that `cargo xtask
//! weight` compares the crates each compiles and the size of each stripped binary.
//!
//! ```text
//! NOTES_API_KEY=a-long-random-key notes-rmcp [ADDR]   # http://127.0.0.1:8080/mcp
//! notes-rmcp --stdio                                  # newline-delimited JSON-RPC on stdin/stdout
//! ```
//!
//! - `add_note {title, body}` (typed): keeps a note, answers its id as text;
//! - `list_notes` (structured, `Json`): every note, as `structuredContent` with an output schema;
//! - `delete_note {id}`: asks the user to confirm (an elicitation form with a boolean) first: a
//!   server-to-client request (`Peer::elicit`) for legacy clients, an `input_required` result
//!   and the retried call's `inputResponses` for 2026-07-28 ones (rmcp refuses the request there);
//! - `export {format}`: reports progress over three steps and stops when the call is cancelled;
//! - `note://{id}` (a resource template): one note; an unknown one is "resource not found";
//! - `summarize {style?}` (a prompt): asks the model to summarize every note.
//!
//! Over HTTP the endpoint is `/mcp` inside an axum application beside `GET /health` (which reads
//! the same note store), behind a CORS layer; the MCP routes need the API key (an axum
//! middleware: `Authorization: Bearer <key>` or `x-api-key: <key>`). Ctrl-C shuts down
//! gracefully.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::InputResponses;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, GetPromptResult, Implementation, InputRequest, InputRequests,
    InputRequiredResult, ListResourceTemplatesResult, PaginatedRequestParams, ProgressNotificationParam, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResourceTemplate, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationError, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler, ServiceExt, elicit_safe, prompt, prompt_handler, prompt_router,
    tool, tool_handler, tool_router,
};
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
    fn read<R>(&self, f: impl FnOnce(&BTreeMap<u64, Note>) -> R) -> Result<R, McpError> {
        let notes = self
            .0
            .read()
            .map_err(|_| McpError::internal_error("the note store is poisoned", None))?;
        Ok(f(&notes))
    }

    fn write<R>(&self, f: impl FnOnce(&mut BTreeMap<u64, Note>) -> R) -> Result<R, McpError> {
        let mut notes = self
            .0
            .write()
            .map_err(|_| McpError::internal_error("the note store is poisoned", None))?;
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
elicit_safe!(Confirm);

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

/// The arguments of the `summarize` prompt.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Summarize {
    /// How to summarize (default: "in three bullet points").
    pub style: Option<String>,
}

fn markdown(note: &Note) -> String {
    format!("# {}\n\n{}\n", note.title, note.body)
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn tool_error(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// The MCP server over a note store.
#[derive(Clone)]
pub struct NotesServer {
    notes: Notes,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

#[tool_router]
impl NotesServer {
    /// The server over the given store.
    pub fn new(notes: Notes) -> Self {
        Self {
            notes,
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }

    #[tool(description = "Keeps a note and answers its id")]
    async fn add_note(&self, Parameters(n): Parameters<NewNote>) -> Result<String, McpError> {
        let id = self.notes.write(|notes| {
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
    }

    #[tool(description = "Every note", annotations(read_only_hint = true))]
    async fn list_notes(&self) -> Result<Json<NoteList>, McpError> {
        let notes = self.notes.read(|notes| notes.values().cloned().collect())?;
        Ok(Json(NoteList { notes }))
    }

    #[tool(
        description = "Deletes a note, once the user confirms",
        annotations(destructive_hint = true)
    )]
    async fn delete_note(
        &self,
        Parameters(d): Parameters<NoteId>,
        InputResponses(answers): InputResponses,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !self.notes.read(|notes| notes.contains_key(&d.id))? {
            return Ok(tool_error(format!("there is no note {}", d.id)).into());
        }
        let question = format!("Delete note {}?", d.id);
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let confirmed = match answers {
            // A 2026-07-28 client retried the call with the user's answer.
            Some(answers) => {
                let answer = answers
                    .get("confirm")
                    .cloned()
                    .map(serde_json::from_value::<ElicitResult>);
                match answer {
                    Some(Ok(ElicitResult {
                        action: ElicitationAction::Accept,
                        content: Some(content),
                        ..
                    })) => serde_json::from_value::<Confirm>(content).is_ok_and(|c| c.confirm),
                    Some(Ok(_)) => false,
                    _ => return Err(McpError::invalid_params("expected the answer to `confirm`", None)),
                }
            }
            // 2026-07-28 has no server-to-client requests: ask with an `input_required` result.
            None if modern => {
                let schema = ElicitationSchema::from_type::<Confirm>()
                    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
                let ask = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: question,
                    requested_schema: schema,
                };
                let requests =
                    InputRequests::from([("confirm".to_owned(), InputRequest::Elicitation(ElicitRequest::new(ask)))]);
                return Ok(InputRequiredResult::from_input_requests(requests).into());
            }
            None => match context.peer.elicit::<Confirm>(question).await {
                Ok(answer) => answer.is_some_and(|c| c.confirm),
                Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled) => false,
                Err(e) => return Ok(tool_error(format!("could not ask the user: {e}")).into()),
            },
        };
        if !confirmed {
            return Ok(text(format!("note {} kept", d.id)).into());
        }
        self.notes.write(|notes| notes.remove(&d.id))?;
        Ok(text(format!("note {} deleted", d.id)).into())
    }

    #[tool(
        description = "Exports every note as Markdown or JSON",
        annotations(read_only_hint = true)
    )]
    async fn export(
        &self,
        Parameters(e): Parameters<Export>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let notes: Vec<Note> = self.notes.read(|notes| notes.values().cloned().collect())?;
        let progress_token = context.meta.get_progress_token();
        let steps = ["collecting", "formatting", "writing"];
        for (done, step) in steps.iter().enumerate() {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = context.ct.cancelled() => return Ok(tool_error("export cancelled")),
            }
            if let Some(token) = &progress_token {
                let progress = ProgressNotificationParam::new(token.clone(), (done + 1) as f64)
                    .with_total(steps.len() as f64)
                    .with_message(*step);
                let _ = context.peer.notify_progress(progress).await;
            }
        }
        let exported = match e.format {
            Format::Markdown => notes.iter().map(markdown).collect::<String>(),
            Format::Json => {
                serde_json::to_string_pretty(&notes).map_err(|e| McpError::internal_error(e.to_string(), None))?
            }
        };
        Ok(text(exported))
    }
}

// rmcp's `#[prompt]` generates an undocumented `pub fn summarize_prompt_attr`.
#[allow(missing_docs)]
#[prompt_router]
impl NotesServer {
    #[prompt(description = "Summarizes every note")]
    async fn summarize(&self, Parameters(s): Parameters<Summarize>) -> Result<GetPromptResult, McpError> {
        let text: String = self.notes.read(|notes| notes.values().map(markdown).collect())?;
        let style = s.style.unwrap_or_else(|| "in three bullet points".into());
        let ask = PromptMessage::new_text(Role::User, format!("Summarize these notes {style}:\n\n{text}"));
        Ok(GetPromptResult::new(vec![ask]).with_description("A summary of the notes"))
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for NotesServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("notes", env!("CARGO_PKG_VERSION")))
            .with_instructions("Keeps notes: add_note, list_notes, delete_note, export; read note://{id}.")
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = ResourceTemplate::new("note://{id}", "note")
            .with_description("One note, as Markdown")
            .with_mime_type("text/markdown");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let id = request
            .uri
            .strip_prefix("note://")
            .and_then(|id| id.parse::<u64>().ok());
        let note = match id {
            Some(id) => self.notes.read(|notes| notes.get(&id).cloned())?,
            None => None,
        };
        let Some(note) = note else {
            return Err(McpError::resource_not_found(
                format!("no note at {}", request.uri),
                None,
            ));
        };
        let contents = ResourceContents::text(markdown(&note), request.uri).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// The API key check of the MCP routes: `Authorization: Bearer <key>` or `x-api-key: <key>`.
async fn require_key(State(key): State<Arc<str>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    if bearer.or(api_key) == Some(&*key) {
        next.run(request).await
    } else {
        (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")]).into_response()
    }
}

async fn health(State(notes): State<Notes>) -> String {
    format!("ok: {} notes", notes.len())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notes = Notes::default();
    let server = NotesServer::new(notes.clone());
    if std::env::args().any(|arg| arg == "--stdio") {
        let running = server.serve(rmcp::transport::stdio()).await?;
        let stop = running.cancellation_token();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
        });
        running.waiting().await?;
        return Ok(());
    }
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:8080".to_owned());
    let key: Arc<str> = std::env::var("NOTES_API_KEY")
        .unwrap_or_else(|_| "change-me-please".to_owned())
        .into();

    let config = StreamableHttpServerConfig::default();
    let shutdown = config.cancellation_token.clone();
    let service: StreamableHttpService<NotesServer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(server.clone()), Default::default(), config);
    let mcp = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(key, require_key));
    let app = axum::Router::new()
        .route("/health", get(health))
        .with_state(notes)
        .merge(mcp)
        .layer(CorsLayer::permissive());

    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("notes-rmcp on http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            // Ends rmcp's sessions and their streams, which would otherwise keep axum waiting.
            shutdown.cancel();
        })
        .await?;
    Ok(())
}
