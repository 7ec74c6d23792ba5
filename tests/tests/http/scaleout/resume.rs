//! `Last-Event-ID` across instances: a GET stream resumed on the other instance (the shared
//! event log), and a call's POST stream (SEP-1699) resumed on the other instance.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_runtime::Store;
use mcp_runtime::store::{EventLog, MemoryEventLog, Replay, StoreFuture, StreamKey};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::legacy::Reference;
use super::tools::noop;
use super::{
    Backend, Cluster, LEGACY, assert_quiet, config, eventually, next_message, tool_call, tools_changed, within,
};
use crate::support::{Resp, tool};

/// The events of a session's GET stream log after `cursor`.
async fn logged_after(store: &Store, sid: &str, cursor: u64) -> Vec<u64> {
    match store.events.after(&StreamKey::own(sid), cursor).await {
        Ok(Replay::From(events)) => events.into_iter().map(|(id, _)| id).collect(),
        Ok(Replay::Truncated | Replay::Ahead) => panic!("the log does not hold the events after {cursor}"),
        Err(e) => panic!("the log is unreadable: {e}"),
    }
}

fn numeric(id: Option<String>) -> u64 {
    let id = id.expect("an event id");
    id.parse()
        .unwrap_or_else(|_| panic!("a GET stream event id is a number: {id}"))
}

/// Opens the GET stream of a new session on A, reads two changes (raised on B, then on A),
/// drops it, raises two more (one on each instance) and waits until the log holds them, then
/// resumes with `Last-Event-ID` on B: the two missed events are replayed, in order, and nothing
/// else. Returns the session, the resumed stream and every id seen so far.
async fn resume_on_the_other_instance(c: &Cluster) -> (String, crate::support::Sse, Vec<u64>) {
    let sid = c.initialize_on(0, LEGACY).await;
    let (mut sse, prime) = c.open_get(0, &sid).await;
    let object = json!({"type": "object"});
    let mut ids = vec![numeric(Some(prime))];
    // What B's registry announces (its own changes and those heard from A).
    let mut heard = c.b.registry.subscribe();

    c.b.registry.add_tool(tool("x1", object.clone(), noop));
    let (id, e) = next_message(&mut sse, "first change").await;
    assert_eq!(e, tools_changed());
    ids.push(numeric(id));
    c.a.registry.add_tool(tool("x2", object.clone(), noop));
    let (id, e) = next_message(&mut sse, "second change").await;
    assert_eq!(e, tools_changed());
    ids.push(numeric(id));
    drop(sse);
    let seen = *ids.last().expect("ids");

    // Missed while disconnected: one raised on each instance, both stored in the session's log.
    c.b.registry.add_tool(tool("x3", object.clone(), noop));
    within("the third change is logged", async {
        while logged_after(&c.store, &sid, seen).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    c.a.registry.add_tool(tool("x4", object, noop));
    let missed = within("the fourth change is logged", async {
        loop {
            let logged = logged_after(&c.store, &sid, seen).await;
            if logged.len() >= 2 {
                return logged;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert_eq!(missed.len(), 2, "one logged event per change: {missed:?}");
    // B has heard the four changes before its stream opens: a change still in flight towards
    // the new holder while the stream moves is appended by both holders (a race of its own).
    within("B heard the four changes", async {
        let mut n = 0;
        while n < 4 {
            n += heard.next().await.expect("B's registry").len();
        }
    })
    .await;

    let resp = c
        .send_to(1, c.get(&sid).header("last-event-id", &seen.to_string()))
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    let mut resumed = resp.sse();
    for id in &missed {
        let (got, e) = next_message(&mut resumed, "a replayed change").await;
        assert_eq!(e, tools_changed());
        assert_eq!(numeric(got), *id, "the missed events, in order");
        ids.push(*id);
    }
    assert_quiet(&mut resumed, "nothing replayed twice").await;
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    (sid, resumed, ids)
}

/// Scenario 3: a GET stream dropped on A and resumed with `Last-Event-ID` on B replays exactly
/// the events it missed (raised on either instance), in order, with increasing ids.
async fn last_event_id_resumes_on_the_other_instance(c: Cluster) {
    let (_, _resumed, ids) = resume_on_the_other_instance(&c).await;
    assert_eq!(ids.len(), 5, "priming, two seen, two replayed: {ids:?}");
    c.assert_both_used();
}
both_stores!(last_event_id_resumes_on_the_other_instance);

/// Scenario 3, after the resumption: every new change (raised on the old holder A or on B)
/// reaches the resumed stream once.
async fn a_resumed_stream_carries_each_change_once(c: Cluster) {
    let (_, mut resumed, mut ids) = resume_on_the_other_instance(&c).await;
    let object = json!({"type": "object"});
    for (i, registry) in [&c.a.registry, &c.b.registry].into_iter().enumerate() {
        registry.add_tool(tool(&format!("x{}", 5 + i), object.clone(), noop));
        let (id, e) = next_message(&mut resumed, "a change after the resumption").await;
        assert_eq!(e, tools_changed());
        ids.push(numeric(id));
        assert_quiet(&mut resumed, "one event per change after the resumption").await;
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
}
both_stores!(a_resumed_stream_carries_each_change_once, 20);

/// Runs `gate` through `post`, reads its priming and progress events, drops the stream, resumes
/// it with `get(<progress event id>)`, releases the gate; returns the resumption's status and
/// the messages it carried until it ended.
async fn resume_post_stream(
    post: crate::support::Req,
    started: impl Fn() -> bool,
    release: impl Fn(),
    get: impl AsyncFnOnce(&str) -> Resp,
) -> (StatusCode, Vec<Value>) {
    let resp = post.send().await;
    assert_eq!(resp.status, StatusCode::OK);
    let mut sse = resp.sse();
    let priming = within("the priming event", sse.next()).await.expect("a priming event");
    let prime = priming.id.expect("the priming event has an id");
    assert!(prime.ends_with("-0"), "a POST stream's priming id: {prime}");
    let progress = within("the progress event", sse.next())
        .await
        .expect("a progress event");
    assert_eq!(progress.json()["method"], "notifications/progress");
    let last = progress.id.expect("the progress event has an id");
    eventually("the handler runs", started).await;
    drop(sse);
    let resp = get(&last).await;
    let status = resp.status;
    release();
    if status != StatusCode::OK {
        return (status, Vec::new());
    }
    let mut sse = resp.sse();
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(e) = sse.next().await {
            if !e.data.is_empty() {
                rest.push(e.json());
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the resumed stream ends: {rest:?}");
    (status, rest)
}

/// SEP-1699 across instances: a call's POST stream (running on one instance) dropped by the
/// client and resumed with `Last-Event-ID` through the proxy on the other instance carries the
/// rest of the call, as in a single process.
async fn a_post_stream_resumes_on_the_other_instance(c: Cluster) {
    let reference = Reference::start().await;
    let rsid = reference.initialize(LEGACY).await;
    let call = gate_call;
    let want = resume_post_stream(
        reference.post(&rsid, LEGACY, call()),
        || reference.probe.saw("gate:start:g"),
        || reference.probe.release(),
        async |last: &str| {
            let get = reference
                .server
                .req(Method::GET)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &rsid)
                .header("last-event-id", last);
            get.send().await
        },
    )
    .await;
    assert_eq!(want, (StatusCode::OK, vec![gate_done()]), "a single process");

    let sid = c.initialize_on(0, LEGACY).await;
    c.steer(0).await;
    let got = resume_post_stream(
        c.legacy(&sid, LEGACY, call()),
        || c.a.probe.saw("gate:start:g"),
        || c.a.probe.release(),
        async |last: &str| {
            let (resp, at) = c.send(c.get(&sid).header("last-event-id", last)).await;
            assert_eq!(at, 1, "the resumption reaches the other instance");
            resp
        },
    )
    .await;
    assert_eq!(got, want, "resumed on the other instance");
}
both_stores!(a_post_stream_resumes_on_the_other_instance);

/// A `gate` call with a progress token (its first event is a progress notification).
fn gate_call() -> Value {
    let mut body = tool_call(4, "gate", json!({"tag": "g"}));
    body["params"]["_meta"] = json!({"progressToken": "g"});
    body
}

/// What a `gate` call answers once released.
fn gate_done() -> Value {
    json!({"jsonrpc": "2.0", "id": 4, "result": {"content": [{"type": "text", "text": "gate done"}]}})
}

/// The in-memory event log, except that appends to POST streams wait until `open`: the instance
/// running a call writes each event to its client, then mirrors it, and here the mirror lags.
struct LaggingLog {
    inner: MemoryEventLog,
    open: watch::Sender<bool>,
}

impl EventLog for LaggingLog {
    fn append<'a>(&'a self, key: &'a StreamKey, frame: &'a [u8], capacity: usize) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            if key.stream != 0 {
                let _ = self.open.subscribe().wait_for(|open| *open).await;
            }
            self.inner.append(key, frame, capacity).await
        })
    }

    fn allocate<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, u64> {
        self.inner.allocate(key)
    }

    fn after<'a>(&'a self, key: &'a StreamKey, cursor: u64) -> StoreFuture<'a, Replay> {
        self.inner.after(key, cursor)
    }

    fn delete_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.inner.delete_session(session)
    }
}

/// A POST stream resumed on the other instance before the instance running the call has stored
/// the event the client names: the resumption opens at once, waits for the log (here a second,
/// well past how long it once waited before answering 204) and carries the rest of the call.
#[tokio::test]
async fn a_post_stream_resumed_ahead_of_its_log_waits_for_it() {
    super::bounded_for(30, async {
        let log = Arc::new(LaggingLog {
            inner: MemoryEventLog::new(),
            open: watch::Sender::new(false),
        });
        let store = Store {
            events: log.clone(),
            ..Store::memory()
        };
        let c = Cluster::start(Backend::Memory(store.clone()), store, None, Arc::new(|_| config())).await;
        let sid = c.initialize_on(0, LEGACY).await;
        c.steer(0).await;
        let got = resume_post_stream(
            c.legacy(&sid, LEGACY, gate_call()),
            || c.a.probe.saw("gate:start:g"),
            || {
                c.a.probe.release();
                let log = log.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    log.open.send_replace(true);
                });
            },
            async |last: &str| {
                let (resp, at) = c.send(c.get(&sid).header("last-event-id", last)).await;
                assert_eq!(at, 1, "the resumption reaches the other instance");
                resp
            },
        )
        .await;
        assert_eq!(got, (StatusCode::OK, vec![gate_done()]));
    })
    .await;
}

/// A POST stream resumed on the other instance after its call ended there: the log holds the
/// reply and the end, and the resumption carries the reply.
async fn a_post_stream_resumed_after_its_call_ended(c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    c.steer(0).await;
    let got = resume_post_stream(
        c.legacy(&sid, LEGACY, gate_call()),
        || c.a.probe.saw("gate:start:g"),
        || {},
        async |last: &str| {
            c.a.probe.release();
            let (number, seq) = last.split_once('-').expect("a POST stream event id");
            let key = StreamKey {
                session: sid.clone(),
                stream: number.parse().expect("a stream number"),
            };
            let cursor: u64 = seq.parse().expect("a sequence number");
            // The reply and the end marker are stored.
            for _ in 0..200 {
                if let Ok(Replay::From(events)) = c.store.events.after(&key, cursor).await
                    && events.iter().any(|(_, frame)| frame.is_empty())
                {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let (resp, at) = c.send(c.get(&sid).header("last-event-id", last)).await;
            assert_eq!(at, 1, "the resumption reaches the other instance");
            resp
        },
    )
    .await;
    assert_eq!(got, (StatusCode::OK, vec![gate_done()]));
}
both_stores!(a_post_stream_resumed_after_its_call_ended);
