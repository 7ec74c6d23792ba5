//! Serving: graceful shutdown, the public-bind guard, mounting the router in an app (with the
//! app's middleware extensions reaching handlers), a query string on the endpoint path, the RFC
//! 9728 document, and auth challenges.

use http::{Method, StatusCode};
use mcp_protocol::model::CallToolResult;
use mcp_runtime::Ctx;
use mcp_transport_http::{HttpConfig, HttpError, router, serve};
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::support::{Server, bounded, call, engine, list, modern, tool};

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
        let (engine, _) = engine();
        let listener = TcpListener::bind("0.0.0.0:0").await.expect("bind");
        let refused = serve(
            engine.clone(),
            HttpConfig::default(),
            listener,
            CancellationToken::new(),
        )
        .await;
        assert!(
            matches!(refused, Err(HttpError::AllowedOriginsRequired { .. })),
            "{refused:?}"
        );
        let bad = router(engine, HttpConfig::default().allowed_origins(["localhost"]));
        assert!(matches!(bad, Err(HttpError::InvalidOrigin(_))));
    })
    .await;
}

#[tokio::test]
async fn router_mounts_in_an_app() {
    bounded(async {
        let (engine, registry) = engine();
        let mcp = router(engine.clone(), HttpConfig::default().path("/api/mcp")).expect("router");
        let app = axum::Router::new()
            .route("/health", axum::routing::get(|| async { "ok" }))
            .merge(mcp);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let s = Server::external(addr, "/api/mcp", engine, registry);
        let sid = s.initialize().await;
        let resp = s.post(list(1)).header("mcp-session-id", &sid).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        server.abort();
    })
    .await;
}

/// What the application's middleware tells handlers.
#[derive(Clone)]
struct Tenant(&'static str);

async fn tenant_middleware(mut req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    req.extensions_mut().insert(Tenant("acme"));
    next.run(req).await
}

#[tokio::test]
async fn middleware_extensions_reach_handlers() {
    bounded(async {
        let (engine, registry) = engine();
        async fn whoami(_: Map<String, Value>, ctx: Ctx) -> mcp_runtime::ToolResult {
            let extensions = ctx.attachments().get::<http::Extensions>();
            let tenant = extensions.and_then(|e| e.get::<Tenant>()).map_or("none", |t| t.0);
            Ok(CallToolResult::text(format!("tenant {tenant}")))
        }
        registry.add_tool(tool("whoami", json!({"type": "object"}), whoami));
        let mcp = router(engine.clone(), HttpConfig::default()).expect("router");
        let app = axum::Router::new()
            .merge(mcp)
            .layer(axum::middleware::from_fn(tenant_middleware));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let s = Server::external(addr, "/mcp", engine, registry);
        let sid = s.initialize().await;
        let resp = s
            .post(call(1, "whoami", None))
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(resp.json().await["result"]["content"][0]["text"], "tenant acme");
        let modern_call = modern(2, "tools/call", json!({"name": "whoami", "arguments": {}}));
        let resp = s
            .post(modern_call)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "whoami")
            .send()
            .await;
        assert_eq!(resp.json().await["result"]["content"][0]["text"], "tenant acme");
        server.abort();
    })
    .await;
}

#[tokio::test]
async fn resource_metadata_is_served_before_the_origin_check() {
    bounded(async {
        let doc = json!({"resource": "http://127.0.0.1/mcp", "authorization_servers": ["https://as.example"]});
        let s = Server::start(HttpConfig::default().with_resource_metadata(doc.clone())).await;
        for path in [
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ] {
            let resp = s
                .req(Method::GET)
                .at(path)
                .header("origin", "http://evil.example.com")
                .send()
                .await;
            assert_eq!(resp.status, StatusCode::OK, "{path}");
            assert_eq!(resp.header("cache-control"), Some("public, max-age=300"));
            assert_eq!(resp.header("content-type"), Some("application/json"));
            assert_eq!(resp.json().await, doc);
        }
        let post = s
            .req(Method::POST)
            .at("/.well-known/oauth-protected-resource")
            .send()
            .await;
        assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
        let plain = Server::default_config().await;
        let none = plain
            .req(Method::GET)
            .at("/.well-known/oauth-protected-resource")
            .send()
            .await;
        assert_eq!(none.status, StatusCode::NOT_FOUND, "not configured, not served");
    })
    .await;
}

/// Refuses everyone with a 403 `insufficient_scope` challenge.
struct NoScope;

impl mcp_auth::AuthProvider for NoScope {
    fn authenticate<'a>(
        &'a self,
        _parts: &'a http::request::Parts,
    ) -> mcp_auth::BoxFuture<'a, Result<mcp_auth::AuthInfo, mcp_auth::Challenge>> {
        Box::pin(async {
            Err(mcp_auth::Challenge::forbidden(
                "Bearer error=\"insufficient_scope\", scope=\"mcp\"",
            ))
        })
    }
}

#[tokio::test]
async fn challenges_pass_through_on_every_verb() {
    bounded(async {
        let s = Server::start(
            HttpConfig::default()
                .auth(std::sync::Arc::new(NoScope))
                .sse_pair("/sse", "/messages"),
        )
        .await;
        let reqs = [
            s.post(list(1)),
            s.req(Method::GET).header("accept", "text/event-stream"),
            s.req(Method::DELETE).header("mcp-session-id", "mcp_x"),
            s.req(Method::GET).at("/sse").header("accept", "text/event-stream"),
            s.post(list(1)).at("/messages?sessionId=mcp_x"),
        ];
        for r in reqs {
            let resp = r.header("origin", "http://localhost:1").send().await;
            assert_eq!(resp.status, StatusCode::FORBIDDEN);
            assert_eq!(
                resp.header("www-authenticate"),
                Some("Bearer error=\"insufficient_scope\", scope=\"mcp\"")
            );
            let exposed = resp.header("access-control-expose-headers").unwrap_or_default();
            assert!(exposed.contains("www-authenticate"), "{exposed}");
        }
    })
    .await;
}

/// Every verb of the endpoint served at `s.path` with a query string appended, as without one.
async fn served_with_a_query(s: &Server) {
    let q = |query: &str| format!("{}?{query}", s.path);
    let init = s
        .post(crate::support::init_body("2025-11-25"))
        .at(&q("x=1"))
        .send()
        .await;
    assert_eq!(init.status, StatusCode::OK, "initialize");
    let sid = init.header("mcp-session-id").expect("a session").to_owned();
    let listed = s
        .post(list(1))
        .at(&q("x=1&y=two"))
        .header("mcp-session-id", &sid)
        .send()
        .await;
    assert_eq!(listed.status, StatusCode::OK, "tools/list");
    let plain = s.post(list(1)).header("mcp-session-id", &sid).send().await;
    assert_eq!(
        listed.json().await,
        plain.json().await,
        "the same answer as without the query"
    );
    let get = s
        .req(Method::GET)
        .at(&q("stream"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .send()
        .await;
    assert_eq!(get.status, StatusCode::OK, "GET");
    let mut stream = get.sse();
    assert!(stream.next().await.is_some(), "the priming event");
    let discover = s
        .post(modern(2, "server/discover", json!({})))
        .at(&q("x=1"))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .send()
        .await;
    assert_eq!(discover.status, StatusCode::OK, "a modern request");
    assert_eq!(discover.json().await["result"]["resultType"], "complete");
    let deleted = s
        .req(Method::DELETE)
        .at(&q("x="))
        .header("mcp-session-id", &sid)
        .send()
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "DELETE");
    assert!(stream.next().await.is_none(), "the session's stream ended with it");
}

#[tokio::test]
async fn a_query_string_on_the_endpoint_path_is_served_alike() {
    bounded(async {
        // `serve`, which takes the endpoint's path without its router.
        served_with_a_query(&Server::default_config().await).await;
        // The router, mounted in an application.
        let (engine, registry) = engine();
        let mcp = router(engine.clone(), HttpConfig::default().path("/api/mcp")).expect("router");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move { axum::serve(listener, axum::Router::new().merge(mcp)).await });
        served_with_a_query(&Server::external(addr, "/api/mcp", engine, registry)).await;
        server.abort();
    })
    .await;
}
