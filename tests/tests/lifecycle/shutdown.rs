//! Graceful shutdown with a legacy GET stream, a `subscriptions/listen` stream, a streaming
//! POST and calls in flight: over `serve_http_on`, over the router under `axum::serve` with
//! its graceful shutdown, and over stdio.

use std::net::SocketAddr;
use std::time::Duration;

use http::Method;
use mcp_server::McpServer;
use mcp_server::http::HttpConfig;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::fixture::{Probe, WAIT, bounded, call, server};
use crate::stdio::Pipe;
use crate::support::{Server, Sse, modern};

/// The drain deadline of these tests: calls get 1 s, then are cancelled (1 s grace each).
const GRACE: Duration = Duration::from_secs(1);
/// The bound on a whole shutdown: the grace, the cancel grace and a second are 3 s; the old
/// router hung for good, the old stdio reader as long as stdin stayed silent.
const SHUTDOWN: Duration = Duration::from_secs(10);

/// The streams and calls open when the shutdown begins.
struct Open {
    get: Sse,
    listen: Sse,
    post: Sse,
    pair: Sse,
}

/// Opens a legacy GET stream, a modern listen stream (id 5), a legacy streaming POST of
/// `hold` (id 7) and a 2024-11-05 pair's stream, and starts a `stubborn` call (id 8) that
/// ignores its cancellation.
async fn open(client: &Server, probe: &mut Probe) -> Open {
    let sid = client.initialize().await;
    let mut get = client
        .req(Method::GET)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await
        .sse();
    assert!(get.next().await.is_some(), "the GET stream's priming event");
    let mut listen = client
        .post(modern(
            5,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .send()
        .await
        .sse();
    let ack = listen.next().await.expect("acknowledgement").json();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let mut post = client
        .post(call(7, "hold", true))
        .header("mcp-session-id", &sid)
        .send()
        .await
        .sse();
    let progress = post.message().await.expect("the call's progress");
    assert_eq!(progress["method"], "notifications/progress");
    assert!(probe.saw("hold started").await);
    let stubborn = client.post(call(8, "stubborn", false)).header("mcp-session-id", &sid);
    tokio::spawn(stubborn.try_send());
    let mut pair = client
        .req(Method::GET)
        .at("/sse")
        .header("accept", "text/event-stream")
        .send()
        .await
        .sse();
    let endpoint = pair.next().await.expect("the pair's endpoint event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    // Let the stubborn call start.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Open {
        get,
        listen,
        post,
        pair,
    }
}

/// Every stream ended (the listen stream with its completion result) and `hold` cleaned up.
async fn assert_ended(mut open: Open, probe: &mut Probe) {
    let rest = tokio::time::timeout(WAIT, drain(&mut open.get))
        .await
        .expect("the GET stream ended");
    assert!(rest.is_empty(), "nothing more on the GET stream: {rest:?}");
    let rest = tokio::time::timeout(WAIT, drain(&mut open.listen))
        .await
        .expect("the listen stream ended");
    let last = rest.last().expect("the listen stream's completion result");
    assert_eq!(last["id"], 5, "{rest:?}");
    assert_eq!(last["result"]["resultType"], "complete", "{rest:?}");
    let rest = tokio::time::timeout(WAIT, drain(&mut open.post))
        .await
        .expect("the POST stream ended");
    assert!(
        rest.iter().all(|m| m.get("id").is_none()),
        "the held call is not answered on a stream that ended: {rest:?}"
    );
    let rest = tokio::time::timeout(WAIT, drain(&mut open.pair))
        .await
        .expect("the pair's stream ended");
    assert!(rest.is_empty(), "nothing more on the pair's stream: {rest:?}");
    assert!(
        probe.saw("hold cleaned up").await,
        "the held call was cancelled and cleaned up"
    );
}

/// The messages left on a stream until it ends.
async fn drain(sse: &mut Sse) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(e) = sse.next().await {
        if !e.data.is_empty() {
            out.push(e.json());
        }
    }
    out
}

/// A client of the endpoint at `addr`.
fn client(addr: SocketAddr, server: &McpServer) -> Server {
    Server::external(addr, "/mcp", server.engine().clone(), server.registry().clone())
}

#[tokio::test]
async fn serve_http_on_ends_streams_and_drains_within_the_grace() {
    bounded(async {
        let (server, mut probe) = server();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let token = CancellationToken::new();
        let config = HttpConfig::default()
            .shutdown_grace(GRACE)
            .sse_pair("/sse", "/messages");
        let serving = tokio::spawn(server.clone().serve_http_on(listener, config, token.clone()));
        let c = client(addr, &server);
        let open = open(&c, &mut probe).await;

        let started = Instant::now();
        token.cancel();
        tokio::time::timeout(SHUTDOWN, serving)
            .await
            .expect("serve_http_on returned within its deadline")
            .expect("serve task")
            .expect("clean shutdown");
        assert!(started.elapsed() < SHUTDOWN);
        assert_ended(open, &mut probe).await;
    })
    .await;
}

#[tokio::test]
async fn the_router_shuts_down_under_axum_serve() {
    use axum::serve::ListenerExt;
    bounded(async {
        let (server, mut probe) = server();
        let mcp = server
            .router(
                HttpConfig::default()
                    .shutdown_grace(GRACE)
                    .sse_pair("/sse", "/messages"),
            )
            .expect("router");
        let handle = mcp.handle();
        let app = axum::Router::new()
            .route("/health", axum::routing::get(|| async { "ok" }))
            .merge(mcp.into_router());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        // axum does not set TCP_NODELAY itself (the router's documented caveat).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let triggered = handle.triggered();
        let serving = tokio::spawn(async move { axum::serve(listener, app).with_graceful_shutdown(triggered).await });
        let c = client(addr, &server);
        let open = open(&c, &mut probe).await;

        let started = Instant::now();
        assert!(!handle.is_triggered());
        handle.trigger();
        tokio::time::timeout(SHUTDOWN, serving)
            .await
            .expect("axum::serve's graceful shutdown returned within the deadline")
            .expect("serve task")
            .expect("clean shutdown");
        tokio::time::timeout(SHUTDOWN, handle.shutdown())
            .await
            .expect("the endpoint drained within its deadline");
        assert!(started.elapsed() < SHUTDOWN);
        assert_ended(open, &mut probe).await;
    })
    .await;
}

#[tokio::test]
async fn stdio_shutdown_ends_listens_and_drains() {
    bounded(async {
        let (server, mut probe) = server();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let config = mcp_server::StdioConfig::default().with_drain_timeout(GRACE);
        let mut pipe = Pipe::start(server.engine().clone(), config, async {
            let _ = stopped.await;
        });
        pipe.initialize("2025-11-25").await;
        let listen = json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }});
        pipe.send(&listen).await;
        let ack = pipe.next().await.expect("acknowledgement");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        pipe.send(&call(3, "hold", false)).await;
        assert!(probe.saw("hold started").await);
        pipe.send(&call(4, "stubborn", false)).await;
        tokio::time::sleep(Duration::from_millis(200)).await;

        let started = Instant::now();
        stop.send(()).expect("serving");
        let (rest, served) = tokio::time::timeout(SHUTDOWN, pipe.finish())
            .await
            .expect("serve_io_until returned within its deadline");
        served.expect("clean shutdown");
        assert!(started.elapsed() < SHUTDOWN);
        let cancelled = rest
            .iter()
            .position(|m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == "L")
            .unwrap_or_else(|| panic!("the listen stream's notifications/cancelled: {rest:?}"));
        let completion = rest
            .iter()
            .position(|m| m["id"] == "L")
            .unwrap_or_else(|| panic!("the listen stream's completion: {rest:?}"));
        assert!(cancelled < completion, "{rest:?}");
        assert_eq!(rest[completion]["result"]["resultType"], "complete");
        assert!(
            rest.iter().all(|m| m["id"] != 3 && m["id"] != 4),
            "cancelled calls are not answered: {rest:?}"
        );
        assert!(
            probe.saw("hold cleaned up").await,
            "the held call cleaned up after its cancellation"
        );
    })
    .await;
}

#[tokio::test]
async fn the_router_sweeps_its_idle_sessions() {
    bounded(async {
        // Sessions expire after 200 ms of idleness (the router alone used to keep them for good).
        let server = McpServer::builder()
            .session_ttl(Duration::from_millis(200))
            .build()
            .expect("server");
        let config = HttpConfig::default().session_sweep_interval(Duration::from_millis(50));
        let (router, handle) = server.router(config).expect("router").into_parts();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let serving = tokio::spawn(
            axum::serve(listener, router)
                .with_graceful_shutdown(handle.triggered())
                .into_future(),
        );
        let c = client(addr, &server);
        let sid = c.initialize().await;
        assert_eq!(server.engine().session_count(), 1);
        let swept = tokio::time::timeout(WAIT, async {
            while server.engine().session_count() != 0 {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(swept.is_ok(), "the idle session was swept by the router");
        let after = c
            .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(after.status, http::StatusCode::NOT_FOUND);
        handle.shutdown().await;
        tokio::time::timeout(SHUTDOWN, serving)
            .await
            .expect("served")
            .expect("serve task")
            .expect("clean shutdown");
    })
    .await;
}

/// Set in the environment of the child process of [`a_terminal_like_stdin_does_not_keep_the_process_alive`].
const CHILD: &str = "MCP_LIFECYCLE_STDIO_CHILD";

/// The child: serves stdio until a 300 ms shutdown, then returns, dropping its runtime (a
/// no-op test in a normal run).
#[test]
fn stdio_child_process() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let (server, _probe) = server();
        let stop = tokio::time::sleep(Duration::from_millis(300));
        mcp_transport_stdio::serve_until(server.engine().clone(), Default::default(), stop)
            .await
            .expect("served");
    });
    // Dropping the runtime waits for its blocking threads: a stdin read on the blocking pool
    // would hang here for as long as stdin stays silent.
    drop(rt);
}

/// stdin that is not a pipe (a socket here, like a terminal: reads block, nothing arrives):
/// after a graceful shutdown the process still exits (it used to wait for the next line).
#[cfg(unix)]
#[test]
fn a_terminal_like_stdin_does_not_keep_the_process_alive() {
    use std::os::unix::net::UnixStream;
    use std::process::{Command, Stdio};
    let (ours, theirs) = UnixStream::pair().expect("socket pair");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["shutdown::stdio_child_process", "--exact", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("child");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break Some(status);
        }
        if started.elapsed() > SHUTDOWN {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(ours);
    let status = status.expect("the child exited within 10 s, its stdin still open and silent");
    assert!(status.success(), "{status}");
}
