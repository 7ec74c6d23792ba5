//! The probes come before everything the MCP endpoint checks: authentication, the `Host`
//! allowlist (DNS-rebinding protection) and the MCP rate limits; they answer `GET` and `HEAD`
//! only, on the paths configured (or not at all).

use std::sync::Arc;

use mcp_server::RateLimit;
use mcp_server::auth::{ApiKey, ApiKeyAuth};
use mcp_server::prelude::*;
use mcp_server::store::Quota;
use tokio::sync::Notify;

use crate::support::{Running, assert_probe, bounded, builder, call_body, call_headers, get, send};

const KEY: &str = "a-long-random-test-key-0123456789";

/// A server behind an API key, with a rate limit of one request (then one a minute) per caller.
async fn guarded() -> Running {
    let quota = Quota::new(1.0 / 60.0, 1).expect("a valid quota");
    let server = builder(Arc::new(Notify::new()))
        .middleware(RateLimit::new(quota).all_requests())
        .build()
        .expect("server");
    let auth = ApiKeyAuth::builder()
        .key(ApiKey::plain(KEY, "probe-suite"))
        .build()
        .expect("api-key provider");
    Running::start(server, HttpConfig::default().auth(Arc::new(auth))).await
}

/// A modern call of `slow` (1 ms) with `extra` headers.
async fn call(s: &Running, extra: &[(&'static str, String)]) -> crate::support::Answer {
    let body = call_body(1, "slow", json!({"ms": 1}));
    send(s.addr, "POST", "/mcp", &call_headers("slow", extra), &body).await
}

#[tokio::test]
async fn probes_need_no_credentials_while_the_endpoint_does() {
    bounded(20, async {
        let s = guarded().await;
        assert_eq!(call(&s, &[]).await.status, 401, "the endpoint wants the key");
        assert_probe(&get(s.addr, "/livez").await, 200, "ok");
        assert_probe(&get(s.addr, "/readyz").await, 200, "ok");
        let served = call(&s, &[("x-api-key", KEY.to_owned())]).await;
        assert_eq!(served.status, 200, "{served:?}");
    })
    .await;
}

#[tokio::test]
async fn probes_accept_any_host() {
    bounded(20, async {
        let s = guarded().await;
        // A kubelet names the pod's address; the endpoint's loopback allowlist refuses it.
        let pod = [("host", "10.1.2.3:8080".to_owned())];
        let refused = call(&s, &[("x-api-key", KEY.to_owned()), pod[0].clone()]).await;
        assert_eq!(refused.status, 403, "{refused:?}");
        assert_probe(&send(s.addr, "GET", "/livez", &pod, b"").await, 200, "ok");
        assert_probe(&send(s.addr, "GET", "/readyz", &pod, b"").await, 200, "ok");
        let origin = [("origin", "https://evil.example".to_owned())];
        assert_probe(&send(s.addr, "GET", "/readyz", &origin, b"").await, 200, "ok");
    })
    .await;
}

#[tokio::test]
async fn probes_are_not_rate_limited() {
    bounded(20, async {
        let s = guarded().await;
        let key = [("x-api-key", KEY.to_owned())];
        assert_eq!(call(&s, &key).await.status, 200, "the burst of one");
        assert_eq!(call(&s, &key).await.status, 429, "the caller is limited now");
        for _ in 0..20 {
            assert_probe(&get(s.addr, "/readyz").await, 200, "ok");
            assert_probe(&get(s.addr, "/livez").await, 200, "ok");
        }
    })
    .await;
}

#[tokio::test]
async fn probes_answer_get_and_head_only() {
    bounded(20, async {
        let s = guarded().await;
        let head = send(s.addr, "HEAD", "/readyz", &[], b"").await;
        assert_eq!(head.status, 200, "{head:?}");
        assert_eq!(head.header("cache-control"), Some("no-store"));
        assert!(head.body.is_empty(), "{head:?}");
        let post = send(s.addr, "POST", "/livez", &[], b"x").await;
        assert_eq!(post.status, 405, "{post:?}");
        assert!(post.header("allow").is_some_and(|a| a.contains("get")), "{post:?}");
    })
    .await;
}

#[tokio::test]
async fn probe_paths_are_configurable_or_off() {
    bounded(20, async {
        let elsewhere = HttpConfig::default().probes("/internal/alive", "/internal/ready");
        let s = Running::start(builder(Arc::new(Notify::new())).build().expect("server"), elsewhere).await;
        assert_probe(&get(s.addr, "/internal/alive").await, 200, "ok");
        assert_probe(&get(s.addr, "/internal/ready").await, 200, "ok");
        assert_eq!(get(s.addr, "/readyz").await.status, 404);

        let none = HttpConfig::default().without_probes();
        let s = Running::start(builder(Arc::new(Notify::new())).build().expect("server"), none).await;
        assert_eq!(get(s.addr, "/livez").await.status, 404);
        assert_eq!(get(s.addr, "/readyz").await.status, 404);

        let clash = HttpConfig::default().probes("/mcp", "/readyz");
        let server = builder(Arc::new(Notify::new())).build().expect("server");
        assert!(
            server.router(clash).is_err(),
            "a probe on the endpoint's path is refused"
        );
    })
    .await;
}
