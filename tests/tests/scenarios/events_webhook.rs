//! `events-webhook` (`src/scenarios/server/events/webhook.ts` at
//! b7fcf3f0d5fff919151f8eb8210eaf1887076370) and `events-webhook-delivery`
//! (`webhook-delivery.ts` at 45e4ede806f563fc897a3cfc90ea6244988cc1e2, the receiver of
//! `receiver.ts` at 3089d622818ed0678f021d9ef4bd3d0d88649263): the fixture with
//! `--events-fixture --api-key`, and a receiver on loopback that records every POST, echoes
//! verification challenges (except on `/wrong-challenge`), answers 503 twice per delivery on
//! `/flaky`, 410 on `/gone` and 503 always on `/down`. Signatures are checked with the secret the test chose.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use mcp_protocol::events::webhook::Secret;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::support::{EVENTS_RECEIVER_PORT, Fixture, bounded};

pub(crate) const KEY: &str = "events-webhook-test-key";

/// One POST the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    path: String,
    headers: HashMap<String, String>,
    pub(crate) body: Bytes,
    at: std::time::Instant,
}

impl Hit {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or_default()
    }
}

#[derive(Clone, Default)]
pub(crate) struct Receiver {
    hits: Arc<Mutex<Vec<Hit>>>,
}

impl Receiver {
    pub(crate) async fn start() -> (Receiver, SocketAddr) {
        Receiver::start_on(0).await
    }

    /// The receiver for `fixture`: on the port whose origin a logical server's instances permit
    /// (`MCP_EVENTS_RECEIVER_PORT`), else on a free one.
    pub(crate) async fn start_for(fixture: &Fixture) -> (Receiver, SocketAddr) {
        let port = match fixture.is_external() {
            true => std::env::var(EVENTS_RECEIVER_PORT)
                .ok()
                .and_then(|p| p.parse().ok())
                .expect("a logical server names its receiver's port"),
            false => 0,
        };
        Receiver::start_on(port).await
    }

    async fn start_on(port: u16) -> (Receiver, SocketAddr) {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let receiver = Receiver::default();
        let r = receiver.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let r = r.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let r = r.clone();
                        async move { Ok::<_, hyper::Error>(r.answer(req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        (receiver, addr)
    }

    async fn answer(&self, req: hyper::Request<hyper::body::Incoming>) -> hyper::Response<Full<Bytes>> {
        let path = req.uri().path().to_owned();
        let headers = req
            .headers()
            .iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let hit = Hit {
            path: path.clone(),
            headers,
            body,
            at: std::time::Instant::now(),
        };
        let message = hit.json();
        let id = hit.header("webhook-id").to_owned();
        let seen = {
            let mut hits = self.hits.lock().unwrap();
            hits.push(hit);
            hits.iter()
                .filter(|h| h.path == path && h.header("webhook-id") == id)
                .count()
        };
        let reply = |status: u16, body: Value| {
            hyper::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap()
        };
        if message["type"] == "verification" {
            let echo = if path.contains("wrong-challenge") {
                json!("not-the-nonce")
            } else {
                message["challenge"].clone()
            };
            return reply(200, json!({"challenge": echo}));
        }
        match path.as_str() {
            p if p.contains("flaky") && seen <= 2 => reply(503, json!({})),
            p if p.contains("gone") => reply(410, json!({})),
            p if p.contains("down") => reply(503, json!({})),
            _ => reply(200, json!({})),
        }
    }

    pub(crate) fn hits(&self, path: &str) -> Vec<Hit> {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.path == path)
            .cloned()
            .collect()
    }
}

pub(crate) fn secret(byte: u8, n: usize) -> String {
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(vec![byte; n])
    )
}

/// A 2026-07-28 request with the API key; the result or the error.
pub(crate) async fn call(fixture: &Fixture, id: u64, method: &str, params: Value, key: bool) -> Result<Value, Value> {
    let mut params = params;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "webhook-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    params["_meta"] = meta;
    let name = params["name"].as_str().map(str::to_owned);
    let mut headers = vec![("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    if let (Some(name), "tools/call") = (&name, method) {
        headers.push(("mcp-name", name));
    }
    let key_value = fixture.key.as_deref().unwrap_or(KEY);
    if key {
        headers.push(("x-api-key", key_value));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let answer = fixture.post(&body, &headers).await.answer(id).await;
    match (answer.get("result"), answer.get("error")) {
        (Some(r), None) => Ok(r.clone()),
        (None, Some(e)) => Err(e.clone()),
        _ => panic!("neither a result nor an error: {answer}"),
    }
}

pub(crate) fn subscribe_params(url: &str, secret: &str) -> Value {
    json!({"name": "build.finished", "arguments": {}, "delivery": {"mode": "webhook", "url": url, "secret": secret}, "cursor": null, "ttlMs": 3600000})
}

pub(crate) async fn control(fixture: &Fixture, id: u64, tool: &str, args: Value) -> String {
    let r = call(
        fixture,
        id,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        true,
    )
    .await
    .expect("the control runs");
    assert_ne!(r["isError"], true, "{r}");
    r["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn subscriptions_are_keyed_checked_and_owned() {
    bounded(60, async {
        let fixture = Fixture::events(&["--events-fixture", "--api-key", KEY]).await;
        let url = "https://conformance.invalid/mcp-events/1";
        let good = secret(7, 32);
        // subscribe-auth-required: an anonymous caller (a server without authentication) gets
        // -32012; behind the API key, a request without it never gets that far (401).
        let open = Fixture::start_with(&["--events-fixture"]).await;
        let e = call(&open, 1, "events/subscribe", subscribe_params(url, &good), false)
            .await
            .unwrap_err();
        assert_eq!(e["code"], -32012);
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": "events/subscribe", "params": subscribe_params(url, &good)});
        let refused = fixture
            .post_without_key(
                &body,
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "events/subscribe"),
                ],
            )
            .await;
        assert_eq!(refused.status, 401);
        // subscribe-webhook-only: accepted, its result's shape.
        let r = call(&fixture, 2, "events/subscribe", subscribe_params(url, &good), true)
            .await
            .expect("subscribe");
        let id = r["id"].as_str().expect("id").to_owned();
        assert!(id.starts_with("sub_"), "subscribe-id-derived");
        assert!(r["cursor"].is_string() || r["cursor"].is_null());
        assert!(r["truncated"].is_boolean() || r.get("truncated").is_none());
        assert!(
            r["refreshBefore"].as_str().is_some_and(|s| s.contains('T')),
            "refresh-before-is-iso8601: {r}"
        );
        // idempotent-upsert: the same key, the same id; key-composition: another URL, another.
        let again = call(&fixture, 3, "events/subscribe", subscribe_params(url, &good), true)
            .await
            .unwrap();
        assert_eq!(again["id"], id.as_str());
        assert!(
            again["deliveryStatus"]["active"].is_boolean(),
            "a refresh reports its status"
        );
        let other = call(
            &fixture,
            4,
            "events/subscribe",
            subscribe_params("https://conformance.invalid/mcp-events/2", &good),
            true,
        )
        .await
        .unwrap();
        assert_ne!(other["id"], id.as_str());
        // id-not-an-input: a subscribe carrying another subscription's id is the key's own.
        let mut with_id = subscribe_params(url, &good);
        with_id["id"] = other["id"].clone();
        assert_eq!(
            call(&fixture, 5, "events/subscribe", with_id, true).await.unwrap()["id"],
            id.as_str()
        );
        // ttl-omitted-means-default, ttl-no-rejection-path.
        for (n, ttl) in [(6, Value::Null), (7, json!(1000)), (8, json!(30u64 * 86_400_000))] {
            let mut p = subscribe_params(url, &good);
            match ttl {
                Value::Null => {
                    p.as_object_mut().unwrap().remove("ttlMs");
                }
                t => p["ttlMs"] = t,
            }
            let r = call(&fixture, n, "events/subscribe", p, true)
                .await
                .expect("any ttl is accepted");
            assert!(r["refreshBefore"].is_string(), "finite unless null was asked: {r}");
        }
        // Refused with -32602: no secret, no whsec_, 8 bytes, http.
        let mut no_secret = subscribe_params(url, &good);
        no_secret["delivery"].as_object_mut().unwrap().remove("secret");
        for (n, p) in [
            (10, no_secret),
            (11, subscribe_params(url, "abc")),
            (12, subscribe_params(url, &secret(1, 8))),
            (13, subscribe_params("http://conformance.invalid/mcp-events/3", &good)),
        ] {
            let e = call(&fixture, n, "events/subscribe", p, true).await.unwrap_err();
            assert_eq!(e["code"], -32602, "{e}");
        }
        // error-unsupported: a type without webhook.
        let mut chat = subscribe_params(url, &good);
        chat["name"] = json!("chat.message");
        assert_eq!(
            call(&fixture, 14, "events/subscribe", chat, true).await.unwrap_err()["code"],
            -32014
        );
        // unsubscribe-by-key, then the key is unknown.
        let key = json!({"name": "build.finished", "arguments": {}, "delivery": {"url": url}});
        let done = call(&fixture, 15, "events/unsubscribe", key.clone(), true)
            .await
            .unwrap();
        assert!(
            done.as_object()
                .unwrap()
                .keys()
                .all(|k| k == "_meta" || k == "resultType"),
            "{done}"
        );
        let e = call(&fixture, 16, "events/unsubscribe", key, true).await.unwrap_err();
        assert_eq!(e["code"], -32011);
        assert_eq!(
            control(&fixture, 17, "events_conformance_subscription_state", json!({"id": id})).await,
            "absent"
        );
    })
    .await;
}

#[tokio::test]
async fn another_tenants_subscription_is_out_of_reach() {
    bounded(60, async {
        // cross-tenant-isolation, through the fixture's tenant controls: another principal's
        // subscription at the same URL is not the caller's to see, refresh or remove.
        let fixture = Fixture::events(&["--events-fixture", "--api-key", KEY]).await;
        let url = "https://conformance.invalid/mcp-events/tenant";
        let tenant = |principal: &str| json!({"principal": principal, "name": "build.finished", "url": url});
        let theirs = control(&fixture, 1, "events_conformance_subscribe_as", tenant("tenant-b")).await;
        assert!(theirs.starts_with("sub_"), "{theirs}");
        assert_eq!(
            control(
                &fixture,
                2,
                "events_conformance_subscription_exists",
                tenant("tenant-b")
            )
            .await,
            "true"
        );
        // The caller's own key at that URL names nothing: its unsubscribe is -32011, and the
        // other tenant's subscription stays.
        let key = json!({"name": "build.finished", "arguments": {}, "delivery": {"url": url}});
        let e = call(&fixture, 3, "events/unsubscribe", key, true).await.unwrap_err();
        assert_eq!(e["code"], -32011);
        assert_eq!(
            control(
                &fixture,
                4,
                "events_conformance_subscription_exists",
                tenant("tenant-b")
            )
            .await,
            "true"
        );
        // The caller's own subscription at the same URL is another one, with another id.
        let mine = call(
            &fixture,
            5,
            "events/subscribe",
            subscribe_params(url, &secret(3, 32)),
            true,
        )
        .await
        .expect("subscribe");
        assert_ne!(mine["id"], theirs.as_str());
        assert_eq!(
            control(
                &fixture,
                6,
                "events_conformance_subscription_exists",
                tenant("tenant-c")
            )
            .await,
            "false"
        );
    })
    .await;
}

#[tokio::test]
async fn deliveries_are_consented_signed_retried_and_bounded() {
    bounded(90, async {
        let fixture = Fixture::events(&["--events-fixture", "--api-key", KEY]).await;
        let (receiver, addr) = Receiver::start_for(&fixture).await;
        let good = secret(9, 32);
        // ssrf-reject-non-routable: a loopback https callback is refused, never connected.
        let canary = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let probe = format!("https://127.0.0.1:{}/ssrf-probe-1", canary.local_addr().unwrap().port());
        let e = call(&fixture, 1, "events/subscribe", subscribe_params(&probe, &good), true)
            .await
            .unwrap_err();
        assert_eq!(e["code"], -32602);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), canary.accept())
                .await
                .is_err(),
            "the server never connected to the canary"
        );
        // ssrf-validate-callback-url: a loopback receiver over http is refused (one the logical
        // server was not told of, when the receiver's origin is permitted from the start)…
        let base = format!("http://{addr}");
        let stranger = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let refused = match fixture.is_external() {
            true => format!("http://{}/hook", stranger.local_addr().unwrap()),
            false => format!("{base}/hook"),
        };
        let e = call(&fixture, 2, "events/subscribe", subscribe_params(&refused, &good), true)
            .await
            .unwrap_err();
        assert_eq!(e["code"], -32602);
        // …until its origin is allowed.
        control(
            &fixture,
            3,
            "events_conformance_allow_callback_origin",
            json!({"origin": base}),
        )
        .await;
        // verification-failure-error, verification-no-raw-endpoint-responses.
        let e = call(
            &fixture,
            4,
            "events/subscribe",
            subscribe_params(&format!("{base}/wrong-challenge"), &good),
            true,
        )
        .await
        .unwrap_err();
        assert_eq!(e["code"], -32015);
        assert_eq!(e["data"]["reason"], "challenge_failed");
        assert!(!e.to_string().contains("not-the-nonce"));
        // A verified subscription: the handshake first, then signed occurrences.
        let r = call(
            &fixture,
            5,
            "events/subscribe",
            subscribe_params(&format!("{base}/hook"), &good),
            true,
        )
        .await
        .expect("subscribe");
        let id = r["id"].as_str().unwrap().to_owned();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let hits = receiver.hits("/hook");
        assert!(hits.len() >= 2, "the handshake and an occurrence: {hits:?}");
        assert_eq!(
            hits[0].json()["type"],
            "verification",
            "verification-required-before-delivery"
        );
        let key = Secret::parse(Some(&good)).unwrap();
        for hit in &hits {
            // Every delivery: POST, JSON, the Standard Webhooks headers, the subscription id, a
            // signature over id.timestamp.body with the decoded secret.
            assert!(hit.header("content-type").starts_with("application/json"));
            let ts: u64 = hit.header("webhook-timestamp").parse().expect("a timestamp");
            assert!(
                key.verifies(hit.header("webhook-signature"), hit.header("webhook-id"), ts, &hit.body),
                "delivery-signature-formula"
            );
        }
        let events: Vec<&Hit> = hits.iter().filter(|h| h.json().get("type").is_none()).collect();
        assert!(!events.is_empty());
        for e in &events {
            assert_eq!(e.header("x-mcp-subscription-id"), id);
            let body = e.json();
            assert_eq!(
                e.header("webhook-id"),
                body["eventId"].as_str().unwrap(),
                "webhook-id is the eventId"
            );
            assert_eq!(body["name"], "build.finished");
            assert!(body["timestamp"].as_str().unwrap().contains('T'));
        }
        // Each occurrence once.
        let mut ids: Vec<&str> = events.iter().map(|e| e.header("webhook-id")).collect();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "no occurrence delivered twice");
        // Envelopes: gap and terminated, signed like the rest.
        control(&fixture, 6, "events_conformance_webhook_gap", json!({"id": id})).await;
        control(&fixture, 7, "events_conformance_webhook_terminate", json!({"id": id})).await;
        let hits = receiver.hits("/hook");
        let gap = hits.iter().find(|h| h.json()["type"] == "gap").expect("a gap envelope");
        assert!(gap.json()["cursor"].is_string());
        assert!(gap.header("webhook-id").starts_with("msg_gap_"));
        let end = hits
            .iter()
            .find(|h| h.json()["type"] == "terminated")
            .expect("a terminated envelope");
        assert_eq!(end.json()["error"]["code"], -32012);
        assert_eq!(
            control(&fixture, 8, "events_conformance_subscription_state", json!({"id": id})).await,
            "absent"
        );
        // delivery-retry-regenerates-signature: 503 twice, then accepted, at least a second apart.
        call(
            &fixture,
            9,
            "events/subscribe",
            subscribe_params(&format!("{base}/flaky"), &good),
            true,
        )
        .await
        .unwrap();
        // gone: a 410 is never retried.
        call(
            &fixture,
            10,
            "events/subscribe",
            subscribe_params(&format!("{base}/gone"), &good),
            true,
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_secs(10)).await;
        let flaky: Vec<Hit> = receiver
            .hits("/flaky")
            .into_iter()
            .filter(|h| h.json().get("type").is_none())
            .collect();
        let first = flaky
            .first()
            .expect("a delivery to /flaky")
            .header("webhook-id")
            .to_owned();
        let tries: Vec<&Hit> = flaky.iter().filter(|h| h.header("webhook-id") == first).collect();
        assert_eq!(tries.len(), 3, "two refusals, then accepted: {tries:?}");
        assert!(tries[1].at.duration_since(tries[0].at) >= Duration::from_millis(900));
        assert_ne!(
            tries[0].header("webhook-signature"),
            tries[2].header("webhook-signature")
        );
        let gone: Vec<Hit> = receiver
            .hits("/gone")
            .into_iter()
            .filter(|h| h.json().get("type").is_none())
            .collect();
        assert!(!gone.is_empty());
        let mut per_id = HashMap::new();
        for g in &gone {
            *per_id.entry(g.header("webhook-id").to_owned()).or_insert(0) += 1;
        }
        assert!(per_id.values().all(|n| *n == 1), "no retry after 410: {per_id:?}");
    })
    .await;
}

#[tokio::test]
async fn verification_handshakes_toward_one_host_are_bounded() {
    bounded(60, async {
        // However many subscribes name one host, the server starts at most 20 handshakes toward
        // it at once, then one a second (WebhookSettings::verifications_per_host): it is never a
        // way to flood a third party with POSTs. Past that, -32013 saying when to try again.
        let fixture = Fixture::start_with(&["--events-fixture", "--api-key", KEY]).await;
        let (receiver, addr) = Receiver::start().await;
        let base = format!("http://{addr}");
        control(
            &fixture,
            1,
            "events_conformance_allow_callback_origin",
            json!({"origin": base}),
        )
        .await;
        let (mut granted, mut refused) = (0u64, Vec::new());
        for n in 0..30u64 {
            let url = format!("{base}/many/{n}");
            match call(
                &fixture,
                10 + n,
                "events/subscribe",
                subscribe_params(&url, &secret(9, 32)),
                true,
            )
            .await
            {
                Ok(_) => granted += 1,
                Err(e) => refused.push(e),
            }
        }
        let handshakes = receiver
            .hits
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.path.starts_with("/many/") && h.json()["type"] == "verification")
            .count() as u64;
        assert_eq!(handshakes, granted, "a refused subscribe POSTs nothing");
        assert!(
            (20..=22).contains(&granted),
            "the burst, and what a second refills: {granted}"
        );
        let e = &refused[0];
        assert_eq!(e["code"], -32013, "{e}");
        assert_eq!(e["data"]["limit"], "verifications", "{e}");
        assert_eq!(e["data"]["max"], 60, "{e}");
        let retry = e["data"]["retryAfterMs"].as_u64().expect("when to try again");
        assert!((1..=1000).contains(&retry), "{e}");
        // Once the rate allows it again, the next one goes through.
        tokio::time::sleep(Duration::from_millis(retry + 50)).await;
        let url = format!("{base}/many/later");
        call(
            &fixture,
            99,
            "events/subscribe",
            subscribe_params(&url, &secret(9, 32)),
            true,
        )
        .await
        .expect("allowed again");
    })
    .await;
}
