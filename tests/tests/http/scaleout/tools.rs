//! The tools every instance registers (the same catalog on each, as deployments build every
//! instance from the same code), and the probe through which an instance's handlers tell the
//! test what they saw.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_protocol::task_mode::TaskSupport;
use mcp_runtime::mrtr::InputRequired;
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{Ctx, HandlerError, Registry, ToolResult};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::tool;

/// What an instance's handlers saw: the events `<tool>:start:<tag>`, and the cancellation
/// token each `<tool>:<tag>` call was given (a cancelled call's handler may be dropped before it
/// gets to look at its token, so the test looks at the token itself).
#[derive(Debug, Default)]
pub(crate) struct Probe {
    events: Mutex<Vec<String>>,
    tokens: Mutex<HashMap<String, CancellationToken>>,
    gate: tokio::sync::Notify,
}

impl Probe {
    /// Lets one `gate` call (running or next) answer.
    pub(crate) fn release(&self) {
        self.gate.notify_one();
    }

    /// Whether the token of call `<tool>:<tag>` was cancelled (`false` for an unknown call).
    pub(crate) fn cancelled(&self, call: &str) -> bool {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(call)
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Records the start of call `<tool>:<tag>` and its token.
    fn start(&self, name: &str, tag: &str, ctx: &Ctx) {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(format!("{name}:{tag}"), ctx.cancellation().clone());
        self.record(format!("{name}:start:{tag}"));
    }

    fn record(&self, event: String) {
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(event);
    }

    /// Whether the event was recorded.
    pub(crate) fn saw(&self, event: &str) -> bool {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|e| e == event)
    }
}

fn tag(args: &Map<String, Value>) -> String {
    args.get("tag").and_then(Value::as_str).unwrap_or("-").to_owned()
}

fn task_tool<F, Fut>(name: &str, f: F) -> ToolEntry
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolResult> + Send + 'static,
{
    let def = ToolDef::new(name)
        .with_description(format!("The {name} tool"))
        .with_input_schema(json!({"type": "object"}))
        .with_task_support(TaskSupport::Optional);
    ToolEntry::new(def, Arc::new(f), true, true).expect("valid tool")
}

/// An elicitation request for one string field.
pub(crate) fn elicit_params(field: &str) -> Value {
    json!({"message": format!("{field}?"), "requestedSchema": {"type": "object",
        "properties": {field: {"type": "string"}}, "required": [field]}})
}

/// Waits until cancelled or 60 s.
async fn until_cancelled(name: &str, ctx: &Ctx) -> ToolResult {
    tokio::select! {
        () = ctx.cancellation().cancelled() => Ok(CallToolResult::text(format!("{name} cancelled"))),
        () = tokio::time::sleep(Duration::from_secs(60)) => Ok(CallToolResult::text(format!("{name} done"))),
    }
}

/// The catalog: the HTTP suite's tools (`support::runtime`: echo, progress, sample, slow, nap,
/// regional) and these:
///
/// - `elicit`: a legacy `elicitation/create` on the call's stream, answered `elicited: <name>`;
/// - `sign_in`: a URL-mode elicitation, answered with its `elicitationId`;
/// - `hold` (`tag`): one progress notification when asked for, then waits until cancelled;
/// - `gate` (`tag`): one progress notification, then answers `gate done` once released
///   ([`Probe::release`]);
/// - `trigger`: adds a tool `dynamic_<n>` to this instance's registry (a list change);
/// - `ask` (`who`): one MRTR round (state `{"who": …}`), answered `hello <name> (state <who>)`;
/// - task tools (task support optional): `work` (`tag`, waits until cancelled), `brief` (300 ms),
///   `asks` (after 300 ms, asks for a `name` through `ctx.input`, answered `hello <name>`).
pub(crate) fn registry(probe: &Arc<Probe>) -> Arc<Registry> {
    let (_, registry) = crate::support::engine();
    let object = json!({"type": "object"});

    registry.add_tool(tool("elicit", object.clone(), |_, ctx: Ctx| async move {
        let reply = ctx.elicit_raw(elicit_params("name")).await?;
        let name = reply.pointer("/content/name").and_then(Value::as_str).unwrap_or("?");
        Ok(CallToolResult::text(format!("elicited: {name}")))
    }));

    registry.add_tool(tool("sign_in", object.clone(), |_, ctx: Ctx| async move {
        let url = ctx.elicit_url("Sign in", "https://example.com/sign-in").await?;
        Ok(CallToolResult::text(url.elicitation_id))
    }));

    let p = probe.clone();
    registry.add_tool(tool("hold", object.clone(), move |args, ctx: Ctx| {
        let p = p.clone();
        async move {
            let tag = tag(&args);
            if ctx.progress_token().is_some() {
                ctx.progress(1.0, None, Some("holding")).await;
            }
            p.start("hold", &tag, &ctx);
            until_cancelled("hold", &ctx).await
        }
    }));

    let p = probe.clone();
    registry.add_tool(tool("gate", object.clone(), move |args, ctx: Ctx| {
        let p = p.clone();
        async move {
            let tag = tag(&args);
            ctx.progress(1.0, None, Some("waiting")).await;
            p.start("gate", &tag, &ctx);
            p.gate.notified().await;
            Ok(CallToolResult::text("gate done"))
        }
    }));

    registry.add_tool(tool("trigger", object.clone(), trigger(Arc::downgrade(&registry))));

    let who = json!({"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]});
    registry.add_tool(tool("ask", who, |args, ctx: Ctx| async move {
        let who = args.get("who").and_then(Value::as_str).unwrap_or_default().to_owned();
        let ask = InputRequired::new()
            .request("name", "elicitation/create", elicit_params("name"))
            .with_state(json!({"who": who}));
        let answers = ctx.input(ask).await?;
        let name = answers["name"]["content"]["name"].as_str().unwrap_or("?");
        let state = ctx.request_state().and_then(|s| s["who"].as_str()).unwrap_or("-");
        Ok(CallToolResult::text(format!("hello {name} (state {state})")))
    }));

    let p = probe.clone();
    registry.add_tool(task_tool("work", move |args, ctx: Ctx| {
        let p = p.clone();
        async move {
            let tag = tag(&args);
            p.start("work", &tag, &ctx);
            until_cancelled("work", &ctx).await
        }
    }));
    registry.add_tool(task_tool("brief", |_, _| async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(CallToolResult::text("brief done"))
    }));
    registry.add_tool(task_tool("asks", |_, ctx: Ctx| async move {
        if ctx.input_responses().is_none() {
            // Past the inline window: the call becomes a task first.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let got = ctx
            .input(InputRequired::new().request("name", "elicitation/create", elicit_params("name")))
            .await?;
        let name = got["name"]["content"]["name"].as_str().unwrap_or("?");
        Ok(CallToolResult::text(format!("hello {name}")))
    }));
    registry
}

/// A tool adding `dynamic_<n>` to the registry on each call: one list change per call.
fn trigger(
    registry: Weak<Registry>,
) -> impl Fn(Map<String, Value>, Ctx) -> std::future::Ready<ToolResult> + Send + Sync + 'static {
    let added = Arc::new(AtomicUsize::new(0));
    move |_, _| {
        let Some(registry) = registry.upgrade() else {
            return std::future::ready(Err(HandlerError::internal("the server is gone")));
        };
        let name = format!("dynamic_{}", added.fetch_add(1, Ordering::SeqCst));
        registry.add_tool(tool(&name, json!({"type": "object"}), noop));
        std::future::ready(Ok(CallToolResult::text(format!("added {name}"))))
    }
}

/// A tool handler that answers `ok`.
pub(crate) async fn noop(_: Map<String, Value>, _: Ctx) -> ToolResult {
    Ok(CallToolResult::text("ok"))
}
