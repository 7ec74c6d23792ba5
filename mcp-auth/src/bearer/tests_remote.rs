//! Keys fetched from an authorization server played by a server on 127.0.0.1: discovery,
//! rotation, floods of unknown key ids, failures that keep the last good keys, the bounds of
//! every fetch.

use std::time::Instant;

use base64::Engine as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::json;

use super::*;
use crate::FetchError;
use crate::test_parts;
use crate::test_server::{Reply, TestServer};

const RSA_PRIVATE: &str = include_str!("../../testdata/rsa_private.pem");
const EC_PRIVATE: &str = include_str!("../../testdata/ec_private.pem");
const EC2_PRIVATE: &str = include_str!("../../testdata/ec2_private.pem");
const JWKS: &str = "/jwks";
const OIDC: &str = "/.well-known/openid-configuration";

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn rsa() -> EncodingKey {
    EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap()
}

fn ec(pem: &str) -> EncodingKey {
    EncodingKey::from_ec_pem(pem.as_bytes()).unwrap()
}

/// A freshly generated P-256 key (rcgen), as jsonwebtoken's signing key.
fn fresh_ec() -> EncodingKey {
    let pair = rcgen::KeyPair::generate().unwrap();
    EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap()
}

fn jwk(key: &EncodingKey, alg: Algorithm, kid: &str) -> Value {
    install_crypto_provider();
    let mut jwk = Jwk::from_encoding_key(key, alg).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    serde_json::to_value(jwk).unwrap()
}

fn jwks(keys: &[Value]) -> Reply {
    Reply::json(&json!({ "keys": keys }))
}

fn claims(iss: &str) -> Value {
    json!({"sub": "alice", "aud": "mcp", "iss": iss, "exp": now() + 300, "scope": "read"})
}

fn sign(alg: Algorithm, kid: &str, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    encode(&header, claims, key).unwrap()
}

/// A token whose header names `kid` and whose signature is garbage: enough to exercise the
/// choice of key without the cost of a signature.
fn unsigned_with_kid(kid: &str) -> String {
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let header = b64(&json!({"alg": "ES256", "typ": "JWT", "kid": kid}));
    format!("{header}.{}.c2ln", b64(&claims("https://as")))
}

async fn run(p: &BearerAuth, token: &str) -> Result<AuthInfo, Challenge> {
    p.authenticate(&test_parts(&[("authorization", &format!("Bearer {token}"))]))
        .await
}

fn description(outcome: Result<AuthInfo, Challenge>) -> String {
    let c = outcome.unwrap_err();
    assert_eq!(c.status, 401, "{c:?}");
    c.www_authenticate.unwrap()
}

/// The issuer's OpenID Connect metadata, naming `jwks_uri` on the same server.
fn serve_metadata(server: &TestServer, issuer: &str, path: &str) {
    server.set(
        path,
        Reply::json(&json!({
            "issuer": issuer,
            "jwks_uri": server.url(JWKS),
            "introspection_endpoint": server.url("/introspect"),
        })),
    );
}

fn by_jwks_uri(server: &TestServer) -> BearerAuthBuilder {
    BearerAuth::builder().jwks_uri(server.url(JWKS)).audience("mcp")
}

#[tokio::test]
async fn discovery_then_rs256_and_es256() {
    let server = TestServer::start().await;
    let issuer = server.url("");
    serve_metadata(&server, &issuer, OIDC);
    server.set(
        JWKS,
        jwks(&[
            jwk(&rsa(), Algorithm::RS256, "r1"),
            jwk(&ec(EC_PRIVATE), Algorithm::ES256, "e1"),
        ]),
    );
    let p = BearerAuth::builder()
        .oidc_issuer(&issuer)
        .audience("mcp")
        .build()
        .unwrap();
    assert_eq!(p.key_fetches(), 0, "nothing is fetched at build");
    let info = run(&p, &sign(Algorithm::RS256, "r1", &rsa(), &claims(&issuer)))
        .await
        .unwrap();
    assert_eq!(
        (&*info.principal, info.scopes.as_slice()),
        ("alice", &["read".to_owned()][..])
    );
    assert!(
        run(&p, &sign(Algorithm::ES256, "e1", &ec(EC_PRIVATE), &claims(&issuer)))
            .await
            .is_ok()
    );
    // The issuer is the accepted `iss`.
    let other = sign(Algorithm::ES256, "e1", &ec(EC_PRIVATE), &claims("https://elsewhere"));
    assert!(description(run(&p, &other).await).contains("the token issuer is not accepted"));
    // The RSA key's id with another algorithm matches no key (and the ES256 key is not tried).
    let confused = sign(Algorithm::ES256, "r1", &ec(EC_PRIVATE), &claims(&issuer));
    assert!(description(run(&p, &confused).await).contains("no key matches the token"));
    assert_eq!((server.hits(OIDC), server.hits(JWKS), p.key_fetches()), (1, 1, 1));
    let shown = format!("{p:?}");
    assert!(shown.contains("remote keys of issuer"), "{shown}");
}

#[tokio::test]
async fn rfc8414_metadata_with_the_path_inserted() {
    let server = TestServer::start().await;
    let issuer = server.url("/tenant/a");
    // The OpenID Connect document is not found (404), the RFC 8414 one is.
    serve_metadata(&server, &issuer, "/.well-known/oauth-authorization-server/tenant/a");
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "e1")]));
    let p = BearerAuth::builder()
        .oidc_issuer(&issuer)
        .audience("mcp")
        .build()
        .unwrap();
    let token = sign(Algorithm::ES256, "e1", &ec(EC_PRIVATE), &claims(&issuer));
    assert!(run(&p, &token).await.is_ok());
    assert_eq!(server.hits("/tenant/a/.well-known/openid-configuration"), 1);
}

#[tokio::test]
async fn issuer_mismatch_is_refused_at_discovery() {
    let server = TestServer::start().await;
    let issuer = server.url("");
    serve_metadata(&server, "https://evil.example", OIDC);
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "e1")]));
    let p = BearerAuth::builder()
        .oidc_issuer(&issuer)
        .audience("mcp")
        .build()
        .unwrap();
    let token = sign(Algorithm::ES256, "e1", &ec(EC_PRIVATE), &claims(&issuer));
    let c = run(&p, &token).await.unwrap_err();
    assert_eq!((c.status, c.www_authenticate.as_deref()), (503, None));
    assert_eq!(c.retry_after_secs(), Some(5));
    assert!(matches!(
        p.fetch_keys().await,
        Err(FetchError::IssuerMismatch { found, .. }) if found == "https://evil.example"
    ));
    assert_eq!(
        server.hits(JWKS),
        0,
        "the keys of a mismatched document are never fetched"
    );
    assert_eq!(p.key_fetch_failures(), 2);
}

#[tokio::test]
async fn unknown_kid_refetches_once_and_accepts_the_rotated_key() {
    let server = TestServer::start().await;
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "old")]));
    let p = by_jwks_uri(&server)
        .key_refetch_interval(Duration::ZERO)
        .build()
        .unwrap();
    let old = sign(Algorithm::ES256, "old", &ec(EC_PRIVATE), &claims("https://as"));
    assert!(run(&p, &old).await.is_ok());
    assert_eq!(p.key_fetches(), 1);
    // Rotation: a new key appears, the old one goes.
    let fresh = fresh_ec();
    server.set(JWKS, jwks(&[jwk(&fresh, Algorithm::ES256, "new")]));
    let new = sign(Algorithm::ES256, "new", &fresh, &claims("https://as"));
    assert_eq!(&*run(&p, &new).await.unwrap().principal, "alice");
    assert_eq!(p.key_fetches(), 2, "one refetch for the unknown kid");
    assert!(run(&p, &new).await.is_ok());
    assert_eq!(p.key_fetches(), 2, "then served from the new set");
    assert!(description(run(&p, &old).await).contains("no key matches the token"));
    // A token of an algorithm that is not accepted never triggers a fetch.
    let fetches = p.key_fetches();
    let rs = sign(Algorithm::RS384, "x", &rsa(), &claims("https://as"));
    assert!(description(run(&p, &rs).await).contains("the token algorithm is not accepted"));
    assert_eq!(p.key_fetches(), fetches);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_random_kids_costs_one_fetch_per_interval() {
    let server = TestServer::start().await;
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]));
    let interval = Duration::from_secs(1);
    let p = Arc::new(by_jwks_uri(&server).key_refetch_interval(interval).build().unwrap());
    let flood = |round: usize| {
        let tasks: Vec<_> = (0..1_000)
            .map(|i| {
                let p = Arc::clone(&p);
                tokio::spawn(async move { run(&p, &unsigned_with_kid(&format!("r{round}-{i}"))).await })
            })
            .collect();
        async move {
            for t in tasks {
                assert_eq!(t.await.unwrap().unwrap_err().status, 401);
            }
        }
    };
    // No keys yet: the whole flood shares the first fetch, and no miss may refetch so soon.
    flood(0).await;
    assert_eq!((p.key_fetches(), server.hits(JWKS)), (1, 1));
    // Past the interval, the next flood shares one refetch.
    tokio::time::sleep(interval + Duration::from_millis(50)).await;
    let started = Instant::now();
    flood(1).await;
    assert!(
        started.elapsed() < interval,
        "the flood must end within one interval for this count"
    );
    assert_eq!((p.key_fetches(), server.hits(JWKS)), (2, 2));
    // A good token still passes.
    let good = sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &claims("https://as"));
    assert!(run(&p, &good).await.is_ok());
}

#[tokio::test]
async fn a_failing_fetch_keeps_the_last_good_keys() {
    let server = TestServer::start().await;
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]));
    let p = by_jwks_uri(&server)
        .key_refetch_interval(Duration::ZERO)
        .build()
        .unwrap();
    let good = sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &claims("https://as"));
    assert!(run(&p, &good).await.is_ok());
    for failure in [
        Reply::status(500),
        Reply::status(200).body("not json"),
        Reply::json(&json!({"keys": "no"})),
        Reply::json(&json!({"keys": [{"kty": "weird"}, {"kty": "oct", "k": "c2VjcmV0"}]})),
        Reply::status(302).header("location", "http://127.0.0.1:1/jwks"),
    ] {
        server.set(JWKS, failure);
        let before = p.key_fetch_failures();
        // An unknown kid refetches, which fails…
        let unknown = sign(Algorithm::ES256, "k9", &ec(EC_PRIVATE), &claims("https://as"));
        assert!(description(run(&p, &unknown).await).contains("no key matches the token"));
        assert_eq!(p.key_fetch_failures(), before + 1);
        // …and the keys held still verify.
        assert!(run(&p, &good).await.is_ok());
    }
}

#[tokio::test]
async fn a_failing_background_refresh_keeps_the_stale_keys() {
    let server = TestServer::start().await;
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]));
    let ttl = Duration::from_millis(100);
    let p = by_jwks_uri(&server)
        .key_refetch_interval(Duration::ZERO)
        .key_ttl_bounds(ttl, ttl)
        .build()
        .unwrap();
    let good = sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &claims("https://as"));
    assert!(run(&p, &good).await.is_ok());
    server.set(JWKS, Reply::status(500));
    tokio::time::sleep(ttl + Duration::from_millis(50)).await;
    assert!(run(&p, &good).await.is_ok(), "stale keys serve while the refresh runs");
    wait_for(|| p.key_fetch_failures() >= 1).await;
    assert!(run(&p, &good).await.is_ok(), "and after it failed");
}

/// Waits (at most 5 s) until `done` holds.
async fn wait_for(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn cache_control_decides_when_keys_are_refreshed() {
    let server = TestServer::start().await;
    server.set(
        JWKS,
        jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]).header("cache-control", "public, max-age=1"),
    );
    let p = by_jwks_uri(&server)
        .key_ttl_bounds(Duration::ZERO, MAX_KEYS_TTL)
        .build()
        .unwrap();
    let good = sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &claims("https://as"));
    assert!(run(&p, &good).await.is_ok());
    assert!(run(&p, &good).await.is_ok());
    assert_eq!(server.hits(JWKS), 1, "fresh for a second");
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert!(run(&p, &good).await.is_ok(), "served by the stale keys meanwhile");
    wait_for(|| server.hits(JWKS) == 2).await;
}

#[tokio::test]
async fn no_keys_yet_is_503_and_retried_after_the_interval() {
    let server = TestServer::start().await;
    server.set(JWKS, Reply::status(503));
    let p = by_jwks_uri(&server).build().unwrap();
    let good = sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &claims("https://as"));
    for _ in 0..3 {
        let c = run(&p, &good).await.unwrap_err();
        assert_eq!((c.status, c.www_authenticate.as_deref()), (503, None));
    }
    assert_eq!(p.key_fetches(), 1, "one failed fetch per interval");
    assert_eq!(p.verify(&good).await.unwrap_err(), TokenError::Unavailable);
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]));
    assert_eq!(p.fetch_keys().await, Ok(1), "fetch_keys does not wait for the interval");
    assert!(run(&p, &good).await.is_ok());
}

#[tokio::test]
async fn audience_as_a_string_or_an_array() {
    let server = TestServer::start().await;
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]));
    let p = by_jwks_uri(&server).build().unwrap();
    let with_aud = |aud: Value| {
        let mut c = claims("https://as");
        c["aud"] = aud;
        sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &c)
    };
    assert!(run(&p, &with_aud(json!("mcp"))).await.is_ok());
    assert!(run(&p, &with_aud(json!(["https://other", "mcp"]))).await.is_ok());
    for refused in [json!("other"), json!(["other", "x"]), json!([])] {
        assert!(description(run(&p, &with_aud(refused)).await).contains("not meant for this resource"));
    }
}

#[tokio::test]
async fn each_fetch_is_bounded() {
    let server = TestServer::start().await;
    let p = by_jwks_uri(&server)
        .fetch_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let big = format!(r#"{{"keys": [], "pad": "{}"}}"#, "x".repeat(300 * 1024));
    server.set(JWKS, Reply::json(&json!({})).body(big.clone()));
    assert!(matches!(
        p.fetch_keys().await,
        Err(FetchError::TooLarge {
            limit: crate::MAX_FETCH_BODY,
            ..
        })
    ));
    server.set(JWKS, Reply::json(&json!({})).body(big).chunked());
    assert!(
        matches!(p.fetch_keys().await, Err(FetchError::TooLarge { .. })),
        "without a length too"
    );
    server.set(JWKS, jwks(&[]).delayed(Duration::from_secs(2)));
    let started = Instant::now();
    assert!(matches!(p.fetch_keys().await, Err(FetchError::Timeout { .. })));
    assert!(started.elapsed() < Duration::from_secs(1));
    server.set(JWKS, Reply::status(301).header("location", "https://evil.example/jwks"));
    assert!(matches!(
        p.fetch_keys().await,
        Err(FetchError::Redirect { status: 301, .. })
    ));
    // Nothing listens on port 1 of the loopback.
    let p = BearerAuth::builder()
        .jwks_uri("http://127.0.0.1:1/jwks")
        .audience("mcp")
        .build()
        .unwrap();
    assert!(matches!(p.fetch_keys().await, Err(FetchError::Network { .. })));
}

#[tokio::test]
async fn https_verifies_the_certificate() {
    let server = TestServer::start_tls().await;
    server.set(JWKS, jwks(&[jwk(&ec(EC_PRIVATE), Algorithm::ES256, "k1")]));
    let p = by_jwks_uri(&server).build().unwrap();
    match p.fetch_keys().await {
        Err(FetchError::Network { reason, .. }) => assert!(reason.contains("certificate"), "{reason}"),
        other => panic!("a self-signed certificate must be refused: {other:?}"),
    }
    assert_eq!(server.hits(JWKS), 0);
    // Trusted as a private authority, it serves.
    let p = by_jwks_uri(&server)
        .fetch_root_certificates_pem(server.cert_pem.clone().unwrap())
        .build()
        .unwrap();
    let good = sign(Algorithm::ES256, "k1", &ec(EC_PRIVATE), &claims("https://as"));
    assert!(run(&p, &good).await.is_ok());
    assert_eq!(server.hits(JWKS), 1);
    assert!(matches!(
        by_jwks_uri(&server).fetch_root_certificates_pem("no pem here").build(),
        Err(AuthSetupError::HttpClient { .. })
    ));
}

#[tokio::test]
async fn metadata_naming_an_unusable_jwks_uri_is_refused() {
    let server = TestServer::start().await;
    let issuer = server.url("");
    server.set(
        OIDC,
        Reply::json(&json!({"issuer": issuer, "jwks_uri": "http://keys.example.com/jwks"})),
    );
    let p = BearerAuth::builder()
        .oidc_issuer(&issuer)
        .audience("mcp")
        .build()
        .unwrap();
    assert!(matches!(
        p.fetch_keys().await,
        Err(FetchError::RefusedUrl { what: "jwks_uri", .. })
    ));
    server.set(OIDC, Reply::json(&json!({"issuer": issuer})));
    assert!(matches!(p.fetch_keys().await, Err(FetchError::Invalid { .. })));
}

#[test]
fn remote_setup_errors() {
    let err = |b: BearerAuthBuilder| b.build().unwrap_err();
    let remote = || {
        BearerAuth::builder()
            .jwks_uri("https://as.example.com/jwks")
            .audience("mcp")
    };
    assert!(
        remote().build().is_ok(),
        "https is fine, and nothing is fetched at build"
    );
    for bad in [
        "http://as.example.com/jwks",
        "http://127.evil.example/jwks",
        "https://u@as.example.com/jwks",
    ] {
        assert!(
            matches!(
                err(BearerAuth::builder().jwks_uri(bad).audience("mcp")),
                AuthSetupError::InvalidUrl { what: "jwks_uri", .. }
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        err(BearerAuth::builder()
            .oidc_issuer("http://as.example.com")
            .audience("mcp")),
        AuthSetupError::InvalidUrl { what: "issuer", .. }
    ));
    assert!(matches!(
        err(BearerAuth::builder()
            .oidc_issuer("https://as.example.com?tenant=1")
            .audience("mcp")),
        AuthSetupError::InvalidUrl { what: "issuer", .. }
    ));
    assert!(matches!(
        err(remote().algorithms([Algorithm::RS256, Algorithm::HS256])),
        AuthSetupError::AlgorithmNotAllowed { .. }
    ));
    assert!(matches!(
        err(remote().algorithms([])),
        AuthSetupError::AlgorithmNotAllowed { .. }
    ));
    assert_eq!(
        err(remote().hs256_secret(b"0123456789abcdef0123456789abcdef".to_vec())),
        AuthSetupError::StaticAndRemoteKeys
    );
    assert_eq!(
        err(remote().verifier_fn(|_| async { Err(TokenError::Malformed) })),
        AuthSetupError::KeysAndVerifier
    );
    // Static keys and the algorithm list.
    assert!(matches!(
        err(BearerAuth::builder()
            .hs256_secret(b"0123456789abcdef0123456789abcdef".to_vec())
            .algorithms([Algorithm::ES256])
            .audience("mcp")),
        AuthSetupError::AlgorithmNotAllowed { .. }
    ));
    // The issuer is added to the accepted ones once.
    let p = BearerAuth::builder()
        .oidc_issuer("https://as.example.com")
        .issuer("https://as.example.com")
        .issuer("https://other.example.com")
        .audience("mcp")
        .build()
        .unwrap();
    assert_eq!(p.rules.issuers, ["https://as.example.com", "https://other.example.com"]);
}

#[tokio::test]
async fn the_algorithm_list_is_enforced_on_remote_keys() {
    let server = TestServer::start().await;
    server.set(
        JWKS,
        jwks(&[
            jwk(&rsa(), Algorithm::RS256, "r1"),
            jwk(&ec(EC_PRIVATE), Algorithm::ES256, "e1"),
        ]),
    );
    let p = by_jwks_uri(&server).algorithms([Algorithm::ES256]).build().unwrap();
    assert!(
        run(
            &p,
            &sign(Algorithm::ES256, "e1", &ec(EC_PRIVATE), &claims("https://as"))
        )
        .await
        .is_ok()
    );
    let rs = sign(Algorithm::RS256, "r1", &rsa(), &claims("https://as"));
    assert!(description(run(&p, &rs).await).contains("the token algorithm is not accepted"));
    assert_eq!(p.key_fetches(), 1, "a refused algorithm triggers no refetch");
    // A set with no key of an accepted algorithm is unusable.
    server.set(JWKS, jwks(&[jwk(&rsa(), Algorithm::RS256, "r1")]));
    assert!(matches!(p.fetch_keys().await, Err(FetchError::Invalid { .. })));
    // The ES256 key held is kept.
    assert!(
        run(
            &p,
            &sign(Algorithm::ES256, "e1", &ec(EC2_PRIVATE), &claims("https://as"))
        )
        .await
        .is_err()
    );
    assert!(
        run(
            &p,
            &sign(Algorithm::ES256, "e1", &ec(EC_PRIVATE), &claims("https://as"))
        )
        .await
        .is_ok()
    );
}
