//! The security suite's log check, alone in its test binary so that no other
//! test runs while its `tracing` subscriber is installed: no token, key or
//! password ever reaches a log (every event of every level is captured while
//! the failing and passing authentication paths of each provider run), nor the
//! `Debug` output of a provider or of the HTTP configuration.

#[allow(dead_code)]
#[path = "security/fixture.rs"]
mod fixture;
#[allow(dead_code)]
#[path = "http/support.rs"]
mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use fixture::{API_KEY, PASSWORD, SCOPE, SECRET, USER, api_keys, basic, bearer, claims, mint, now, server_with};
use http::StatusCode;
use mcp_runtime::ServerConfig;
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};
use support::{Server, bounded, list};

fn alice_with(field: &str, value: Value) -> String {
    let mut c = claims("alice");
    c[field] = value;
    mint(&c)
}

async fn attempt(s: &Server, authorization: Option<&str>) {
    let mut r = s.post(list(1));
    if let Some(a) = authorization {
        r = r.header("authorization", a);
    }
    r.send().await;
}

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn no_secret_reaches_a_log_or_a_debug_output() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);
    let good_token = mint(&claims("alice"));
    let expired = alice_with("exp", json!(now() - 3600));
    let foreign = alice_with("aud", json!("elsewhere"));
    let basic_good = STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let basic_bad = STANDARD.encode(format!("{USER}:wrong-{PASSWORD}"));
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio.block_on(bounded(async {
        let http = HttpConfig::default().auth(Arc::new(bearer(&[SCOPE])));
        let s = server_with(ServerConfig::default(), http).await;
        for t in [&good_token, &expired, &foreign, &"garbage.token.here".to_owned()] {
            attempt(&s, Some(&format!("Bearer {t}"))).await;
        }
        let sid = fixture::session(&s, "alice", json!({})).await;
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami"}});
        let r = fixture::by(s.post(call), "alice")
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(r.status, StatusCode::OK);

        let s = server_with(
            ServerConfig::default(),
            HttpConfig::default().auth(Arc::new(api_keys())),
        )
        .await;
        s.post(list(1)).header("x-api-key", API_KEY).send().await;
        s.post(list(1)).header("x-api-key", "k-wrong-key").send().await;
        attempt(&s, Some(&format!("ApiKey {API_KEY}"))).await;

        let s = server_with(ServerConfig::default(), HttpConfig::default().auth(Arc::new(basic()))).await;
        attempt(&s, Some(&format!("Basic {basic_good}"))).await;
        attempt(&s, Some(&format!("Basic {basic_bad}"))).await;
    }));
    let debug = format!(
        "{:?} {:?} {:?} {:?}",
        bearer(&[SCOPE]),
        api_keys(),
        basic(),
        HttpConfig::default().auth(Arc::new(api_keys()))
    );
    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("bearer token refused"), "the capture works: {logs}");
    assert!(logs.contains("basic authentication failed"), "{logs}");
    let secrets = [
        SECRET,
        &good_token,
        &expired,
        &foreign,
        API_KEY,
        "k-wrong-key",
        PASSWORD,
        &basic_good,
        &basic_bad,
    ];
    for secret in secrets {
        assert!(!logs.contains(secret), "a secret reached the logs: {secret}");
        assert!(!debug.contains(secret), "a secret is in a Debug output: {secret}");
    }
    // The token's signature alone must not leak either.
    let signature = good_token.rsplit('.').next().unwrap();
    assert!(!logs.contains(signature));
}
