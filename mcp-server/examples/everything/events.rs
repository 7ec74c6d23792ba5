//! `--events-fixture`: the Events extension (`io.modelcontextprotocol/events`) as the
//! conformance suite's `events-*` scenarios expect it (modelcontextprotocol/conformance,
//! `src/scenarios/server/events/`, `helpers.ts` 375f6da28cf5 for the controls, `poll.ts`
//! 5aceffa371fc and `push.ts` f9eb9a48566 for the shapes):
//!
//! - `build.finished` (poll, push and webhook): emitted on its own every two seconds, with a
//!   typed optional argument (`branch`, a string) for the invalid-arguments probe; the first
//!   type offering each mode (types are listed by name, two per page).
//! - `chat.message` (push only): the second push type, which the terminate control ends, and
//!   the type without poll (-32014 on `events/poll`).
//! - `quota.probe` (push only): at most two streams at once, reported by the quota control.
//! - The controls, ordinary tools taking `{name}`: `events_conformance_yield_error`
//!   (`notifications/events/error` on the type's streams), `events_conformance_yield_gap` (a
//!   fresh `active` with `truncated: true`), `events_conformance_terminate`
//!   (`notifications/events/terminated`, then the final result), and `events_conformance_quota`
//!   (`{}`: `{"name": "quota.probe", "max": 2}`).
//! - Webhooks (`webhook.ts` b7fcf3f0d5ff, `webhook-delivery.ts` 45e4ede806f5): the suite's
//!   unresolvable callbacks `https://conformance.invalid/…` are trusted (the design's
//!   allow-list path: no handshake), every other callback is verified;
//!   `events_conformance_allow_callback_origin {origin}` exempts one origin from the SSRF rules
//!   (the harness's loopback receiver; `--events-permit-origin` does so for every generation); `events_conformance_webhook_gap {id}` and
//!   `events_conformance_webhook_terminate {id}` send a subscription its envelopes;
//!   `events_conformance_subscription_state {id}` answers `active`, `suspended` or `absent`;
//!   `events_conformance_subscribe_as {principal, name, url}` subscribes as another principal
//!   and `events_conformance_subscription_exists {principal, name, url}` says whether its
//!   subscription exists (the `cross-tenant-isolation` row). A webhook subscription needs a
//!   principal: start the fixture with `--api-key`.
//! - Durability (the TTL rows; the controls as `helpers.ts` names them on the suite's `main`,
//!   the reference fixture's `conformance_restart.go` at 2eddd16e50e6): `ttlMs: null` is
//!   granted no expiry (`refreshBefore: null`), and such a subscription whose deliveries fail
//!   for two seconds without one success is dropped; `events_conformance_restart` answers the
//!   generation it moves to and then rebuilds the whole server over the same log and
//!   subscriptions, on the same socket (every session and stream ends, as in a process
//!   restart); `events_conformance_generation` answers the current one.
//! - With `--redis` (or `--redis-cluster`), the occurrence log, the webhook subscriptions and
//!   the push stream slots are shared through Redis: every instance resumes every cursor, each
//!   subscription is delivered by one instance at a time, another taking over when it stops,
//!   and `quota.probe`'s limit holds across the instances. Each instance
//!   emits on its own; the origin control acts on the instance it is called on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_server::McpServerBuilder;
use mcp_server::events::log::MemoryLog;
use mcp_server::events::webhook::store::MemorySubscriptions;
use mcp_server::events::{DeliveryMode, EventType, Events, EventsError, WebhookSettings};
use mcp_server::prelude::*;
use serde_json::Map;
use tokio_util::sync::CancellationToken;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::shared::SharedSeams;

/// The stream limit of `quota.probe`.
const QUOTA: usize = 2;

/// How long a subscription without expiry may fail before it is dropped: the library leaves
/// the window to the operator; two seconds let a scenario watch the drop.
const NO_EXPIRY_WINDOW: Duration = Duration::from_secs(2);

/// What outlives a restart of the fixture: the occurrence log and the webhook subscriptions
/// kept in memory (Redis keeps them itself with `--redis`), the generation, and the restart
/// asked for.
#[derive(Clone)]
pub(crate) struct Durable {
    log: Arc<MemoryLog>,
    subscriptions: Arc<MemorySubscriptions>,
    generation: Arc<AtomicU64>,
    restart: Arc<tokio::sync::Notify>,
}

impl Durable {
    /// The first generation's.
    pub(crate) fn new() -> Self {
        Durable {
            log: Arc::new(MemoryLog::default()),
            subscriptions: Arc::new(MemorySubscriptions::default()),
            generation: Arc::new(AtomicU64::new(1)),
            restart: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Resolves when `events_conformance_restart` asks for a restart.
    pub(crate) async fn restart_asked(&self) {
        self.restart.notified().await;
    }

    /// Counts the generation about to be built.
    pub(crate) fn next_generation(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// Whether to serve the events fixture.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct EventsArgs {
    /// Serve the Events extension with the conformance suite's fixture types and controls.
    #[arg(long)]
    events_fixture: bool,
    /// Exempts callbacks of this origin (`scheme://host[:port]`) from the SSRF rules in every
    /// generation of the server (the control of the same name lasts one generation).
    #[arg(long)]
    events_permit_origin: Vec<String>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct BuildFilter {
    /// Only builds of this branch.
    #[allow(dead_code)]
    branch: Option<String>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct BuildFinished {
    branch: String,
    ok: bool,
    number: u64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct ChatMessage {
    channel: String,
    text: String,
}

/// The fixture's types, their log and webhook subscriptions shared through Redis when
/// `shared` (every instance then serves one set of cursors and subscriptions).
fn types(shared: Option<&SharedSeams>, durable: &Durable, permitted: &[String]) -> Result<Events, EventsError> {
    let push = [DeliveryMode::Push];
    let builder = Events::builder().webhooks(WebhookSettings::default().with_no_expiry(NO_EXPIRY_WINDOW));
    let builder = permitted
        .iter()
        .fold(builder, |b, origin| b.permit_callback_origin(origin));
    let builder = match shared {
        Some(shared) => builder
            .log(shared.occurrences.clone())
            .subscriptions(shared.webhooks.clone())
            .stream_slots(shared.slots.clone()),
        None => builder
            .log(durable.log.clone())
            .subscriptions(durable.subscriptions.clone()),
    };
    builder
        .event(
            EventType::new("build.finished", "A CI build finished")
                .arguments::<BuildFilter>()?
                .payload::<BuildFinished>()?
                .delivery(&[DeliveryMode::Poll, DeliveryMode::Push, DeliveryMode::Webhook])?
                .filter(|args, data| args.get("branch").is_none_or(|b| data.get("branch") == Some(b))),
        )
        .event(
            EventType::new("chat.message", "A message was posted to a channel")
                .payload::<ChatMessage>()?
                .delivery(&push)?,
        )
        .event(
            EventType::new("quota.probe", "Never emitted: a type whose streams are limited")
                .delivery(&push)?
                .max_streams(QUOTA),
        )
        .page_size(2)
        .trust_callback_origin("https://conformance.invalid")
        .heartbeat(Duration::from_secs(10))
        .build()
}

fn name_schema() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
}

fn control(
    events: &Events,
    tool: &str,
    description: &str,
    act: impl Fn(Events, String) -> futures::future::BoxFuture<'static, Result<(), EventsError>> + Send + Sync + 'static,
) -> Tool {
    let events = events.clone();
    let act = std::sync::Arc::new(act);
    Tool::new(tool, description, move |args: Map<String, Value>, _ctx: Ctx| {
        let (events, act) = (events.clone(), act.clone());
        async move {
            let name = args.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            act(events, name).await.map_err(HandlerError::tool)?;
            Ok::<_, HandlerError>("ok")
        }
    })
    .input_schema(name_schema())
}

/// A control taking `{id}` (a webhook subscription) and answering text.
fn id_control(
    events: &Events,
    tool: &str,
    description: &str,
    act: impl Fn(Events, String) -> futures::future::BoxFuture<'static, Result<String, EventsError>> + Send + Sync + 'static,
) -> Tool {
    let events = events.clone();
    let act = std::sync::Arc::new(act);
    Tool::new(tool, description, move |args: Map<String, Value>, _ctx: Ctx| {
        let (events, act) = (events.clone(), act.clone());
        async move {
            let id = args.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
            act(events, id).await.map_err(HandlerError::tool)
        }
    })
    .input_schema(json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}))
}

/// The `{principal, name, url}` of the tenant controls.
fn tenant_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"principal": {"type": "string"}, "name": {"type": "string"}, "url": {"type": "string"}},
        "required": ["principal", "name", "url"]
    })
}

fn tenant_args(args: &Map<String, Value>) -> (String, String, String) {
    let get = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    (get("principal"), get("name"), get("url"))
}

/// `events_conformance_subscribe_as {principal, name, url}`: subscribes as another tenant (no
/// arguments, a secret of its own), answers the subscription's id; and
/// `events_conformance_subscription_exists {principal, name, url}`: `true` or `false`. The
/// suite's `cross-tenant-isolation` checks that the caller can neither see nor touch it.
fn tenant_controls(events: &Events) -> [Tool; 2] {
    let (a, b) = (events.clone(), events.clone());
    let subscribe = Tool::new(
        "events_conformance_subscribe_as",
        "Subscribes another principal's webhook, answers its id",
        move |args: Map<String, Value>, _ctx: Ctx| {
            let events = a.clone();
            async move {
                let (principal, name, url) = tenant_args(&args);
                let secret = format!("whsec_{}", STANDARD.encode(rand_bytes()));
                let params = json!({"name": name, "arguments": {}, "delivery": {"mode": "webhook", "url": url, "secret": secret}});
                let params = params.as_object().cloned().unwrap_or_default();
                let result = events.subscribe_as(&principal, params).await?;
                Ok::<_, HandlerError>(result["id"].as_str().unwrap_or_default().to_owned())
            }
        },
    )
    .input_schema(tenant_schema());
    let exists = Tool::new(
        "events_conformance_subscription_exists",
        "Whether a principal's webhook subscription exists: true or false",
        move |args: Map<String, Value>, _ctx: Ctx| {
            let events = b.clone();
            async move {
                let (principal, name, url) = tenant_args(&args);
                let found = events
                    .subscription_exists(&principal, &name, &Map::new(), &url)
                    .await
                    .map_err(HandlerError::tool)?;
                Ok::<_, HandlerError>(found.to_string())
            }
        },
    )
    .input_schema(tenant_schema());
    [subscribe, exists]
}

/// 32 bytes for a secret nobody needs to know (the tenant control's callbacks are trusted and
/// never reached): the process's random hasher keys, mixed with the time.
fn rand_bytes() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 32];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        chunk.copy_from_slice(&h.finish().to_be_bytes());
    }
    out
}

/// `events_conformance_allow_callback_origin {origin}`.
fn allow_origin(events: &Events) -> Tool {
    let events = events.clone();
    Tool::new(
        "events_conformance_allow_callback_origin",
        "Exempts one callback origin from the SSRF rules for the rest of the process",
        move |args: Map<String, Value>, _ctx: Ctx| {
            let events = events.clone();
            async move {
                let origin = args.get("origin").and_then(Value::as_str).unwrap_or_default();
                events.permit_callback_origin(origin);
                "ok"
            }
        },
    )
    .input_schema(json!({"type": "object", "properties": {"origin": {"type": "string"}}, "required": ["origin"]}))
}

/// `events_conformance_restart` (answers the generation it moves to, then asks `main` to
/// rebuild the server a moment later, once its answer is out) and
/// `events_conformance_generation` (the current one).
fn restart_controls(durable: &Durable) -> [Tool; 2] {
    let empty = json!({"type": "object", "properties": {}});
    let d = durable.clone();
    let restart = Tool::new(
        "events_conformance_restart",
        "Rebuilds the server over the same log and subscriptions, as a process restart would: every session ends",
        move |_, _| {
            let d = d.clone();
            async move {
                let next = d.generation.load(Ordering::SeqCst) + 1;
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    d.restart.notify_one();
                });
                next.to_string()
            }
        },
    )
    .input_schema(empty.clone());
    let d = durable.clone();
    let generation = Tool::new(
        "events_conformance_generation",
        "The current generation of the server (1, then one more per restart)",
        move |_, _| {
            let d = d.clone();
            async move { d.generation.load(Ordering::SeqCst).to_string() }
        },
    )
    .input_schema(empty);
    [restart, generation]
}

impl EventsArgs {
    /// Adds the extension, its controls and the emitter (which stops when `generation` is
    /// cancelled), if asked.
    pub(crate) fn apply(
        &self,
        b: McpServerBuilder,
        shared: Option<&SharedSeams>,
        durable: &Durable,
        generation: &CancellationToken,
    ) -> Result<McpServerBuilder, EventsError> {
        if !self.events_fixture {
            return Ok(b);
        }
        let events = types(shared, durable, &self.events_permit_origin)?;
        let b = b
            .events(&events)
            .tool(control(
                &events,
                "events_conformance_yield_error",
                "Sends notifications/events/error on the type's streams",
                |e, name| {
                    Box::pin(async move {
                        let error = RpcError::internal_with("UpstreamError")
                            .with_data(json!({"reason": "conformance control"}));
                        e.fail(&name, error).await
                    })
                },
            ))
            .tool(control(
                &events,
                "events_conformance_yield_gap",
                "Announces a gap on the type's streams",
                |e, name| Box::pin(async move { e.gap(&name).await }),
            ))
            .tool(control(
                &events,
                "events_conformance_terminate",
                "Ends every stream of the type",
                |e, name| {
                    Box::pin(async move {
                        let error = RpcError::new(-32012, "Forbidden").with_data(json!({"reason": "Access revoked"}));
                        e.terminate(&name, error).await
                    })
                },
            ))
            .tool(allow_origin(&events));
        let [subscribe_as, exists] = tenant_controls(&events);
        let b = b
            .tool(subscribe_as)
            .tool(exists)
            .tool(id_control(
                &events,
                "events_conformance_webhook_gap",
                "Sends a webhook subscription a gap envelope",
                |e, id| Box::pin(async move { e.webhook_gap(&id).await.map(|()| "ok".to_owned()) }),
            ))
            .tool(id_control(
                &events,
                "events_conformance_webhook_terminate",
                "Ends a webhook subscription with a terminated envelope",
                |e, id| {
                    Box::pin(async move {
                        let error = RpcError::new(-32012, "Forbidden").with_data(json!({"reason": "Access revoked"}));
                        e.webhook_terminate(&id, error).await.map(|()| "ok".to_owned())
                    })
                },
            ))
            .tool(id_control(
                &events,
                "events_conformance_subscription_state",
                "Answers active, suspended or absent",
                |e, id| Box::pin(async move { Ok(e.subscription_state(&id).await.to_owned()) }),
            ))
            .tool(
                Tool::new(
                    "events_conformance_quota",
                    "Reports the per-type stream limit",
                    |_, _| async { json!({"name": "quota.probe", "max": QUOTA}).to_string() },
                )
                .input_schema(json!({"type": "object", "properties": {}})),
            );
        let [restart, current] = restart_controls(durable);
        let b = b.tool(restart).tool(current);
        let ended = generation.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = emit(events) => {}
                () = ended.cancelled() => {}
            }
        });
        Ok(b)
    }
}

/// Emits `build.finished` every two seconds and `chat.message` every three.
async fn emit(events: Events) {
    let mut number = 0u64;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        number += 1;
        if number.is_multiple_of(2) {
            let build = BuildFinished {
                branch: "main".into(),
                ok: number.is_multiple_of(4),
                number: number / 2,
            };
            if let Err(e) = events.emit("build.finished", build).await {
                tracing::warn!(error = %e, "emitting build.finished");
            }
        }
        if number.is_multiple_of(3) {
            let message = ChatMessage {
                channel: "general".into(),
                text: format!("message {}", number / 3),
            };
            if let Err(e) = events.emit("chat.message", message).await {
                tracing::warn!(error = %e, "emitting chat.message");
            }
        }
    }
}
