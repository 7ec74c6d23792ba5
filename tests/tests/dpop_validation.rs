//! `auth/dpop-server-validation`, followed check by check: modelcontextprotocol/conformance
//! `src/scenarios/server/auth/dpop.ts` at 248e9577d1abea49d5e4e952e815be7e067a9eac (the token of
//! `src/scenarios/client/auth/helpers/dpopToken.ts` at f816ab0f61ab0577cc8b20db9e98f18158e2d5f9).
//!
//! The scenario's fixture contract: the server trusts a test issuer's key, which the suite hands
//! over as a private JWK (`DPOP_ISSUER_PRIVATE_JWK`) with its issuer (`DPOP_ISSUER`), and
//! requires DPoP-bound tokens whose audience is its own URL. Here `everything --jwks <the
//! key> --issuer <issuer> --dpop required`, given the private JWK whole (the fixture keeps its
//! public members). The scenario acts as a DPoP client: a valid bound token and proof must be
//! accepted, and every malformed variant refused with 401 and a `DPoP` challenge; each case
//! below names its check id and case.

#[allow(dead_code)]
#[path = "oidc/fixture.rs"]
mod fixture;
#[allow(dead_code)]
#[path = "oidc/net.rs"]
mod net;

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use fixture::Everything;
use net::Answer;

const ISSUER: &str = "https://conformance-dpop-issuer.example.com";

/// A P-256 key: the issuer's, or a DPoP client's.
struct P256 {
    signing: EncodingKey,
    x: String,
    y: String,
    /// The private scalar (for the JWK the suite hands over, and the private-key-in-JWK case).
    d: String,
}

impl P256 {
    fn generate() -> P256 {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
        let point = pair.public_key_raw();
        // PKCS#8 of a P-256 key: the 32-byte scalar follows the `04 20` of its ECPrivateKey.
        let der = pair.serialize_der();
        let at = der
            .windows(5)
            .position(|w| w == [0x02, 0x01, 0x01, 0x04, 0x20])
            .expect("the private scalar")
            + 5;
        P256 {
            signing: EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).expect("the key in PEM"),
            x: URL_SAFE_NO_PAD.encode(&point[1..33]),
            y: URL_SAFE_NO_PAD.encode(&point[33..65]),
            d: URL_SAFE_NO_PAD.encode(&der[at..at + 32]),
        }
    }

    fn public_jwk(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y})
    }

    fn private_jwk(&self) -> Value {
        json!({"kty": "EC", "crv": "P-256", "x": self.x, "y": self.y, "d": self.d, "alg": "ES256"})
    }

    /// The RFC 7638 thumbprint (`cnf.jkt`).
    fn thumbprint(&self) -> String {
        let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#, self.x, self.y);
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

/// `mintDpopBoundToken`: an `at+jwt` access token of the issuer, bound to `jkt`.
fn token(issuer: &P256, audience: &str, jkt: &str) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".to_owned());
    let iat = now();
    let claims = json!({
        "iss": ISSUER, "aud": audience, "sub": "conformance-test-subject",
        "iat": iat, "exp": iat + 3600, "cnf": {"jkt": jkt}
    });
    jsonwebtoken::encode(&header, &claims, &issuer.signing).expect("a token")
}

/// How a proof deviates from a valid one (the knobs of the suite's `buildDpopProof`).
#[derive(Default, Clone)]
struct Knobs {
    htm: Option<&'static str>,
    htu: Option<&'static str>,
    omit: &'static [&'static str],
    typ: Option<&'static str>,
    ath: Option<&'static str>,
    no_token: bool,
    iat_delta: i64,
    tamper: bool,
    private_key_in_jwk: bool,
    unsigned: bool,
    symmetric: bool,
}

/// A DPoP proof by `key` of `POST url` for `token`, as `knobs` say.
fn proof(key: &P256, url: &str, token: &str, knobs: &Knobs) -> String {
    let mut jwk = key.public_jwk();
    if knobs.private_key_in_jwk {
        jwk["d"] = json!(key.d);
    }
    let alg = match (knobs.unsigned, knobs.symmetric) {
        (true, _) => "none",
        (_, true) => "HS256",
        _ => "ES256",
    };
    let mut header = json!({"alg": alg, "typ": knobs.typ.unwrap_or("dpop+jwt"), "jwk": jwk});
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).expect("randomness");
    let mut claims = json!({
        "jti": URL_SAFE_NO_PAD.encode(random),
        "htm": knobs.htm.unwrap_or("POST"),
        "htu": knobs.htu.unwrap_or(url),
        "iat": now() + knobs.iat_delta,
    });
    if !knobs.no_token {
        claims["ath"] = json!(knobs.ath.map_or_else(
            || URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())),
            str::to_owned
        ));
    }
    for member in knobs.omit {
        header.as_object_mut().expect("an object").remove(*member);
        claims.as_object_mut().expect("an object").remove(*member);
    }
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = match alg {
        "none" => String::new(),
        "HS256" => jsonwebtoken::crypto::sign(
            input.as_bytes(),
            &EncodingKey::from_secret(b"a-shared-secret-no-dpop-key-is"),
            Algorithm::HS256,
        )
        .expect("a MAC"),
        _ => jsonwebtoken::crypto::sign(input.as_bytes(), &key.signing, Algorithm::ES256).expect("a signature"),
    };
    let signature = match knobs.tamper {
        // Another signature of the same length: its first character changed.
        true => {
            let first = if signature.starts_with('A') { "B" } else { "A" };
            format!("{first}{}", &signature[1..])
        }
        false => signature,
    };
    format!("{input}.{signature}")
}

/// The scenario's probe: a 2026-07-28 `server/discover` with `authorization` and the proofs.
async fn send(server: &Everything, authorization: String, proofs: &[String]) -> Answer {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conformance-dpop-server-test", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    }}});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", "server/discover".to_owned()),
        ("authorization", authorization),
    ];
    headers.extend(proofs.iter().map(|p| ("dpop", p.clone())));
    server.post(&body, &headers).await
}

/// A scheme token at the start of `WWW-Authenticate` or after a comma (RFC 9110 §11.6.1).
fn challenges(answer: &Answer, scheme: &str) -> bool {
    let header = answer
        .header("www-authenticate")
        .unwrap_or_default()
        .to_ascii_lowercase();
    header.split(',').any(|part| {
        let part = part.trim_start();
        part == scheme || part.starts_with(&format!("{scheme} "))
    })
}

/// `properlyRejected`: 401 with a `DPoP` challenge.
fn assert_rejected(answer: &Answer, case: &str) {
    assert_eq!(
        answer.status,
        StatusCode::UNAUTHORIZED,
        "{case}: {}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(
        challenges(answer, "dpop"),
        "{case}: {:?}",
        answer.header("www-authenticate")
    );
    assert!(
        !answer
            .header("www-authenticate")
            .unwrap_or_default()
            .contains("use_dpop_nonce"),
        "{case}: a nonce challenge cannot be attributed to the defect"
    );
}

#[tokio::test]
async fn dpop_proofs_are_validated_as_rfc_9449_asks() {
    let issuer = P256::generate();
    let jwks = issuer.private_jwk().to_string();
    let server = Everything::start(&["--jwks", &jwks, "--issuer", ISSUER, "--dpop", "required"]).await;
    let url = server.endpoint.clone();
    let client = P256::generate();
    let bound = token(&issuer, &url, &client.thumbprint());
    let valid = || proof(&client, &url, &bound, &Knobs::default());

    // sep-1932-server-validate-proof, AcceptsValidProof: the gate of every rejection below.
    let accepted = send(&server, format!("DPoP {bound}"), &[valid()]).await;
    assert!(
        accepted.status.is_success(),
        "a valid DPoP request: {} {}",
        accepted.status,
        String::from_utf8_lossy(&accepted.body)
    );
    // sep-1932-server-nonce: the server asks for no nonce (SKIPPED by the suite).
    assert!(accepted.header("dpop-nonce").is_none());

    // sep-1932-server-validate-proof: each defect of RFC 9449 §4.3.
    let cases: [(&str, Knobs); 14] = [
        (
            "tampered-signature",
            Knobs {
                tamper: true,
                ..Knobs::default()
            },
        ),
        (
            "missing-jti",
            Knobs {
                omit: &["jti"],
                ..Knobs::default()
            },
        ),
        (
            "wrong-typ",
            Knobs {
                typ: Some("jwt"),
                ..Knobs::default()
            },
        ),
        (
            "htu-mismatch",
            Knobs {
                htu: Some("https://wrong.example.com/mcp"),
                ..Knobs::default()
            },
        ),
        (
            "htm-mismatch",
            Knobs {
                htm: Some("GET"),
                ..Knobs::default()
            },
        ),
        (
            "private-key-in-jwk",
            Knobs {
                private_key_in_jwk: true,
                ..Knobs::default()
            },
        ),
        (
            "wrong-ath",
            Knobs {
                ath: Some("not-the-right-hash"),
                ..Knobs::default()
            },
        ),
        (
            "missing-htm",
            Knobs {
                omit: &["htm"],
                ..Knobs::default()
            },
        ),
        (
            "missing-htu",
            Knobs {
                omit: &["htu"],
                ..Knobs::default()
            },
        ),
        (
            "missing-iat",
            Knobs {
                omit: &["iat"],
                ..Knobs::default()
            },
        ),
        (
            "missing-jwk",
            Knobs {
                omit: &["jwk"],
                ..Knobs::default()
            },
        ),
        (
            "ath-absent",
            Knobs {
                no_token: true,
                ..Knobs::default()
            },
        ),
        // sep-1932-server-iat-window: ±303 s, just outside the ±5-minute window.
        (
            "iat-stale",
            Knobs {
                iat_delta: -303,
                ..Knobs::default()
            },
        ),
        (
            "iat-future",
            Knobs {
                iat_delta: 303,
                ..Knobs::default()
            },
        ),
    ];
    for (case, knobs) in &cases {
        let answer = send(&server, format!("DPoP {bound}"), &[proof(&client, &url, &bound, knobs)]).await;
        assert_rejected(&answer, case);
    }
    // malformed-not-a-jwt.
    let answer = send(&server, format!("DPoP {bound}"), &["this-is-not-a-jwt".to_owned()]).await;
    assert_rejected(&answer, "malformed-not-a-jwt");
    // duplicate-dpop-header: two valid proofs.
    let answer = send(&server, format!("DPoP {bound}"), &[valid(), valid()]).await;
    assert_rejected(&answer, "duplicate-dpop-header");
    // sep-1932-asymmetric-alg-only: `none` and a symmetric algorithm.
    for (case, knobs) in [
        (
            "alg-none",
            Knobs {
                unsigned: true,
                ..Knobs::default()
            },
        ),
        (
            "alg-symmetric",
            Knobs {
                symmetric: true,
                ..Knobs::default()
            },
        ),
    ] {
        let answer = send(
            &server,
            format!("DPoP {bound}"),
            &[proof(&client, &url, &bound, &knobs)],
        )
        .await;
        assert_rejected(&answer, case);
    }
    // cnf-jkt-mismatch: a token bound to another key, with a proof of this one.
    let foreign = token(&issuer, &url, &P256::generate().thumbprint());
    let answer = send(
        &server,
        format!("DPoP {foreign}"),
        &[proof(&client, &url, &foreign, &Knobs::default())],
    )
    .await;
    assert_rejected(&answer, "cnf-jkt-mismatch");
    // sep-1932-server-audience-validation: a token for another resource, a valid proof.
    let elsewhere = token(&issuer, "https://not-this-server.example.com/mcp", &client.thumbprint());
    let answer = send(
        &server,
        format!("DPoP {elsewhere}"),
        &[proof(&client, &url, &elsewhere, &Knobs::default())],
    )
    .await;
    assert_rejected(&answer, "wrong-audience");
    // sep-1932-server-reject-bearer-downgrade: the bound token under the Bearer scheme is 401
    // with a Bearer or DPoP challenge.
    let answer = send(&server, format!("Bearer {bound}"), &[valid()]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(
        challenges(&answer, "bearer") || challenges(&answer, "dpop"),
        "{:?}",
        answer.header("www-authenticate")
    );
    // sep-1932-server-reject-401: the challenge of a known-bad request.
    let tampered = Knobs {
        tamper: true,
        ..Knobs::default()
    };
    let answer = send(
        &server,
        format!("DPoP {bound}"),
        &[proof(&client, &url, &bound, &tampered)],
    )
    .await;
    assert_rejected(&answer, "challenge-format");
    // And the valid request is still served after the battery (no state poisoned).
    assert!(
        send(&server, format!("DPoP {bound}"), &[valid()])
            .await
            .status
            .is_success()
    );
}
