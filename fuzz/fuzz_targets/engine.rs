//! The runtime's `Engine` (`mcp_runtime::engine`) fed arbitrary frames, once with each way a
//! transport keeps sessions: `Sessions::Store` (Streamable HTTP, the session named by the id an
//! `initialize` minted), `Sessions::Slot` (stdio, the HTTP+SSE pair) and `Sessions::None` (HTTP
//! simple mode).
//!
//! The input is split into newline-separated frames. A frame is decoded within limits and
//! handed to `Engine::request`, `notification`, `deliver` or `batch`; every `Call` and `Batch`
//! runs to completion on a current-thread tokio runtime with paused time (a handler's sleep or
//! timeout costs nothing), the registry holding a few tools (one with an `x-mcp-header`, one
//! that outlives the short handler timeout, one that asks for input) and a resource. A few
//! frame prefixes steer the transport side:
//!
//! - `@<value>`: the `MCP-Protocol-Version` declared beside the following bodies (`@` alone:
//!   none);
//! - `#<name>:<value>`: adds a request header for the modern agreement checks (`#` alone: no
//!   headers);
//! - `!<flags>`: `s` replies may not stream, `l` legacy revisions only, `b` name an unknown
//!   session;
//! - `~<body>`: a request admitted now but run after the last frame, so that later frames meet
//!   it in flight (duplicate ids, cancellation).
//!
//! Checks: no panic anywhere in the pipeline (a handler panic is caught by the engine, but
//! aborts here), no hang (a run that does not end within an hour of virtual time fails), every
//! answer is one JSON-RPC response (or array of them) with an HTTP status in 200–599.

#![no_main]

use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp_protocol::Message;
use mcp_protocol::TransportRevision;
use mcp_protocol::auth::AuthInfo;
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, decode};
use mcp_protocol::model::{CallToolResult, ReadResourceResult, ResourceContents, ResourceDef, ToolDef};
use mcp_protocol::request_state::StateKey;
use mcp_runtime::engine::BatchStep;
use mcp_runtime::mrtr::InputRequired;
use mcp_runtime::registry::{ResourceEntry, ToolEntry};
use mcp_runtime::{Call, Engine, Peer, Registry, ServerConfig, SessionSlot, Sessions, Sink, Step, Storage};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Most frames of one input that are looked at.
const MAX_FRAMES: usize = 64;
/// A run that takes longer than this (virtual time) is a hang.
const HANG: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, Copy)]
enum Kind {
    Store,
    Slot,
    None,
}

fuzz_target!(|data: &[u8]| {
    let frames: Vec<&[u8]> = data.split(|&b| b == b'\n').take(MAX_FRAMES).collect();
    for kind in [Kind::Store, Kind::Slot, Kind::None] {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let run = rt.block_on(async { tokio::time::timeout(HANG, drive(kind, &frames)).await });
        assert!(
            run.is_ok(),
            "{kind:?}: the engine did not finish within {HANG:?} of virtual time"
        );
    }
});

/// The engine under test (its driver dropped: nothing runs beside the frames, in paused time).
fn engine() -> Engine {
    let registry = Registry::new();
    let echo = ToolDef::new("echo").with_input_schema(json!({
        "type": "object",
        "properties": {"text": {"type": "string"}, "region": {"type": "string", "x-mcp-header": "Region"}},
    }));
    let echo_fn = |args: Map<String, Value>, _: mcp_runtime::Ctx| async move {
        Ok(CallToolResult::text(
            args.get("text").and_then(Value::as_str).unwrap_or("hi"),
        ))
    };
    registry.add_tool(ToolEntry::new(echo, Arc::new(echo_fn), true, true).expect("valid tool"));
    let slow = ToolDef::new("slow").with_input_schema(json!({"type": "object"}));
    let slow_fn = |_: Map<String, Value>, _: mcp_runtime::Ctx| async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(CallToolResult::text("late"))
    };
    registry.add_tool(ToolEntry::new(slow, Arc::new(slow_fn), true, true).expect("valid tool"));
    let ask = ToolDef::new("ask").with_input_schema(json!({"type": "object"}));
    let ask_fn = |_: Map<String, Value>, ctx: mcp_runtime::Ctx| async move {
        let question = InputRequired::new()
            .request(
                "q",
                "elicitation/create",
                json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}}),
            )
            .with_state(json!({"round": 1}));
        let answers = ctx.input(question).await?;
        Ok(CallToolResult::text(Value::Object(answers).to_string()))
    };
    registry.add_tool(ToolEntry::new(ask, Arc::new(ask_fn), true, true).expect("valid tool"));
    registry.add_resource(ResourceEntry::new(
        ResourceDef::new("test://a", "a"),
        Arc::new(|uri: String, _: Map<String, Value>, _: mcp_runtime::Ctx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri,
                "text/plain",
                "A",
            )]))
        }),
    ));
    let mut config = ServerConfig::default();
    config.handler_timeout = Duration::from_millis(50);
    config.client_request_timeout = Duration::from_millis(50);
    config.task_inline_ms = 10;
    config.request_state_key = Some(StateKey::new(&[7u8; 32]).expect("long enough"));
    Engine::start(config, Arc::new(registry), Storage::Memory).0
}

/// What the transport knows, as the frames so far have set it.
struct Transport {
    kind: Kind,
    slot: SessionSlot,
    session: Option<Arc<str>>,
    revision: TransportRevision,
    headers: Option<Vec<(String, Vec<u8>)>>,
    streams: bool,
    legacy_only: bool,
    bogus_session: bool,
}

impl Transport {
    fn peer<'a>(&'a self, lookup: &'a mcp_runtime::engine::HeaderLookup<'a>) -> Peer<'a> {
        let sessions = match self.kind {
            Kind::Store if self.bogus_session => Sessions::Store(Some("no-such-session")),
            Kind::Store => Sessions::Store(self.session.as_deref()),
            Kind::Slot => Sessions::Slot(&self.slot),
            Kind::None => Sessions::None,
        };
        let mut peer = Peer::new(Arc::new(AuthInfo::anonymous()), sessions);
        peer.revision = self.revision.clone();
        peer.streams = self.streams;
        peer.legacy_only = self.legacy_only;
        peer.headers = self.headers.is_some().then_some(lookup);
        peer
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        let headers = self.headers.as_ref()?;
        headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())
    }
}

async fn drive(kind: Kind, frames: &[&[u8]]) {
    let engine = engine();
    let mut t = Transport {
        kind,
        slot: SessionSlot::new(CancellationToken::new()),
        session: None,
        revision: TransportRevision::Absent,
        headers: None,
        streams: true,
        legacy_only: false,
        bogus_session: false,
    };
    let limits = DecodeLimits::new(64 * 1024, 32).with_max_batch(16);
    let mut deferred: Vec<Call> = Vec::new();
    for frame in frames {
        let (defer, body) = match frame.split_first() {
            Some((b'@', rest)) => {
                t.revision = TransportRevision::parse((!rest.is_empty()).then_some(rest));
                continue;
            }
            Some((b'#', rest)) => {
                if rest.is_empty() {
                    t.headers = None;
                } else if let Some(colon) = rest.iter().position(|&b| b == b':') {
                    let name = String::from_utf8_lossy(&rest[..colon]).trim().to_ascii_lowercase();
                    t.headers
                        .get_or_insert_with(Vec::new)
                        .push((name, rest[colon + 1..].to_vec()));
                }
                continue;
            }
            Some((b'!', flags)) => {
                t.streams = !flags.contains(&b's');
                t.legacy_only = flags.contains(&b'l');
                t.bogus_session = flags.contains(&b'b');
                continue;
            }
            Some((b'~', rest)) => (true, rest),
            _ => (false, *frame),
        };
        let inbound = match decode(body, &limits) {
            Ok(inbound) => inbound,
            Err(e) => {
                if let Some(answer) = e.answer() {
                    check_frame(&answer, 400);
                }
                continue;
            }
        };
        let get = |name: &str| t.header(name);
        let peer = t.peer(&get);
        match inbound {
            Inbound::Single(Message::Request(req)) => {
                let step = engine.request(&peer, req).await;
                drop(peer);
                match step {
                    Step::Answer(a) => {
                        check_frame(&a.frame, a.status);
                        if let Some(s) = a.session {
                            t.session = Some(s.id().clone());
                        }
                    }
                    Step::Call(call) if defer => deferred.push(call),
                    Step::Call(call) => run_call(call).await,
                    Step::Listen(listening) => drop(listening),
                }
            }
            Inbound::Single(Message::Notification(n)) => {
                if let Some(a) = engine.notification(&peer, &n).await {
                    check_frame(&a.frame, a.status);
                }
            }
            Inbound::Single(Message::Response(r)) => engine.deliver(&peer, r).await,
            Inbound::Batch(items) => match engine.batch(&peer, items).await {
                BatchStep::Answer(a) => check_frame(&a.frame, a.status),
                BatchStep::Run(batch) => {
                    let done = batch.run(sink()).await;
                    if let Some(frame) = done.frame {
                        check_frame(&frame, 200);
                    }
                }
            },
        }
    }
    // The deferred calls run concurrently, as a transport's workers would.
    futures::future::join_all(deferred.into_iter().map(run_call)).await;
}

async fn run_call(call: Call) {
    let completed = call.run(sink()).await;
    let status = completed.status();
    if let Some(frame) = completed.frame() {
        check_frame(&frame, status);
    }
}

/// A streaming sink whose frames are drained (and checked) as a transport would.
fn sink() -> Sink {
    let (sink, mut rx) = Sink::channel(64);
    tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            let _: Value = serde_json::from_slice(&frame).expect("an emitted frame is JSON");
        }
    });
    sink
}

/// An answer is one JSON-RPC response, or an array of them, with a real HTTP status.
fn check_frame(frame: &[u8], status: u16) {
    assert!((200..600).contains(&status), "status {status}");
    let v: Value = serde_json::from_slice(frame).expect("an answer is JSON");
    let responses = match &v {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    for r in responses {
        assert_eq!(r["jsonrpc"], "2.0", "{v}");
        assert!(r.get("result").is_some() != r.get("error").is_some(), "{v}");
        assert!(r.get("id").is_some(), "{v}");
    }
}
