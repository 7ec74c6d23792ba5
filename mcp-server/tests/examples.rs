//! The small examples serve what they say: `http_minimal` and `shared_state` are served
//! in-process (their `server()`, on a free port, as their `main` does) and answer real HTTP
//! requests in both eras; `elicitation`'s tool is driven by the in-process test client.

#![cfg(feature = "http")]

use serde_json::{Value, json};
use support::{Running, init_params, modern_meta};

mod support;

#[allow(dead_code)]
#[path = "../examples/http_minimal.rs"]
mod http_minimal;

#[allow(dead_code)]
#[path = "../examples/shared_state.rs"]
mod shared_state;

#[allow(dead_code)]
#[path = "../examples/elicitation.rs"]
mod elicitation;

/// A 2026-07-28 `tools/call` with its `_meta` and `Mcp-*` headers; the result.
async fn modern_call(server: &Running, id: u64, tool: &str, arguments: Value) -> Value {
    let params = json!({"name": tool, "arguments": arguments});
    let answer = server.modern(id, "tools/call", params, json!({})).await;
    assert_eq!(answer.status, 200, "{:?}", answer.message);
    answer.message()["result"].clone()
}

#[tokio::test]
async fn http_minimal_adds_in_both_eras() {
    let server = Running::start(http_minimal::server().expect("builds")).await;

    // Legacy: initialize, the session id, notifications/initialized, tools/call.
    let (init, session) = server.legacy_handshake(init_params("2025-11-25")).await;
    assert_eq!(init.message()["result"]["serverInfo"]["name"], "http-minimal");
    let call = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    let answer = server.legacy(&session, 2, "tools/call", call).await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.message()["result"]["content"],
        json!([{"type": "text", "text": "5"}])
    );

    // Modern: no session, `_meta` and headers on the request.
    let result = modern_call(&server, 3, "add", json!({"a": 40, "b": 2})).await;
    assert_eq!(result["content"], json!([{"type": "text", "text": "42"}]));
    assert_eq!(result["resultType"], "complete");

    server.stop().await;
}

#[tokio::test]
async fn shared_state_keeps_reads_and_refuses_notes() {
    let server = Running::start(shared_state::server().expect("builds")).await;

    let added = modern_call(
        &server,
        1,
        "add_note",
        json!({"title": "Milk", "body": "Buy two litres."}),
    )
    .await;
    assert_eq!(added["content"][0]["text"], "note 1 saved");

    let note = modern_call(&server, 2, "get_note", json!({"id": 1})).await;
    assert_eq!(
        note["structuredContent"],
        json!({"id": 1, "title": "Milk", "body": "Buy two litres."})
    );

    // An unknown note is a tool error the model can read.
    let missing = modern_call(&server, 3, "get_note", json!({"id": 9})).await;
    assert_eq!(missing["isError"], true);
    assert_eq!(
        missing["content"][0]["text"],
        "there is no note 9: list_notes names them"
    );

    // The template resource reads the same state.
    let read = json!({
        "jsonrpc": "2.0", "id": 4, "method": "resources/read",
        "params": {"uri": "notes://1", "_meta": modern_meta(json!({}))}
    });
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "notes://1"),
    ];
    let answer = server.post(&headers, &read).await;
    assert_eq!(answer.status, 200);
    let contents = &answer.message()["result"]["contents"][0];
    assert_eq!(contents["text"], "# Milk\n\nBuy two litres.\n");

    server.stop().await;
}

#[tokio::test]
async fn elicitation_books_in_both_eras() {
    use mcp_server::Revision;
    use mcp_server::testing::accept;

    let server = elicitation::server().expect("builds");
    for (revision, number) in [(Revision::V2025_11_25, 1), (Revision::V2026_07_28, 2)] {
        let client = server
            .test_client()
            .revision(revision)
            .elicit_reply(accept(
                json!({"name": "Ada", "email": "ada@example.com", "people": 2, "time": "Late"}),
            ))
            .elicit_reply(accept(json!({"confirm": true})))
            .connect()
            .await
            .expect("connects");
        let call = client
            .call_tool_exchange("book_table", json!({"restaurant": "Chez Nous"}))
            .await
            .expect("answers");
        let text = serde_json::to_value(&call.result.content).expect("serializes")[0]["text"].clone();
        assert_eq!(
            text,
            format!("booking {number}: Chez Nous at 21:00 for 2 people; confirmation to ada@example.com"),
            "{revision:?}"
        );
        // Legacy: one run and two server-to-client requests; modern: three rounds, one number.
        assert_eq!(call.server_requests.len(), 2);
        assert_eq!(call.rounds, if revision == Revision::V2026_07_28 { 3 } else { 1 });
    }
}
