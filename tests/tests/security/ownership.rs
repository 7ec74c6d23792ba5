//! Ownership across two bearer principals: sessions on POST, GET, DELETE and
//! `Last-Event-ID` replay, client responses, MRTR request states, and URL
//! elicitations. Another principal's state always answers as absent.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_runtime::{ElicitationError, ServerConfig};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::fixture::{bearer, bearer_server, by, modern_by, rpc, server_with, session};
use crate::support::{bounded, list};

#[tokio::test]
async fn sessions_answer_another_principal_like_unknown_ids() {
    bounded(async {
        let s = bearer_server().await;
        let sid = session(&s, "alice", json!({})).await;
        let unknown = by(s.post(list(1)), "bob")
            .header("mcp-session-id", "mcp_00000000000000000000000000000000")
            .send()
            .await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
        let unknown = unknown.json().await;
        let as_bob = |r: crate::support::Req| by(r, "bob").header("mcp-session-id", &sid);

        let post = as_bob(s.post(list(1))).send().await;
        assert_eq!(post.status, StatusCode::NOT_FOUND);
        assert_eq!(post.json().await, unknown, "the same body as an unknown id");
        let get = as_bob(s.req(Method::GET))
            .header("accept", "text/event-stream")
            .send()
            .await;
        assert_eq!(get.status, StatusCode::NOT_FOUND);
        let delete = as_bob(s.req(Method::DELETE)).send().await;
        assert_eq!(delete.status, StatusCode::NOT_FOUND);

        // Replay: alice's stream has an event; bob resuming it is the same 404.
        let mut stream = by(s.req(Method::GET), "alice")
            .header("mcp-session-id", &sid)
            .header("accept", "text/event-stream")
            .send()
            .await
            .sse();
        let priming = stream.next().await.expect("priming event");
        let last = priming.id.expect("priming id");
        s.registry.remove_tool("whoami");
        let changed = stream.message().await.expect("list changed");
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        let replay = |who: &str| {
            by(s.req(Method::GET), who)
                .header("mcp-session-id", &sid)
                .header("accept", "text/event-stream")
                .header("last-event-id", &last)
        };
        let stolen = replay("bob").send().await;
        assert_eq!(stolen.status, StatusCode::NOT_FOUND);
        let mut mine = replay("alice").send().await.sse();
        let replayed = mine.message().await.expect("replayed event");
        assert_eq!(replayed["method"], "notifications/tools/list_changed");

        // The owner still has the session, and deletes it.
        let ok = by(s.post(list(2)), "alice").header("mcp-session-id", &sid).send().await;
        assert_eq!(ok.status, StatusCode::OK);
        let deleted = by(s.req(Method::DELETE), "alice")
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    })
    .await;
}

#[tokio::test]
async fn client_responses_of_another_principal_are_dropped() {
    bounded(async {
        let s = bearer_server().await;
        let sid = session(&s, "alice", json!({"sampling": {}})).await;
        let call = rpc(1, "tools/call", json!({"name": "sample", "arguments": {}}));
        let mut stream = by(s.post(call), "alice")
            .header("mcp-session-id", &sid)
            .send()
            .await
            .sse();
        let req = stream.message().await.expect("sampling request");
        assert_eq!(req["method"], "sampling/createMessage");
        let answer = |text: &str| {
            json!({"jsonrpc": "2.0", "id": req["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}})
        };
        let forged = by(s.post(answer("forged")), "bob")
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(forged.status, StatusCode::ACCEPTED, "no oracle: the same 202");
        assert!(stream.next_within(Duration::from_millis(200)).await.is_none());
        let real = by(s.post(answer("real")), "alice")
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(real.status, StatusCode::ACCEPTED);
        let reply = stream.message().await.expect("reply");
        assert_eq!(reply["result"]["content"][0]["text"], "said \"real\"");
    })
    .await;
}

#[tokio::test]
async fn request_states_are_sealed_with_the_principal() {
    bounded(async {
        let s = bearer_server().await;
        let caps = json!({"elicitation": {}});
        let first = modern_by(
            &s,
            "alice",
            1,
            "tools/call",
            json!({"name": "asks", "arguments": {}}),
            caps.clone(),
        );
        let r = first.send().await;
        assert_eq!(r.status, StatusCode::OK);
        let body = r.json().await;
        assert_eq!(body["result"]["resultType"], "input_required", "{body}");
        let state = body["result"]["requestState"]
            .as_str()
            .expect("requestState")
            .to_owned();
        let send = |who: &str, id: i64| {
            let params = json!({"name": "asks", "arguments": {}, "requestState": state,
                "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}});
            modern_by(&s, who, id, "tools/call", params, caps.clone()).send()
        };
        let stolen = send("bob", 2).await;
        let e = stolen.json().await;
        assert_eq!(e["error"]["code"], -32602, "{e}");
        assert_eq!(e["error"]["message"], "Invalid requestState");
        let mine = send("alice", 3).await.json().await;
        assert_eq!(mine["result"]["content"][0]["text"], "hello Ada", "{mine}");
    })
    .await;
}

/// The `elicitation/create` a `connect` call sends, answered by `who` with `accept`; the call's
/// result text (the elicitation id).
async fn connect(s: &crate::support::Server, who: &str, sid: &str) -> Result<String, Value> {
    let call = rpc(7, "tools/call", json!({"name": "connect", "arguments": {}}));
    let resp = by(s.post(call), who).header("mcp-session-id", sid).send().await;
    if resp.header("content-type") == Some("application/json") {
        return Err(resp.json().await);
    }
    let mut stream = resp.sse();
    let req = stream.message().await.expect("elicitation request");
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["mode"], "url");
    let id = req["params"]["elicitationId"]
        .as_str()
        .expect("elicitationId")
        .to_owned();
    assert!(id.starts_with("el_") && id.len() == 35, "{id}");
    let answer = json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept"}});
    let ack = by(s.post(answer), who).header("mcp-session-id", sid).send().await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    let reply = stream.message().await.expect("reply");
    assert_eq!(reply["result"]["content"][0]["text"], id.as_str());
    Ok(id)
}

#[tokio::test]
async fn url_elicitations_complete_on_the_initiating_session_of_the_owner_only() {
    bounded(async {
        let mut config = ServerConfig::default();
        config.max_elicitations_per_principal = 1;
        let s = server_with(config, HttpConfig::default().auth(Arc::new(bearer(&[])))).await;
        let caps = json!({"elicitation": {"form": {}, "url": {}}});
        let (first, second) = (
            session(&s, "alice", caps.clone()).await,
            session(&s, "alice", caps.clone()).await,
        );
        let open = |sid: &str| {
            by(s.req(Method::GET), "alice")
                .header("mcp-session-id", sid)
                .header("accept", "text/event-stream")
                .send()
        };
        let mut initiating = open(&first).await.sse();
        let mut other = open(&second).await.sse();
        initiating.next().await.expect("priming");
        other.next().await.expect("priming");

        let id = connect(&s, "alice", &first).await.expect("elicited");
        assert_eq!(s.engine.pending_elicitations("alice"), 1);
        // Over the per-principal bound the next URL elicitation is an error; bob has his own.
        let over = connect(&s, "alice", &second).await.expect_err("refused");
        assert_eq!(over["error"]["message"], "Too many pending URL elicitations", "{over}");
        let bob = session(&s, "bob", caps).await;
        let bobs = connect(&s, "bob", &bob).await.expect("bob elicits");

        assert_eq!(
            s.engine.complete_elicitation(&id, "bob").await,
            Err(ElicitationError::NotFound)
        );
        assert_eq!(
            s.engine.complete_elicitation(&bobs, "alice").await,
            Err(ElicitationError::NotFound)
        );
        assert_eq!(
            s.engine.complete_elicitation("el_unknown", "alice").await,
            Err(ElicitationError::NotFound)
        );
        assert_eq!(s.engine.complete_elicitation(&id, "alice").await, Ok(()));
        let done = initiating.message().await.expect("completion");
        assert_eq!(done["method"], "notifications/elicitation/complete");
        assert_eq!(done["params"], json!({"elicitationId": id}));
        assert!(
            other.next_within(Duration::from_millis(200)).await.is_none(),
            "only the initiating session hears of it"
        );
        assert_eq!(
            s.engine.complete_elicitation(&id, "alice").await,
            Err(ElicitationError::NotFound),
            "once"
        );
        assert_eq!(s.engine.pending_elicitations("alice"), 0);
    })
    .await;
}

#[tokio::test]
async fn url_elicitations_complete_on_the_stdio_session_too() {
    use mcp_transport_stdio::{StdioConfig, serve_io};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    bounded(async {
        let runtime = mcp_tests::engine::memory(ServerConfig::default(), crate::fixture::registry());
        let (mut input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, output) = tokio::io::duplex(64 * 1024);
        tokio::spawn(serve_io(runtime.clone(), StdioConfig::default(), server_in, server_out));
        let mut lines = BufReader::new(output).lines();
        let mut send = async |m: Value| {
            let mut line = m.to_string().into_bytes();
            line.push(b'\n');
            input.write_all(&line).await.expect("write");
        };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
            "clientInfo": {"name": "t", "version": "1"}});
        send(rpc(0, "initialize", init)).await;
        let mut recv = async || -> Value {
            let line = lines.next_line().await.expect("read").expect("open");
            serde_json::from_str(&line).expect("JSON")
        };
        assert_eq!(recv().await["id"], 0);
        send(rpc(1, "tools/call", json!({"name": "connect", "arguments": {}}))).await;
        let req = recv().await;
        let id = req["params"]["elicitationId"]
            .as_str()
            .expect("elicitationId")
            .to_owned();
        send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept"}})).await;
        assert_eq!(recv().await["result"]["content"][0]["text"], id.as_str());
        // stdio's principal is `anonymous`: another principal cannot complete it.
        assert_eq!(
            runtime.complete_elicitation(&id, "bob").await,
            Err(ElicitationError::NotFound)
        );
        assert_eq!(
            runtime.complete_elicitation(&id, mcp_protocol::auth::ANONYMOUS).await,
            Ok(())
        );
        let done = recv().await;
        assert_eq!(done["method"], "notifications/elicitation/complete");
        assert_eq!(done["params"]["elicitationId"], id.as_str());
    })
    .await;
}
