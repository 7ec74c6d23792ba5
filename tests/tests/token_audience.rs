//! `auth-token-audience-validation`, followed check by check: modelcontextprotocol/conformance
//! `src/scenarios/server/auth-token-audience.ts` at 2ce002402c5bc58a8f08ffcb7891af32e443ddb0.
//!
//! The scenario's fixture contract: a mock authorization server on loopback (RFC 8414 metadata
//! at `/.well-known/oauth-authorization-server`, its RS256 key at `/.well-known/jwks.json`)
//! runs only while the scenario does, so the server under test trusts it as its issuer and
//! fetches its keys lazily, at token-validation time; it expects its own URL as the audience and
//! needs no scope for `initialize` or `server/discover`. Here `everything --oidc-issuer
//! http://127.0.0.1:<port>`, started before the authorization server listens (the port is
//! chosen first, as the suite's 9797 is), then the probes of each era: no token, a valid one,
//! another audience, no audience, an expired one, one signed by a key nobody published.

#[allow(dead_code)]
#[path = "oidc/fixture.rs"]
mod fixture;
#[allow(dead_code)]
#[path = "oidc/net.rs"]
mod net;

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::StatusCode;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::net::TcpListener;

use fixture::Everything;
use net::Answer;

const KID: &str = "mcp-conformance-mock-as";

/// The mock authorization server's key, and the key no authorization server published.
fn keys() -> (EncodingKey, EncodingKey) {
    let key = |pem: &str| EncodingKey::from_rsa_pem(pem.as_bytes()).expect("an RSA key");
    (
        key(include_str!("../testdata/as_rsa_private.pem")),
        key(include_str!("../testdata/untrusted_rsa_private.pem")),
    )
}

/// Serves the metadata and the JWKS of `issuer` on `listener` (what `startMockAuthorizationServer`
/// serves).
fn serve_authorization_server(listener: TcpListener, issuer: String, key: &EncodingKey) {
    let mut jwk = serde_json::to_value(Jwk::from_encoding_key(key, Algorithm::RS256).expect("a JWK")).expect("JSON");
    jwk["kid"] = json!(KID);
    jwk["alg"] = json!("RS256");
    jwk["use"] = json!("sig");
    let metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/.well-known/jwks.json"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "id_token_signing_alg_values_supported": ["RS256"]
    });
    let jwks = json!({"keys": [jwk]});
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (metadata, jwks) = (metadata.clone(), jwks.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let body = match req.uri().path() {
                        "/.well-known/oauth-authorization-server" => Some(metadata.clone()),
                        "/.well-known/jwks.json" => Some(jwks.clone()),
                        _ => None,
                    };
                    async move {
                        let (status, body) = match body {
                            Some(b) => (200, b),
                            None => (404, json!({"error": "not_found"})),
                        };
                        Ok::<_, hyper::Error>(
                            hyper::Response::builder()
                                .status(status)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(body.to_string())))
                                .expect("a response"),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(0))
}

/// `buildSignedJwt`: an RS256 `at+jwt` of `issuer` for `audience` (none when `None`), valid for
/// `expires_in` seconds (already expired when negative).
fn token(key: &EncodingKey, issuer: &str, audience: Option<&str>, expires_in: i64) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(KID.to_owned());
    header.typ = Some("at+jwt".to_owned());
    let now = now();
    let iat = if expires_in < 0 { now + expires_in - 3600 } else { now };
    let mut claims = json!({
        "client_id": "mcp-conformance-client", "iss": issuer, "sub": "mcp-conformance-user",
        "jti": format!("{:x}", now), "iat": iat, "exp": now + expires_in
    });
    if let Some(aud) = audience {
        claims["aud"] = json!(aud);
    }
    jsonwebtoken::encode(&header, &claims, key).expect("a token")
}

/// The scenario's probe of `era` (`server/discover` for 2026-07-28, `initialize` before), with
/// `Authorization: Bearer <token>` when given.
async fn probe(server: &Everything, modern: bool, token: Option<&str>) -> Answer {
    let client = json!({"name": "conformance-token-audience-test", "version": "1.0.0"});
    let (body, mut headers) = match modern {
        true => (
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": client,
                "io.modelcontextprotocol/clientCapabilities": {}
            }}}),
            vec![
                ("mcp-protocol-version", "2026-07-28".to_owned()),
                ("mcp-method", "server/discover".to_owned()),
            ],
        ),
        false => (
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client
            }}),
            vec![],
        ),
    };
    if let Some(t) = token {
        headers.push(("authorization", format!("Bearer {t}")));
    }
    server.post(&body, &headers).await
}

fn status_of(answer: &Answer) -> (StatusCode, Value) {
    let body = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    (answer.status, body)
}

#[tokio::test]
async fn tokens_are_accepted_only_for_this_server() {
    // The port comes first: the fixture is told to trust an issuer that does not listen yet
    // (it must not fetch anything before a token comes).
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr: SocketAddr = listener.local_addr().expect("an address");
    let issuer = format!("http://{addr}");
    let server = Everything::start(&["--oidc-issuer", &issuer]).await;
    let (trusted, untrusted) = keys();
    serve_authorization_server(listener, issuer.clone(), &trusted);
    let own = server.endpoint.clone();

    for modern in [true, false] {
        // auth-unauthenticated-request-rejected: 401 (a bearer challenge).
        let none = probe(&server, modern, None).await;
        assert_eq!(none.status, StatusCode::UNAUTHORIZED, "{:?}", status_of(&none));
        assert!(none.header("www-authenticate").is_some_and(|c| c.starts_with("Bearer")));
        // auth-valid-audience-token-accepted: the gate of the rejections below.
        let valid = token(&trusted, &issuer, Some(&own), 300);
        let ok = probe(&server, modern, Some(&valid)).await;
        assert!(ok.status.is_success(), "modern {modern}: {:?}", status_of(&ok));
        // auth-wrong-audience-token-rejected, auth-missing-audience-token-rejected,
        // auth-expired-token-rejected, auth-untrusted-token-rejected: each 401.
        let refused = [
            (
                "wrong audience",
                token(&trusted, &issuer, Some("https://another-resource.example.com/mcp"), 300),
            ),
            ("no audience", token(&trusted, &issuer, None, 300)),
            ("expired", token(&trusted, &issuer, Some(&own), -600)),
            ("untrusted key", token(&untrusted, &issuer, Some(&own), 300)),
        ];
        for (case, t) in refused {
            let answer = probe(&server, modern, Some(&t)).await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{case} (modern {modern}): {:?}",
                status_of(&answer)
            );
            assert!(
                answer
                    .header("www-authenticate")
                    .is_some_and(|c| c.contains("invalid_token")),
                "{case}: {:?}",
                answer.header("www-authenticate")
            );
        }
    }
}
