//! The inbound engine, driven the way each transport drives it: the Streamable HTTP endpoint
//! (sessions in the store, named by `Mcp-Session-Id`), the simple HTTP mode (no sessions, no
//! streaming), the 2024-11-05 HTTP+SSE pair (one session slot, revision pinned, legacy only) and
//! stdio (one session slot per process). The same input must get the same JSON-RPC answer on
//! every transport where it can be sent at all: same code, same message, same result.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, decode};
use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_protocol::{Message, Request, TransportRevision};
use mcp_runtime::engine::BatchStep;
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::{Engine, Peer, Registry, ServerConfig, SessionHandle, SessionSlot, Sessions, Sink, Step};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The ways a transport hands messages to the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Streamable,
    Simple,
    Pair,
    Stdio,
}

const ALL: [Kind; 4] = [Kind::Streamable, Kind::Simple, Kind::Pair, Kind::Stdio];
/// The transports that keep a legacy session.
const WITH_SESSIONS: [Kind; 3] = [Kind::Streamable, Kind::Pair, Kind::Stdio];

/// One client connection to one transport: its session (store id or slot).
struct Conn {
    kind: Kind,
    engine: Engine,
    slot: SessionSlot,
    session: Option<SessionHandle>,
}

fn engine() -> Engine {
    let registry = Registry::new();
    let echo = ToolDef::new("echo").with_input_schema(json!({"type": "object"}));
    let f = |_: serde_json::Map<String, Value>, _: mcp_runtime::Ctx| async { Ok(CallToolResult::text("hi")) };
    registry.add_tool(ToolEntry::new(echo, Arc::new(f), true, true).expect("valid tool"));
    mcp_tests::engine::memory(ServerConfig::default(), Arc::new(registry))
}

impl Conn {
    fn new(kind: Kind, engine: &Engine) -> Self {
        Conn {
            kind,
            engine: engine.clone(),
            slot: SessionSlot::new(CancellationToken::new()),
            session: None,
        }
    }

    /// What the transport tells the engine about a message on this connection.
    fn peer(&self) -> Peer<'_> {
        let auth = Arc::new(AuthInfo::anonymous());
        let sessions = match self.kind {
            Kind::Streamable => Sessions::Store(self.session.as_ref().map(|s| &**s.id())),
            Kind::Simple => Sessions::None,
            Kind::Pair | Kind::Stdio => Sessions::Slot(&self.slot),
        };
        let mut peer = Peer::new(auth, sessions);
        match self.kind {
            Kind::Simple => peer.streams = false,
            Kind::Pair => peer.legacy_only = true,
            _ => {}
        }
        peer
    }

    /// Sends one JSON-RPC body; the answer as JSON (`Null`: nothing answered).
    async fn send(&mut self, body: Value) -> Value {
        let bytes = serde_json::to_vec(&body).unwrap();
        let inbound = decode(&bytes, &DecodeLimits::default()).expect("decodable");
        let answer = match inbound {
            Inbound::Single(Message::Request(r)) => {
                let step = self.engine.request(&self.peer(), r).await;
                self.step(step).await
            }
            Inbound::Single(Message::Notification(n)) => {
                self.engine.notification(&self.peer(), &n).await.map(|a| a.frame)
            }
            Inbound::Single(Message::Response(r)) => {
                self.engine.deliver(&self.peer(), r).await;
                None
            }
            Inbound::Batch(items) => match self.engine.batch(&self.peer(), items).await {
                BatchStep::Answer(a) => Some(a.frame),
                BatchStep::Run(b) => b.run(Sink::detached()).await.frame,
            },
        };
        answer.map_or(Value::Null, |f| serde_json::from_slice(&f).unwrap())
    }

    async fn step(&mut self, step: Step) -> Option<Vec<u8>> {
        match step {
            Step::Answer(a) => {
                if let Some(s) = a.session {
                    self.session = Some(s);
                }
                Some(a.frame)
            }
            Step::Call(c) => c.run(Sink::detached()).await.frame(),
            Step::Listen(_) => panic!("no listen in these inputs"),
        }
    }

    async fn initialize(&mut self, revision: &str) -> Value {
        self.send(request(1, "initialize", init_params(revision))).await
    }
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn init_params(revision: &str) -> Value {
    json!({"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
}

fn modern(params: Value) -> Value {
    let mut p = params;
    p["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    p
}

/// The error of an answer: code and message.
fn error(v: &Value) -> (i64, String) {
    (
        v["error"]["code"].as_i64().unwrap_or_default(),
        v["error"]["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// Asserts every transport answered alike; returns the common answer.
fn same(answers: &[(Kind, Value)]) -> Value {
    let (first_kind, first) = &answers[0];
    for (kind, v) in &answers[1..] {
        assert_eq!(v, first, "{kind:?} answers unlike {first_kind:?}");
    }
    first.clone()
}

#[tokio::test]
async fn a_second_initialize_is_refused_alike() {
    let engine = engine();
    let mut answers = Vec::new();
    for kind in WITH_SESSIONS {
        let mut c = Conn::new(kind, &engine);
        let first = c.initialize("2025-06-18").await;
        assert_eq!(first["result"]["protocolVersion"], "2025-06-18", "{kind:?}");
        assert!(c.session.is_some(), "{kind:?}: the session is kept");
        answers.push((kind, c.initialize("2025-06-18").await));
    }
    let v = same(&answers);
    assert_eq!(error(&v), (-32600, "Session already initialized".into()));
    // Without sessions there is nothing to initialize twice: each one is answered.
    let mut simple = Conn::new(Kind::Simple, &engine);
    for _ in 0..2 {
        assert_eq!(
            simple.initialize("2025-06-18").await["result"]["protocolVersion"],
            "2025-06-18"
        );
    }
    assert!(simple.session.is_none());
}

#[tokio::test]
async fn a_duplicate_id_is_refused_alike() {
    let engine = engine();
    let mut answers = Vec::new();
    for kind in WITH_SESSIONS {
        let mut c = Conn::new(kind, &engine);
        c.initialize("2025-06-18").await;
        // The first call is admitted and held (not yet run): its id is in flight.
        let body = request(7, "tools/call", json!({"name": "echo", "arguments": {}}));
        let Ok(Inbound::Single(Message::Request(r))) =
            decode(&serde_json::to_vec(&body).unwrap(), &DecodeLimits::default())
        else {
            unreachable!()
        };
        let held = c.engine.request(&c.peer(), r).await;
        assert!(matches!(held, Step::Call(_)), "{kind:?}");
        answers.push((kind, c.send(body.clone()).await));
        // Once it has run, the id is free again.
        let Step::Call(call) = held else { unreachable!() };
        drop(call.run(Sink::detached()).await);
        assert_eq!(c.send(body).await["result"]["content"][0]["text"], "hi", "{kind:?}");
    }
    assert_eq!(error(&same(&answers)), (-32600, "Duplicate request id".into()));
}

#[tokio::test]
async fn an_unknown_session_is_not_found() {
    let engine = engine();
    let mut c = Conn::new(Kind::Streamable, &engine);
    c.initialize("2025-06-18").await;
    // The session ends (DELETE, the sweep): the id now names nothing.
    let id = c.session.as_ref().unwrap().id().clone();
    assert!(engine.end_session(&id, "anonymous").await.unwrap());
    for body in [
        request(2, "tools/list", json!({})),
        request(3, "initialize", init_params("2025-06-18")),
        notification("notifications/initialized", json!({})),
    ] {
        let v = c.send(body).await;
        assert_eq!(error(&v), (-32001, "Session not found".into()));
    }
    // Another principal's session answers exactly alike.
    let mut mine = Conn::new(Kind::Streamable, &engine);
    mine.initialize("2025-06-18").await;
    let other = Peer::new(
        Arc::new(AuthInfo::new("mallory")),
        Sessions::Store(Some(mine.session.as_ref().unwrap().id())),
    );
    let r: Request = match decode(
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        &DecodeLimits::default(),
    ) {
        Ok(Inbound::Single(Message::Request(r))) => r,
        _ => unreachable!(),
    };
    let Step::Answer(a) = engine.request(&other, r).await else {
        panic!("refused")
    };
    assert_eq!(a.status, 404);
    assert_eq!(
        error(&serde_json::from_slice(&a.frame).unwrap()),
        (-32001, "Session not found".into())
    );
}

#[tokio::test]
async fn batches_follow_the_revision_alike() {
    let engine = engine();
    let batch = json!([request(2, "ping", json!({})), request(3, "nope/nope", json!({}))]);
    for (revision, accepted) in [
        ("2024-11-05", true),
        ("2025-03-26", true),
        ("2025-06-18", false),
        ("2025-11-25", false),
    ] {
        let mut answers = Vec::new();
        for kind in WITH_SESSIONS {
            let mut c = Conn::new(kind, &engine);
            c.initialize(revision).await;
            answers.push((kind, c.send(batch.clone()).await));
        }
        let v = same(&answers);
        if accepted {
            let by_id = |id: i64| v.as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap();
            assert_eq!(v.as_array().map(Vec::len), Some(2), "{revision}");
            assert_eq!(by_id(2)["result"], json!({}), "{revision}");
            assert_eq!(
                error(&by_id(3)),
                (-32601, "Method not found: nope/nope".into()),
                "{revision}"
            );
        } else {
            let e = error(&v);
            assert_eq!(e.0, -32600, "{revision}");
            assert_eq!(e.1, "JSON-RPC batches are not supported by this protocol revision");
        }
    }
    // `initialize` is never part of a batch.
    let mut c = Conn::new(Kind::Stdio, &engine);
    let v = c
        .send(json!([request(1, "initialize", init_params("2025-03-26"))]))
        .await;
    assert_eq!(error(&v), (-32600, "initialize must not be part of a batch".into()));
}

#[tokio::test]
async fn stray_cancellations_and_responses_are_dropped_alike() {
    let engine = engine();
    for kind in ALL {
        let mut c = Conn::new(kind, &engine);
        c.initialize("2025-06-18").await;
        let cancel = notification("notifications/cancelled", json!({"requestId": 99}));
        assert_eq!(c.send(cancel).await, Value::Null, "{kind:?}: no answer");
        let stray = json!({"jsonrpc": "2.0", "id": "s2c-41", "result": {}});
        assert_eq!(c.send(stray).await, Value::Null, "{kind:?}: no answer");
        let v = c
            .send(request(5, "tools/call", json!({"name": "echo", "arguments": {}})))
            .await;
        assert_eq!(v["result"]["content"][0]["text"], "hi", "{kind:?}: still serving");
    }
}

#[tokio::test]
async fn discover_is_served_with_and_without_a_session_alike() {
    let engine = engine();
    let mut answers = Vec::new();
    for kind in ALL {
        let mut c = Conn::new(kind, &engine);
        answers.push((kind, c.send(request(1, "server/discover", json!({}))).await));
        assert!(c.session.is_none(), "{kind:?}: discover mints no session");
        c.initialize("2025-11-25").await;
        answers.push((kind, c.send(request(1, "server/discover", json!({}))).await));
    }
    let v = same(&answers);
    assert!(v["result"]["supportedVersions"].is_array());
}

#[tokio::test]
async fn an_unknown_method_is_one_answer() {
    let engine = engine();
    let mut legacy = Vec::new();
    let mut fresh = Vec::new();
    for kind in ALL {
        let mut c = Conn::new(kind, &engine);
        if kind != Kind::Streamable {
            // Before `initialize` (the Streamable endpoint needs a session first).
            fresh.push((kind, c.send(request(4, "nope/nope", json!({}))).await));
        }
        c.initialize("2025-06-18").await;
        legacy.push((kind, c.send(request(4, "nope/nope", json!({}))).await));
    }
    assert_eq!(same(&legacy), same(&fresh));
    assert_eq!(error(&same(&legacy)), (-32601, "Method not found: nope/nope".into()));
    // The modern era answers it alike, where it is served.
    let mut modern_answers = Vec::new();
    for kind in [Kind::Streamable, Kind::Simple, Kind::Stdio] {
        let mut c = Conn::new(kind, &engine);
        modern_answers.push((kind, c.send(request(4, "nope/nope", modern(json!({})))).await));
    }
    assert_eq!(
        error(&same(&modern_answers)),
        (-32601, "Method not found: nope/nope".into())
    );
    // The pair serves the legacy revisions only.
    let mut pair = Conn::new(Kind::Pair, &engine);
    let v = pair.send(request(4, "tools/list", modern(json!({})))).await;
    assert_eq!(
        error(&v),
        (-32600, "This transport serves the legacy revisions only".into())
    );
}

#[tokio::test]
async fn a_legacy_request_needs_a_session_only_where_sessions_are_kept() {
    let engine = engine();
    let mut c = Conn::new(Kind::Streamable, &engine);
    let v = c.send(request(2, "tools/list", json!({}))).await;
    assert_eq!(error(&v), (-32600, "Mcp-Session-Id header required".into()));
    for kind in [Kind::Simple, Kind::Pair, Kind::Stdio] {
        let mut c = Conn::new(kind, &engine);
        let v = c.send(request(2, "tools/list", json!({}))).await;
        assert_eq!(v["result"]["tools"][0]["name"], "echo", "{kind:?}");
    }
}

#[tokio::test]
async fn statuses_come_from_the_stage() {
    let engine = engine();
    let streamable = Conn::new(Kind::Streamable, &engine);
    let mut peer = streamable.peer();
    let parse = |s: &str| match decode(s.as_bytes(), &DecodeLimits::default()) {
        Ok(Inbound::Single(Message::Request(r))) => r,
        _ => unreachable!(),
    };
    let status = async |peer: &Peer<'_>, s: &str| match engine.request(peer, parse(s)).await {
        Step::Answer(a) => a.status,
        _ => 0,
    };
    // No session: 400; the modern unknown method: 404; a legacy unknown header value: 400.
    assert_eq!(
        status(&peer, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await,
        400
    );
    let modern_unknown = json!({"jsonrpc": "2.0", "id": 1, "method": "nope", "params": modern(json!({}))});
    assert_eq!(status(&peer, &modern_unknown.to_string()).await, 404);
    peer.revision = TransportRevision::Unknown("1999-01-01".into());
    assert_eq!(
        status(&peer, r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#).await,
        400
    );
}

#[tokio::test]
async fn one_peer_cannot_lock_the_others_out_of_subscriptions() {
    let mut config = ServerConfig::default();
    config.max_listeners_per_peer = 2;
    let registry = Registry::new();
    let engine = mcp_tests::engine::memory(config, Arc::new(registry));
    let listen = |id: i64| {
        let body = request(
            id,
            "subscriptions/listen",
            modern(json!({"notifications": {"toolsListChanged": true}})),
        );
        match decode(&serde_json::to_vec(&body).unwrap(), &DecodeLimits::default()) {
            Ok(Inbound::Single(Message::Request(r))) => r,
            _ => unreachable!(),
        }
    };
    // Every caller is the same principal (no authentication): only their addresses differ.
    let peer = |addr: &str| {
        let mut p = Peer::new(Arc::new(AuthInfo::anonymous()), Sessions::None);
        p.remote = Some(addr.parse::<std::net::IpAddr>().unwrap().into());
        p
    };
    let (a, b) = (peer("10.0.0.1"), peer("10.0.0.2"));
    let mut held = Vec::new();
    for id in 1..=2 {
        held.push(engine.request(&a, listen(id)).await);
    }
    assert!(held.iter().all(|s| matches!(s, Step::Listen(_))));
    let Step::Answer(refused) = engine.request(&a, listen(3)).await else {
        panic!("over the peer's bound")
    };
    assert_eq!(refused.status, 429);
    assert!(
        matches!(engine.request(&b, listen(4)).await, Step::Listen(_)),
        "another peer is served"
    );
}
