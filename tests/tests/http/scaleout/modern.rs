//! The modern era across instances: an MRTR retry served by the other instance (the request
//! state sealed with the shared key), and `subscriptions/listen` hearing the other instance.

use http::StatusCode;
use serde_json::{Value, json};

use super::tools::noop;
use super::{Cluster, assert_quiet, next_message};
use crate::support::tool;

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// `requestState` with one character in its middle changed.
fn tamper(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    let mid = chars.len() / 2;
    chars[mid] = if chars[mid] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// Scenario 6: a handler's `input_required` on one instance, the retry (with its
/// `requestState`) on the other, which opens the state and completes; a tampered state is
/// -32602 on both.
async fn mrtr_retry_on_the_other_instance(c: Cluster) {
    for first in [0, 1] {
        let who = format!("w{first}");
        let params = json!({"name": "ask", "arguments": {"who": who}});
        let resp = c
            .send_to(first, c.modern(1, "tools/call", Some("ask"), params.clone(), false))
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        assert!(
            resp.header("mcp-session-id").is_none(),
            "modern answers name no session"
        );
        let body = resp.json().await;
        let result = &body["result"];
        assert_eq!(result["resultType"], "input_required", "{body}");
        assert_eq!(
            result["inputRequests"]["name"]["method"], "elicitation/create",
            "{body}"
        );
        let state = result["requestState"].as_str().expect("a requestState").to_owned();

        let mut retry = params.clone();
        retry["inputResponses"] = json!({"name": {"action": "accept", "content": {"name": "Ann"}}});
        retry["requestState"] = json!(state);
        let (resp, at) = c
            .send(c.modern(2, "tools/call", Some("ask"), retry.clone(), false))
            .await;
        assert_eq!(at, 1 - first, "the retry reaches the other instance");
        assert_eq!(resp.status, StatusCode::OK);
        let body = resp.json().await;
        assert_eq!(body["id"], 2, "{body}");
        assert_eq!(body["result"]["resultType"], "complete", "{body}");
        assert_eq!(
            body["result"]["content"],
            json!([{"type": "text", "text": format!("hello Ann (state {who})")}]),
            "{body}"
        );
        assert!(body["result"].get("requestState").is_none(), "{body}");

        retry["requestState"] = json!(tamper(&state));
        let mut answers: Vec<(StatusCode, Value)> = Vec::new();
        let mut seen = Vec::new();
        for _ in 0..2 {
            let (resp, at) = c
                .send(c.modern(3, "tools/call", Some("ask"), retry.clone(), false))
                .await;
            seen.push(at);
            answers.push((resp.status, resp.json().await));
        }
        assert_ne!(seen[0], seen[1], "asked on both instances");
        assert_eq!(answers[0], answers[1], "both instances answer a tampered state alike");
        let body = &answers[0].1;
        assert_eq!(body["id"], 3, "{body}");
        assert_eq!(
            body["error"],
            json!({"code": -32602, "message": "Invalid requestState"}),
            "{body}"
        );
    }
    c.assert_both_used();
}
both_stores!(mrtr_retry_on_the_other_instance);

/// `subscriptions/listen` for tool list changes on instance `at`, past its acknowledgement.
async fn listen_on(c: &Cluster, at: usize, id: i64) -> crate::support::Sse {
    let params = json!({"notifications": {"toolsListChanged": true}});
    let resp = c
        .send_to(at, c.modern(id, "subscriptions/listen", None, params, false))
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    let mut sse = resp.sse();
    let (_, ack) = next_message(&mut sse, "the acknowledgement").await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true}),
        "{ack}"
    );
    sse
}

/// `notifications/tools/list_changed` on the listen stream of subscription `id`.
fn changed(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUBSCRIPTION_ID: id}}})
}

/// Scenario 8: a `subscriptions/listen` stream held by one instance hears the list changes
/// raised on the other (on its registry, and by a tool call served there), once each. Both
/// instances have served a request before (see `an_idle_instance_announces_its_changes`).
async fn listen_hears_the_other_instance(c: Cluster) {
    for at in [0, 1] {
        c.steer(at).await;
        let (resp, _) = c.send(c.modern(0, "server/discover", None, json!({}), false)).await;
        assert_eq!(resp.status, StatusCode::OK);
    }
    for holder in [0, 1] {
        let other = 1 - holder;
        let mut sse = listen_on(&c, holder, 5).await;

        c.instance(other)
            .registry
            .add_tool(tool(&format!("added_on_{other}"), json!({"type": "object"}), noop));
        let (_, e) = next_message(&mut sse, "a change raised on the other instance").await;
        assert_eq!(e, changed(5));
        assert_quiet(&mut sse, "one notification per change").await;

        let call = json!({"name": "trigger", "arguments": {}});
        let resp = c
            .send_to(other, c.modern(6, "tools/call", Some("trigger"), call, false))
            .await;
        let body = resp.json().await;
        let text = body["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("added dynamic_"), "{body}");
        let (_, e) = next_message(&mut sse, "a change of a call served by the other instance").await;
        assert_eq!(e, changed(5));
        assert_quiet(&mut sse, "one notification per call").await;
    }
    c.assert_both_used();
}
both_stores!(listen_hears_the_other_instance);

/// Scenario 8, an instance that has not served a request yet: a tool added to its registry
/// (as a deployment does from its configuration source) must still be announced on the other
/// instances' streams.
async fn an_idle_instance_announces_its_changes(c: Cluster) {
    // The cluster's first request: B has served nothing.
    let mut sse = listen_on(&c, 0, 7).await;
    assert_eq!(c.proxy.counts(), vec![1, 0], "B is idle");
    c.b.registry
        .add_tool(tool("added_on_idle_b", json!({"type": "object"}), noop));
    let (_, e) = next_message(&mut sse, "a change raised on an idle instance").await;
    assert_eq!(e, changed(7));
    assert_quiet(&mut sse, "one notification per change").await;
}
both_stores!(an_idle_instance_announces_its_changes, 20);
