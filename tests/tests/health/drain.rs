//! Readiness falls as soon as a shutdown begins, before anything closes: `serve_http_on` with
//! a readiness delay, and the router's handle.

use std::sync::Arc;
use std::time::Duration;

use mcp_server::http::Readiness;
use mcp_server::prelude::*;
use tokio::sync::Notify;

use crate::support::{Running, assert_probe, bounded, builder, call_body, call_headers, call_slow, get, send};

/// A call is in flight when the shutdown begins: `/readyz` answers 503 `draining` at once while
/// `/livez` answers 200, new requests are still served for the readiness delay, the listener
/// closes after it while the call still runs, and the call's reply arrives before
/// `serve_http_on` returns.
#[tokio::test]
async fn readiness_falls_first_and_the_call_in_flight_completes() {
    bounded(30, async {
        let started = Arc::new(Notify::new());
        let server = builder(started.clone()).build().expect("server");
        let delay = Duration::from_secs(3);
        let s = Running::start(server, HttpConfig::default().readiness_delay(delay)).await;
        let addr = s.addr;
        assert_probe(&get(addr, "/readyz").await, 200, "ok");
        assert_probe(&get(addr, "/livez").await, 200, "ok");

        let call = tokio::spawn(call_slow(addr, 4000));
        started.notified().await;
        let stopping = tokio::time::Instant::now();
        s.stop();
        // Readiness falls at once (the token's cancellation is seen by the accept loop within
        // a poll; one retry absorbs that).
        let mut ready = get(addr, "/readyz").await;
        if ready.status == 200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            ready = get(addr, "/readyz").await;
        }
        assert_probe(&ready, 503, "draining");
        assert_probe(&get(addr, "/livez").await, 200, "ok");
        // During the delay the endpoint serves as usual: a short call is answered.
        let short = send(
            addr,
            "POST",
            "/mcp",
            &call_headers("slow", &[]),
            &call_body(2, "slow", json!({"ms": 1})),
        )
        .await;
        assert_eq!(short.status, 200, "{short:?}");
        assert!(short.body.contains("slept 1 ms"), "{short:?}");
        assert!(stopping.elapsed() < delay, "the checks above ran within the delay");

        // After the delay the listener closes while the call is still running; it completes.
        tokio::time::sleep_until(stopping + delay + Duration::from_millis(300)).await;
        assert!(!call.is_finished(), "the call sleeps 4 s");
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "the listener is closed once the readiness delay is over"
        );
        let answer = call.await.expect("the call task");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.contains("slept 4000 ms"), "{answer:?}");
        s.stopped().await;
    })
    .await;
}

/// Without a readiness delay the listener closes at once, and the call in flight still gets
/// its reply.
#[tokio::test]
async fn without_a_delay_the_listener_closes_and_the_call_drains() {
    bounded(30, async {
        let started = Arc::new(Notify::new());
        let server = builder(started.clone()).build().expect("server");
        let s = Running::start(server, HttpConfig::default()).await;
        let addr = s.addr;
        let call = tokio::spawn(call_slow(addr, 800));
        started.notified().await;
        s.stop();
        let answer = call.await.expect("the call task");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.contains("slept 800 ms"), "{answer:?}");
        s.stopped().await;
    })
    .await;
}

/// The router's handle: `readiness()` and the router's `/readyz` say `draining` from
/// `trigger()` on, `triggered()` completes only after the readiness delay, and the call in
/// flight completes.
#[tokio::test]
async fn the_router_handle_drains_after_readiness_fell() {
    bounded(30, async {
        let started = Arc::new(Notify::new());
        let server = builder(started.clone()).build().expect("server");
        let delay = Duration::from_millis(800);
        let (router, handle) = server
            .router(HttpConfig::default().readiness_delay(delay))
            .expect("router")
            .into_parts();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = axum::Router::new().nest("/api", router);
        let stopped = handle.triggered();
        let served = tokio::spawn(async move { axum::serve(listener, app).with_graceful_shutdown(stopped).await });
        assert_eq!(handle.readiness().await, Readiness::Ready);
        assert_probe(&get(addr, "/api/readyz").await, 200, "ok");

        let body = call_body(1, "slow", json!({"ms": 1500}));
        let headers = call_headers("slow", &[]);
        let call = tokio::spawn(async move { send(addr, "POST", "/api/mcp", &headers, &body).await });
        started.notified().await;
        let triggered = tokio::time::Instant::now();
        handle.trigger();
        assert!(handle.is_triggered());
        assert_eq!(handle.readiness().await, Readiness::Draining);
        assert_probe(&get(addr, "/api/readyz").await, 503, "draining");
        assert_probe(&get(addr, "/api/livez").await, 200, "ok");
        handle.triggered().await;
        assert!(
            triggered.elapsed() >= delay,
            "the streams end (and the server stops accepting) after the readiness delay"
        );
        let answer = call.await.expect("the call task");
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.contains("slept 1500 ms"), "{answer:?}");
        handle.shutdown().await;
        served.await.expect("the axum task").expect("served");
    })
    .await;
}
