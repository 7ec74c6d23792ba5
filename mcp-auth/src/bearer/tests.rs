//! Accept and reject paths of the bearer provider, with real signatures.

use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{EncodingKey, Header, encode};
use serde_json::json;

use super::*;
use crate::test_parts;

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
const RSA_PRIVATE: &str = include_str!("../../testdata/rsa_private.pem");
const RSA_PUBLIC: &str = include_str!("../../testdata/rsa_public.pem");
const EC_PRIVATE: &str = include_str!("../../testdata/ec_private.pem");
const EC_PUBLIC: &str = include_str!("../../testdata/ec_public.pem");
const EC2_PRIVATE: &str = include_str!("../../testdata/ec2_private.pem");
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn claims() -> Value {
    json!({"sub": "alice", "aud": "mcp", "iss": "https://as", "exp": now() + 300, "scope": "read write"})
}

fn with(field: &str, value: Value) -> Value {
    let mut c = claims();
    c[field] = value;
    c
}

fn hs256(claims: &Value) -> String {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(SECRET),
    )
    .unwrap()
}

fn signed(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    encode(&header, claims, key).unwrap()
}

fn ec_key(pem: &str) -> EncodingKey {
    EncodingKey::from_ec_pem(pem.as_bytes()).unwrap()
}

fn hs_provider() -> BearerAuth {
    BearerAuth::builder()
        .hs256_secret(SECRET)
        .audience("mcp")
        .issuer("https://as")
        .resource_metadata(PRM)
        .build()
        .unwrap()
}

async fn run(p: &BearerAuth, token: &str) -> Result<AuthInfo, Challenge> {
    p.authenticate(&test_parts(&[("authorization", &format!("Bearer {token}"))]))
        .await
}

/// Asserts a 401 `invalid_token` with this description.
fn assert_invalid(outcome: Result<AuthInfo, Challenge>, description: &str) {
    let c = outcome.unwrap_err();
    assert_eq!(c.status, 401);
    assert_eq!(
        c.www_authenticate.unwrap(),
        format!(
            r#"Bearer realm="mcp", error="invalid_token", error_description="{description}", resource_metadata="{PRM}""#
        )
    );
}

#[tokio::test]
async fn valid_hs256_token() {
    let info = run(&hs_provider(), &hs256(&claims())).await.unwrap();
    assert_eq!(&*info.principal, "alice");
    assert_eq!(info.scopes, ["read", "write"]);
    assert_eq!(info.claims["iss"], "https://as");
}

#[tokio::test]
async fn expired_and_within_skew() {
    let p = hs_provider();
    assert_invalid(
        run(&p, &hs256(&with("exp", json!(now() - 120)))).await,
        "the token expired",
    );
    assert!(
        run(&p, &hs256(&with("exp", json!(now() - 30)))).await.is_ok(),
        "within the 60 s skew"
    );
    let strict = BearerAuth::builder()
        .hs256_secret(SECRET)
        .audience("mcp")
        .clock_skew(Duration::ZERO)
        .build()
        .unwrap();
    assert!(run(&strict, &hs256(&with("exp", json!(now() - 30)))).await.is_err());
}

#[tokio::test]
async fn not_yet_valid_and_within_skew() {
    let p = hs_provider();
    assert_invalid(
        run(&p, &hs256(&with("nbf", json!(now() + 120)))).await,
        "the token is not yet valid",
    );
    assert!(run(&p, &hs256(&with("nbf", json!(now() + 30)))).await.is_ok());
}

#[tokio::test]
async fn claim_shapes() {
    let p = hs_provider();
    // jsonwebtoken counts a non-numeric exp as absent (it is required): refused either way.
    assert_invalid(
        run(&p, &hs256(&with("exp", json!("never")))).await,
        "the token lacks the exp claim",
    );
    assert_invalid(
        run(&p, &hs256(&with("nbf", json!("soon")))).await,
        "the token has an invalid nbf claim",
    );
    let mut no_exp = claims();
    no_exp.as_object_mut().unwrap().remove("exp");
    assert_invalid(run(&p, &hs256(&no_exp)).await, "the token lacks the exp claim");
    let mut no_sub = claims();
    no_sub.as_object_mut().unwrap().remove("sub");
    assert_invalid(run(&p, &hs256(&no_sub)).await, "the token lacks the sub claim");
    assert_invalid(
        run(&p, &hs256(&with("scope", json!(7)))).await,
        "the token has an invalid scope claim",
    );
}

#[tokio::test]
async fn wrong_audience() {
    let p = hs_provider();
    assert_invalid(
        run(&p, &hs256(&with("aud", json!("other")))).await,
        "the token is not meant for this resource",
    );
    assert!(run(&p, &hs256(&with("aud", json!(["other", "mcp"])))).await.is_ok());
    let mut no_aud = claims();
    no_aud.as_object_mut().unwrap().remove("aud");
    assert_invalid(run(&p, &hs256(&no_aud)).await, "the token lacks the aud claim");
}

#[tokio::test]
async fn wrong_issuer() {
    let p = hs_provider();
    assert_invalid(
        run(&p, &hs256(&with("iss", json!("https://evil")))).await,
        "the token issuer is not accepted",
    );
    let mut no_iss = claims();
    no_iss.as_object_mut().unwrap().remove("iss");
    assert_invalid(run(&p, &hs256(&no_iss)).await, "the token lacks the iss claim");
}

#[tokio::test]
async fn bad_signature() {
    let p = hs_provider();
    let other = encode(
        &Header::new(Algorithm::HS256),
        &claims(),
        &EncodingKey::from_secret(b"another secret of thirty-two bytes!!"),
    )
    .unwrap();
    assert_invalid(run(&p, &other).await, "the token signature is invalid");
    let token = hs256(&claims());
    let (head, rest) = token.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let forged_body = hs256(&with("sub", json!("mallory")));
    let forged = format!("{head}.{}.{sig}", forged_body.split('.').nth(1).unwrap());
    assert_invalid(run(&p, &forged).await, "the token signature is invalid");
    assert_invalid(run(&p, "not-a-jwt").await, "the token is malformed");
    assert_invalid(run(&p, "a\"b").await, "the token is malformed");
}

#[tokio::test]
async fn rs256_and_es256() {
    let p = BearerAuth::builder()
        .rs256_pem(RSA_PUBLIC)
        .es256_pem(EC_PUBLIC)
        .audience("mcp")
        .build()
        .unwrap();
    let rsa = EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap();
    assert_eq!(
        &*run(&p, &signed(Algorithm::RS256, None, &rsa, &claims()))
            .await
            .unwrap()
            .principal,
        "alice"
    );
    let es = signed(Algorithm::ES256, None, &ec_key(EC_PRIVATE), &claims());
    assert!(run(&p, &es).await.is_ok());
    let wrong_ec = signed(Algorithm::ES256, None, &ec_key(EC2_PRIVATE), &claims());
    assert!(run(&p, &wrong_ec).await.is_err());
    // HS256 is not accepted when only public keys are configured…
    assert!(run(&p, &hs256(&claims())).await.is_err());
    // …not even signed with the public key's bytes as the secret (algorithm confusion).
    let confused = encode(
        &Header::new(Algorithm::HS256),
        &claims(),
        &EncodingKey::from_secret(RSA_PUBLIC.as_bytes()),
    )
    .unwrap();
    let c = run(&p, &confused).await.unwrap_err();
    assert!(
        c.www_authenticate
            .unwrap()
            .contains("the token algorithm is not accepted")
    );
}

fn jwk(pem: &str, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(&ec_key(pem), Algorithm::ES256).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

#[tokio::test]
async fn jwks_kid_selection() {
    let set = JwkSet {
        keys: vec![jwk(EC_PRIVATE, "k1"), jwk(EC2_PRIVATE, "k2")],
    };
    let p = BearerAuth::builder()
        .jwks(serde_json::to_string(&set).unwrap())
        .audience("mcp")
        .build()
        .unwrap();
    let k2 = ec_key(EC2_PRIVATE);
    assert!(
        run(&p, &signed(Algorithm::ES256, Some("k2"), &k2, &claims()))
            .await
            .is_ok()
    );
    assert!(
        run(
            &p,
            &signed(Algorithm::ES256, Some("k1"), &ec_key(EC_PRIVATE), &claims())
        )
        .await
        .is_ok()
    );
    let wrong = run(&p, &signed(Algorithm::ES256, Some("k1"), &k2, &claims())).await;
    assert!(
        wrong
            .unwrap_err()
            .www_authenticate
            .unwrap()
            .contains("signature is invalid")
    );
    let unknown = run(&p, &signed(Algorithm::ES256, Some("k9"), &k2, &claims())).await;
    assert!(
        unknown
            .unwrap_err()
            .www_authenticate
            .unwrap()
            .contains("no key matches the token")
    );
    // Without a kid every key of the algorithm is tried.
    assert!(run(&p, &signed(Algorithm::ES256, None, &k2, &claims())).await.is_ok());
    // A parsed set works the same.
    let p = BearerAuth::builder().jwk_set(set).audience("mcp").build().unwrap();
    assert!(
        run(&p, &signed(Algorithm::ES256, Some("k2"), &k2, &claims()))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn scopes_as_string_and_array_and_custom_claims() {
    let p = BearerAuth::builder()
        .hs256_secret(SECRET)
        .audience("mcp")
        .scope_claim("scp")
        .principal_claim("oid")
        .build()
        .unwrap();
    let token = hs256(&json!({"oid": "o-1", "aud": "mcp", "exp": now() + 60, "scp": ["a", "b"]}));
    let info = run(&p, &token).await.unwrap();
    assert_eq!(
        (&*info.principal, info.scopes.as_slice()),
        ("o-1", &["a".to_owned(), "b".to_owned()][..])
    );
    let token = hs256(&json!({"oid": "o-1", "aud": "mcp", "exp": now() + 60, "scp": "c d"}));
    assert_eq!(run(&p, &token).await.unwrap().scopes, ["c", "d"]);
}

#[tokio::test]
async fn required_scopes_fail_closed() {
    let p = BearerAuth::builder()
        .hs256_secret(SECRET)
        .audience("mcp")
        .required_scopes(["read", "admin"])
        .resource_metadata(PRM)
        .build()
        .unwrap();
    let c = run(&p, &hs256(&claims())).await.unwrap_err();
    assert_eq!(c.status, 403);
    assert_eq!(
        c.www_authenticate.unwrap(),
        format!(
            r#"Bearer realm="mcp", error="insufficient_scope", error_description="missing scope admin", scope="read admin", resource_metadata="{PRM}""#
        )
    );
    let mut no_scope = claims();
    no_scope.as_object_mut().unwrap().remove("scope");
    assert_eq!(run(&p, &hs256(&no_scope)).await.unwrap_err().status, 403);
    assert!(run(&p, &hs256(&with("scope", json!("read admin")))).await.is_ok());
    // The 401s name the wanted scopes.
    let missing = p.authenticate(&test_parts(&[])).await.unwrap_err();
    assert_eq!(
        missing.www_authenticate.unwrap(),
        format!(r#"Bearer realm="mcp", scope="read admin", resource_metadata="{PRM}""#)
    );
}

#[tokio::test]
async fn challenges_without_usable_credentials() {
    let p = hs_provider();
    let missing = format!(r#"Bearer realm="mcp", resource_metadata="{PRM}""#);
    for headers in [&[][..], &[("authorization", "Basic YTpi")][..]] {
        let c = p.authenticate(&test_parts(headers)).await.unwrap_err();
        assert_eq!((c.status, c.www_authenticate.unwrap()), (401, missing.clone()));
    }
    let two = test_parts(&[("authorization", "Bearer a"), ("authorization", "Bearer b")]);
    let c = p.authenticate(&two).await.unwrap_err();
    assert_eq!(c.status, 400);
    assert!(c.www_authenticate.unwrap().contains(r#"error="invalid_request""#));
    let empty = p
        .authenticate(&test_parts(&[("authorization", "Bearer ")]))
        .await
        .unwrap_err();
    assert_eq!(empty.status, 400);
    let plain = BearerAuth::builder()
        .hs256_secret(SECRET)
        .audience("mcp")
        .build()
        .unwrap();
    let c = plain.authenticate(&test_parts(&[])).await.unwrap_err();
    assert_eq!(c.www_authenticate.as_deref(), Some(r#"Bearer realm="mcp""#));
}

fn introspect() -> BearerAuthBuilder {
    BearerAuth::builder().verifier_fn(|token: String| async move {
        match token.as_str() {
            "opaque-alice" => Ok(json!({"sub": "alice", "aud": "mcp", "scope": "read"})
                .as_object()
                .cloned()
                .unwrap()),
            "opaque-other" => Ok(json!({"sub": "bob", "aud": "other"}).as_object().cloned().unwrap()),
            "opaque-old" => Ok(json!({"sub": "carol", "aud": "mcp", "exp": 1})
                .as_object()
                .cloned()
                .unwrap()),
            _ => Err(TokenError::rejected("unknown or revoked token")),
        }
    })
}

#[tokio::test]
async fn verifier_hook() {
    let p = introspect().audience("mcp").resource_metadata(PRM).build().unwrap();
    let info = run(&p, "opaque-alice").await.unwrap();
    assert_eq!(
        (&*info.principal, info.scopes.as_slice()),
        ("alice", &["read".to_owned()][..])
    );
    assert_invalid(run(&p, "opaque-nope").await, "unknown or revoked token");
    assert_invalid(
        run(&p, "opaque-other").await,
        "the token is not meant for this resource",
    );
    assert_invalid(run(&p, "opaque-old").await, "the token expired");
    let any = introspect().any_audience().build().unwrap();
    assert_eq!(&*run(&any, "opaque-other").await.unwrap().principal, "bob");
}

struct Static;

impl TokenVerifier for Static {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Map<String, Value>, TokenError>> {
        Box::pin(async move {
            let sub = token.strip_prefix("t-").ok_or(TokenError::Malformed)?;
            Ok(json!({ "sub": sub }).as_object().cloned().unwrap())
        })
    }
}

#[tokio::test]
async fn verifier_trait_object() {
    let p = BearerAuth::builder().verifier(Static).any_audience().build().unwrap();
    assert_eq!(&*p.verify("t-zed").await.unwrap().principal, "zed");
    assert_eq!(p.verify("zed").await.unwrap_err(), TokenError::Malformed);
}

#[test]
fn setup_errors() {
    let err = |b: BearerAuthBuilder| b.build().unwrap_err();
    let hs = || BearerAuth::builder().hs256_secret(SECRET);
    assert_eq!(err(hs()), AuthSetupError::MissingAudience);
    assert_eq!(err(hs().any_audience()), AuthSetupError::AnyAudienceWithoutVerifier);
    assert_eq!(
        err(BearerAuth::builder().audience("mcp")),
        AuthSetupError::NoTokenSource
    );
    assert_eq!(
        err(introspect().hs256_secret(SECRET).audience("mcp")),
        AuthSetupError::KeysAndVerifier
    );
    assert_eq!(
        err(BearerAuth::builder().hs256_secret("short").audience("mcp")),
        AuthSetupError::WeakSecret { index: 0, len: 5 }
    );
    assert!(matches!(
        err(BearerAuth::builder().rs256_pem("not a pem").audience("mcp")),
        AuthSetupError::InvalidKey { index: 0, .. }
    ));
    assert!(matches!(
        err(BearerAuth::builder().es256_pem(RSA_PUBLIC).audience("mcp")),
        AuthSetupError::InvalidKey { .. }
    ));
    assert!(matches!(
        err(BearerAuth::builder().jwks("{").audience("mcp")),
        AuthSetupError::InvalidJwks { .. }
    ));
    let enc_only = json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}).to_string();
    assert_eq!(
        err(BearerAuth::builder().jwks(enc_only).audience("mcp")),
        AuthSetupError::EmptyJwks
    );
    assert!(matches!(
        err(hs().audience("mcp").resource_metadata("http://example.com/prm")),
        AuthSetupError::InvalidUrl { .. }
    ));
    assert!(matches!(
        err(hs().audience("mcp").realm("")),
        AuthSetupError::InvalidRealm { .. }
    ));
    assert!(matches!(
        err(hs().audience("mcp").required_scopes(["a b"])),
        AuthSetupError::InvalidScope { .. }
    ));
}

#[test]
fn debug_shows_no_key_material() {
    let b = BearerAuth::builder()
        .hs256_secret(SECRET)
        .key(JwtKey::rs256_pem(RSA_PUBLIC).with_kid("r1"))
        .audience("mcp");
    let shown = format!("{b:?}");
    let provider = format!("{:?}", b.build().unwrap());
    for s in [&shown, &provider] {
        assert!(!s.contains("0123456789abcdef") && !s.contains("MII"), "{s}");
    }
    assert!(
        shown.contains("r1") && provider.contains("2 keys"),
        "{shown} {provider}"
    );
}

#[tokio::test]
async fn an_unavailable_authorization_server_is_503_not_invalid_token() {
    let p = BearerAuth::builder()
        .verifier_fn(|_| async { Err(TokenError::Unavailable) })
        .audience("mcp")
        .resource_metadata(PRM)
        .build()
        .unwrap();
    let c = run(&p, "opaque").await.unwrap_err();
    assert_eq!((c.status, c.www_authenticate.as_deref()), (503, None));
    assert_eq!(c.retry_after_secs(), Some(5));
    let inactive = BearerAuth::builder()
        .verifier_fn(|_| async { Err(TokenError::Inactive) })
        .audience("mcp")
        .resource_metadata(PRM)
        .build()
        .unwrap();
    assert_invalid(run(&inactive, "opaque").await, "the token is not active");
}
