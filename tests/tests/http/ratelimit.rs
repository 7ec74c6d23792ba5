//! Rate limits (the built-in `RateLimit` layer) over loopback HTTP: a flooding client is
//! answered 429 with `Retry-After` and the JSON-RPC error while a client on another address is
//! still served; each call of a batch counts; exempt methods pass; the per-caller hook.
//!
//! Quotas refill slowly (one request a minute) so that no test depends on how fast the machine
//! is: a bucket holds exactly its burst for the whole test.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use http::StatusCode;
use mcp_runtime::ServerConfig;
use mcp_runtime::middleware::{OnStoreFailure, RateLimit};
use mcp_runtime::store::{Admission, Quota, RateBuckets, StoreError, StoreFuture};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use crate::support::{NamedUsers, Req, Server, bounded, call, engine, init_body, list, modern};

/// The first client's address, and another client's.
const FIRST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const SECOND: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// `burst` requests at once, then one a minute.
fn slow(burst: u32) -> Quota {
    Quota::new(1.0 / 60.0, burst).expect("a valid quota")
}

/// The test tools served with `limit` as the only layer.
async fn limited(limit: RateLimit, http: HttpConfig) -> Server {
    let (_, registry) = engine();
    let mut config = ServerConfig::default();
    config.middleware.push(limit);
    Server::serve_engine(mcp_tests::engine::memory(config, registry), http).await
}

/// A modern `tools/call` of `echo`.
fn echo(s: &Server, id: i64) -> Req {
    s.post(modern(id, "tools/call", json!({"name": "echo", "arguments": {}})))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
}

/// A modern request without a name header.
fn plain(s: &Server, id: i64, method: &str) -> Req {
    s.post(modern(id, method, json!({})))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
}

/// Checks a refusal: 429, `Retry-After` in whole seconds within the quota's minute, the
/// JSON-RPC error with the wait in milliseconds.
async fn assert_limited(resp: crate::support::Resp, id: i64) {
    assert_eq!(resp.status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = resp
        .header("retry-after")
        .expect("a Retry-After header")
        .parse()
        .expect("whole seconds");
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    let body = resp.json().await;
    assert_eq!(body["id"], id, "{body}");
    assert_eq!(body["error"]["code"], mcp_protocol::codes::RATE_LIMITED, "{body}");
    assert_eq!(body["error"]["message"], "Rate limit exceeded", "{body}");
    let ms = body["error"]["data"]["retryAfterMs"].as_u64().expect("retryAfterMs");
    assert!(ms > 0 && ms <= 60_000, "{body}");
    assert!(
        ms.div_ceil(1000) <= retry,
        "Retry-After is the wait rounded up: {ms} ms, {retry} s"
    );
}

fn text(body: &Value) -> &str {
    body["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a_flooding_client_is_refused_while_another_is_served() {
    bounded(async {
        let s = limited(RateLimit::new(slow(3)), HttpConfig::default()).await;
        for id in 1..=3 {
            let ok = echo(&s, id).send_from(FIRST).await;
            assert_eq!(ok.status, StatusCode::OK);
            assert!(text(&ok.json().await).starts_with("echo"), "call {id} within the burst");
        }
        for id in 4..=10 {
            assert_limited(echo(&s, id).send_from(FIRST).await, id).await;
        }
        // Another address is another client: its own bucket, served in full.
        for id in 11..=13 {
            let ok = echo(&s, id).send_from(SECOND).await;
            assert_eq!(ok.status, StatusCode::OK, "the second client is served (call {id})");
        }
        assert_limited(echo(&s, 14).send_from(SECOND).await, 14).await;
        // The first is still refused; uncounted methods still pass for it.
        assert_limited(echo(&s, 15).send_from(FIRST).await, 15).await;
        assert_eq!(
            plain(&s, 16, "tools/list").send_from(FIRST).await.status,
            StatusCode::OK
        );
    })
    .await;
}

#[tokio::test]
async fn every_call_of_a_batch_counts() {
    bounded(async {
        let s = limited(RateLimit::new(slow(5)), HttpConfig::default()).await;
        let resp = s.post(init_body("2025-03-26")).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let sid = resp.header("mcp-session-id").expect("session").to_owned();
        // Seven calls and a list in one batch: five calls pass, two are refused, the list passes.
        let mut items: Vec<Value> = (1..=7).map(|id| call(id, "echo", None)).collect();
        items.push(list(8));
        let batch = s
            .post(Value::Array(items))
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-03-26")
            .send()
            .await;
        assert_eq!(
            batch.status,
            StatusCode::OK,
            "a batch answers 200 whatever its items say"
        );
        let answers = batch.json().await;
        let answers = answers.as_array().expect("an array");
        assert_eq!(answers.len(), 8);
        let refused: Vec<&Value> = answers.iter().filter(|a| a["error"]["code"] == 429).collect();
        let passed = answers.iter().filter(|a| text(a).starts_with("echo")).count();
        assert_eq!((passed, refused.len()), (5, 2), "{answers:?}");
        assert!(
            refused
                .iter()
                .all(|a| a["error"]["data"]["retryAfterMs"].as_u64() > Some(0))
        );
        assert!(answers.iter().any(|a| a["id"] == 8 && a["result"]["tools"].is_array()));
        // The bucket is empty now: a lone call is refused too.
        let alone = s
            .post(call(9, "echo", None))
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", "2025-03-26")
            .send()
            .await;
        assert_limited(alone, 9).await;
    })
    .await;
}

#[tokio::test]
async fn exempt_methods_pass_and_counted_ones_are_chosen() {
    bounded(async {
        // Every request counts, but for discovery, lists, ping and the exempted prompts/get.
        let limit = RateLimit::new(slow(1)).all_requests().exempt("prompts/get");
        let s = limited(limit, HttpConfig::default()).await;
        assert_eq!(echo(&s, 1).send().await.status, StatusCode::OK);
        assert_limited(echo(&s, 2).send().await, 2).await;
        for (id, method) in [(3, "server/discover"), (4, "tools/list"), (5, "resources/list")] {
            for _ in 0..3 {
                let r = plain(&s, id, method).send().await;
                assert_eq!(r.status, StatusCode::OK, "{method} is exempt");
                assert!(r.json().await["result"].is_object(), "{method} is answered");
            }
        }
        let prompt = s
            .post(modern(6, "prompts/get", json!({"name": "nothing"})))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "prompts/get")
            .header("mcp-name", "nothing")
            .send()
            .await;
        assert_ne!(prompt.status, StatusCode::TOO_MANY_REQUESTS, "prompts/get was exempted");
        let body = prompt.json().await;
        assert_ne!(body["error"]["code"], 429, "{body}");
        // resources/templates/list passes (a list); resources/read counts (the bucket is empty).
        let read = s
            .post(modern(7, "resources/read", json!({"uri": "test://nothing"})))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "resources/read")
            .header("mcp-name", "test://nothing")
            .send()
            .await;
        assert_limited(read, 7).await;

        // Per tool: each tool has its own bucket.
        let s = limited(RateLimit::new(slow(1)).per_tool(), HttpConfig::default()).await;
        assert_eq!(echo(&s, 1).send().await.status, StatusCode::OK);
        assert_limited(echo(&s, 2).send().await, 2).await;
        let nap = s
            .post(modern(3, "tools/call", json!({"name": "nap", "arguments": {}})))
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "nap")
            .send()
            .await;
        assert_eq!(nap.status, StatusCode::OK, "another tool, another bucket");
    })
    .await;
}

#[tokio::test]
async fn the_hook_gives_each_principal_its_quota() {
    bounded(async {
        let limit = RateLimit::per_caller(|auth| match &*auth.principal {
            "root" => None,
            "vip" => Some(slow(4)),
            _ => Some(slow(1)),
        });
        let s = limited(limit, HttpConfig::default().auth(Arc::new(NamedUsers))).await;
        let as_user = |id: i64, user: &str| echo(&s, id).header("authorization", &format!("Bearer {user}"));
        // Principals are buckets of their own, whatever address they come from.
        assert_eq!(as_user(1, "alice").send_from(FIRST).await.status, StatusCode::OK);
        assert_limited(as_user(2, "alice").send_from(SECOND).await, 2).await;
        assert_eq!(as_user(3, "bob").send_from(FIRST).await.status, StatusCode::OK);
        for id in 4..=7 {
            assert_eq!(as_user(id, "vip").send().await.status, StatusCode::OK, "vip call {id}");
        }
        assert_limited(as_user(8, "vip").send().await, 8).await;
        for id in 9..=20 {
            assert_eq!(
                as_user(id, "root").send().await.status,
                StatusCode::OK,
                "root is unlimited"
            );
        }
    })
    .await;
}

/// Shared buckets whose store is down: every acquisition fails.
struct Down;

impl RateBuckets for Down {
    fn acquire<'a>(&'a self, _key: &'a str, _quota: Quota) -> StoreFuture<'a, Admission> {
        Box::pin(async { Err(StoreError::Unavailable("connection refused".into())) })
    }
}

#[tokio::test]
async fn a_store_that_is_down_gets_the_chosen_decision() {
    bounded(async {
        let down = |policy| RateLimit::new(slow(2)).buckets(Arc::new(Down)).on_store_failure(policy);
        // Local (the default): the process's own buckets decide, so the quota still holds.
        let s = limited(RateLimit::new(slow(2)).buckets(Arc::new(Down)), HttpConfig::default()).await;
        for id in 1..=2 {
            assert_eq!(echo(&s, id).send().await.status, StatusCode::OK, "call {id}");
        }
        assert_limited(echo(&s, 3).send().await, 3).await;
        // Open: nothing is limited.
        let s = limited(down(OnStoreFailure::Open), HttpConfig::default()).await;
        for id in 1..=6 {
            assert_eq!(echo(&s, id).send().await.status, StatusCode::OK, "call {id}");
        }
        // Closed: counted requests are refused as the store's unavailability, 503; others pass.
        let s = limited(down(OnStoreFailure::Closed), HttpConfig::default()).await;
        let refused = echo(&s, 1).send().await;
        assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.header("retry-after"), Some("1"));
        let body = refused.json().await;
        assert_eq!(body["error"]["code"], -32603, "{body}");
        assert_eq!(body["error"]["message"], "Store unavailable", "{body}");
        assert_eq!(plain(&s, 2, "tools/list").send().await.status, StatusCode::OK);
    })
    .await;
}
