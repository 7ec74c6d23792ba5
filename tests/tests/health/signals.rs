//! `SIGTERM` drains like Ctrl-C: the `drain-server` binary (this crate's, served by
//! `McpServer::serve_http` or `McpServer::serve_stdio`) and the `everything` example (the
//! conformance fixture, which `cargo test` builds beside this suite) get a slow call, then
//! `SIGTERM` (`kill -TERM`); the call's reply arrives and the process exits 0.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::{bounded, call_body, call_headers, call_slow, send, until_status};

/// Starts `drain-server` with `args`.
fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_drain-server"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("drain-server starts")
}

/// Sends `SIGTERM` to `child` with `kill -TERM`.
async fn terminate(child: &Child) {
    let pid = child.id().expect("still running").to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill runs");
    assert!(status.success(), "kill -TERM {pid}: {status}");
}

#[tokio::test]
async fn serve_http_drains_on_sigterm() {
    bounded(30, async {
        let port = mcp_store_redis::testing::free_port();
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        let mut child = spawn(&["http", &addr.to_string()]);
        // Up once the probe answers (connections are refused until the listener is bound).
        let up = tokio::time::Instant::now() + Duration::from_secs(15);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(tokio::time::Instant::now() < up, "drain-server listens within 15 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        until_status(addr, "/livez", 200, Duration::from_secs(5)).await;

        let call = tokio::spawn(call_slow(addr, 1500));
        // The call is in flight (it sleeps 1.5 s) when the signal arrives.
        tokio::time::sleep(Duration::from_millis(400)).await;
        terminate(&child).await;
        let answer = call.await.expect("the call task");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.contains("slept 1500 ms"), "{answer:?}");
        let status = child.wait().await.expect("drain-server exits");
        assert!(status.success(), "drain-server exits 0 after draining: {status}");
    })
    .await;
}

#[tokio::test]
async fn serve_stdio_drains_on_sigterm() {
    bounded(30, async {
        let mut child = spawn(&["stdio"]);
        let mut stdin = child.stdin.take().expect("its stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "health-suite", "version": "1"}}});
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"ms": 1500}}});
        for message in [&init, &initialized] {
            stdin.write_all(format!("{message}\n").as_bytes()).await.expect("write");
        }
        let first: Value =
            serde_json::from_str(&lines.next_line().await.expect("read").expect("a line")).expect("JSON");
        assert_eq!(first["id"], 0, "{first}");
        stdin.write_all(format!("{call}\n").as_bytes()).await.expect("write");
        stdin.flush().await.expect("flush");
        tokio::time::sleep(Duration::from_millis(400)).await;
        // stdin stays open: only the signal ends the server.
        terminate(&child).await;
        let reply: Value =
            serde_json::from_str(&lines.next_line().await.expect("read").expect("the reply")).expect("JSON");
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "slept 1500 ms", "{reply}");
        let status = child.wait().await.expect("drain-server exits");
        assert!(status.success(), "drain-server exits 0 after draining: {status}");
        drop(stdin);
    })
    .await;
}

#[tokio::test]
async fn the_everything_fixture_drains_on_sigterm() {
    bounded(60, async {
        let (mut child, addr, _) = mcp_tests::fixture::start_everything(&["--soak"], 0).await;
        until_status(addr, "/livez", 200, Duration::from_secs(5)).await;

        let body = call_body(1, "soak_sleep", json!({"ms": 1500}));
        let headers = call_headers("soak_sleep", &[]);
        let call = tokio::spawn(async move { send(addr, "POST", "/mcp", &headers, &body).await });
        tokio::time::sleep(Duration::from_millis(400)).await;
        terminate(&child).await;
        let answer = call.await.expect("the call task");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.contains("slept 1500 ms"), "{answer:?}");
        let status = child.wait().await.expect("everything exits");
        assert!(status.success(), "everything exits 0 after draining: {status}");
    })
    .await;
}
