//! One rate across instances: with the buckets in the shared store, a client sending through
//! the round-robin proxy (every other request to each instance) gets its quota once, not once
//! per instance; with each instance's own buckets (the control) it gets twice its quota.
//!
//! The quota refills one request a minute and every scenario is bounded well under a minute,
//! so the number of accepted requests is exact whatever the machine's speed.

use std::sync::Arc;

use http::StatusCode;
use mcp_runtime::middleware::RateLimit;
use mcp_runtime::store::Quota;
use serde_json::json;

use super::{Cluster, Setup, config};

/// What a bucket holds: the burst.
const BURST: u32 = 10;
/// How many calls the client sends.
const CALLS: i64 = 40;

fn quota() -> Quota {
    Quota::new(1.0 / 60.0, BURST).expect("a valid quota")
}

/// Instances rate-limiting `tools/call`, with the shared store's buckets (`shared`) or each
/// with its own.
fn setup(shared: bool) -> Setup {
    Arc::new(move |store| {
        let mut c = config();
        let limit = RateLimit::new(quota());
        let limit = if shared {
            limit.buckets(store.buckets.clone())
        } else {
            limit
        };
        c.middleware.push(limit);
        c
    })
}

/// Sends [`CALLS`] calls of `echo` through the proxy; returns how many each instance accepted
/// (every other answer must be the rate-limit refusal).
async fn flood(c: &Cluster) -> [usize; 2] {
    let mut accepted = [0; 2];
    let mut refused = 0;
    for id in 1..=CALLS {
        let params = json!({"name": "echo", "arguments": {}});
        let (resp, at) = c.send(c.modern(id, "tools/call", Some("echo"), params, false)).await;
        match resp.status {
            StatusCode::OK => accepted[at] += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert!(resp.header("retry-after").is_some(), "Retry-After");
                let body = resp.json().await;
                assert_eq!(body["error"]["code"], mcp_protocol::codes::RATE_LIMITED, "{body}");
                refused += 1;
            }
            other => panic!("call {id}: unexpected status {other}"),
        }
    }
    assert_eq!(accepted[0] + accepted[1] + refused, CALLS as usize);
    accepted
}

/// The shared buckets: exactly the burst is accepted, served by both instances.
async fn one_rate_across_instances(c: Cluster) {
    let accepted = flood(&c).await;
    assert_eq!(
        accepted[0] + accepted[1],
        BURST as usize,
        "accepted per instance: {accepted:?}"
    );
    assert!(
        accepted[0] > 0 && accepted[1] > 0,
        "both instances served: {accepted:?}"
    );
}

/// The control: each instance's own buckets let twice the burst through.
async fn own_buckets_give_each_instance_the_rate(c: Cluster) {
    let accepted = flood(&c).await;
    assert_eq!(accepted, [BURST as usize; 2]);
}

#[tokio::test]
async fn shared_memory() {
    super::bounded_for(30, async {
        one_rate_across_instances(Cluster::memory_with(setup(true)).await).await
    })
    .await;
}

#[tokio::test]
async fn shared_redis() {
    super::bounded_for(30, async {
        one_rate_across_instances(Cluster::redis_with(setup(true)).await).await
    })
    .await;
}

#[tokio::test]
async fn unshared_control() {
    super::bounded_for(30, async {
        own_buckets_give_each_instance_the_rate(Cluster::memory_with(setup(false)).await).await
    })
    .await;
}
