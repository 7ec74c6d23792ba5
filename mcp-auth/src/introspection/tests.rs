//! Introspection against an authorization server played by a server on 127.0.0.1.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};

use super::*;
use crate::test_server::{Reply, TestServer};
use crate::{AuthProvider, BearerAuth, Challenge, test_parts};

const PATH: &str = "/introspect";

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn active() -> Value {
    json!({
        "active": true, "sub": "alice", "scope": "read write", "aud": "mcp",
        "iss": "https://as", "exp": now() + 300, "client_id": "app",
        "cnf": {"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}
    })
}

fn bearer(introspection: &Introspection) -> BearerAuth {
    BearerAuth::builder()
        .verifier(introspection.clone())
        .audience("mcp")
        .issuer("https://as")
        .build()
        .unwrap()
}

async fn run(p: &BearerAuth, token: &str) -> Result<crate::AuthInfo, Challenge> {
    p.authenticate(&test_parts(&[("authorization", &format!("Bearer {token}"))]))
        .await
}

#[tokio::test]
async fn an_active_token_and_the_request_sent() {
    let server = TestServer::start().await;
    server.set(PATH, Reply::json(&active()));
    let i = Introspection::builder(server.url(PATH))
        .client_secret_basic("mcp server", "s3cr:t/+é")
        .build()
        .unwrap();
    let info = run(&bearer(&i), "tok-1.A~b+c/d=").await.unwrap();
    assert_eq!(
        (&*info.principal, info.scopes.as_slice()),
        ("alice", &["read".to_owned(), "write".to_owned()][..])
    );
    assert_eq!(info.claims["client_id"], "app");
    assert!(
        info.claims["cnf"]["jkt"].is_string(),
        "the confirmation is kept for proof checks"
    );
    assert!(!info.claims.contains_key("active"));
    let sent = server.last(PATH).unwrap();
    assert_eq!(sent.method, http::Method::POST);
    assert_eq!(sent.headers["content-type"], "application/x-www-form-urlencoded");
    assert_eq!(
        std::str::from_utf8(&sent.body).unwrap(),
        "token=tok-1.A%7Eb%2Bc%2Fd%3D&token_type_hint=access_token"
    );
    // RFC 6749 §2.3.1: the id and the secret are form-encoded before Basic encoding.
    let expected = base64::engine::general_purpose::STANDARD.encode("mcp+server:s3cr%3At%2F%2B%C3%A9");
    assert_eq!(sent.headers["authorization"], format!("Basic {expected}").as_str());
}

#[tokio::test]
async fn client_secret_post_puts_the_credentials_in_the_form() {
    let server = TestServer::start().await;
    server.set(PATH, Reply::json(&active()));
    let i = Introspection::builder(server.url(PATH))
        .client_secret_post("rs", "p&w=d")
        .build()
        .unwrap();
    assert!(run(&bearer(&i), "tok").await.is_ok());
    let sent = server.last(PATH).unwrap();
    assert!(sent.headers.get("authorization").is_none());
    assert_eq!(
        std::str::from_utf8(&sent.body).unwrap(),
        "token=tok&token_type_hint=access_token&client_id=rs&client_secret=p%26w%3Dd"
    );
}

#[tokio::test]
async fn an_inactive_token_is_401_and_remembered_briefly() {
    let server = TestServer::start().await;
    server.set(PATH, Reply::json(&json!({"active": false})));
    let i = Introspection::builder(server.url(PATH))
        .inactive_cache_ttl(Duration::from_millis(200))
        .build()
        .unwrap();
    let p = bearer(&i);
    for _ in 0..2 {
        let c = run(&p, "revoked").await.unwrap_err();
        assert_eq!(c.status, 401);
        let header = c.www_authenticate.unwrap();
        assert!(
            header.contains(r#"error="invalid_token", error_description="the token is not active""#),
            "{header}"
        );
    }
    assert_eq!((i.requests(), i.cache_hits()), (1, 1));
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(run(&p, "revoked").await.is_err());
    assert_eq!(i.requests(), 2, "asked again once the inactive answer is forgotten");
}

#[tokio::test]
async fn the_claims_go_through_the_bearer_checks() {
    let server = TestServer::start().await;
    let i = Introspection::builder(server.url(PATH)).build().unwrap();
    let p = bearer(&i);
    let mut expired = active();
    expired["exp"] = json!(now() - 3_600);
    let mut other_aud = active();
    other_aud["aud"] = json!(["other"]);
    let mut as_array = active();
    as_array["aud"] = json!(["other", "mcp"]);
    let mut no_sub = active();
    no_sub.as_object_mut().unwrap().remove("sub");
    for (i, (answer, outcome)) in [
        (expired, Some("the token expired")),
        (other_aud, Some("the token is not meant for this resource")),
        (as_array, None),
        (no_sub, Some("the token lacks the sub claim")),
    ]
    .into_iter()
    .enumerate()
    {
        server.set(PATH, Reply::json(&answer));
        match (run(&p, &format!("t{i}")).await, outcome) {
            (Ok(_), None) => {}
            (Err(c), Some(d)) => assert!(c.www_authenticate.unwrap().contains(d), "{d}"),
            (got, want) => panic!("{got:?} where {want:?} was expected"),
        }
    }
}

#[tokio::test]
async fn endpoint_failures_are_503_and_not_remembered() {
    let server = TestServer::start().await;
    let i = Introspection::builder(server.url(PATH))
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let p = bearer(&i);
    for (n, failure) in [
        Reply::status(500),
        Reply::status(401),
        Reply::status(200).body("<html>"),
        Reply::json(&json!({"active": "yes"})),
        Reply::json(&json!([true])),
        Reply::json(&active()).delayed(Duration::from_secs(2)),
    ]
    .into_iter()
    .enumerate()
    {
        server.set(PATH, failure);
        let c = run(&p, "tok").await.unwrap_err();
        assert_eq!((c.status, c.www_authenticate.as_deref()), (503, None), "failure {n}");
        assert!(c.retry_after.is_some());
        assert_eq!(i.requests(), n as u64 + 1, "a failure is not remembered");
    }
    assert_eq!(i.verify("tok").await.unwrap_err(), TokenError::Unavailable);
}

#[tokio::test]
async fn an_active_answer_is_remembered_until_exp_or_the_max_ttl() {
    let server = TestServer::start().await;
    server.set(PATH, Reply::json(&active()));
    let i = Introspection::builder(server.url(PATH))
        .max_cache_ttl(Duration::from_millis(300))
        .build()
        .unwrap();
    let p = bearer(&i);
    assert!(run(&p, "tok").await.is_ok());
    assert!(run(&p, "tok").await.is_ok());
    assert_eq!((i.requests(), i.cache_hits()), (1, 1), "the second is a cache hit");
    assert!(run(&p, "another").await.is_ok());
    assert_eq!(i.requests(), 2, "keyed by token");
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(run(&p, "tok").await.is_ok());
    assert_eq!(i.requests(), 3, "past the max TTL it is asked again");
    // A token expiring in a second is not remembered past then, nor one already expired.
    let mut soon = active();
    soon["exp"] = json!(now() + 1);
    server.set(PATH, Reply::json(&soon));
    let i = Introspection::builder(server.url(PATH)).build().unwrap();
    assert!(i.verify("soon").await.is_ok());
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let _ = i.verify("soon").await;
    assert_eq!(i.requests(), 2);
    // No cache at all.
    server.set(PATH, Reply::json(&active()));
    let i = Introspection::builder(server.url(PATH))
        .cache_entries(0)
        .build()
        .unwrap();
    let _ = (i.verify("x").await, i.verify("x").await);
    assert_eq!(i.requests(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_lookups_of_one_token_share_one_request() {
    let server = TestServer::start().await;
    server.set(PATH, Reply::json(&active()).delayed(Duration::from_millis(200)));
    let i = Introspection::builder(server.url(PATH)).build().unwrap();
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let i = i.clone();
            tokio::spawn(async move { i.verify("same").await.map(|c| c["sub"].clone()) })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), "alice");
    }
    assert_eq!((server.hits(PATH), i.requests()), (1, 1));
    assert!(
        i.inner.in_flight.lock().unwrap().is_empty(),
        "the shared lookup is cleared"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_under_way_are_bounded() {
    let server = TestServer::start().await;
    server.set(PATH, Reply::json(&active()).delayed(Duration::from_millis(400)));
    let i = Introspection::builder(server.url(PATH))
        .max_concurrent_requests(2)
        .timeout(Duration::from_millis(600))
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..4)
        .map(|n| {
            let i = i.clone();
            tokio::spawn(async move { i.verify(&format!("t{n}")).await.is_ok() })
        })
        .collect();
    let mut passed = 0;
    for t in tasks {
        passed += usize::from(t.await.unwrap());
    }
    // Two run at once; the two waiting get a slot after 400 ms, within their 600 ms.
    assert_eq!(passed, 4);
    assert_eq!(server.hits(PATH), 4);
    let tasks: Vec<_> = (0..6)
        .map(|n| {
            let i = i.clone();
            tokio::spawn(async move { i.verify(&format!("u{n}")).await })
        })
        .collect();
    let mut unavailable = 0;
    for t in tasks {
        unavailable += usize::from(t.await.unwrap() == Err(TokenError::Unavailable));
    }
    // Two run at once, two more after 400 ms; the last two would wait 800 ms: refused at 600.
    assert_eq!(unavailable, 2);
}

#[tokio::test]
async fn the_endpoint_discovered_from_the_issuer() {
    let server = TestServer::start().await;
    let issuer = server.url("/realm");
    server.set(PATH, Reply::json(&active()));
    let i = Introspection::from_issuer(&issuer).build().unwrap();
    // Not reachable yet: 503, and not asked again within the retry delay.
    assert_eq!(i.verify("tok").await.unwrap_err(), TokenError::Unavailable);
    assert_eq!(i.verify("tok").await.unwrap_err(), TokenError::Unavailable);
    assert_eq!(server.hits("/realm/.well-known/openid-configuration"), 1);
    let rfc8414 = "/.well-known/oauth-authorization-server/realm";
    assert_eq!(server.hits(rfc8414), 1, "both forms were tried");
    let i = Introspection::from_issuer(&issuer).build().unwrap();
    server.set(
        rfc8414,
        Reply::json(&json!({"issuer": issuer, "introspection_endpoint": server.url(PATH)})),
    );
    assert_eq!(i.verify("tok").await.unwrap()["sub"], "alice");
    assert!(i.verify("tok2").await.is_ok());
    assert_eq!(server.hits(rfc8414), 2, "discovered once");
    // A document naming another issuer is not used.
    server.set(
        rfc8414,
        Reply::json(&json!({"issuer": "https://evil.example", "introspection_endpoint": server.url(PATH)})),
    );
    let i = Introspection::from_issuer(&issuer).build().unwrap();
    assert_eq!(i.verify("tok").await.unwrap_err(), TokenError::Unavailable);
    assert_eq!(i.requests(), 0);
}

#[test]
fn setup_errors_and_no_secret_in_debug() {
    assert!(matches!(
        Introspection::builder("http://as.example.com/introspect").build(),
        Err(AuthSetupError::InvalidUrl { .. })
    ));
    assert!(matches!(
        Introspection::from_issuer("https://as.example.com/?x").build(),
        Err(AuthSetupError::InvalidUrl { .. })
    ));
    assert!(matches!(
        Introspection::builder("https://as.example.com/introspect")
            .client_secret_basic("", "s")
            .build(),
        Err(AuthSetupError::InvalidClientId)
    ));
    let b = Introspection::builder("https://as.example.com/introspect").client_secret_basic("rs", "hunter2-secret");
    let i = b.clone().build().unwrap();
    for shown in [format!("{b:?}"), format!("{i:?}")] {
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("client_secret_basic(\"rs\")"), "{shown}");
    }
}
