//! Two engines sharing one `Store::memory()`, driven through their engines as the Streamable
//! HTTP transport drives them (invariant 34): a session minted on one is served by the other,
//! record changes travel, a client's response and a cancellation reach the instance holding the
//! waiting request, DELETE on one ends the other's replica, a list change on one is heard on
//! the other, and a message of an HTTP+SSE pair one holds is forwarded to it by the other. The HTTP-level suite (a round-robin proxy, Redis) is `tests/tests/http/scaleout.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::jsonrpc::{DecodeLimits, Inbound, Message, decode};
use mcp_protocol::model::{CallToolResult, ToolDef};
use mcp_runtime::middleware::Next;
use mcp_runtime::registry::ToolEntry;
use mcp_runtime::store::{SessionField, SessionRecord, SessionRecords, StoreFuture};
use mcp_runtime::{Ctx, Engine, Peer, Registry, ServerConfig, Sessions, Sink, Step, Storage, Store};
use serde_json::{Map, Value, json};

/// One instance: an engine over its own registry (the same tools everywhere) and the store.
fn instance(store: &Store) -> (Engine, Arc<Registry>) {
    let mut config = ServerConfig::default();
    config.logging = true;
    instance_with(store, config)
}

/// [`instance`] with a configuration of its own.
fn instance_with(store: &Store, config: ServerConfig) -> (Engine, Arc<Registry>) {
    let registry = Arc::new(Registry::new());
    let echo = ToolDef::new("echo").with_input_schema(json!({"type": "object"}));
    let f = |_: Map<String, Value>, _: Ctx| async { Ok(CallToolResult::text("hi")) };
    registry.add_tool(ToolEntry::new(echo, Arc::new(f), true, true).expect("valid tool"));
    let ask = ToolDef::new("ask").with_input_schema(json!({"type": "object"}));
    let f = |_: Map<String, Value>, ctx: Ctx| async move {
        let params = json!({"messages": [], "maxTokens": 1});
        let reply = ctx.create_message(params).await?;
        Ok(CallToolResult::text(
            reply["content"]["text"].as_str().unwrap_or("?").to_owned(),
        ))
    };
    registry.add_tool(ToolEntry::new(ask, Arc::new(f), true, true).expect("valid tool"));
    let slow = ToolDef::new("slow").with_input_schema(json!({"type": "object"}));
    let f = |_: Map<String, Value>, ctx: Ctx| async move {
        tokio::select! {
            () = ctx.cancellation().cancelled() => Ok(CallToolResult::text("cancelled")),
            () = tokio::time::sleep(Duration::from_secs(20)) => Ok(CallToolResult::text("slept")),
        }
    };
    registry.add_tool(ToolEntry::new(slow, Arc::new(f), true, true).expect("valid tool"));
    let engine = mcp_tests::engine::start(config, registry.clone(), Storage::Shared(store.clone()));
    (engine, registry)
}

fn peer(session: Option<&str>) -> Peer<'_> {
    Peer::new(Arc::new(AuthInfo::anonymous()), Sessions::Store(session))
}

fn message(body: Value) -> Message {
    match decode(&serde_json::to_vec(&body).unwrap(), &DecodeLimits::default()) {
        Ok(Inbound::Single(m)) => m,
        _ => panic!("one message"),
    }
}

/// Sends a request; a call is run to its end. The answer as JSON.
async fn send(engine: &Engine, session: Option<&str>, body: Value) -> Value {
    let Message::Request(req) = message(body) else {
        panic!("a request")
    };
    let frame = match engine.request(&peer(session), req).await {
        Step::Answer(a) => a.frame,
        Step::Call(call) => call.run(Sink::detached()).await.frame().expect("answered"),
        Step::Listen(_) => panic!("no listen here"),
    };
    serde_json::from_slice(&frame).unwrap()
}

async fn initialize(engine: &Engine) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
        "clientInfo": {"name": "t", "version": "1"}}});
    let Message::Request(req) = message(body) else {
        unreachable!()
    };
    let Step::Answer(a) = engine.request(&peer(None), req).await else {
        panic!("initialize is answered at once")
    };
    a.session.expect("a session is minted").id().to_string()
}

fn call(id: i64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": {}}})
}

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 2 s");
}

#[tokio::test]
async fn a_session_minted_on_one_instance_is_served_by_the_other() {
    let store = Store::memory();
    let ((a, _), (b, _)) = (instance(&store), instance(&store));
    let id = initialize(&a).await;
    let v = send(&b, Some(&id), call(1, "echo")).await;
    assert_eq!(v["result"]["content"][0]["text"], "hi");
    assert!(b.held_session(&id, "anonymous").is_some(), "B keeps a replica");
    // Another principal, and an id nobody minted, are not found on either instance.
    let other = Peer::new(Arc::new(AuthInfo::new("mallory")), Sessions::Store(Some(&id)));
    let Message::Request(req) = message(call(2, "echo")) else {
        unreachable!()
    };
    let Step::Answer(refused) = b.request(&other, req).await else {
        panic!("refused")
    };
    assert_eq!(refused.status, 404);
    let v = send(&a, Some("mcp_00000000000000000000000000000000"), call(3, "echo")).await;
    assert_eq!(v["error"]["code"], -32001);
}

#[tokio::test]
async fn record_changes_and_delete_reach_every_replica() {
    let store = Store::memory();
    let ((a, _), (b, _)) = (instance(&store), instance(&store));
    let id = initialize(&a).await;
    send(&b, Some(&id), call(1, "echo")).await;
    let level = json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "error"}});
    assert_eq!(send(&b, Some(&id), level).await["result"], json!({}));
    let on_a = a.held_session(&id, "anonymous").expect("A holds it");
    eventually("the level reaches A", || {
        on_a.log_level() == mcp_protocol::model::LoggingLevel::Error
    })
    .await;
    assert!(b.end_session(&id, "anonymous").await.unwrap());
    eventually("A's replica ends", || on_a.is_closed()).await;
    let v = send(&a, Some(&id), call(3, "echo")).await;
    assert_eq!(v["error"]["code"], -32001, "deleted everywhere: {v}");
}

#[tokio::test]
async fn a_response_reaching_the_other_instance_is_delivered() {
    let store = Store::memory();
    let ((a, _), (b, _)) = (instance(&store), instance(&store));
    let id = initialize(&a).await;
    send(&b, Some(&id), call(1, "echo")).await;
    // The call runs on A and asks the client; its request goes out on the call's own stream.
    let Message::Request(req) = message(call(5, "ask")) else {
        unreachable!()
    };
    let Step::Call(c) = a.request(&peer(Some(&id)), req).await else {
        panic!("a call")
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(8);
    let run = tokio::spawn(async move { c.run(Sink::new(tx)).await.frame().expect("answered") });
    let frame = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the request goes out")
        .expect("one frame");
    let out: Value = serde_json::from_slice(&frame).unwrap();
    assert_eq!(out["method"], "sampling/createMessage");
    // The client answers through B.
    let answer = json!({"jsonrpc": "2.0", "id": out["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "from B"}, "model": "m"}});
    let Message::Response(r) = message(answer) else {
        unreachable!()
    };
    b.deliver(&peer(Some(&id)), r).await;
    let done: Value = serde_json::from_slice(
        &tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "from B");
}

#[tokio::test]
async fn a_cancellation_reaching_the_other_instance_cancels() {
    let store = Store::memory();
    let ((a, _), (b, _)) = (instance(&store), instance(&store));
    let id = initialize(&a).await;
    send(&b, Some(&id), call(1, "echo")).await;
    let Message::Request(req) = message(call(9, "slow")) else {
        unreachable!()
    };
    let Step::Call(c) = a.request(&peer(Some(&id)), req).await else {
        panic!("a call")
    };
    let run = tokio::spawn(async move { c.run(Sink::detached()).await.frame() });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}});
    let Message::Notification(n) = message(cancel) else {
        unreachable!()
    };
    assert!(b.notification(&peer(Some(&id)), &n).await.is_none());
    let frame = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("ends")
        .unwrap();
    assert!(frame.is_none(), "a cancelled call is never answered (invariant 13)");
}

#[tokio::test]
async fn a_list_change_on_one_instance_is_heard_on_the_other() {
    let store = Store::memory();
    // B's engine is kept (its driver forwards the change to the bus).
    let ((a, _), (_b, registry_b)) = (instance(&store), instance(&store));
    let mut feed = a.changes();
    let extra = ToolDef::new("extra").with_input_schema(json!({"type": "object"}));
    let f = |_: Map<String, Value>, _: Ctx| async { Ok(CallToolResult::text("x")) };
    registry_b.add_tool(ToolEntry::new(extra, Arc::new(f), true, true).expect("valid tool"));
    let heard = tokio::time::timeout(Duration::from_secs(5), feed.next())
        .await
        .expect("heard")
        .expect("open");
    assert!(heard.contains(&mcp_runtime::registry::Change::Tools), "{heard:?}");
    assert!(
        a.registry().snapshot().tools().iter().all(|t| t.def.name != "extra"),
        "A's catalog is A's"
    );
}

#[tokio::test]
async fn broadcasts_reach_the_other_instances_only() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let store = Store::memory();
    let ((a, _), (b, _)) = (instance(&store), instance(&store));
    let (on_a, on_b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = on_a.clone();
    a.on_broadcast("t", move |v| {
        seen.fetch_add(v["n"].as_u64().unwrap_or(0) as usize, Ordering::SeqCst);
    });
    let seen = on_b.clone();
    b.on_broadcast("t", move |v| {
        seen.fetch_add(v["n"].as_u64().unwrap_or(0) as usize, Ordering::SeqCst);
    });
    a.broadcast("t", json!({"n": 2})).unwrap();
    a.broadcast("other", json!({"n": 5})).unwrap();
    eventually("B runs its handler", || on_b.load(Ordering::SeqCst) == 2).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(on_a.load(Ordering::SeqCst), 0, "never the sender's own");
    assert_eq!(on_b.load(Ordering::SeqCst), 2, "only its topic");
    // Without a store there is nobody to tell: a no-op.
    let single = mcp_tests::engine::memory(ServerConfig::default(), Arc::new(Registry::new()));
    assert!(single.broadcast("t", json!({})).is_ok());
}

/// A bus that holds what is published until the test lets it through (or loses it), in front of
/// a memory bus.
#[derive(Default)]
struct GatedBus {
    inner: mcp_runtime::store::MemoryBus,
    held: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl GatedBus {
    /// Lets the held messages through, except those `lose` picks (by their JSON text).
    fn release(&self, lose: impl Fn(&str) -> bool) {
        let held = std::mem::take(&mut *self.held.lock().unwrap());
        for m in held {
            if !lose(std::str::from_utf8(&m).unwrap()) {
                self.inner.publish(m).unwrap();
            }
        }
    }
}

impl mcp_runtime::store::Bus for GatedBus {
    fn publish(&self, message: Vec<u8>) -> Result<(), mcp_runtime::StoreError> {
        self.held.lock().unwrap().push(message);
        Ok(())
    }

    fn subscribe(&self) -> tokio::sync::mpsc::Receiver<mcp_runtime::store::BusEvent> {
        self.inner.subscribe()
    }
}

use mcp_runtime::store::Bus as _;

/// Two started instances on a memory store whose bus the test gates.
fn gated_pair() -> (Arc<GatedBus>, (Engine, Arc<Registry>), Engine) {
    let bus = Arc::new(GatedBus::default());
    let store = Store {
        bus: bus.clone(),
        ..Store::memory()
    };
    let (a, (b, _)) = (instance(&store), instance(&store));
    (bus, a, b)
}

/// Whether `feed` hears something within `wait`.
async fn hears(
    feed: &mut mcp_runtime::registry::ChangeFeed,
    wait: Duration,
) -> Option<Vec<mcp_runtime::registry::Change>> {
    tokio::time::timeout(wait, feed.next()).await.ok().flatten()
}

#[tokio::test]
async fn an_instance_announces_its_own_change_once_the_bus_has_carried_it() {
    use mcp_runtime::registry::Change;
    let (bus, (a, registry_a), b) = gated_pair();
    let (mut on_a, mut on_b) = (a.changes(), b.changes());
    let extra = ToolDef::new("extra").with_input_schema(json!({"type": "object"}));
    let f = |_: Map<String, Value>, _: Ctx| async { Ok(CallToolResult::text("x")) };
    registry_a.add_tool(ToolEntry::new(extra, Arc::new(f), true, true).expect("valid tool"));
    // Made on A, but A's streams are not told before the bus carries it to every instance.
    assert_eq!(hears(&mut on_a, Duration::from_millis(300)).await, None);
    assert_eq!(hears(&mut on_b, Duration::from_millis(10)).await, None);
    bus.release(|_| false);
    assert_eq!(
        hears(&mut on_a, Duration::from_secs(5)).await,
        Some(vec![Change::Tools])
    );
    assert_eq!(
        hears(&mut on_b, Duration::from_secs(5)).await,
        Some(vec![Change::Tools])
    );
}

#[tokio::test]
async fn a_message_lost_on_the_bus_is_a_gap_for_every_instance() {
    let (bus, (a, _), b) = gated_pair();
    let (mut on_a, mut on_b) = (a.changes(), b.changes());
    for n in 1..=3 {
        a.broadcast("t", json!({ "n": n })).unwrap();
    }
    // The second never arrives: both instances hear of the loss from the third's number, and
    // announce every list (a GET stream re-reads its log the same way).
    bus.release(|m| m.contains(r#""n":2"#));
    for feed in [&mut on_a, &mut on_b] {
        assert!(hears_a_gap(feed).await);
    }
    // Nothing lost, nothing announced.
    a.broadcast("t", json!({ "n": 4 })).unwrap();
    bus.release(|_| false);
    assert_eq!(hears(&mut on_b, Duration::from_millis(300)).await, None);
}

/// Every list announced on `feed` (what a bus gap does), within 2 s.
async fn hears_a_gap(feed: &mut mcp_runtime::registry::ChangeFeed) -> bool {
    use mcp_runtime::registry::Change;
    let mut heard = Vec::new();
    while let Some(changes) = hears(feed, Duration::from_secs(2)).await {
        heard.extend(changes);
        if heard.len() >= Change::EVERY_LIST.len() {
            break;
        }
    }
    heard == Change::EVERY_LIST.to_vec()
}

#[tokio::test]
async fn a_message_an_instance_cannot_read_is_a_gap() {
    let (bus, _, b) = gated_pair();
    let mut on_b = b.changes();
    // Another build's: a version this build does not write, a note it does not know. Reported
    // once per instance, a gap the first time.
    let stranger = |seq: u64| format!(r#"{{"v":99,"from":"ffff.i1","seq":{seq},"t":"somethingNew"}}"#);
    bus.inner.publish(stranger(1).into_bytes()).unwrap();
    assert!(hears_a_gap(&mut on_b).await, "the first message of another build");
    bus.inner.publish(stranger(2).into_bytes()).unwrap();
    assert_eq!(hears(&mut on_b, Duration::from_millis(300)).await, None);
    // Not a bus message at all: a gap each time (it may have been one for this instance).
    bus.inner.publish(b"\x00 not json".to_vec()).unwrap();
    assert!(hears_a_gap(&mut on_b).await, "an unreadable message");
}

/// The answer to an `initialize` as `principal`.
async fn initialize_as(engine: &Engine, principal: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let Message::Request(req) = message(body) else {
        unreachable!()
    };
    let auth = Arc::new(AuthInfo::new(principal));
    let Step::Answer(a) = engine.request(&Peer::new(auth, Sessions::Store(None)), req).await else {
        panic!("initialize is answered at once")
    };
    serde_json::from_slice(&a.frame).unwrap()
}

#[tokio::test]
async fn session_bounds_count_the_sessions_other_instances_started() {
    let store = Store::memory();
    let config = || {
        let mut c = ServerConfig::default();
        c.max_sessions = 4;
        // Clients are reported from 16 / 16 = 1 session on.
        c.max_sessions_per_principal = 16;
        c
    };
    let ((a, _), (b, _)) = (instance_with(&store, config()), instance_with(&store, config()));
    for n in 0..3 {
        let r = initialize_as(&a, if n == 0 { "alice" } else { "bob" }).await;
        assert!(r.get("result").is_some(), "A admits session {n}: {r}");
    }
    // B hears A's report with A's next heartbeat (every 2 s).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let r = initialize_as(&b, "carol").await;
    assert!(r.get("result").is_some(), "the fourth session fits: {r}");
    let r = initialize_as(&b, "dave").await;
    assert_eq!(
        r["error"]["message"], "Too many sessions",
        "the fifth is over the bound across both: {r}"
    );
}

#[tokio::test]
async fn a_client_bound_counts_its_sessions_on_other_instances() {
    let store = Store::memory();
    let config = || {
        let mut c = ServerConfig::default();
        c.max_sessions_per_principal = 3;
        c
    };
    let ((a, _), (b, _)) = (instance_with(&store, config()), instance_with(&store, config()));
    for _ in 0..2 {
        assert!(initialize_as(&a, "alice").await.get("result").is_some());
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(
        initialize_as(&b, "alice").await.get("result").is_some(),
        "alice's third"
    );
    let r = initialize_as(&b, "alice").await;
    assert!(
        r.get("error").is_some(),
        "alice's fourth is over her bound across both: {r}"
    );
    assert!(
        initialize_as(&b, "bob").await.get("result").is_some(),
        "others are not affected"
    );
}

#[tokio::test]
async fn broadcast_everywhere_returns_once_the_bus_has_carried_the_message() {
    let (bus, (a, _), _b) = gated_pair();
    let engine = a.clone();
    let waiting = tokio::spawn(async move {
        engine
            .broadcast_everywhere("t", json!({"n": 1}), Duration::from_secs(5))
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the bus holds the message: still waiting");
    bus.release(|_| false);
    let done = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("returns");
    assert!(done.expect("joined").is_ok());
    // A bus that never carries it: an error after the wait, not a hang.
    let lost = a
        .broadcast_everywhere("t", json!({"n": 2}), Duration::from_millis(200))
        .await;
    assert!(lost.is_err(), "{lost:?}");
}

/// Addressed delivery, through the engine's entry points: a mailbox held by A is found by B
/// (for its principal only), mail B forwards reaches A's inbox with the identity it was sent
/// with, its client's address and port and its payload, and B gets A's outcome, whatever JSON
/// A's transport answered; another principal's mail, and mail A drops unanswered, are `Gone`;
/// once the mailbox is closed its record is gone and mail is `Gone` too.
#[tokio::test]
async fn mail_forwarded_by_one_instance_reaches_the_holder() {
    use mcp_runtime::Remote;
    use mcp_runtime::mailbox::MailOutcome;
    let store = Store::memory();
    let ((a, _), (b, _)) = (instance(&store), instance(&store));
    let ended = tokio_util::sync::CancellationToken::new();
    let mut inbox = a
        .hold_mailbox("m1", "alice", ended.clone())
        .await
        .unwrap()
        .expect("an inbox with a store");
    let record = b.find_mailbox("m1", "alice").await.unwrap().expect("the record");
    assert_eq!(Some(record.holder.as_str()), a.instance_id());
    assert_eq!(b.find_mailbox("m1", "bob").await.unwrap(), None, "another principal's");
    assert_eq!(b.find_mailbox("m2", "alice").await.unwrap(), None, "unknown");

    let alice = AuthInfo::new("alice").with_scopes(vec!["s1".into()]);
    let payload = json!({"any": ["json", 1]});
    let client = Some(Remote {
        address: "127.0.0.2".parse().unwrap(),
        port: Some(40_000),
    });
    let forwarded = tokio::spawn({
        let (b, record, alice, payload) = (b.clone(), record.clone(), alice.clone(), payload.clone());
        async move { b.forward_mail(&record, &alice, client, payload).await }
    });
    let m = tokio::time::timeout(Duration::from_secs(5), inbox.recv())
        .await
        .expect("forwarded within 5 s")
        .expect("mail");
    assert_eq!(
        (m.mailbox.as_str(), m.auth.clone(), m.client, &m.payload),
        ("m1", alice.clone(), client, &payload)
    );
    m.receipt
        .answer(MailOutcome::Handled(json!({"status": 200, "body": "[]"})));
    assert_eq!(
        forwarded.await.unwrap(),
        Ok(MailOutcome::Handled(json!({"status": 200, "body": "[]"})))
    );

    let bob = AuthInfo::new("bob");
    assert_eq!(
        b.forward_mail(&record, &bob, client, payload.clone()).await,
        Ok(MailOutcome::Gone),
        "not alice's: refused by the holder"
    );
    let dropped = tokio::spawn({
        let (b, record, alice, payload) = (b.clone(), record.clone(), alice.clone(), payload.clone());
        async move { b.forward_mail(&record, &alice, client, payload).await }
    });
    drop(inbox.recv().await.expect("mail"));
    assert_eq!(dropped.await.unwrap(), Ok(MailOutcome::Gone), "dropped unanswered");

    ended.cancel();
    for _ in 0..100 {
        if b.find_mailbox("m1", "alice").await.unwrap().is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        b.find_mailbox("m1", "alice").await.unwrap(),
        None,
        "the record went with the mailbox"
    );
    assert_eq!(
        b.forward_mail(&record, &alice, client, payload).await,
        Ok(MailOutcome::Gone),
        "the holder no longer holds it"
    );
}

/// Session records that count the trips an instance makes to them (`hold`s and `update`s),
/// over the memory store.
struct Counted {
    inner: Arc<dyn SessionRecords>,
    holds: AtomicUsize,
    updates: AtomicUsize,
}

impl SessionRecords for Counted {
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        self.inner.create(record, ttl)
    }
    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        self.inner.load(id, ttl)
    }
    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, bool> {
        self.inner.touch(id, ttl)
    }
    fn update<'a>(&'a self, id: &'a str, field: &'a SessionField) -> StoreFuture<'a, ()> {
        self.updates.fetch_add(1, Ordering::SeqCst);
        self.inner.update(id, field)
    }
    fn hold<'a>(
        &'a self,
        id: &'a str,
        instance: &'a str,
        ttl: Duration,
        changes: &'a [SessionField],
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        self.holds.fetch_add(1, Ordering::SeqCst);
        self.inner.hold(id, instance, ttl, changes)
    }
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<SessionRecord>> {
        self.inner.delete(id)
    }
}

/// `notifications/initialized` reaching the instance that did not mint the session: the
/// change is stored with the load of the replica (one trip), unless middleware may still
/// refuse the notification, when it is stored after (two).
#[tokio::test]
async fn initialized_on_another_instance_is_stored_with_the_load() {
    for layered in [false, true] {
        let memory = Store::memory();
        let counted = Arc::new(Counted {
            inner: memory.sessions.clone(),
            holds: AtomicUsize::new(0),
            updates: AtomicUsize::new(0),
        });
        let store = Store {
            sessions: counted.clone(),
            ..memory
        };
        let mut config = ServerConfig::default();
        if layered {
            config.middleware.push(|request, next: Next| next.run(request));
        }
        let ((a, _), (b, _)) = (instance(&store), instance_with(&store, config));
        let id = initialize(&a).await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let Message::Notification(n) = message(initialized) else {
            unreachable!()
        };
        assert!(b.notification(&peer(Some(&id)), &n).await.is_none());
        let on_b = b.held_session(&id, "anonymous").expect("B holds a replica");
        assert!(on_b.is_initialized());
        let record = || async {
            store
                .sessions
                .load(&id, Duration::from_secs(60))
                .await
                .unwrap()
                .unwrap()
        };
        eventually_async("the record says initialized", || async { record().await.initialized }).await;
        assert_eq!(counted.holds.load(Ordering::SeqCst), 1, "layered: {layered}");
        let updates = usize::from(layered);
        assert_eq!(counted.updates.load(Ordering::SeqCst), updates, "layered: {layered}");
    }
}

async fn eventually_async<F: Future<Output = bool>>(what: &str, check: impl Fn() -> F) {
    for _ in 0..200 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 2 s");
}
