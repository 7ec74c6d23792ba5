//! The OAuth resource server against a real OpenID provider: `oidc-provider` (the certified Node
//! implementation) that `cargo xtask ci` starts on loopback (`MCP_TEST_OIDC_*`), issuing tokens
//! with the client-credentials grant for the `everything` fixture, which runs as a deployment
//! would, with its flags: keys from the issuer (`--oidc-issuer`), opaque tokens asked about at
//! the introspection endpoint (`--introspection-url`), DPoP (`--dpop`), per-operation scopes
//! (`--scope-fixture`).
//!
//! Each case: valid tokens served in both eras; no token, a token for another resource, an
//! expired or revoked token refused with the challenge its RFC specifies; a token short of a
//! scope answered 403 with every needed scope in one challenge; DPoP proofs replayed, for
//! another URL or by another key refused; the issuer's keys rotated while the server runs, and
//! tokens signed with the new key accepted without a restart.

#[path = "oidc/dpop.rs"]
mod dpop;
#[path = "oidc/fixture.rs"]
mod fixture;
#[path = "oidc/net.rs"]
mod net;
#[path = "oidc/provider.rs"]
mod provider;

use std::time::Duration;

use http::StatusCode;

use dpop::DpopKey;
use fixture::{Everything, assert_challenged, assert_served, bearer};
use provider::{TokenRequest, provider, revoke, token, token_answer, token_endpoint};

/// A token of `client` from the shared issuer for `resource`, with `scope`.
async fn token_for(client: &str, resource: &str, scope: &str) -> String {
    token(&TokenRequest {
        issuer: &provider().issuer,
        client,
        resource,
        scope,
        dpop: None,
    })
    .await
}

/// `everything` verifying JWTs with the shared issuer's keys, and `extra` flags.
async fn with_issuer(extra: &[&str]) -> Everything {
    let issuer = provider().issuer.clone();
    let mut flags = vec!["--oidc-issuer", issuer.as_str()];
    flags.extend_from_slice(extra);
    Everything::start(&flags).await
}

#[tokio::test]
async fn jwts_from_the_issuer_are_served_in_both_eras() {
    let server = with_issuer(&[]).await;
    let jwt = token_for("jwt", &server.endpoint, "mcp:tools").await;
    assert_served(&server.modern_call(&bearer(&jwt)).await);
    assert_served(&server.legacy_call(|| bearer(&jwt), &bearer(&jwt)).await);
}

#[tokio::test]
async fn missing_foreign_and_expired_tokens_get_their_challenges() {
    let server = with_issuer(&["--clock-skew", "0"]).await;
    // No token: a challenge without an error (RFC 6750 §3.1), naming the metadata document.
    assert_challenged(&server.modern_call(&[]).await, "Bearer", None);
    // A token of the same issuer for another resource (RFC 8707: `aud` names that one).
    let foreign = token_for("jwt", "http://127.0.0.1:9/mcp", "mcp:tools").await;
    let refused = server.modern_call(&bearer(&foreign)).await;
    assert_challenged(&refused, "Bearer", Some("invalid_token"));
    // A token that was good and expired (the provider's short-lived client: 2 s).
    let short = token_for("jwt_short", &server.endpoint, "mcp:tools").await;
    assert_served(&server.modern_call(&bearer(&short)).await);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let expired = server.modern_call(&bearer(&short)).await;
    assert_challenged(&expired, "Bearer", Some("invalid_token"));
    assert!(
        expired
            .header("www-authenticate")
            .unwrap_or_default()
            .contains("expired")
    );
    // A token signed by nobody the issuer knows.
    let forged = format!("{}x", &foreign[..foreign.len() - 1]);
    assert_challenged(
        &server.modern_call(&bearer(&forged)).await,
        "Bearer",
        Some("invalid_token"),
    );
}

#[tokio::test]
async fn opaque_tokens_are_introspected_and_revoked_ones_refused() {
    let p = provider();
    let rs = p.client("introspector");
    let url = format!("{}/token/introspection", p.issuer);
    let server = Everything::start(&[
        "--introspection-url",
        &url,
        "--client-id",
        &rs.id,
        "--client-secret",
        &rs.secret,
        "--oidc-issuer",
        &p.issuer,
    ])
    .await;
    let opaque = token_for("opaque", &server.endpoint, "mcp:tools").await;
    assert_eq!(opaque.split('.').count(), 1, "an opaque token, not a JWT");
    assert_served(&server.modern_call(&bearer(&opaque)).await);
    assert_served(&server.legacy_call(|| bearer(&opaque), &bearer(&opaque)).await);
    // Revoked before this server saw it: the endpoint says it is not active.
    let revoked = token_for("opaque", &server.endpoint, "mcp:tools").await;
    revoke(&revoked).await;
    let refused = server.modern_call(&bearer(&revoked)).await;
    assert_challenged(&refused, "Bearer", Some("invalid_token"));
    assert!(
        refused
            .header("www-authenticate")
            .unwrap_or_default()
            .contains("not active")
    );
    // For another resource: active, but not meant for this server.
    let foreign = token_for("opaque", "http://127.0.0.1:9/mcp", "mcp:tools").await;
    assert_challenged(
        &server.modern_call(&bearer(&foreign)).await,
        "Bearer",
        Some("invalid_token"),
    );
}

#[tokio::test]
async fn a_token_short_of_a_scope_gets_one_challenge_naming_every_scope() {
    let server = with_issuer(&["--scope-fixture"]).await;
    let low = token_for("jwt", &server.endpoint, "mcp:conformance:baseline").await;
    let refused = server.modern_call(&bearer(&low)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let challenge = refused.header("www-authenticate").expect("a challenge").to_owned();
    assert!(challenge.starts_with("Bearer "), "{challenge}");
    assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
    assert!(
        challenge.contains(r#"scope="mcp:conformance:tools:call mcp:conformance:tools:test_simple_text""#),
        "{challenge}"
    );
    assert!(
        challenge.contains("resource_metadata=\"http://127.0.0.1:"),
        "{challenge}"
    );
    // The same refusal in the legacy era.
    let legacy = server.legacy_call(|| bearer(&low), &bearer(&low)).await;
    assert_eq!(legacy.status, StatusCode::FORBIDDEN);
    // Stepped up once, with what the challenge named.
    let scopes = "mcp:conformance:tools:call mcp:conformance:tools:test_simple_text";
    let full = token_for("jwt", &server.endpoint, scopes).await;
    assert_served(&server.modern_call(&bearer(&full)).await);
    // The literal fixture tokens mean nothing to a real verifier.
    let fixture = server.modern_call(&bearer("mcp-conformance-scope-full")).await;
    assert_challenged(&fixture, "Bearer", Some("invalid_token"));
}

/// A DPoP-bound token of the shared issuer for `resource`, bound to `key` (the token request
/// carries a proof of it).
async fn bound_token(key: &DpopKey, resource: &str) -> String {
    let p = provider();
    let answer = token_answer(&TokenRequest {
        issuer: &p.issuer,
        client: "jwt",
        resource,
        scope: "mcp:tools",
        dpop: Some(key.proof("POST", &token_endpoint(&p.issuer), None)),
    })
    .await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let body = answer.json();
    assert_eq!(body["token_type"], "DPoP", "{body}");
    body["access_token"].as_str().expect("a token").to_owned()
}

/// `Authorization: DPoP <token>` and a fresh proof of a POST to `url` by `key`.
fn dpop(key: &DpopKey, url: &str, token: &str) -> Vec<(&'static str, String)> {
    vec![
        ("authorization", format!("DPoP {token}")),
        ("dpop", key.proof("POST", url, Some(token))),
    ]
}

#[tokio::test]
async fn dpop_bound_tokens_need_fresh_proofs_of_this_url_by_their_key() {
    let server = with_issuer(&["--dpop", "required"]).await;
    let key = DpopKey::generate();
    let bound = bound_token(&key, &server.endpoint).await;
    let url = server.endpoint.clone();

    assert_served(&server.modern_call(&dpop(&key, &url, &bound)).await);
    assert_served(
        &server
            .legacy_call(|| dpop(&key, &url, &bound), &dpop(&key, &url, &bound))
            .await,
    );
    // The same proof twice: the second is a replay.
    let once = dpop(&key, &url, &bound);
    assert_served(&server.modern_call(&once).await);
    assert_challenged(&server.modern_call(&once).await, "DPoP", Some("invalid_dpop_proof"));
    // A proof for another URL.
    let elsewhere = dpop(&key, "http://127.0.0.1:9/mcp", &bound);
    assert_challenged(
        &server.modern_call(&elsewhere).await,
        "DPoP",
        Some("invalid_dpop_proof"),
    );
    // A proof by another key than the token is bound to.
    let thief = DpopKey::generate();
    assert_challenged(
        &server.modern_call(&dpop(&thief, &url, &bound)).await,
        "DPoP",
        Some("invalid_token"),
    );
    // The bound token as a bearer token, with DPoP required.
    assert_challenged(
        &server.modern_call(&bearer(&bound)).await,
        "DPoP",
        Some("invalid_token"),
    );
}

#[tokio::test]
async fn keys_rotated_at_the_issuer_are_followed_without_a_restart() {
    let p = provider();
    // An issuer of this test's own: rotating it disturbs no other test.
    let issuer = p.new_issuer().await;
    let server = Everything::start(&["--oidc-issuer", &issuer]).await;
    let request = |scope| TokenRequest {
        issuer: &issuer,
        client: "jwt",
        resource: &server.endpoint,
        scope,
        dpop: None,
    };
    let before = token(&request("mcp:tools")).await;
    assert_served(&server.modern_call(&bearer(&before)).await);
    // A new signing key of the other algorithm, the old one withdrawn from the key set.
    p.rotate(&issuer, "ES256", true).await;
    let after = token(&request("mcp:tools")).await;
    assert_ne!(kid(&before), kid(&after), "the new token names the new key");
    // An unknown key id refetches the key set at most once per interval (30 s by default).
    tokio::time::sleep(Duration::from_secs(31)).await;
    assert_served(&server.modern_call(&bearer(&after)).await);
    // The withdrawn key's tokens are refused once the new set is held.
    assert_challenged(
        &server.modern_call(&bearer(&before)).await,
        "Bearer",
        Some("invalid_token"),
    );
    p.drop_issuer(&issuer).await;
}

/// The `kid` of a JWT's header.
fn kid(jwt: &str) -> String {
    jsonwebtoken::decode_header(jwt)
        .expect("a JWT header")
        .kid
        .expect("a kid")
}

/// The SEP-2350 scenario's operations and the scopes each needs, as its fixture contract says.
const SCENARIO: [(&str, &str, &str, &str); 4] = [
    (
        "tools/call",
        "name",
        "test_simple_text",
        "mcp:conformance:tools:call mcp:conformance:tools:test_simple_text",
    ),
    (
        "resources/read",
        "uri",
        "test://static-text",
        "mcp:conformance:resources:read mcp:conformance:resources:static",
    ),
    (
        "resources/read",
        "uri",
        "test://template/123/data",
        "mcp:conformance:resources:read mcp:conformance:resources:template:123",
    ),
    (
        "prompts/get",
        "name",
        "test_simple_prompt",
        "mcp:conformance:prompts:get mcp:conformance:prompts:test_simple_prompt",
    ),
];

/// A modern request of the scenario (no provider needed: `--scope-fixture` alone).
async fn scenario_request(
    server: &Everything,
    (method, key, name, _): (&str, &str, &str, &str),
    token: Option<&str>,
) -> net::Answer {
    let mut params = serde_json::json!({
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    });
    params[key] = serde_json::json!(name);
    if method == "tools/call" {
        params["arguments"] = serde_json::json!({});
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", method.to_owned()),
        ("mcp-name", name.to_owned()),
    ];
    if let Some(t) = token {
        headers.extend(bearer(t));
    }
    server.post(&body, &headers).await
}

#[tokio::test]
async fn the_scope_fixture_alone_follows_the_scenario_contract() {
    let server = Everything::start(&["--scope-fixture"]).await;
    for op in SCENARIO {
        let low = scenario_request(&server, op, Some("mcp-conformance-scope-low")).await;
        assert_eq!(
            low.status,
            StatusCode::FORBIDDEN,
            "{}: {}",
            op.2,
            String::from_utf8_lossy(&low.body)
        );
        let challenge = low.header("www-authenticate").expect("a challenge").to_owned();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(challenge.contains(r#"error="insufficient_scope""#), "{challenge}");
        assert!(challenge.contains(&format!(r#"scope="{}""#, op.3)), "{challenge}");
        assert!(
            challenge.contains("resource_metadata=\"http://127.0.0.1:"),
            "{challenge}"
        );
        for token in [Some("mcp-conformance-scope-full"), None] {
            let served = scenario_request(&server, op, token).await;
            assert_eq!(
                served.status,
                StatusCode::OK,
                "{}: {}",
                op.2,
                String::from_utf8_lossy(&served.body)
            );
            assert!(
                served.json()["result"].is_object(),
                "{}",
                String::from_utf8_lossy(&served.body)
            );
        }
    }
    let unknown = scenario_request(&server, SCENARIO[0], Some("another-token")).await;
    assert_challenged(&unknown, "Bearer", Some("invalid_token"));
}

#[tokio::test]
async fn a_dpop_proof_is_good_once_across_instances_sharing_a_store() {
    let redis = mcp_store_redis::testing::TestRedis::new();
    let prefix = mcp_store_redis::testing::unique_prefix("dpop");
    let p = provider();
    // Two instances of one server behind a balancer: the URL clients know is the balancer's.
    let public = "http://127.0.0.1:1/mcp";
    let flags = [
        "--oidc-issuer",
        p.issuer.as_str(),
        "--dpop",
        "required",
        "--resource-url",
        public,
        "--redis",
        redis.url(),
        "--redis-prefix",
        prefix.as_str(),
        "--state-key",
        "5d2b9c47a1e0f3868b7c2d14e5f6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e",
    ];
    let (first, second) = (Everything::start(&flags).await, Everything::start(&flags).await);
    let key = DpopKey::generate();
    let bound = bound_token(&key, public).await;
    let once = dpop(&key, public, &bound);
    assert_served(&first.modern_call(&once).await);
    // The same proof at the other instance: a replay all the same.
    assert_challenged(&second.modern_call(&once).await, "DPoP", Some("invalid_dpop_proof"));
    assert_served(&second.modern_call(&dpop(&key, public, &bound)).await);
}
