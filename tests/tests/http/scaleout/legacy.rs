//! The legacy era across instances: one session used on both, GET streams hearing the other
//! instance, server-to-client requests answered through the other instance, cancellation,
//! DELETE (`Last-Event-ID` resumption is in `resume.rs`).

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use super::tools::{Probe, noop};
use super::{
    Cluster, LEGACY, assert_ends, assert_quiet, eventually, init, next_message, request, tool_call, tools_changed,
    within,
};
use crate::support::{Resp, Server, tool};

const URI: &str = "test://doc";
const UNKNOWN: &str = "mcp_00000000000000000000000000000000";

/// A single process with the same catalog and no store: what the cluster must answer like.
pub(crate) struct Reference {
    pub(crate) server: Server,
    pub(crate) probe: Arc<Probe>,
}

impl Reference {
    pub(crate) async fn start() -> Reference {
        let probe = Arc::new(Probe::default());
        let engine = mcp_tests::engine::memory(super::config(), super::tools::registry(&probe));
        Reference {
            server: Server::serve_engine(engine, HttpConfig::default()).await,
            probe,
        }
    }

    pub(crate) async fn initialize(&self, revision: &str) -> String {
        let resp = self.server.post(init(revision)).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let sid = resp.header("mcp-session-id").expect("a session id").to_owned();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = self.post(&sid, revision, initialized).send().await;
        assert_eq!(ack.status, StatusCode::ACCEPTED);
        sid
    }

    pub(crate) fn post(&self, sid: &str, revision: &str, body: Value) -> crate::support::Req {
        self.server
            .post(body)
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", revision)
    }
}

/// Status and JSON body of an answer.
async fn answer(resp: Resp) -> (StatusCode, Value) {
    let status = resp.status;
    (status, resp.json().await)
}

/// Scenario 1: `initialize` lands on A, then every request alternates A/B/A/B with the same
/// `Mcp-Session-Id`, each answered as a single process answers it; an unknown session is 404
/// on both instances.
async fn sessions_alternate(c: Cluster) {
    let reference = Reference::start().await;
    for revision in [LEGACY, "2025-06-18"] {
        let sid = c.initialize_on(0, revision).await;
        let rsid = reference.initialize(revision).await;
        for k in 0..6i64 {
            let id = 10 + k;
            let body = match k % 3 {
                0 => request(id, "tools/list", json!({})),
                1 => tool_call(id, "echo", json!({"n": k})),
                _ => request(id, "ping", json!({})),
            };
            let (resp, at) = c.send(c.legacy(&sid, revision, body.clone())).await;
            assert_eq!(at, (k % 2) as usize, "{revision}: request {k} alternates");
            let got = answer(resp).await;
            let want = answer(reference.post(&rsid, revision, body).send().await).await;
            assert_eq!(got.0, StatusCode::OK, "{revision}: request {k}: {}", got.1);
            assert!(got.1.get("error").is_none(), "{revision}: request {k}: {}", got.1);
            assert_eq!(
                got, want,
                "{revision}: request {k} on instance {at} answers as one process"
            );
        }
        let (ping, _) = c.send(c.legacy(&sid, revision, request(30, "ping", json!({})))).await;
        assert_eq!(ping.json().await, json!({"jsonrpc": "2.0", "id": 30, "result": {}}));

        let not_found = json!({"jsonrpc": "2.0", "id": 50, "error": {"code": -32001, "message": "Session not found"}});
        let want = answer(
            reference
                .post(UNKNOWN, revision, request(50, "tools/list", json!({})))
                .send()
                .await,
        )
        .await;
        assert_eq!(want, (StatusCode::NOT_FOUND, not_found.clone()), "a single process");
        let mut seen = Vec::new();
        for _ in 0..2 {
            let (resp, at) = c
                .send(c.legacy(UNKNOWN, revision, request(50, "tools/list", json!({}))))
                .await;
            assert_eq!(
                answer(resp).await,
                want,
                "{revision}: an unknown session on instance {at}"
            );
            seen.push(at);
        }
        assert_ne!(seen[0], seen[1], "asked on both instances");
    }
    assert!(c.a.replica(UNKNOWN).is_none() && c.b.replica(UNKNOWN).is_none());
    drop(reference.probe);
    c.assert_both_used();
}
both_stores!(sessions_alternate);

/// Scenario 2: the GET stream held by one instance carries the resource updates and list changes
/// raised on the other (directly on its registry, and by a tool call served there), each once.
async fn get_stream_hears_the_other_instance(c: Cluster) {
    for holder in [0, 1] {
        let other = 1 - holder;
        let sid = c.initialize_on(holder, LEGACY).await;
        let (mut sse, _) = c.open_get(holder, &sid).await;

        let subscribe = request(2, "resources/subscribe", json!({"uri": URI}));
        let resp = c.send_to(other, c.legacy(&sid, LEGACY, subscribe)).await;
        assert_eq!(resp.json().await, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        // Written through and announced: the holder's replica learns the subscription.
        let h = c.instance(holder);
        eventually("the holder's replica is subscribed", || {
            h.replica(&sid).is_some_and(|s| s.is_subscribed(URI))
        })
        .await;

        let o = c.instance(other);
        o.registry.notify_resource_updated("test://not-subscribed");
        o.registry.notify_resource_updated(URI);
        let (_, e) = next_message(&mut sse, "resource update raised on the other instance").await;
        assert_eq!(
            e,
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": URI}})
        );
        assert_quiet(&mut sse, "one update, and none for an unsubscribed URI").await;

        o.registry
            .add_tool(tool(&format!("added_on_{other}"), json!({"type": "object"}), noop));
        let (_, e) = next_message(&mut sse, "list change raised on the other instance").await;
        assert_eq!(e, tools_changed());
        assert_quiet(&mut sse, "one list change for one change").await;

        let resp = c
            .send_to(other, c.legacy(&sid, LEGACY, tool_call(3, "trigger", json!({}))))
            .await;
        let body = resp.json().await;
        assert_eq!(body["result"]["content"][0]["text"], "added dynamic_0", "{body}");
        let (_, e) = next_message(&mut sse, "list change of a call served by the other instance").await;
        assert_eq!(e, tools_changed());
        assert_quiet(&mut sse, "one list change for one call").await;
    }
    c.assert_both_used();
}
both_stores!(get_stream_hears_the_other_instance);

/// Scenario 4: a tool's `sampling/createMessage` and `elicitation/create` travel on the call's
/// stream (held by the instance running it); the client's answer reaches the other instance,
/// and the tool completes with it.
async fn client_answers_reach_the_running_instance(c: Cluster) {
    let sid = c.initialize_on(0, LEGACY).await;
    let cases = [
        (
            "sample",
            "sampling/createMessage",
            json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}),
            "LLM said: hello",
        ),
        (
            "elicit",
            "elicitation/create",
            json!({"action": "accept", "content": {"name": "Ann"}}),
            "elicited: Ann",
        ),
    ];
    let mut id = 1;
    for runner in [0, 1] {
        for (name, method, result, text) in &cases {
            id += 1;
            let resp = c
                .send_to(runner, c.legacy(&sid, LEGACY, tool_call(id, name, json!({}))))
                .await;
            assert_eq!(resp.status, StatusCode::OK);
            let mut sse = resp.sse();
            let (_, req) = next_message(&mut sse, "the server-to-client request").await;
            assert_eq!(req["method"], *method, "{req}");
            let s2c = req["id"].as_str().expect("a string id").to_owned();
            let prefix = format!("s2c-{}-", c.instance(runner).id);
            assert!(s2c.starts_with(&prefix), "the id names the instance: {s2c} ({prefix})");

            let reply = json!({"jsonrpc": "2.0", "id": s2c, "result": result});
            let (posted, at) = c.send(c.legacy(&sid, LEGACY, reply)).await;
            assert_eq!(at, 1 - runner, "the answer reaches the other instance");
            assert_eq!(posted.status, StatusCode::ACCEPTED);

            let (_, last) = next_message(&mut sse, "the call's response").await;
            assert_eq!(
                last,
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}}),
                "{name} on instance {runner}"
            );
            assert_ends(
                &mut sse,
                Duration::from_secs(2),
                "the call stream ends with its response",
            )
            .await;
        }
    }
    c.assert_both_used();
}
both_stores!(client_answers_reach_the_running_instance);

/// What a `hold` call answers once cancelled: the status and the body (JSON mode), or the SSE
/// events after the progress notification (streaming mode).
#[derive(Debug, PartialEq)]
enum Cancelled {
    Json(StatusCode, Vec<u8>),
    Stream(StatusCode, Vec<Value>),
}

/// Runs `hold` (id 9, tag `tag`), waits for `started`, sends `notifications/cancelled` with
/// `cancel`, then waits for `cancelled` and returns what the call answered.
async fn hold_then_cancel(
    call: crate::support::Req,
    streaming: bool,
    started: impl Fn() -> bool,
    cancel: impl AsyncFnOnce() -> StatusCode,
    cancelled: impl Fn() -> bool,
) -> Cancelled {
    if streaming {
        let resp = call.send().await;
        let status = resp.status;
        let mut sse = resp.sse();
        let (_, progress) = next_message(&mut sse, "the progress notification").await;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        eventually("the handler runs", &started).await;
        assert_eq!(cancel().await, StatusCode::ACCEPTED);
        eventually("the handler observes its token", &cancelled).await;
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some(e) = sse.next().await {
                if !e.data.is_empty() {
                    rest.push(e.json());
                }
            }
        })
        .await;
        assert!(ended.is_ok(), "the cancelled call's stream ends: {rest:?}");
        Cancelled::Stream(status, rest)
    } else {
        let running = tokio::spawn(call.send());
        eventually("the handler runs", &started).await;
        assert_eq!(cancel().await, StatusCode::ACCEPTED);
        eventually("the handler observes its token", &cancelled).await;
        let resp = within("the cancelled call answers", running)
            .await
            .expect("the call task");
        let status = resp.status;
        Cancelled::Json(status, resp.bytes().await.to_vec())
    }
}

/// Scenario 5: `notifications/cancelled` reaching the instance that does not run the call
/// cancels it there (the handler observes its token), and the call answers as it does in a
/// single process.
async fn cancellation_reaches_the_running_instance(c: Cluster) {
    let reference = Reference::start().await;
    let sid = c.initialize_on(0, LEGACY).await;
    let rsid = reference.initialize(LEGACY).await;
    let cancel_body = |id: i64| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "test"}});
    for (n, streaming) in [false, true].into_iter().enumerate() {
        let id = 9 + n as i64;
        let tag = format!("t{id}");
        let mut body = tool_call(id, "hold", json!({"tag": tag}));
        if streaming {
            body["params"]["_meta"] = json!({"progressToken": tag});
        }
        let (start, stop) = (format!("hold:start:{tag}"), format!("hold:{tag}"));

        let want = hold_then_cancel(
            reference.post(&rsid, LEGACY, body.clone()),
            streaming,
            || reference.probe.saw(&start),
            async || reference.post(&rsid, LEGACY, cancel_body(id)).send().await.status,
            || reference.probe.cancelled(&stop),
        )
        .await;
        // A single process: an empty 200 (JSON mode), or a stream that ends without a result.
        let silent = match streaming {
            false => Cancelled::Json(StatusCode::OK, Vec::new()),
            true => Cancelled::Stream(StatusCode::OK, Vec::new()),
        };
        assert_eq!(want, silent, "a single process");

        for runner in [0, 1] {
            let other = 1 - runner;
            let id = id + 10 * (runner as i64 + 1);
            let tag = format!("t{id}");
            let mut body = tool_call(id, "hold", json!({"tag": tag}));
            if streaming {
                body["params"]["_meta"] = json!({"progressToken": tag});
            }
            let (start, stop) = (format!("hold:start:{tag}"), format!("hold:{tag}"));
            c.steer(runner).await;
            let r = c.instance(runner);
            let got = hold_then_cancel(
                c.legacy(&sid, LEGACY, body),
                streaming,
                || r.probe.saw(&start),
                async || {
                    // The call's request was counted when it arrived: the next goes to the other.
                    let (resp, at) = c.send(c.legacy(&sid, LEGACY, cancel_body(id))).await;
                    assert_eq!(at, other, "the cancellation reaches the other instance");
                    resp.status
                },
                || r.probe.cancelled(&stop),
            )
            .await;
            assert!(
                !c.instance(other).probe.saw(&start),
                "the call ran on instance {runner} only"
            );
            assert_eq!(
                got, want,
                "streaming {streaming}, run on {runner}: answered as one process"
            );
        }
    }
    c.assert_both_used();
}
both_stores!(cancellation_reaches_the_running_instance);

/// Scenario 9: DELETE served by one instance ends the GET stream the other holds, and the
/// session is gone on both.
async fn delete_ends_the_session_everywhere(c: Cluster) {
    for holder in [0, 1] {
        let other = 1 - holder;
        let sid = c.initialize_on(holder, LEGACY).await;
        let (mut sse, _) = c.open_get(holder, &sid).await;
        // Both instances hold a replica before the DELETE.
        let resp = c
            .send_to(other, c.legacy(&sid, LEGACY, request(2, "ping", json!({}))))
            .await;
        assert_eq!(resp.status, StatusCode::OK);

        let del = c
            .send_to(other, c.client.req(Method::DELETE).header("mcp-session-id", &sid))
            .await;
        assert_eq!(del.status, StatusCode::NO_CONTENT);
        assert_ends(&mut sse, Duration::from_secs(2), "the GET stream on the other instance").await;

        let mut seen = Vec::new();
        for _ in 0..2 {
            let (resp, at) = c
                .send(c.legacy(&sid, LEGACY, request(3, "tools/list", json!({}))))
                .await;
            assert_eq!(resp.status, StatusCode::NOT_FOUND, "after DELETE, on instance {at}");
            let body = resp.json().await;
            assert_eq!(body["error"]["code"], -32001, "{body}");
            seen.push(at);
        }
        assert_ne!(seen[0], seen[1]);
        for _ in 0..2 {
            let (resp, at) = c.send(c.get(&sid)).await;
            assert_eq!(resp.status, StatusCode::NOT_FOUND, "a GET stream after DELETE, on {at}");
            let (resp, at) = c
                .send(c.client.req(Method::DELETE).header("mcp-session-id", &sid))
                .await;
            assert_eq!(resp.status, StatusCode::NOT_FOUND, "DELETE again, on {at}");
        }
        eventually("no replica left", || {
            c.a.replica(&sid).is_none() && c.b.replica(&sid).is_none()
        })
        .await;
    }
    c.assert_both_used();
}
both_stores!(delete_ends_the_session_everywhere);

/// Scenario 9, at once: once DELETE is answered (on B), the session is gone on A too: the very
/// next request, served by A, is 404 (20 rounds, as the race is narrow).
async fn delete_is_seen_at_once_everywhere(c: Cluster) {
    for round in 0..20 {
        let sid = c.initialize_on(0, LEGACY).await;
        let del = c
            .send_to(1, c.client.req(Method::DELETE).header("mcp-session-id", &sid))
            .await;
        assert_eq!(del.status, StatusCode::NO_CONTENT);
        let (resp, at) = c.send(c.legacy(&sid, LEGACY, request(3, "ping", json!({})))).await;
        assert_eq!(at, 0);
        let status = resp.status;
        let body = resp.json().await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "round {round}: A served a deleted session: {body}"
        );
    }
}
both_stores!(delete_is_seen_at_once_everywhere, 20);

/// Scenario 2, at once: once `resources/subscribe` is answered (on B), an update raised at once
/// reaches the GET stream held by A (30 rounds, as the race is narrow).
async fn a_subscription_holds_once_answered(c: Cluster) {
    for round in 0..30 {
        let sid = c.initialize_on(0, LEGACY).await;
        let (mut sse, _) = c.open_get(0, &sid).await;
        let subscribe = request(2, "resources/subscribe", json!({"uri": URI}));
        let resp = c.send_to(1, c.legacy(&sid, LEGACY, subscribe)).await;
        assert_eq!(resp.status, StatusCode::OK);
        c.b.registry.notify_resource_updated(URI);
        let got = sse.next_within(Duration::from_secs(2)).await;
        assert!(
            got.is_some(),
            "round {round}: the update raised right after the subscription was lost"
        );
    }
}
both_stores!(a_subscription_holds_once_answered, 40);

/// A URL-mode elicitation made on one instance is completed through the other (where the
/// application's callback landed): `notifications/elicitation/complete` reaches the session's
/// GET stream, once; another principal's completion is not found on either instance.
async fn url_elicitation_completes_from_any_instance(c: Cluster) {
    use mcp_runtime::ElicitationError::NotFound;
    let sid = c.initialize_on(0, LEGACY).await;
    let (mut stream, _) = c.open_get(1, &sid).await;
    for runner in [0, 1] {
        let id = 30 + runner as i64;
        let resp = c
            .send_to(runner, c.legacy(&sid, LEGACY, tool_call(id, "sign_in", json!({}))))
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut call = resp.sse();
        let (_, ask) = next_message(&mut call, "the URL elicitation").await;
        assert_eq!(ask["params"]["mode"], "url", "{ask}");
        let el = ask["params"]["elicitationId"]
            .as_str()
            .expect("an elicitationId")
            .to_owned();
        let accept = json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}});
        let (posted, _) = c.send(c.legacy(&sid, LEGACY, accept)).await;
        assert_eq!(posted.status, StatusCode::ACCEPTED);
        let (_, done) = next_message(&mut call, "the call's answer").await;
        assert_eq!(done["result"]["content"][0]["text"], el.as_str(), "{done}");

        let (here, there) = (&c.instance(runner).engine, &c.instance(1 - runner).engine);
        assert_eq!(there.complete_elicitation(&el, "mallory").await, Err(NotFound));
        assert_eq!(here.complete_elicitation(&el, "mallory").await, Err(NotFound));
        assert_eq!(there.complete_elicitation(&el, super::ANONYMOUS).await, Ok(()));
        let (_, note) = next_message(&mut stream, "the completion on the GET stream").await;
        assert_eq!(
            note,
            json!({"jsonrpc": "2.0", "method": "notifications/elicitation/complete", "params": {"elicitationId": el}})
        );
        for (at, runtime) in [("eliciting", here), ("other", there)] {
            assert_eq!(
                runtime.complete_elicitation(&el, super::ANONYMOUS).await,
                Err(NotFound),
                "completed once ({at} instance)"
            );
        }
        assert_quiet(&mut stream, "one completion").await;
    }
}
both_stores!(url_elicitation_completes_from_any_instance);
