//! `mcp-client` against this library's `everything` server, as a real process: over Streamable
//! HTTP and over stdio, in each era (discovered, then pinned), with server requests answered by
//! the client's handlers, progress, timeouts and cancellation; and the faults of a child
//! process (killed, restarted, writing garbage or oversize lines).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, ClientError, Era, Restart, Revision, ServerCommand};
use mcp_protocol::model::Content;
use serde_json::{Value, json};

fn text(content: &[Content]) -> String {
    Content::text_of(content)
}

/// A builder whose handlers answer the fixture's elicitation and sampling tools.
fn builder() -> mcp_client::ClientBuilder {
    Client::builder()
        .name("client-suite")
        .version("1.0.0")
        .request_timeout(Duration::from_secs(20))
        .on_elicit(|_| async {
            Ok(json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}))
        })
        .on_sample(|params: Value| async move {
            let asked = params["messages"][0]["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": format!("echo {asked}")}, "model": "m"}))
        })
        .roots(vec![json!({"uri": "file:///work", "name": "work"})])
}

fn stdio_command() -> ServerCommand {
    ServerCommand::new(mcp_tests::fixture::everything()).arg("--stdio")
}

/// What every connection is checked for: the catalog, a plain call, a call that asks the
/// client (elicitation and sampling, through the era's own mechanism), and progress.
async fn exercise(client: &Client, era: Era) {
    assert_eq!(client.era(), era);
    assert!(client.server_info().is_some(), "the server names itself");
    let tools = client.list_tools().await.expect("tools/list");
    assert!(
        tools.iter().any(|t| t.name == "test_simple_text"),
        "{} tools",
        tools.len()
    );

    let r = client
        .call_tool("test_simple_text", json!({}))
        .await
        .expect("a plain call");
    assert!(!r.is_error);
    assert!(!text(&r.content).is_empty());

    let r = client
        .call_tool("test_elicitation", json!({"message": "who?"}))
        .await
        .expect("elicitation");
    let said = text(&r.content);
    assert!(
        said.contains("action=\"accept\"") && said.contains("ada@example.com"),
        "{said}"
    );

    let r = client
        .call_tool("test_sampling", json!({"prompt": "hello"}))
        .await
        .expect("sampling");
    assert_eq!(text(&r.content), "LLM response: echo hello");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let options =
        mcp_client::RequestOptions::default().on_progress(move |p| s.lock().unwrap().push(p["progress"].clone()));
    let r = client
        .call_tool_with("test_tool_with_progress", json!({}), options)
        .await
        .expect("progress");
    assert_eq!(text(&r.content), "Tool with progress completed");
    assert_eq!(*seen.lock().unwrap(), [json!(0.0), json!(50.0), json!(100.0)]);

    let prompts = client.list_prompts().await.expect("prompts/list");
    assert!(prompts.iter().any(|p| p.name == "test_simple_prompt"));
    let read = client
        .read_resource("test://static-text")
        .await
        .expect("resources/read");
    assert_eq!(read.contents.len(), 1);
    client.ping().await.expect("ping");
}

/// A slow call past its timeout fails with `Timeout`, is cancelled, and the connection serves
/// the next call.
async fn times_out_and_goes_on(client: &Client) {
    let options = mcp_client::RequestOptions::default().timeout(Duration::from_millis(300));
    let slow = client
        .call_tool_with("test_tool_slow", json!({"durationMs": 10_000}), options)
        .await;
    assert!(matches!(slow, Err(ClientError::Timeout(_))), "{slow:?}");
    let r = client
        .call_tool("test_tool_fast", json!({}))
        .await
        .expect("served after");
    assert_eq!(text(&r.content), "Fast response");
}

#[tokio::test]
async fn over_http_the_client_discovers_the_modern_era_and_follows_mrtr() {
    let (_child, addr, _) = mcp_tests::fixture::start_everything(&[], 0).await;
    let client = builder().http(&format!("http://{addr}/mcp")).await.expect("connects");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    exercise(&client, Era::Modern).await;
    times_out_and_goes_on(&client).await;
    listens(&client).await;
    client.close().await;
}

/// A modern subscription is acknowledged, carries a list change, and ends when dropped.
async fn listens(client: &Client) {
    let mut sub = client
        .listen(json!({"toolsListChanged": true}))
        .await
        .expect("subscriptions/listen");
    assert_eq!(sub.acknowledged()["toolsListChanged"], true);
    client
        .call_tool("test_trigger_tool_change", json!({}))
        .await
        .expect("trigger");
    let n = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .expect("a notification within 10 s")
        .expect("the subscription is open");
    assert_eq!(n.method, "notifications/tools/list_changed");
    drop(sub);
    let r = client
        .call_tool("test_tool_fast", json!({}))
        .await
        .expect("served after");
    assert_eq!(text(&r.content), "Fast response");
}

#[tokio::test]
async fn over_http_a_pinned_legacy_client_keeps_a_session_and_answers_server_requests() {
    let (_child, addr, _) = mcp_tests::fixture::start_everything(&[], 0).await;
    let client = builder()
        .revision(Revision::V2025_11_25)
        .http(&format!("http://{addr}/mcp"))
        .await
        .expect("connects");
    assert_eq!(client.revision(), Revision::V2025_11_25);
    exercise(&client, Era::Legacy).await;
    times_out_and_goes_on(&client).await;

    // A change of the catalog reaches the session's GET stream.
    let mut notes = client.notifications();
    client
        .call_tool("test_trigger_tool_change", json!({}))
        .await
        .expect("trigger");
    let changed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let n = notes.recv().await.expect("notifications");
            if n.method == "notifications/tools/list_changed" {
                return n;
            }
        }
    })
    .await;
    assert!(changed.is_ok(), "list_changed on the session's stream");
    client.close().await;
}

#[tokio::test]
async fn over_stdio_the_client_speaks_both_eras() {
    let client = builder().stdio(stdio_command()).await.expect("connects");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    exercise(&client, Era::Modern).await;
    times_out_and_goes_on(&client).await;
    listens(&client).await;
    client.close().await;

    let client = builder()
        .revision(Revision::V2025_11_25)
        .stdio(stdio_command())
        .await
        .expect("connects");
    exercise(&client, Era::Legacy).await;
    times_out_and_goes_on(&client).await;
    client.close().await;
}

#[tokio::test]
async fn a_child_that_exits_fails_its_waiting_requests_and_is_restarted_when_asked() {
    // Without a restart policy the client is closed for good.
    let client = builder()
        .revision(Revision::V2025_11_25)
        .stdio(ServerCommand::new("sh").args([
            "-c",
            &format!("exec {} --stdio", mcp_tests::fixture::everything().display()),
        ]))
        .await
        .expect("connects");
    let pending = {
        let c = client.clone();
        tokio::spawn(async move { c.call_tool("test_tool_slow", json!({"durationMs": 30_000})).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    kill_children_of_this_test("--stdio");
    let failed = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("fails at once")
        .unwrap();
    assert!(
        matches!(failed, Err(ClientError::Closed(ref why)) if why.contains("exited")),
        "{failed:?}"
    );
    client.close().await;

    // With one, the child is started again and greeted again.
    let client = builder()
        .revision(Revision::V2025_11_25)
        .restart(Restart::default())
        .stdio(stdio_command())
        .await
        .expect("connects");
    kill_children_of_this_test("--stdio");
    let again = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match client.call_tool("test_simple_text", json!({})).await {
                Ok(r) => return r,
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await
    .expect("served again after the restart");
    assert!(!again.is_error);
    client.close().await;
}

/// Kills this test process's `everything` children started with `flag`.
fn kill_children_of_this_test(flag: &str) {
    let me = std::process::id().to_string();
    let out = std::process::Command::new("pgrep")
        .args(["-P", &me])
        .output()
        .expect("pgrep");
    let pids = String::from_utf8_lossy(&out.stdout);
    for pid in pids.split_whitespace() {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(flag) {
            let _ = std::process::Command::new("kill").args(["-9", pid]).status();
        }
    }
}

#[tokio::test]
async fn a_child_that_writes_garbage_fails_the_handshake_with_a_clear_error() {
    let garbage = ServerCommand::new("sh").args(["-c", "while read line; do echo 'not json {'; done"]);
    let result = builder()
        .discover_timeout(Duration::from_millis(300))
        .request_timeout(Duration::from_secs(2))
        .stdio(garbage)
        .await;
    assert!(matches!(result, Err(ClientError::Timeout(_))), "{result:?}");
}

#[tokio::test]
async fn a_line_over_the_bound_is_dropped_and_the_stream_read_on() {
    // The child writes a 64 KiB line, then serves the real server's stdio.
    let script = format!(
        "head -c 65536 /dev/zero | tr '\\0' 'x'; echo; exec {} --stdio",
        mcp_tests::fixture::everything().display()
    );
    let client = builder()
        .max_message_bytes(16 * 1024)
        .stdio(ServerCommand::new("sh").args(["-c", &script]))
        .await
        .expect("connects past the oversize line");
    let r = client.call_tool("test_simple_text", json!({})).await.expect("a call");
    assert!(!r.is_error);
    client.close().await;
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let result = builder().http(&format!("http://{addr}/mcp")).await;
    assert!(
        matches!(result, Err(ClientError::Transport(_)) | Err(ClientError::Timeout(_))),
        "{result:?}"
    );
    let result = builder().stdio(ServerCommand::new("/nonexistent/mcp-server")).await;
    assert!(
        matches!(result, Err(ClientError::Transport(ref m)) if m.contains("cannot start")),
        "{result:?}"
    );
}
