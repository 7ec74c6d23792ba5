//! The security suite, over HTTP with the real providers of `mcp-auth`.
//!
//! This file: each provider's accept and reject paths (bearer: valid,
//! expired, not yet valid, wrong audience, wrong issuer, bad signature,
//! insufficient scope, no token; API key in both headers; basic).
//! `security_logs.rs` (its own test binary, so that no other test races its
//! `tracing` subscriber): no token, key or password ever reaches a log or a
//! `Debug` output.
//! `security/ownership.rs`: sessions, client responses, request states and URL
//! elicitations across two principals; `security/tasks.rs`: tasks of both eras
//! and `subscriptions/listen` task ids across principals;
//! `security/visibility.rs`: the per-principal catalog hook; `security/scopes.rs`: the scopes
//! each operation needs, one challenge naming them all;
//! `security/fixture.rs`: providers, tokens, tools.

#[path = "security/fixture.rs"]
mod fixture;
#[path = "security/ownership.rs"]
mod ownership;
#[path = "security/scopes.rs"]
mod scopes;
#[allow(dead_code)]
#[path = "http/support.rs"]
mod support;
#[path = "security/tasks.rs"]
mod tasks;
#[path = "security/visibility.rs"]
mod visibility;

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use fixture::{API_KEY, PASSWORD, PRM, SCOPE, USER, api_keys, basic, bearer, claims, mint, now, server_with};
use http::StatusCode;
use mcp_runtime::ServerConfig;
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};
use support::{Server, bounded, list};

/// Claims for alice with one field replaced.
fn alice_with(field: &str, value: Value) -> String {
    let mut c = claims("alice");
    c[field] = value;
    mint(&c)
}

/// A legacy `tools/list` with `authorization`, before any session: the answer to the
/// authentication step (200 means the caller got as far as the session check).
async fn attempt(s: &Server, authorization: Option<&str>) -> support::Resp {
    let mut r = s.post(list(1));
    if let Some(a) = authorization {
        r = r.header("authorization", a);
    }
    r.send().await
}

fn passed(status: StatusCode) -> bool {
    // Authenticated: the legacy request then needs a session (400), never a 401/403.
    status == StatusCode::BAD_REQUEST
}

#[tokio::test]
async fn bearer_accepts_valid_tokens_and_refuses_the_rest() {
    bounded(async {
        let http = HttpConfig::default().auth(Arc::new(bearer(&[SCOPE])));
        let s = server_with(ServerConfig::default(), http).await;

        let ok = attempt(&s, Some(&format!("Bearer {}", mint(&claims("alice"))))).await;
        assert!(passed(ok.status), "{}", ok.status);

        let none = attempt(&s, None).await;
        assert_eq!(none.status, StatusCode::UNAUTHORIZED);
        let challenge = none.header("www-authenticate").expect("challenge").to_owned();
        assert!(challenge.starts_with("Bearer realm=\"mcp\""), "{challenge}");
        assert!(
            challenge.contains(&format!("resource_metadata=\"{PRM}\"")),
            "{challenge}"
        );
        assert!(
            !challenge.contains("error="),
            "no token, no error (RFC 6750 §3.1): {challenge}"
        );

        let refused = [
            ("expired", alice_with("exp", json!(now() - 3600))),
            ("not yet valid", alice_with("nbf", json!(now() + 3600))),
            ("wrong audience", alice_with("aud", json!("another-resource"))),
            ("wrong issuer", alice_with("iss", json!("https://evil.example"))),
            ("no audience", {
                let mut c = claims("alice");
                c.as_object_mut().unwrap().remove("aud");
                mint(&c)
            }),
        ];
        for (why, token) in refused {
            let r = attempt(&s, Some(&format!("Bearer {token}"))).await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{why}");
            let c = r.header("www-authenticate").unwrap_or_default();
            assert!(c.contains("error=\"invalid_token\""), "{why}: {c}");
            assert!(c.contains("resource_metadata="), "{why}: {c}");
        }
        // Within the 60 s clock skew a just-expired token still passes.
        let grace = attempt(&s, Some(&format!("Bearer {}", alice_with("exp", json!(now() - 10))))).await;
        assert!(passed(grace.status), "{}", grace.status);

        let token = mint(&claims("alice"));
        let forged = format!("{}x", &token[..token.len() - 1]);
        let bad_sig = attempt(&s, Some(&format!("Bearer {forged}"))).await;
        assert_eq!(bad_sig.status, StatusCode::UNAUTHORIZED);

        let scopeless = attempt(&s, Some(&format!("Bearer {}", alice_with("scope", json!("other"))))).await;
        assert_eq!(scopeless.status, StatusCode::FORBIDDEN);
        let c = scopeless.header("www-authenticate").unwrap_or_default();
        assert!(c.contains("error=\"insufficient_scope\""), "{c}");
        assert!(c.contains(&format!("scope=\"{SCOPE}\"")), "names the scope: {c}");
        // Fails closed: a token without any scope claim lacks the scope.
        let mut bare = claims("alice");
        bare.as_object_mut().unwrap().remove("scope");
        let r = attempt(&s, Some(&format!("Bearer {}", mint(&bare)))).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
    })
    .await;
}

#[tokio::test]
async fn api_keys_in_either_header() {
    bounded(async {
        let s = server_with(
            ServerConfig::default(),
            HttpConfig::default().auth(Arc::new(api_keys())),
        )
        .await;
        let by_header = s.post(list(1)).header("x-api-key", API_KEY).send().await;
        assert!(passed(by_header.status), "{}", by_header.status);
        let by_authorization = attempt(&s, Some(&format!("ApiKey {API_KEY}"))).await;
        assert!(passed(by_authorization.status), "{}", by_authorization.status);
        for wrong in [
            s.post(list(1)).header("x-api-key", "k-guess").send().await,
            attempt(&s, Some("ApiKey k-guess")).await,
            attempt(&s, None).await,
            attempt(&s, Some(&format!("Bearer {API_KEY}"))).await,
        ] {
            assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
            assert_eq!(wrong.header("www-authenticate"), Some("ApiKey header=\"x-api-key\""));
        }
    })
    .await;
}

#[tokio::test]
async fn basic_accepts_the_right_password_only() {
    bounded(async {
        let s = server_with(ServerConfig::default(), HttpConfig::default().auth(Arc::new(basic()))).await;
        let basic_of = |up: &str| format!("Basic {}", STANDARD.encode(up));
        let ok = attempt(&s, Some(&basic_of(&format!("{USER}:{PASSWORD}")))).await;
        assert!(passed(ok.status), "{}", ok.status);
        for wrong in [
            basic_of(&format!("{USER}:not-the-password")),
            basic_of(&format!("mallory:{PASSWORD}")),
            "Basic !!!".to_owned(),
        ] {
            let r = attempt(&s, Some(&wrong)).await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{wrong}");
            assert_eq!(r.header("www-authenticate"), Some("Basic realm=\"mcp\""));
        }
    })
    .await;
}
