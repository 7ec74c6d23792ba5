//! Memory during a maximal batch: the finding was a 16 MiB batch of 360,000 `ping`s driving the
//! resident size to 1.65 GiB (about 100 times the body), 290 MB of it held afterwards. With the
//! batch cap, a batch at the limits (the most messages, the largest body) must cost at most 4
//! times its body while it runs, and that memory must be freed once it is answered (the
//! allocator may keep freed pages for reuse: further batches must not grow the process).
//!
//! A test binary of its own: it measures its own process (`VmHWM`, the peak resident size, and
//! `VmRSS`, from `/proc/self/status`), which other tests running beside it would disturb.

#![cfg(target_os = "linux")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mcp_runtime::{Registry, ServerConfig};
use mcp_transport_http::{HttpConfig, serve};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A field of `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("field")
}

async fn post(addr: SocketAddr, body: Bytes, session: Option<&str>) -> (u16, Option<String>, Bytes) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let mut req = http::Request::post("/mcp")
        .header("host", format!("127.0.0.1:{}", addr.port()))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let resp = send
        .send_request(req.body(Full::new(body)).unwrap())
        .await
        .expect("response");
    let status = resp.status().as_u16();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, sid, bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_maximal_batch_costs_at_most_four_times_its_body() {
    const MAX_BODY: usize = 4 << 20;
    let runtime = mcp_tests::engine::memory(ServerConfig::default(), Arc::new(Registry::new()));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let shutdown = CancellationToken::new();
    let config = HttpConfig::default().max_body_bytes(MAX_BODY);
    tokio::spawn(serve(runtime, config, listener, shutdown.clone()));

    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "m", "version": "1"}}});
    let (status, sid, _) = post(addr, Bytes::from(init.to_string()), None).await;
    assert_eq!(status, 200);
    let sid = sid.expect("session");

    // The most messages a batch may hold, each padded so that the body is at its largest.
    let per = MAX_BODY / 128 - 100;
    let pad = "x".repeat(per);
    let batch: Vec<Value> = (0..128)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "ping", "params": {"pad": pad}}))
        .collect();
    let body = Bytes::from(serde_json::to_vec(&batch).unwrap());
    assert!(body.len() <= MAX_BODY);
    drop((batch, pad));

    // Warm up once (allocator arenas, buffers), then measure a second, identical batch.
    let (status, _, answers) = post(addr, body.clone(), Some(&sid)).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&answers)
            .unwrap()
            .as_array()
            .map(Vec::len),
        Some(128)
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = status_kib("VmRSS:");
    let peak_before = status_kib("VmHWM:");
    let (status, _, answers) = post(addr, body.clone(), Some(&sid)).await;
    assert_eq!(status, 200);
    drop(answers);
    let peak = status_kib("VmHWM:").max(peak_before);
    let body_kib = (body.len() / 1024) as u64;
    let grown = peak.saturating_sub(before);
    println!("body {body_kib} KiB; resident {before} KiB before, peak {peak} KiB");
    assert!(
        grown <= 4 * body_kib,
        "a maximal batch grew the resident size by {grown} KiB, over 4 x its {body_kib} KiB body"
    );
    // What a batch used is freed: the allocator keeps freed pages for reuse (an arena per
    // thread), so the process settles after a few batches, and forty more must not grow it.
    let run = |n: usize| {
        let body = body.clone();
        let sid = sid.clone();
        async move {
            for _ in 0..n {
                let (status, _, _) = post(addr, body.clone(), Some(&sid)).await;
                assert_eq!(status, 200);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            status_kib("VmRSS:")
        }
    };
    let settled = run(10).await;
    let later = run(40).await;
    println!("after 10 more batches: {settled} KiB; after 40 more: {later} KiB");
    assert!(
        later <= settled + 2 * body_kib,
        "{later} KiB resident after 40 more batches, {settled} KiB before them: batches accumulate"
    );
    shutdown.cancel();
}
