//! The small HTTP client that talks to the authorization server (feature `oidc`): discovery
//! documents (OpenID Connect Discovery 1.0 §4, RFC 8414 §3), JWK sets (RFC 7517) and token
//! introspection (RFC 7662).
//!
//! It fetches only URLs the server's configuration names, or that the configured issuer's own
//! metadata names, and each of them is checked the same way: `https`, or `http` on a loopback
//! host (127.0.0.0/8, `[::1]`, `localhost`) for tests and local development; no user info, no
//! fragment. Every exchange is bounded: one timeout over the connection, the request and the
//! whole body (default [`DEFAULT_FETCH_TIMEOUT`]), and a bound on the body
//! ([`MAX_FETCH_BODY`]); a redirect is an error, never followed. TLS is rustls with the ring
//! provider, trusting the Mozilla roots compiled in (`webpki-roots`): the same on every host,
//! including containers without a system trust store. An authorization server behind a private
//! certificate authority is reached by adding that authority's certificate (PEM) to them.
//!
//! Nothing here logs a token or a secret, and errors name the URL and what went wrong only.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, USER_AGENT};
use http::{HeaderMap, Method, Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::{Map, Value};

use crate::AuthSetupError;
use crate::metadata::check_url;

/// How long one exchange with the authorization server may take, connection and body included.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest body accepted from the authorization server (256 KiB).
pub const MAX_FETCH_BODY: usize = 256 * 1024;

const USER_AGENT_VALUE: &str = concat!("mcp-auth/", env!("CARGO_PKG_VERSION"));

/// Why an exchange with the authorization server failed. It names the URL and the cause, never
/// a token or a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The connection or the exchange failed (DNS, TCP, TLS, a broken answer).
    #[error("{url}: the request failed: {reason}")]
    Network {
        /// The URL asked.
        url: String,
        /// What failed.
        reason: String,
    },
    /// No complete answer within the timeout.
    #[error("{url}: no answer within {timeout:?}")]
    Timeout {
        /// The URL asked.
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The answer is a redirect, which is not followed.
    #[error("{url}: answered with a redirect ({status}), which is not followed")]
    Redirect {
        /// The URL asked.
        url: String,
        /// The 3xx status.
        status: u16,
    },
    /// The answer's status is not a success.
    #[error("{url}: answered with status {status}")]
    Status {
        /// The URL asked.
        url: String,
        /// The status.
        status: u16,
    },
    /// The body is larger than [`MAX_FETCH_BODY`].
    #[error("{url}: the answer is larger than {limit} bytes")]
    TooLarge {
        /// The URL asked.
        url: String,
        /// The bound.
        limit: usize,
    },
    /// The body is not the document expected (not JSON, a member missing or of the wrong type,
    /// no usable key…).
    #[error("{url}: unusable answer: {reason}")]
    Invalid {
        /// The URL asked.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The issuer's metadata names another issuer than the one configured (OpenID Connect
    /// Discovery 1.0 §4.3, RFC 8414 §3.3): the document is not used.
    #[error("the metadata of issuer {expected} names the issuer {found:?}")]
    IssuerMismatch {
        /// The issuer configured.
        expected: String,
        /// The `issuer` the document names.
        found: String,
    },
    /// A URL the metadata names is not one this client fetches (not `https`, user info…).
    #[error("{what} {url:?} is not fetched: {reason}")]
    RefusedUrl {
        /// Which URL (`jwks_uri`, `introspection_endpoint`).
        what: &'static str,
        /// The URL.
        url: String,
        /// Why.
        reason: &'static str,
    },
}

/// PEM documents of extra trust anchors, shown by `Debug` as a count.
#[derive(Clone, Default)]
pub(crate) struct RootPems(pub(crate) Vec<Vec<u8>>);

impl std::fmt::Debug for RootPems {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} PEM documents", self.0.len())
    }
}

/// A successful answer: its headers (for `Cache-Control`) and its body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as a JSON object.
    pub(crate) fn json_object(&self, url: &Uri) -> Result<Map<String, Value>, FetchError> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) => Err(invalid(url, "not a JSON object")),
            Err(e) => Err(invalid(url, format!("not JSON: {e}"))),
        }
    }

    /// The `max-age` of the answer's `Cache-Control`, if it names one; zero for `no-store`
    /// and `no-cache`.
    pub(crate) fn max_age(&self) -> Option<Duration> {
        max_age(&self.headers)
    }
}

pub(crate) fn invalid(url: &Uri, reason: impl Into<String>) -> FetchError {
    FetchError::Invalid {
        url: url.to_string(),
        reason: reason.into(),
    }
}

/// The freshness `Cache-Control` gives: `max-age=N` in seconds, zero for `no-store` or
/// `no-cache`, `None` when it says nothing of it.
pub(crate) fn max_age(headers: &HeaderMap) -> Option<Duration> {
    let mut found = None;
    for value in headers.get_all(CACHE_CONTROL) {
        let Ok(value) = value.to_str() else { continue };
        for directive in value.split(',').map(str::trim) {
            let (name, arg) = directive.split_once('=').unwrap_or((directive, ""));
            let name = name.trim();
            if name.eq_ignore_ascii_case("no-store") || name.eq_ignore_ascii_case("no-cache") {
                return Some(Duration::ZERO);
            }
            if name.eq_ignore_ascii_case("max-age")
                && let Ok(secs) = arg.trim().trim_matches('"').parse::<u64>()
            {
                found = Some(Duration::from_secs(secs));
            }
        }
    }
    found
}

/// Checks a URL this client may fetch: `https`, or `http` on a loopback host; no user info,
/// no fragment.
pub(crate) fn check_fetch_url(what: &'static str, url: &str) -> Result<Uri, AuthSetupError> {
    check_url(what, url)
}

/// An HTTPS client (plain HTTP to loopback hosts only, which [`check_fetch_url`] enforces),
/// with a timeout and a body bound on every exchange. Cheap to clone: clones share the
/// connection pool.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    max_body: usize,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("timeout", &self.timeout)
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client whose exchanges each take at most `timeout`, trusting the Mozilla roots and
    /// the certificates of the PEM documents `extra_roots`. Needs no runtime to be built; its
    /// requests run on the Tokio runtime that awaits them.
    pub(crate) fn new(timeout: Duration, extra_roots: &RootPems) -> Result<Self, AuthSetupError> {
        let setup = |reason: String| AuthSetupError::HttpClient { reason };
        let mut roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for (index, pem) in extra_roots.0.iter().enumerate() {
            let mut found = 0;
            for cert in CertificateDer::pem_slice_iter(pem) {
                let cert = cert.map_err(|e| setup(format!("root certificate document {index}: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| setup(format!("root certificate document {index}: {e}")))?;
                found += 1;
            }
            if found == 0 {
                return Err(setup(format!("root certificate document {index} holds no certificate")));
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| setup(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(timeout));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(4)
            .build(https);
        Ok(HttpClient {
            client,
            timeout,
            max_body: MAX_FETCH_BODY,
        })
    }

    /// `GET url`, asking for JSON.
    pub(crate) async fn get(&self, url: &Uri) -> Result<Answer, FetchError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.clone())
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, USER_AGENT_VALUE)
            .body(Full::new(Bytes::new()));
        self.send(url, request).await
    }

    /// `POST url` with a form body (`application/x-www-form-urlencoded`) and an optional
    /// `Authorization` header.
    pub(crate) async fn post_form(
        &self,
        url: &Uri,
        authorization: Option<&str>,
        form: String,
    ) -> Result<Answer, FetchError> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(ACCEPT, "application/json")
            .header(USER_AGENT, USER_AGENT_VALUE)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(value) = authorization {
            request = request.header(AUTHORIZATION, value);
        }
        self.send(url, request.body(Full::new(Bytes::from(form)))).await
    }

    async fn send(&self, url: &Uri, request: http::Result<Request<Full<Bytes>>>) -> Result<Answer, FetchError> {
        let request = request.map_err(|e| network(url, &e))?;
        match tokio::time::timeout(self.timeout, self.exchange(url, request)).await {
            Ok(answer) => answer,
            Err(_) => Err(FetchError::Timeout {
                url: url.to_string(),
                timeout: self.timeout,
            }),
        }
    }

    async fn exchange(&self, url: &Uri, request: Request<Full<Bytes>>) -> Result<Answer, FetchError> {
        let response = self.client.request(request).await.map_err(|e| network(url, &e))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(FetchError::Redirect {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let too_large = || FetchError::TooLarge {
            url: url.to_string(),
            limit: self.max_body,
        };
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|len| len > self.max_body as u64) {
            return Err(too_large());
        }
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, self.max_body).collect().await.map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                too_large()
            } else {
                FetchError::Network {
                    url: url.to_string(),
                    reason: chain(&*e),
                }
            }
        })?;
        Ok(Answer {
            headers: parts.headers,
            body: body.to_bytes(),
        })
    }
}

fn network(url: &Uri, e: &(dyn std::error::Error + 'static)) -> FetchError {
    FetchError::Network {
        url: url.to_string(),
        reason: chain(e),
    }
}

/// An error and its sources, `a: b: c`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// What this crate uses of an authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerMetadata {
    /// `jwks_uri`, checked like a configured URL.
    pub(crate) jwks_uri: Option<Uri>,
    /// `introspection_endpoint` (RFC 8414 §2 via RFC 7662 §4), checked like a configured URL.
    pub(crate) introspection_endpoint: Option<Uri>,
}

/// The metadata URLs of `issuer`, in the order they are tried: OpenID Connect Discovery 1.0
/// §4 (`<issuer>/.well-known/openid-configuration`, the issuer's trailing `/` removed), then
/// RFC 8414 §3.1 (`/.well-known/oauth-authorization-server` inserted between the host and the
/// issuer's path).
pub(crate) fn metadata_urls(issuer: &Uri) -> [String; 2] {
    let scheme = issuer.scheme_str().unwrap_or("https");
    let authority = issuer.authority().map_or("", |a| a.as_str());
    let path = issuer.path().trim_end_matches('/');
    [
        format!("{scheme}://{authority}{path}/.well-known/openid-configuration"),
        format!("{scheme}://{authority}/.well-known/oauth-authorization-server{path}"),
    ]
}

/// Checks an issuer identifier (RFC 8414 §2): `https` (or `http` on loopback), no query, no
/// fragment.
pub(crate) fn check_issuer(issuer: &str) -> Result<Uri, AuthSetupError> {
    let uri = check_fetch_url("issuer", issuer)?;
    if uri.query().is_some() {
        return Err(AuthSetupError::InvalidUrl {
            what: "issuer",
            url: issuer.to_owned(),
            reason: "an issuer has no query",
        });
    }
    Ok(uri)
}

/// Fetches the metadata of `issuer` (checked by [`check_issuer`]): the OpenID Connect
/// document, or, when that one is not found (a 4xx), the RFC 8414 one. The document's `issuer`
/// must be exactly the configured one.
pub(crate) async fn discover(client: &HttpClient, issuer: &str) -> Result<ServerMetadata, FetchError> {
    let issuer_uri = check_issuer(issuer).map_err(|_| FetchError::RefusedUrl {
        what: "issuer",
        url: issuer.to_owned(),
        reason: "not an https URL without query or fragment",
    })?;
    let [oidc, oauth] = metadata_urls(&issuer_uri);
    let mut last = None;
    for url in [oidc, oauth] {
        let uri: Uri = match url.parse() {
            Ok(u) => u,
            Err(_) => continue,
        };
        match client.get(&uri).await {
            Ok(answer) => return parse_metadata(issuer, &uri, &answer),
            Err(e @ FetchError::Status { status, .. }) if (400..500).contains(&status) => {
                tracing::debug!(error = %e, "authorization server metadata not found here");
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| FetchError::RefusedUrl {
        what: "issuer",
        url: issuer.to_owned(),
        reason: "no metadata URL can be formed",
    }))
}

fn parse_metadata(issuer: &str, url: &Uri, answer: &Answer) -> Result<ServerMetadata, FetchError> {
    let doc = answer.json_object(url)?;
    match doc.get("issuer") {
        Some(Value::String(found)) if found == issuer => {}
        Some(Value::String(found)) => {
            return Err(FetchError::IssuerMismatch {
                expected: issuer.to_owned(),
                found: found.clone(),
            });
        }
        _ => return Err(invalid(url, "no issuer string")),
    }
    let member = |what: &'static str| -> Result<Option<Uri>, FetchError> {
        match doc.get(what) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => match check_fetch_url(what, s) {
                Ok(uri) => Ok(Some(uri)),
                Err(AuthSetupError::InvalidUrl { reason, .. }) => Err(FetchError::RefusedUrl {
                    what,
                    url: s.clone(),
                    reason,
                }),
                Err(_) => Err(invalid(url, format!("{what} is not a URL"))),
            },
            Some(_) => Err(invalid(url, format!("{what} is not a string"))),
        }
    };
    Ok(ServerMetadata {
        jwks_uri: member("jwks_uri")?,
        introspection_endpoint: member("introspection_endpoint")?,
    })
}

/// `application/x-www-form-urlencoded` encoding of one name or value (the WHATWG URL
/// standard's byte serializer: `*-._` and alphanumerics kept, space as `+`, the rest
/// percent-encoded).
pub(crate) fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(char::from(b)),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(CACHE_CONTROL, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn cache_control_max_age() {
        assert_eq!(max_age(&headers(&[])), None);
        assert_eq!(max_age(&headers(&["public"])), None);
        assert_eq!(
            max_age(&headers(&["public, max-age=600"])),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age(&headers(&["Max-Age=\"7\""])), Some(Duration::from_secs(7)));
        assert_eq!(max_age(&headers(&["max-age=60", "no-cache"])), Some(Duration::ZERO));
        assert_eq!(max_age(&headers(&["no-store, max-age=600"])), Some(Duration::ZERO));
        assert_eq!(max_age(&headers(&["max-age=soon"])), None);
    }

    #[test]
    fn metadata_url_forms() {
        let u = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(
            metadata_urls(&u("https://as.example.com")),
            [
                "https://as.example.com/.well-known/openid-configuration",
                "https://as.example.com/.well-known/oauth-authorization-server",
            ]
        );
        assert_eq!(
            metadata_urls(&u("https://as.example.com/tenant/1/")),
            [
                "https://as.example.com/tenant/1/.well-known/openid-configuration",
                "https://as.example.com/.well-known/oauth-authorization-server/tenant/1",
            ]
        );
        assert_eq!(
            metadata_urls(&u("http://127.0.0.1:8080/realms/x")),
            [
                "http://127.0.0.1:8080/realms/x/.well-known/openid-configuration",
                "http://127.0.0.1:8080/.well-known/oauth-authorization-server/realms/x",
            ]
        );
    }

    #[test]
    fn issuers_and_urls_checked() {
        assert!(check_issuer("https://as.example.com/t").is_ok());
        assert!(check_issuer("http://localhost:9000").is_ok());
        assert!(check_issuer("http://[::1]:9000").is_ok());
        for bad in [
            "http://as.example.com",
            "http://127.evil.example",
            "https://as.example.com?x=1",
            "https://as.example.com#f",
            "https://u:p@as.example.com",
            "as.example.com",
            "ftp://as.example.com",
        ] {
            assert!(check_issuer(bad).is_err(), "{bad}");
        }
        assert!(check_fetch_url("jwks_uri", "https://as.example.com/keys?v=1").is_ok());
        assert!(check_fetch_url("jwks_uri", "http://192.168.1.1/keys").is_err());
    }

    #[test]
    fn form_encoding() {
        assert_eq!(form_encode("a b+c/d=é~"), "a+b%2Bc%2Fd%3D%C3%A9%7E");
        assert_eq!(form_encode("Az09*-._"), "Az09*-._");
    }

    #[test]
    fn error_chains_are_flattened() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("connect")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::other("refused"));
        assert_eq!(chain(&e), "connect: refused");
    }
}
