//! Mounting (`McpServer::mount`): a front server over Streamable HTTP with this library's
//! `everything` server mounted over stdio, driven by `mcp-client` in each era. The front lists
//! the upstream's tools, prompts, resources and templates beside its own; calls, progress and input (elicitation,
//! sampling) go through in every pairing of eras (the modern and legacy callers bridged to an
//! upstream of the other era); list changes follow; a
//! name the front already has is refused; an upstream that dies gives a clear error naming the
//! mount while the front keeps serving.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_client::{Client, ClientError, Revision, ServerCommand};
use mcp_protocol::model::Content;
use mcp_server::McpServer;
use mcp_server::Tool;
use mcp_server::mount::{Mount, MountError};
use serde_json::{Value, json};

fn text(content: &[Content]) -> String {
    Content::text_of(content)
}

/// The upstream: `everything` over stdio, at `revision` or discovered.
async fn upstream(revision: Option<Revision>) -> Client {
    let mut b = Client::builder()
        .name("front")
        .relay()
        .request_timeout(Duration::from_secs(20));
    if let Some(r) = revision {
        b = b.revision(r);
    }
    b.stdio(ServerCommand::new(mcp_tests::fixture::everything()).arg("--stdio"))
        .await
        .expect("the upstream starts")
}

/// A front with one local tool, serving HTTP on a free loopback port.
async fn front() -> (McpServer, String) {
    let server = McpServer::builder()
        .name("front")
        .version("1.0.0")
        .tool(Tool::new("local_echo", "Echoes", |args, _| async move {
            args.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()
        }))
        .build()
        .expect("the front builds");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(server.clone().serve_http_listener(listener));
    (server, url)
}

/// A caller of the front that answers elicitation and sampling.
async fn caller(url: &str, revision: Option<Revision>) -> Client {
    let mut b = Client::builder()
        .name("caller")
        .request_timeout(Duration::from_secs(20))
        .on_elicit(|_| async {
            Ok(json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}))
        })
        .on_sample(|_| async {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}))
        });
    if let Some(r) = revision {
        b = b.revision(r);
    }
    b.http(url).await.expect("the caller connects")
}

/// Everything a caller checks through the mount.
async fn through(caller: &Client) {
    let tools = caller.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"local_echo") && names.contains(&"up_test_simple_text"),
        "{names:?}"
    );

    let r = caller
        .call_tool("up_test_simple_text", json!({}))
        .await
        .expect("a forwarded call");
    assert!(!r.is_error && !text(&r.content).is_empty());

    let seen = Arc::new(Mutex::new(0));
    let s = seen.clone();
    let options = mcp_client::RequestOptions::default().on_progress(move |_| *s.lock().unwrap() += 1);
    let r = caller
        .call_tool_with("up_test_tool_with_progress", json!({}), options)
        .await
        .expect("progress");
    assert_eq!(text(&r.content), "Tool with progress completed");
    assert_eq!(*seen.lock().unwrap(), 3, "the upstream's progress reaches the caller");

    let r = caller
        .call_tool("up_test_elicitation", json!({"message": "who?"}))
        .await
        .expect("elicitation through the mount");
    assert!(text(&r.content).contains("ada@example.com"), "{}", text(&r.content));

    let r = caller
        .call_tool("up_test_sampling", json!({"prompt": "q"}))
        .await
        .expect("sampling through the mount");
    assert_eq!(text(&r.content), "LLM response: 42");

    let p = caller
        .get_prompt("up_test_simple_prompt", json!({}))
        .await
        .expect("a forwarded prompt");
    assert!(!p.messages.is_empty());

    // Resources keep their URIs; a template's reads are forwarded too.
    let resources = caller.list_resources().await.expect("resources/list");
    assert!(resources.iter().any(|r| r.uri == "test://static-text"));
    let templates = caller
        .list_resource_templates()
        .await
        .expect("resources/templates/list");
    assert!(templates.iter().any(|t| t.name == "up_template"), "{templates:?}");
    let read = caller
        .read_resource("test://static-text")
        .await
        .expect("a forwarded read");
    assert_eq!(read.contents.len(), 1);
    let read = caller
        .read_resource("test://template/7/data")
        .await
        .expect("a read through a mounted template");
    assert_eq!(read.contents.len(), 1);

    // An upstream protocol error is the answer as it is.
    let e = caller
        .call_tool("up_test_simple_text", json!({"unexpected": {"deep": 1}}))
        .await;
    assert!(e.is_ok() || matches!(e, Err(ClientError::Rpc(_))), "{e:?}");
}

#[tokio::test]
async fn a_modern_upstream_serves_callers_of_both_eras_through_the_front() {
    let (server, url) = front().await;
    server
        .mount(Mount::prefixed("up", upstream(None).await))
        .await
        .expect("mounts");
    through(&caller(&url, None).await).await;
    through(&caller(&url, Some(Revision::V2025_11_25)).await).await;
}

#[tokio::test]
async fn a_legacy_upstream_serves_callers_of_both_eras_through_the_front() {
    let (server, url) = front().await;
    server
        .mount(Mount::prefixed("up", upstream(Some(Revision::V2025_11_25)).await))
        .await
        .expect("mounts");
    through(&caller(&url, Some(Revision::V2025_11_25)).await).await;
    // A modern caller: the upstream's server requests become the front's input_required
    // rounds while the upstream call waits, parked.
    through(&caller(&url, None).await).await;
}

#[tokio::test]
async fn the_front_follows_the_upstream_s_list_changes() {
    let (server, url) = front().await;
    server
        .mount(Mount::prefixed("up", upstream(None).await))
        .await
        .expect("mounts");
    let caller = caller(&url, Some(Revision::V2025_11_25)).await;
    let mut notes = caller.notifications();
    caller
        .call_tool("up_test_trigger_tool_change", json!({}))
        .await
        .expect("the trigger");
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if server.registry().snapshot().tool("up_test_dynamic_tool").is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the new upstream tool appears in the front");
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if notes.recv().await.expect("notes").method == "notifications/tools/list_changed" {
                return;
            }
        }
    })
    .await;
    assert!(heard.is_ok(), "the front's caller hears of the change");
}

#[tokio::test]
async fn a_name_the_front_already_has_is_refused_when_mounting() {
    let (server, _url) = front().await;
    server
        .add_tool(Tool::new("test_simple_text", "local", |_, _| async { "local" }))
        .unwrap();
    let refused = server.mount(Mount::flat(upstream(None).await)).await;
    assert!(
        matches!(refused, Err(MountError::Collision { ref name, kind: "tool", .. }) if name == "test_simple_text"),
        "{refused:?}"
    );
    assert_eq!(
        server
            .registry()
            .snapshot()
            .tool("test_simple_text")
            .unwrap()
            .def
            .description
            .as_deref(),
        Some("local")
    );
}

#[tokio::test]
async fn an_upstream_that_dies_gives_an_error_naming_the_mount_and_the_front_serves_on() {
    let (server, url) = front().await;
    let up = upstream(Some(Revision::V2025_11_25)).await;
    server.mount(Mount::prefixed("up", up.clone())).await.expect("mounts");
    let caller = caller(&url, None).await;
    let slow = {
        let c = caller.clone();
        tokio::spawn(async move { c.call_tool("up_test_tool_slow", json!({"durationMs": 30_000})).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    up.close().await;
    let r = tokio::time::timeout(Duration::from_secs(10), slow)
        .await
        .expect("answered at once")
        .unwrap()
        .expect("a tool result");
    assert!(r.is_error, "{r:?}");
    assert!(text(&r.content).contains("mount up"), "{}", text(&r.content));
    let r = caller
        .call_tool("local_echo", json!({"text": "still here"}))
        .await
        .expect("local");
    assert_eq!(text(&r.content), "still here");
    let r = caller
        .call_tool("up_test_simple_text", json!({}))
        .await
        .expect("a tool result");
    assert!(r.is_error && text(&r.content).contains("mount up"));
}

/// The `gateway` example's binary, beside `everything`'s.
fn gateway_binary() -> std::path::PathBuf {
    let path = mcp_tests::fixture::everything().with_file_name("gateway");
    assert!(
        path.exists(),
        "{} is missing: `cargo build -p mcp-server --example gateway --all-features`",
        path.display()
    );
    path
}

#[tokio::test]
async fn the_gateway_serves_a_stdio_server_over_http_to_both_eras() {
    use tokio::io::AsyncBufReadExt;
    let everything = mcp_tests::fixture::everything();
    // The command line is one shell-quoted string: a path with a space would be quoted.
    let mount = format!("up='{}' --stdio", everything.display());
    let mut child = tokio::process::Command::new(gateway_binary())
        .args(["--port", "0", "--mount", &mount])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the gateway starts");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the gateway prints its URL")
        .unwrap()
        .expect("a line");
    let url = first.strip_prefix("listening on ").expect("its URL").to_owned();
    for revision in [None, Some(Revision::V2025_11_25)] {
        let c = caller(&url, revision).await;
        let r = c
            .call_tool("up_test_simple_text", json!({}))
            .await
            .expect("through the gateway");
        assert!(!r.is_error && !text(&r.content).is_empty());
        let r = c
            .call_tool("up_test_elicitation", json!({"message": "who?"}))
            .await
            .expect("elicitation through the gateway");
        assert!(text(&r.content).contains("ada@example.com"));
    }
    // A name the gateway cannot mount is a clear start-up error.
    let out = tokio::process::Command::new(gateway_binary())
        .args(["--port", "0", "--mount", "bad=/nonexistent/server"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--mount bad") && err.contains("cannot start"), "{err}");
}
