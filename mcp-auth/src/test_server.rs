//! A tiny HTTP/1.1 server on 127.0.0.1 for the tests of the `oidc` feature: it plays the
//! authorization server (metadata, JWKS, introspection) with answers the test sets per path,
//! counts the requests per path and keeps the last one of each.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;

/// What the server answers on a path.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    pub(crate) delay: Duration,
    /// Sent in chunks without `Content-Length`.
    pub(crate) chunked: bool,
}

impl Reply {
    pub(crate) fn json(value: &serde_json::Value) -> Self {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: value.to_string().into_bytes(),
            delay: Duration::ZERO,
            chunked: false,
        }
    }

    pub(crate) fn status(status: u16) -> Self {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            delay: Duration::ZERO,
            chunked: false,
        }
    }

    pub(crate) fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub(crate) fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub(crate) fn chunked(mut self) -> Self {
        self.chunked = true;
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) method: http::Method,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

#[derive(Default)]
struct Shared {
    replies: HashMap<String, Reply>,
    hits: HashMap<String, usize>,
    last: HashMap<String, Received>,
}

/// The server; it stops when dropped.
pub(crate) struct TestServer {
    addr: SocketAddr,
    scheme: &'static str,
    /// The certificate over TLS, in PEM.
    pub(crate) cert_pem: Option<String>,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server on an ephemeral port of 127.0.0.1 that answers 404 everywhere.
    pub(crate) async fn start() -> Self {
        Self::serve(None, None).await
    }

    /// The same over TLS, with a self-signed certificate for `localhost` (which no client of
    /// this crate trusts).
    pub(crate) async fn start_tls() -> Self {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certified.cert.der().clone()], key.into())
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::serve(Some(acceptor), Some(certified.cert.pem())).await
    }

    async fn serve(tls: Option<tokio_rustls::TlsAcceptor>, cert_pem: Option<String>) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Mutex::new(Shared::default()));
        let state = Arc::clone(&shared);
        let scheme = if tls.is_some() { "https" } else { "http" };
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = Arc::clone(&state);
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| answer(Arc::clone(&state), req));
                    let http = hyper::server::conn::http1::Builder::new();
                    match tls {
                        None => {
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                let _ = http.serve_connection(TokioIo::new(stream), service).await;
                            }
                        }
                    }
                });
            }
        });
        TestServer {
            addr,
            scheme,
            cert_pem,
            shared,
            task,
        }
    }

    /// `http://127.0.0.1:<port>` (`https://localhost:<port>` over TLS) followed by `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        match self.scheme {
            "https" => format!("https://localhost:{}{path}", self.addr.port()),
            _ => format!("http://{}{path}", self.addr),
        }
    }

    /// Answers `reply` on `path` from now on.
    pub(crate) fn set(&self, path: &str, reply: Reply) {
        self.shared.lock().unwrap().replies.insert(path.to_owned(), reply);
    }

    /// How many requests `path` received.
    pub(crate) fn hits(&self, path: &str) -> usize {
        self.shared.lock().unwrap().hits.get(path).copied().unwrap_or(0)
    }

    /// The last request `path` received.
    pub(crate) fn last(&self, path: &str) -> Option<Received> {
        self.shared.lock().unwrap().last.get(path).cloned()
    }
}

async fn answer(
    state: Arc<Mutex<Shared>>,
    request: Request<Incoming>,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    let path = request.uri().path().to_owned();
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let reply = {
        let mut s = state.lock().unwrap();
        *s.hits.entry(path.clone()).or_default() += 1;
        s.last.insert(
            path.clone(),
            Received {
                method: parts.method,
                headers: parts.headers,
                body,
            },
        );
        s.replies.get(&path).cloned().unwrap_or_else(|| Reply::status(404))
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    let body = if reply.chunked {
        let chunks: Vec<Result<Frame<Bytes>, Infallible>> = reply
            .body
            .chunks(8 * 1024)
            .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
            .collect();
        StreamBody::new(futures::stream::iter(chunks)).boxed()
    } else {
        Full::new(Bytes::from(reply.body)).boxed()
    };
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(reply.status).unwrap();
    for (name, value) in &reply.headers {
        response.headers_mut().append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_str(value).unwrap(),
        );
    }
    Ok(response)
}
