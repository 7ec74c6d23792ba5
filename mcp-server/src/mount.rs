//! Mounting another MCP server into this one (feature `mount`): its tools, prompts, resources
//! and resource templates are listed beside the local ones (tools, prompts and templates under
//! a prefix or keeping their names; resources keep their URIs), and each call or read is
//! forwarded to it through an [`mcp_client::Client`] (a child process over stdio, or a server
//! over Streamable HTTP, of either era).
//!
//! ```no_run
//! use mcp_server::prelude::*;
//! use mcp_server::mount::{Client, Mount, Restart, ServerCommand};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::builder().name("front").version("1.0.0").build()?;
//! let upstream = Client::builder()
//!     .relay()
//!     .restart(Restart::default())
//!     .stdio(ServerCommand::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]))
//!     .await?;
//! server.mount(Mount::prefixed("everything", upstream)).await?;
//! // `everything_echo` is now a tool of `server`.
//! # Ok(())
//! # }
//! ```
//!
//! What a call gets through a mount:
//!
//! - **The front's rules.** A mounted tool is a tool of the front: its authentication,
//!   scopes, visibility, rate limits, middleware, timeouts and telemetry apply as to a local
//!   one, and its arguments are checked against the upstream's input schema before they go.
//! - **Progress and cancellation.** The upstream's progress reaches the front's caller; a
//!   call the front's caller cancels (or that times out) is cancelled upstream.
//! - **Input.** What the upstream asks (elicitation, sampling, roots) is asked of the front's
//!   caller. A legacy caller is asked with a server request and the answer goes back
//!   upstream. A modern upstream's `input_required` round becomes the front's own round for a
//!   modern caller: the upstream's `requestState` travels inside the front's sealed state, so
//!   the retry continues the upstream's round.
//! - **Errors.** A JSON-RPC error of the upstream is the answer as it is; a failure to reach
//!   it is a tool error naming the mount.
//! - **Changes.** The upstream's `list_changed` (its session's notification, or a modern
//!   `subscriptions/listen`) makes the front list again and update its own catalog, which
//!   tells the front's clients.
//! - **Collisions.** A name the front already has is refused when mounting, naming both.
//!
//! - **Eras bridged.** A legacy caller through a modern upstream is asked while the call
//!   waits, and the upstream's round is retried with the answers. A modern caller through a
//!   legacy upstream gets an `input_required` round while the upstream call is parked in this
//!   instance, its server request waiting; the retry's answer goes to it (see `Parking`).
//!
//! Not yet forwarded: completions, resource subscriptions, the upstream's log messages, tasks.
//! A legacy upstream is one session for every caller of the front.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use crate::{Ctx, HandlerError, InputRequired};
pub use mcp_client::{Client, ClientBuilder, ClientError, Restart, ServerCommand};
use mcp_client::{PromptInfo, RequestOptions, ResourceInfo, TemplateInfo, ToolInfo};
use mcp_protocol::model::{CallToolResult, GetPromptResult, ReadResourceResult};
use mcp_protocol::{Era, RpcError};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::{McpServer, Prompt, Resource, ResourceTemplate, ServerError, Tool};

/// The key, inside the front's sealed round state, of the upstream's `requestState`.
const UPSTREAM_STATE: &str = "mount.upstream";

/// Another server to mount, and how its names appear in the front.
#[derive(Debug, Clone)]
pub struct Mount {
    client: Client,
    prefix: Option<String>,
    parked: Arc<Parking>,
}

impl Mount {
    /// Mounts `client`'s server with its names under `prefix` (`{prefix}_{name}`). Build the
    /// client with [`ClientBuilder::relay`], so that its server may ask what the front's
    /// callers can answer.
    pub fn prefixed(prefix: impl Into<String>, client: Client) -> Mount {
        Mount {
            client,
            prefix: Some(prefix.into()),
            parked: Arc::default(),
        }
    }

    /// Mounts `client`'s server keeping its names.
    pub fn flat(client: Client) -> Mount {
        Mount {
            client,
            prefix: None,
            parked: Arc::default(),
        }
    }

    /// The mount's name in errors and logs: its prefix, or `flat`.
    fn label(&self) -> String {
        self.prefix.clone().unwrap_or_else(|| "flat".into())
    }

    fn front_name(&self, name: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}_{name}"),
            None => name.to_owned(),
        }
    }
}

/// Why a mount failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MountError {
    /// The upstream could not be listed.
    #[error("mount {mount}: listing the upstream failed: {source}")]
    Upstream {
        /// The mount.
        mount: String,
        /// What went wrong.
        source: ClientError,
    },
    /// A name the front already has.
    #[error("mount {mount}: the front already has a {kind} named {name:?}")]
    Collision {
        /// The mount.
        mount: String,
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The name in the front.
        name: String,
    },
    /// An upstream entry the front cannot register (an invalid schema).
    #[error("mount {mount}: {source}")]
    Register {
        /// The mount.
        mount: String,
        /// What the front refused.
        source: ServerError,
    },
}

/// The names a mount registered in the front, kept to follow the upstream's changes: tools,
/// prompts and templates by their front names, resources by their URIs.
#[derive(Debug, Default)]
struct Registered {
    tools: BTreeSet<String>,
    prompts: BTreeSet<String>,
    resources: BTreeSet<String>,
    templates: BTreeSet<String>,
}

/// What the upstream lists.
struct Listed {
    tools: Vec<ToolInfo>,
    prompts: Vec<PromptInfo>,
    resources: Vec<ResourceInfo>,
    templates: Vec<TemplateInfo>,
}

impl Listed {
    /// Lists what the upstream declares it has.
    async fn of(client: &Client) -> Result<Listed, ClientError> {
        let caps = client.server_capabilities();
        let has = |k: &str| caps.get(k).is_some();
        Ok(Listed {
            tools: if has("tools") {
                client.list_tools().await?
            } else {
                Vec::new()
            },
            prompts: if has("prompts") {
                client.list_prompts().await?
            } else {
                Vec::new()
            },
            resources: if has("resources") {
                client.list_resources().await?
            } else {
                Vec::new()
            },
            templates: if has("resources") {
                client.list_resource_templates().await?
            } else {
                Vec::new()
            },
        })
    }
}

/// The front names of one kind the mount takes: the upstream's, less those the front has
/// already (from elsewhere). The first time such a name is refused (`Err` names it); later, it
/// is left out with a warning.
fn take<'a>(
    mount: &Mount,
    kind: &'static str,
    names: impl Iterator<Item = &'a String>,
    held: &BTreeSet<String>,
    taken: impl Fn(&str) -> bool,
    first: bool,
) -> Result<BTreeSet<String>, (&'static str, String)> {
    let mut out = BTreeSet::new();
    for name in names {
        if !held.contains(name) && taken(name) {
            if first {
                return Err((kind, name.clone()));
            }
            tracing::warn!(
                mount = mount.label(),
                kind,
                name,
                "a mounted entry left out: the front has one"
            );
            continue;
        }
        out.insert(name.clone());
    }
    Ok(out)
}

impl McpServer {
    /// Mounts another server (see the [`mount`](crate::mount) module): lists its tools,
    /// prompts, resources and templates, refuses any name (or URI) the front already has,
    /// registers each as the front's own, and follows the upstream's list changes from then on.
    pub async fn mount(&self, mount: Mount) -> Result<(), MountError> {
        let registered = Arc::new(Mutex::new(Registered::default()));
        sync(self, &mount, &registered, true).await?;
        tokio::spawn(follow_changes(self.clone(), mount, registered));
        Ok(())
    }
}

/// Lists the upstream and brings the front's entries of the mount up to date; `first`: any
/// collision is an error (later, a colliding new entry is left out with a warning).
async fn sync(front: &McpServer, mount: &Mount, registered: &Mutex<Registered>, first: bool) -> Result<(), MountError> {
    let listed = Listed::of(&mount.client).await.map_err(|source| MountError::Upstream {
        mount: mount.label(),
        source,
    })?;
    let mut held = registered.lock().unwrap_or_else(PoisonError::into_inner);
    let catalog = front.registry().snapshot();
    let tool_names: Vec<String> = listed.tools.iter().map(|t| mount.front_name(&t.name)).collect();
    let prompt_names: Vec<String> = listed.prompts.iter().map(|p| mount.front_name(&p.name)).collect();
    let uris: Vec<String> = listed.resources.iter().map(|r| r.uri.clone()).collect();
    let template_names: Vec<String> = listed.templates.iter().map(|t| mount.front_name(&t.name)).collect();
    let collision = |(kind, name)| MountError::Collision {
        mount: mount.label(),
        kind,
        name,
    };
    let next = Registered {
        tools: take(
            mount,
            "tool",
            tool_names.iter(),
            &held.tools,
            |n| catalog.tool(n).is_some(),
            first,
        )
        .map_err(collision)?,
        prompts: take(
            mount,
            "prompt",
            prompt_names.iter(),
            &held.prompts,
            |n| catalog.prompt(n).is_some(),
            first,
        )
        .map_err(collision)?,
        resources: take(
            mount,
            "resource",
            uris.iter(),
            &held.resources,
            |u| catalog.resource(u).is_some(),
            first,
        )
        .map_err(collision)?,
        templates: take(
            mount,
            "resource template",
            template_names.iter(),
            &held.templates,
            |n| catalog.templates().iter().any(|t| t.def.name == n),
            first,
        )
        .map_err(collision)?,
    };
    for gone in held.tools.difference(&next.tools) {
        front.remove_tool(gone);
    }
    for gone in held.prompts.difference(&next.prompts) {
        front.remove_prompt(gone);
    }
    for gone in held.resources.difference(&next.resources) {
        front.remove_resource(gone);
    }
    for gone in held.templates.difference(&next.templates) {
        front.registry().remove_template(gone);
    }
    let register = |source| MountError::Register {
        mount: mount.label(),
        source,
    };
    for tool in listed
        .tools
        .iter()
        .filter(|t| next.tools.contains(&mount.front_name(&t.name)))
    {
        front.add_tool(proxy_tool(mount, tool)).map_err(register)?;
    }
    for prompt in listed
        .prompts
        .iter()
        .filter(|p| next.prompts.contains(&mount.front_name(&p.name)))
    {
        front.add_prompt(proxy_prompt(mount, prompt)).map_err(register)?;
    }
    for resource in listed.resources.iter().filter(|r| next.resources.contains(&r.uri)) {
        front.add_resource(proxy_resource(mount, resource)).map_err(register)?;
    }
    for template in listed
        .templates
        .iter()
        .filter(|t| next.templates.contains(&mount.front_name(&t.name)))
    {
        let entry = proxy_template(mount, template)
            .into_entry()
            .map_err(|e| register(e.into()))?;
        front.registry().add_template(entry);
    }
    *held = next;
    Ok(())
}

/// Lists the upstream again whenever it says its lists changed, for as long as it is there.
async fn follow_changes(front: McpServer, mount: Mount, registered: Arc<Mutex<Registered>>) {
    let mut notes = mount.client.notifications();
    // A modern upstream tells its changes on a subscription only.
    let _subscription = match mount.client.era() {
        Era::Modern => mount
            .client
            .listen(json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}))
            .await
            .inspect_err(|e| tracing::debug!(mount = mount.label(), error = %e, "no change subscription upstream"))
            .ok(),
        Era::Legacy => None,
    };
    loop {
        let note = match notes.recv().await {
            Ok(n) => n,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                // Something may have been missed: list again.
                mcp_client::ServerNotification {
                    method: "notifications/tools/list_changed".into(),
                    params: Value::Null,
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        if matches!(
            note.method.as_str(),
            "notifications/tools/list_changed"
                | "notifications/prompts/list_changed"
                | "notifications/resources/list_changed"
        ) && let Err(e) = sync(&front, &mount, &registered, false).await
        {
            tracing::warn!(error = %e, "a mount could not follow its upstream's change");
        }
    }
}

fn proxy_tool(mount: &Mount, tool: &ToolInfo) -> Tool {
    let (m, upstream_name) = (mount.clone(), tool.name.clone());
    let mut proxy = Tool::new(
        mount.front_name(&tool.name),
        tool.description.clone().unwrap_or_default(),
        move |args: Map<String, Value>, ctx: Ctx| {
            let (m, name) = (m.clone(), upstream_name.clone());
            async move {
                let label = m.label();
                let params = json!({"name": name, "arguments": args});
                let result = forward(&m, "tools/call", params, ctx).await?;
                serde_json::from_value::<CallToolResult>(result)
                    .map_err(|e| HandlerError::tool(format!("mount {label}: {e}")))
            }
        },
    )
    .input_schema(tool.input_schema.clone())
    .validate_output(false);
    if let Some(schema) = &tool.output_schema {
        proxy = proxy.output_schema(schema.clone());
    }
    if let Some(title) = &tool.title {
        proxy = proxy.title(title.clone());
    }
    if let Some(a) = &tool.annotations {
        proxy = proxy.annotations(a.clone());
    }
    proxy
}

fn proxy_prompt(mount: &Mount, prompt: &PromptInfo) -> Prompt {
    let (m, upstream_name) = (mount.clone(), prompt.name.clone());
    let mut proxy = Prompt::new(
        mount.front_name(&prompt.name),
        prompt.description.clone().unwrap_or_default(),
        move |args: Map<String, Value>, ctx: Ctx| {
            let (m, name) = (m.clone(), upstream_name.clone());
            async move {
                let label = m.label();
                let params = json!({"name": name, "arguments": args});
                let result = forward(&m, "prompts/get", params, ctx).await?;
                serde_json::from_value::<GetPromptResult>(result)
                    .map_err(|e| HandlerError::tool(format!("mount {label}: {e}")))
            }
        },
    );
    for arg in &prompt.arguments {
        if let Some(name) = arg.get("name").and_then(Value::as_str) {
            let description = arg.get("description").and_then(Value::as_str).unwrap_or_default();
            let required = arg.get("required").and_then(Value::as_bool).unwrap_or(false);
            proxy = proxy.argument(name, description, required);
        }
    }
    if let Some(title) = &prompt.title {
        proxy = proxy.title(title.clone());
    }
    proxy
}

/// The options of a forwarded request: the upstream's progress relayed to the front's caller
/// (in order, by one task, stopped by the returned guard), and what the upstream asks answered
/// by `on_input`.
fn relayed(ctx: &Ctx, on_input: RequestOptions) -> (RequestOptions, AbortOnDrop) {
    let (progress_tx, mut progress_rx) = mpsc::unbounded_channel::<Value>();
    let to = ctx.clone();
    let relay = tokio::spawn(async move {
        while let Some(p) = progress_rx.recv().await {
            if let Some(progress) = p["progress"].as_f64() {
                to.progress(progress, p["total"].as_f64(), p["message"].as_str()).await;
            }
        }
    });
    // A modern upstream is told what the caller can answer.
    let caller = Value::Object(ctx.client_capabilities().raw().clone());
    let options = on_input.capabilities(caller).on_progress(move |p| {
        let _ = progress_tx.send(p);
    });
    (options, AbortOnDrop(relay))
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a forwarded request's upstream answered, in the front's words.
fn answered(label: &str, result: Result<Value, ClientError>) -> Result<Value, HandlerError> {
    match result {
        Ok(r) => Ok(r),
        Err(ClientError::Rpc(e)) => Err(HandlerError::Rpc(e)),
        Err(e) => Err(HandlerError::tool(format!("mount {label}: {e}"))),
    }
}

/// Reads a mounted resource (or a URI of a mounted template) upstream.
async fn read_upstream(m: Mount, uri: String, ctx: Ctx) -> Result<ReadResourceResult, HandlerError> {
    let label = m.label();
    let result = forward(&m, "resources/read", json!({"uri": uri}), ctx).await?;
    serde_json::from_value::<ReadResourceResult>(result).map_err(|e| HandlerError::tool(format!("mount {label}: {e}")))
}

fn proxy_resource(mount: &Mount, resource: &ResourceInfo) -> Resource {
    let m = mount.clone();
    let mut proxy = Resource::new(
        resource.uri.clone(),
        resource.name.clone(),
        move |uri, _vars, ctx: Ctx| read_upstream(m.clone(), uri, ctx),
    );
    if let Some(d) = &resource.description {
        proxy = proxy.description(d.clone());
    }
    if let Some(t) = &resource.mime_type {
        proxy = proxy.mime_type(t.clone());
    }
    proxy
}

fn proxy_template(mount: &Mount, template: &TemplateInfo) -> ResourceTemplate {
    let m = mount.clone();
    let mut proxy = ResourceTemplate::new(
        template.uri_template.clone(),
        mount.front_name(&template.name),
        move |uri, _vars, ctx: Ctx| read_upstream(m.clone(), uri, ctx),
    );
    if let Some(d) = &template.description {
        proxy = proxy.description(d.clone());
    }
    if let Some(t) = &template.mime_type {
        proxy = proxy.mime_type(t.clone());
    }
    proxy
}

/// Forwards one request upstream and follows it to its result, relaying what the upstream
/// asks to the front's caller and its progress back, and cancelling it upstream when the
/// front's call is cancelled.
async fn forward(mount: &Mount, method: &str, params: Value, ctx: Ctx) -> Result<Value, HandlerError> {
    if ctx.era() == Era::Modern && mount.client.era() == Era::Legacy {
        return forward_parked(mount, method, params, ctx).await;
    }
    let label = mount.label();
    let Value::Object(original) = params else {
        return Err(HandlerError::internal("forwarded params are an object"));
    };
    let mut params = original.clone();
    // A modern caller's retry continues the upstream's round.
    if let (Some(answers), Some(state)) = (ctx.input_responses(), ctx.request_state())
        && let Some(upstream_state) = state.get(UPSTREAM_STATE)
    {
        params.insert("inputResponses".into(), Value::Object(answers.clone()));
        if upstream_state.is_string() {
            params.insert("requestState".into(), upstream_state.clone());
        }
    }
    let asking = ctx.clone();
    let (options, _relay) = relayed(
        &ctx,
        RequestOptions::default().on_input(move |method, params| {
            let ctx = asking.clone();
            async move { ask(&ctx, &method, params).await }
        }),
    );
    for _ in 0..MAX_ROUNDS {
        let sent = mount
            .client
            .request_once(method, Value::Object(params), options.clone());
        let result = tokio::select! {
            r = sent => answered(&label, r)?,
            () = ctx.cancellation().cancelled() => return Err(HandlerError::tool(format!("mount {label}: cancelled"))),
        };
        if !mcp_protocol::client::is_input_required(&result) {
            return Ok(result);
        }
        let mut asked = InputRequired::new();
        for r in mcp_protocol::client::input_requests(&result) {
            asked = asked.request(r.key, r.method, r.params);
        }
        if ctx.era() == Era::Modern {
            // The caller answers, and retries: the upstream's state rides in the front's.
            let state = json!({UPSTREAM_STATE: result.get("requestState").cloned().unwrap_or(Value::Null)});
            return Err(HandlerError::InputRequired(Box::new(asked.with_state(state))));
        }
        let answers = ctx.input(asked).await?;
        params = mcp_protocol::client::retry_params(&original, answers, &result);
    }
    Err(HandlerError::tool(format!("mount {label}: too many rounds of input")))
}

/// The most rounds of input one forwarded request takes.
const MAX_ROUNDS: usize = 8;

/// Asks the front's legacy caller what the upstream asked during a call, and waits.
async fn ask(ctx: &Ctx, method: &str, params: Value) -> Result<Value, RpcError> {
    let mut answers = ctx
        .input(InputRequired::new().request("upstream", method, params))
        .await
        .map_err(|e| RpcError::internal_with(format!("the front's caller did not answer: {e}")))?;
    answers
        .remove("upstream")
        .ok_or_else(|| RpcError::internal_with("the front's caller did not answer"))
}

// ---- A modern caller through a legacy upstream ----
//
// A legacy upstream asks with server requests while its call waits; a modern caller answers
// only by retrying its call. So the upstream call is parked: it keeps running in a task of
// this instance while the caller gets an `input_required` round whose sealed state names the
// parked call; the retry's answer is handed to the waiting server request, and the call is
// followed again (to its result, or to its next question). The front's runtime seals the state
// and binds it to the caller's principal, so no other caller can reach a parked call. A call
// not taken up again within `PARK_FOR` is cancelled upstream.

/// How long a parked call waits for its caller's retry.
const PARK_FOR: std::time::Duration = std::time::Duration::from_secs(300);
/// The key, inside the front's sealed round state, of the parked call's number.
const PARKED: &str = "mount.parked";

/// A question of the upstream, waiting for the caller's answer.
struct Question {
    method: String,
    params: Value,
    reply: tokio::sync::oneshot::Sender<Result<Value, RpcError>>,
}

/// An upstream call waiting for its caller.
struct Parked {
    call: tokio::task::JoinHandle<Result<Value, ClientError>>,
    questions: mpsc::Receiver<Question>,
    waiting: Question,
    key: String,
    since: std::time::Instant,
}

/// The parked calls of one mount, by number.
#[derive(Default)]
pub(crate) struct Parking {
    calls: Mutex<std::collections::HashMap<u64, Parked>>,
    next: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Parking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.calls.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("Parking").field("calls", &n).finish()
    }
}

impl Parking {
    /// Parks a call on its question; returns its number. Calls parked too long are cancelled.
    fn park(&self, parked: Parked) -> u64 {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.retain(|_, p| {
            let fresh = p.since.elapsed() < PARK_FOR;
            if !fresh {
                p.call.abort();
            }
            fresh
        });
        calls.insert(n, parked);
        n
    }

    fn take(&self, n: u64) -> Option<Parked> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).remove(&n)
    }
}

async fn forward_parked(mount: &Mount, method: &str, params: Value, ctx: Ctx) -> Result<Value, HandlerError> {
    let label = mount.label();
    let parked = ctx.request_state().and_then(|s| s.get(PARKED)).and_then(Value::as_u64);
    let (mut call, mut questions) = match parked {
        Some(n) => {
            let Some(p) = mount.parked.take(n) else {
                return Err(HandlerError::tool(format!(
                    "mount {label}: the call waiting for this answer is gone (expired, or on another instance); call again"
                )));
            };
            let answer = ctx.input_responses().and_then(|r| r.get(&p.key)).cloned();
            match answer {
                Some(a) => {
                    let _ = p.waiting.reply.send(Ok(a));
                    (p.call, p.questions)
                }
                None => {
                    // No answer in this retry: ask again.
                    let asked =
                        InputRequired::new().request(p.key.clone(), &p.waiting.method, p.waiting.params.clone());
                    let n = mount.parked.park(Parked {
                        since: std::time::Instant::now(),
                        ..p
                    });
                    return Err(HandlerError::InputRequired(Box::new(
                        asked.with_state(json!({PARKED: n})),
                    )));
                }
            }
        }
        None => {
            let (tx, rx) = mpsc::channel::<Question>(1);
            let (options, relay) = relayed(
                &ctx,
                RequestOptions::default().on_input(move |method, params| {
                    let tx = tx.clone();
                    async move {
                        let (reply, answer) = tokio::sync::oneshot::channel();
                        let gone = || RpcError::internal_with("the front's caller did not answer");
                        tx.send(Question { method, params, reply }).await.map_err(|_| gone())?;
                        answer.await.map_err(|_| gone())?
                    }
                }),
            );
            let (client, method) = (mount.client.clone(), method.to_owned());
            let call = tokio::spawn(async move {
                let _relay = relay;
                client.request_once(&method, params, options).await
            });
            (call, rx)
        }
    };
    tokio::select! {
        done = &mut call => {
            let result = done.map_err(|e| HandlerError::tool(format!("mount {label}: {e}")))?;
            answered(&label, result)
        }
        Some(q) = questions.recv() => {
            let key = format!("upstream-{}", mount.parked.next.load(std::sync::atomic::Ordering::Relaxed));
            let asked = InputRequired::new().request(key.clone(), &q.method, q.params.clone());
            let n = mount.parked.park(Parked { call, questions, waiting: q, key, since: std::time::Instant::now() });
            Err(HandlerError::InputRequired(Box::new(asked.with_state(json!({PARKED: n})))))
        }
        () = ctx.cancellation().cancelled() => {
            call.abort();
            Err(HandlerError::tool(format!("mount {label}: cancelled")))
        }
    }
}
