//! The small examples serve what they say: `http_minimal` and `shared_state` are served
//! in-process (their `server()`, on a free port, as their `main` does) and answer real HTTP
//! requests in both eras; `elicitation`'s tool is driven by the in-process test client.

#![cfg(feature = "http")]

use std::time::Duration;

use mcp_server::HttpConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

#[allow(dead_code)]
#[path = "../examples/http_minimal.rs"]
mod http_minimal;

#[allow(dead_code)]
#[path = "../examples/shared_state.rs"]
mod shared_state;

#[allow(dead_code)]
#[path = "../examples/elicitation.rs"]
mod elicitation;

/// A server on a free loopback port; cancel the token to stop it.
struct Running {
    addr: std::net::SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn start(server: mcp_server::McpServer) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let stop = CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(async move {
            server
                .serve_http_on(listener, HttpConfig::default(), token)
                .await
                .expect("serves");
        });
        Running { addr, stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("stops in time")
            .expect("the server task ends");
    }

    /// POSTs `body` to `/mcp` with `headers`; the status, the response headers (lowercase
    /// names) and the JSON-RPC message of the answer (from JSON or the last SSE `data:`).
    async fn post(&self, headers: &[(&str, &str)], body: &Value) -> (u16, Vec<(String, String)>, Option<Value>) {
        let body = body.to_string();
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(&body);

        let mut stream = tokio::net::TcpStream::connect(self.addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut raw = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
            .await
            .expect("answered in time")
            .expect("read");
        parse_response(&String::from_utf8_lossy(&raw))
    }
}

fn parse_response(raw: &str) -> (u16, Vec<(String, String)>, Option<Value>) {
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let body = if header("transfer-encoding") == Some("chunked") {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let message = if header("content-type").is_some_and(|c| c.starts_with("text/event-stream")) {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .rfind(|m: &Value| m.get("id").is_some())
    } else {
        serde_json::from_str(&body).ok()
    };
    (status, headers, message)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A 2026-07-28 `tools/call` with its `_meta` and `Mcp-*` headers; the result.
async fn modern_call(server: &Running, id: u64, tool: &str, arguments: Value) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": modern_meta()}
    });
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    let (status, _, message) = server.post(&headers, &body).await;
    assert_eq!(status, 200, "{message:?}");
    message.expect("a response")["result"].clone()
}

#[tokio::test]
async fn http_minimal_adds_in_both_eras() {
    let server = Running::start(http_minimal::server().expect("builds")).await;

    // Legacy: initialize, the session id, notifications/initialized, tools/call.
    let init = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    });
    let (status, headers, message) = server.post(&[], &init).await;
    assert_eq!(status, 200);
    assert_eq!(
        message.expect("a response")["result"]["serverInfo"]["name"],
        "http-minimal"
    );
    let session = headers
        .iter()
        .find(|(n, _)| n == "mcp-session-id")
        .map(|(_, v)| v.clone())
        .expect("a session id");
    let legacy = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, _, _) = server
        .post(
            &legacy,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
    assert_eq!(status, 202);
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 2, "b": 3}}
    });
    let (status, _, message) = server.post(&legacy, &call).await;
    assert_eq!(status, 200);
    assert_eq!(
        message.expect("a response")["result"]["content"],
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
        "params": {"uri": "notes://1", "_meta": modern_meta()}
    });
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "resources/read"),
        ("Mcp-Name", "notes://1"),
    ];
    let (status, _, message) = server.post(&headers, &read).await;
    assert_eq!(status, 200);
    let contents = &message.expect("a response")["result"]["contents"][0];
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
