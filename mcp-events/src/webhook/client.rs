//! The HTTP client of webhook deliveries, hardened against SSRF: a callback's host is
//! resolved, every address is checked against the IANA special-purpose registries
//! ([`is_globally_routable`]) and the connection goes to an address checked (so the name cannot
//! resolve elsewhere between the check and the connection: DNS rebinding); a literal address is
//! checked before anything is sent; redirects are answers, never followed; each exchange is
//! bounded in time and the answer's body in size. An origin the operator allow-listed skips
//! the routability check (a receiver on the operator's own network, a test harness on
//! loopback), and only it may use `http`. TLS is rustls with the ring provider and the Mozilla
//! roots compiled in.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use mcp_protocol::events::callback::{CallbackError, is_globally_routable};
use mcp_protocol::events::wire::LastError;

/// At most this much of an endpoint's answer is read (a verification echo is small).
const MAX_ANSWER: usize = 4096;

/// A callback URL that passed the static checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Callback {
    /// The URL.
    pub uri: Uri,
    /// `scheme://host[:port]`, as allow-lists name it.
    pub origin: String,
}

impl Callback {
    /// Checks a callback URL: absolute `http(s)` with a host, no user info, no whitespace;
    /// `https` unless `permitted` (its origin is allow-listed); a literal address globally
    /// routable unless permitted.
    pub fn parse(url: &str, permitted: impl Fn(&str) -> bool) -> Result<Callback, CallbackError> {
        if url.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(CallbackError::Malformed);
        }
        let uri: Uri = url.parse().map_err(|_| CallbackError::Malformed)?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(CallbackError::Malformed);
        };
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https")
            || authority.as_str().contains('@')
            || authority.host().is_empty()
        {
            return Err(CallbackError::Malformed);
        }
        let origin = format!("{scheme}://{}", authority.as_str().to_ascii_lowercase());
        let open = permitted(&origin);
        if scheme != "https" && !open {
            return Err(CallbackError::NotHttps);
        }
        if let Some(ip) = literal_ip(authority.host())
            && !open
            && !is_globally_routable(ip)
        {
            return Err(CallbackError::NotRoutable);
        }
        Ok(Callback { uri, origin })
    }
}

/// The address a host names literally (`[::1]` included), if it does.
fn literal_ip(host: &str) -> Option<IpAddr> {
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// What an attempt got: the status and the start of the body, or why there was none.
pub type Answer = Result<(u16, Bytes), LastError>;

/// Resolves names to globally routable addresses only.
#[derive(Clone)]
struct Guarded(GaiResolver);

type Resolved = std::vec::IntoIter<SocketAddr>;

impl tower_service::Service<Name> for Guarded {
    type Response = Resolved;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Resolved, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let lookup = self.0.call(name);
        Box::pin(async move {
            let routable: Vec<SocketAddr> = lookup.await?.filter(|a| is_globally_routable(a.ip())).collect();
            if routable.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the callback's host resolves to no globally routable address",
                ));
            }
            Ok(routable.into_iter())
        })
    }
}

type Https<R> = Client<HttpsConnector<HttpConnector<R>>, Full<Bytes>>;

/// The delivery client: one guarded, one for allow-listed origins.
#[derive(Clone)]
pub struct Sender {
    guarded: Https<Guarded>,
    open: Https<GaiResolver>,
    timeout: Duration,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn client<R>(resolver: R, timeout: Duration) -> Https<R>
where
    R: tower_service::Service<Name> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = SocketAddr>,
    R::Future: Send,
    R::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut http = HttpConnector::new_with_resolver(resolver);
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeout));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Client::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(2)
        .build(https)
}

impl Sender {
    /// A client whose attempts each take at most `timeout`, connection and answer included.
    pub fn new(timeout: Duration) -> Self {
        Sender {
            guarded: client(Guarded(GaiResolver::new()), timeout),
            open: client(GaiResolver::new(), timeout),
            timeout,
        }
    }

    /// POSTs `body` with `headers` to `callback` (through the guarded client unless `open`).
    pub async fn post(&self, callback: &Callback, open: bool, headers: &[(&str, String)], body: Bytes) -> Answer {
        let mut request = Request::post(callback.uri.clone()).header(http::header::CONTENT_TYPE, "application/json");
        request = request.header(
            http::header::USER_AGENT,
            concat!("mcp-events/", env!("CARGO_PKG_VERSION")),
        );
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let request = request
            .body(Full::new(body))
            .map_err(|_| LastError::ConnectionRefused)?;
        let exchange = async {
            let response = if open {
                self.open.request(request).await
            } else {
                self.guarded.request(request).await
            }
            .map_err(|e| category(&e))?;
            let status = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            Ok((status, body))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .unwrap_or(Err(LastError::Timeout))
    }
}

/// The category of a failed exchange: a TLS failure anywhere in the chain is `tls_error`,
/// a timeout `timeout`, anything else (DNS, refused, not routable) `connection_refused`.
fn category(error: &hyper_util::client::legacy::Error) -> LastError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.downcast_ref::<rustls::Error>().is_some() {
            return LastError::TlsError;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return LastError::Timeout;
            }
            if io.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) {
                return LastError::TlsError;
            }
        }
        source = e.source();
    }
    LastError::ConnectionRefused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_are_https_to_routable_hosts_unless_permitted() {
        let none = |_: &str| false;
        assert!(Callback::parse("https://hooks.example.com/h?x=1", none).is_ok());
        assert_eq!(
            Callback::parse("http://hooks.example.com/h", none),
            Err(CallbackError::NotHttps)
        );
        assert_eq!(
            Callback::parse("https://127.0.0.1:9/h", none),
            Err(CallbackError::NotRoutable)
        );
        assert_eq!(
            Callback::parse("https://[::1]/h", none),
            Err(CallbackError::NotRoutable)
        );
        assert_eq!(
            Callback::parse("https://10.0.0.1/h", none),
            Err(CallbackError::NotRoutable)
        );
        for bad in [
            "hooks.example.com/h",
            "ftp://x.example/h",
            "https://u:p@x.example/h",
            "https://x.example/a b",
            "https:///h",
        ] {
            assert_eq!(Callback::parse(bad, none), Err(CallbackError::Malformed), "{bad}");
        }
        let local = |o: &str| o == "http://127.0.0.1:8080";
        let cb = Callback::parse("http://127.0.0.1:8080/hook", local).unwrap();
        assert_eq!(cb.origin, "http://127.0.0.1:8080");
        assert_eq!(
            Callback::parse("http://127.0.0.1:8081/hook", local),
            Err(CallbackError::NotHttps)
        );
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_never_connected() {
        let sender = Sender::new(Duration::from_secs(2));
        let cb = Callback::parse("https://localhost:9/never", |_| false).expect("a name passes the static check");
        assert_eq!(
            sender.post(&cb, false, &[], Bytes::new()).await,
            Err(LastError::ConnectionRefused)
        );
    }
}
