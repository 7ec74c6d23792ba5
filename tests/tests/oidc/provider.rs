//! The OpenID provider `cargo xtask` starts for the tests (`oidc-provider`, the certified Node
//! implementation): where it is, its clients, tokens from its client-credentials grant, and
//! its admin routes (key rotation, another issuer).

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{Method, StatusCode};
use serde_json::Value;

use crate::net::{Answer, exchange};

const MISSING: &str = "MCP_TEST_OIDC_ISSUER, MCP_TEST_OIDC_ADMIN and MCP_TEST_OIDC_CLIENTS name the \
    OpenID provider of these tests: run `cargo xtask ci`, or `cargo xtask oidc` and export the \
    lines it prints";

/// The provider's coordinates, from the environment.
pub(crate) struct Provider {
    pub(crate) issuer: String,
    pub(crate) admin: String,
    clients: Value,
}

/// The provider of this test run.
pub(crate) fn provider() -> &'static Provider {
    static PROVIDER: OnceLock<Provider> = OnceLock::new();
    PROVIDER.get_or_init(|| {
        let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{MISSING}"));
        Provider {
            issuer: var("MCP_TEST_OIDC_ISSUER"),
            admin: var("MCP_TEST_OIDC_ADMIN"),
            clients: serde_json::from_str(&var("MCP_TEST_OIDC_CLIENTS")).expect("MCP_TEST_OIDC_CLIENTS is JSON"),
        }
    })
}

/// A client of the provider: `jwt`, `opaque`, `jwt_short`, `opaque_short` or `introspector`.
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: String,
}

impl Provider {
    /// The client named `name`.
    pub(crate) fn client(&self, name: &str) -> Client {
        let c = &self.clients[name];
        let text = |k: &str| {
            c[k].as_str()
                .unwrap_or_else(|| panic!("client {name} has no {k}"))
                .to_owned()
        };
        Client {
            id: text("client_id"),
            secret: text("client_secret"),
        }
    }

    /// Another issuer of the same provider (its own keys and store, the same clients), for a
    /// test that rotates keys without disturbing the others: its URL.
    pub(crate) async fn new_issuer(&self) -> String {
        let a = exchange(Method::POST, &format!("{}/issuers", self.admin), &[], Vec::new()).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&a.body));
        a.json()["issuer"].as_str().expect("the new issuer's URL").to_owned()
    }

    /// Rotates `issuer`'s signing key to a new `alg` key, dropping the old keys from its JWKS
    /// when `drop_old`: the new key id.
    pub(crate) async fn rotate(&self, issuer: &str, alg: &str, drop_old: bool) -> String {
        let url = format!(
            "{}/rotate?issuer={issuer}&alg={alg}&drop_old={}",
            self.admin,
            u8::from(drop_old)
        );
        let a = exchange(Method::POST, &url, &[], Vec::new()).await;
        assert_eq!(a.status, StatusCode::OK, "{}", String::from_utf8_lossy(&a.body));
        a.json()["kid"].as_str().expect("the new key id").to_owned()
    }

    /// Stops an issuer made by [`new_issuer`](Self::new_issuer).
    pub(crate) async fn drop_issuer(&self, issuer: &str) {
        let url = format!("{}/issuers?issuer={issuer}", self.admin);
        let _ = exchange(Method::DELETE, &url, &[], Vec::new()).await;
    }
}

/// What a token request asks for.
pub(crate) struct TokenRequest<'a> {
    /// The issuer asked.
    pub(crate) issuer: &'a str,
    /// The client asking.
    pub(crate) client: &'a str,
    /// The resource (this server's URL) the token is for.
    pub(crate) resource: &'a str,
    /// The scopes asked, space-separated.
    pub(crate) scope: &'a str,
    /// A DPoP proof of the token request, for a DPoP-bound token.
    pub(crate) dpop: Option<String>,
}

/// The client-credentials grant: the answer of the token endpoint.
pub(crate) async fn token_answer(req: &TokenRequest<'_>) -> Answer {
    let client = provider().client(req.client);
    let basic = STANDARD.encode(format!("{}:{}", form(&client.id), form(&client.secret)));
    let mut headers = vec![
        ("authorization", format!("Basic {basic}")),
        ("content-type", "application/x-www-form-urlencoded".to_owned()),
    ];
    if let Some(proof) = &req.dpop {
        headers.push(("dpop", proof.clone()));
    }
    let body = format!(
        "grant_type=client_credentials&resource={}&scope={}",
        form(req.resource),
        form(req.scope)
    );
    exchange(Method::POST, &token_endpoint(req.issuer), &headers, body.into_bytes()).await
}

/// An access token for `req`.
pub(crate) async fn token(req: &TokenRequest<'_>) -> String {
    let a = token_answer(req).await;
    assert_eq!(a.status, StatusCode::OK, "{}", String::from_utf8_lossy(&a.body));
    a.json()["access_token"].as_str().expect("an access token").to_owned()
}

/// The token endpoint of `issuer`.
pub(crate) fn token_endpoint(issuer: &str) -> String {
    format!("{issuer}/token")
}

/// Revokes `token` with the resource server's own credentials.
pub(crate) async fn revoke(token: &str) {
    let p = provider();
    let rs = p.client("introspector");
    let basic = STANDARD.encode(format!("{}:{}", form(&rs.id), form(&rs.secret)));
    let headers = [
        ("authorization", format!("Basic {basic}")),
        ("content-type", "application/x-www-form-urlencoded".to_owned()),
    ];
    let body = format!("token={}&token_type_hint=access_token", form(token));
    let url = format!("{}/token/revocation", p.issuer);
    let a = exchange(Method::POST, &url, &headers, body.into_bytes()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", String::from_utf8_lossy(&a.body));
}

/// `application/x-www-form-urlencoded` encoding of one value.
fn form(value: &str) -> String {
    let mut out = String::new();
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
