//! Serving: graceful shutdown, the public-bind guard, and mounting the router in an app.

use http::{Method, StatusCode};
use mcp_transport_http::{HttpConfig, HttpError, router, serve};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::support::{Server, bounded, list, runtime};

#[tokio::test]
async fn shutdown_ends_streams_and_returns() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let get = s
            .req(Method::GET)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid);
        let mut stream = get.send().await.sse();
        assert!(stream.next().await.is_some(), "priming event");
        s.shutdown().await.expect("clean shutdown");
        assert!(stream.next().await.is_none(), "the GET stream ended");
    })
    .await;
}

#[tokio::test]
async fn public_bind_needs_allowed_origins() {
    bounded(async {
        let (runtime, _) = runtime();
        let listener = TcpListener::bind("0.0.0.0:0").await.expect("bind");
        let refused = serve(
            runtime.clone(),
            HttpConfig::default(),
            listener,
            CancellationToken::new(),
        )
        .await;
        assert!(
            matches!(refused, Err(HttpError::AllowedOriginsRequired { .. })),
            "{refused:?}"
        );
        let bad = router(runtime, HttpConfig::default().allowed_origins(["localhost"]));
        assert!(matches!(bad, Err(HttpError::InvalidOrigin(_))));
    })
    .await;
}

#[tokio::test]
async fn router_mounts_in_an_app() {
    bounded(async {
        let (runtime, registry) = runtime();
        let mcp = router(runtime.clone(), HttpConfig::default().path("/api/mcp")).expect("router");
        let app = axum::Router::new()
            .route("/health", axum::routing::get(|| async { "ok" }))
            .merge(mcp);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let s = Server::external(addr, "/api/mcp", runtime, registry);
        let sid = s.initialize().await;
        let resp = s.post(list(1)).header("mcp-session-id", &sid).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        server.abort();
    })
    .await;
}
