//! A round-robin HTTP/1.1 reverse proxy for scale-out tests: several server processes sharing
//! state behind a plain load balancer.
//!
//! Every request (not every connection: one keep-alive connection of a client sees the
//! backends alternate) goes to the next backend that is not marked down, with its method, path,
//! query, headers (`Host` included, unchanged) and body; the answer comes back with its status,
//! headers and body. Bodies stream both ways, frame by frame: an SSE response is never
//! buffered. Hop-by-hop headers (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, …)
//! are not forwarded. An unreachable backend answers `502 Bad Gateway` (the request is not
//! retried: the next one goes to the next backend).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! let proxy = mcp_tests::proxy::start(vec![
//!     "http://127.0.0.1:3001".to_owned(),
//!     "http://127.0.0.1:3002".to_owned(),
//! ])
//! .await?;
//! println!("{}/mcp", proxy.url); // http://127.0.0.1:P/mcp
//! proxy.set_down(1, true); // everything goes to the first backend now
//! # Ok(())
//! # }
//! ```
//!
//! The `rr-proxy` binary of this crate serves the same proxy as a process.

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode, Uri, Version};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

/// The body of an answer: the backend's, streamed, or the proxy's own (a 502).
type ProxyBody = Either<Incoming, Full<Bytes>>;

/// A running proxy; it stops (listener and every connection) when dropped.
pub struct Proxy {
    /// `http://127.0.0.1:P`: where it listens (no path: append the backends' own, e.g. `/mcp`).
    pub url: String,
    /// The address it listens on.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

/// State shared by the connections.
struct Shared {
    backends: Vec<Backend>,
    /// The index of the next backend to try (modulo their number).
    next: AtomicUsize,
    client: Client<HttpConnector, Incoming>,
}

struct Backend {
    /// `http` (the only scheme supported).
    scheme: hyper::http::uri::Scheme,
    /// `host:port`.
    authority: hyper::http::uri::Authority,
    /// Requests sent to it (or tried: a 502 counts too).
    requests: AtomicU64,
    /// Skipped by the rotation while set.
    down: AtomicBool,
}

/// Starts a proxy on `127.0.0.1:0` (a free port) in front of `backends` (`http://host:port`
/// each), on the current tokio runtime.
pub async fn start(backends: Vec<String>) -> io::Result<Proxy> {
    start_on(SocketAddr::from(([127, 0, 0, 1], 0)), backends).await
}

/// Starts a proxy listening on `listen` in front of `backends` (`http://host:port` each, a
/// trailing `/` allowed), on the current tokio runtime.
pub async fn start_on(listen: SocketAddr, backends: Vec<String>) -> io::Result<Proxy> {
    if backends.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "no backend given"));
    }
    let backends = backends
        .iter()
        .map(String::as_str)
        .map(parse_backend)
        .collect::<io::Result<Vec<_>>>()?;
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;

    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client = Client::builder(TokioExecutor::new()).build(connector);
    let shared = Arc::new(Shared {
        backends,
        next: AtomicUsize::new(0),
        client,
    });
    let task = tokio::spawn(accept_loop(listener, shared.clone()));
    Ok(Proxy {
        url: format!("http://{addr}"),
        addr,
        shared,
        task,
    })
}

impl Proxy {
    /// Requests sent to each backend so far, in the order they were given.
    pub fn counts(&self) -> Vec<u64> {
        self.shared
            .backends
            .iter()
            .map(|b| b.requests.load(Ordering::Relaxed))
            .collect()
    }

    /// Marks backend `i` down (skipped by the rotation) or up again. When every backend is
    /// down, requests are answered `502`. Panics if `i` is out of range.
    pub fn set_down(&self, i: usize, down: bool) {
        self.shared.backends[i].down.store(down, Ordering::Relaxed);
    }

    /// The backends, as `http://host:port`.
    pub fn backends(&self) -> Vec<String> {
        self.shared
            .backends
            .iter()
            .map(|b| format!("{}://{}", b.scheme, b.authority))
            .collect()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // The accept loop owns the connection tasks (a JoinSet): aborting it ends them all.
        self.task.abort();
    }
}

fn parse_backend(url: &str) -> io::Result<Backend> {
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("backend `{url}`: {why}"));
    let uri: Uri = url.parse().map_err(|e| invalid(&format!("{e}")))?;
    let parts = uri.into_parts();
    let scheme = parts
        .scheme
        .ok_or_else(|| invalid("no scheme (expected http://host:port)"))?;
    if scheme != hyper::http::uri::Scheme::HTTP {
        return Err(invalid("only http:// is supported"));
    }
    let authority = parts
        .authority
        .ok_or_else(|| invalid("no host (expected http://host:port)"))?;
    if let Some(path) = &parts.path_and_query
        && path.as_str() != "/"
        && !path.as_str().is_empty()
    {
        return Err(invalid(
            "a path is not supported (the client's path is forwarded as is)",
        ));
    }
    Ok(Backend {
        scheme,
        authority,
        requests: AtomicU64::new(0),
        down: AtomicBool::new(false),
    })
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else {
                    // Out of descriptors and the like: back off a little.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                connections.spawn(async move {
                    let service = service_fn(move |req| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(forward(&shared, req).await) }
                    });
                    // A client that goes away mid-request is not an error worth reporting.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Sends `req` to the next backend that is up and returns its answer (or a 502).
async fn forward(shared: &Shared, req: Request<Incoming>) -> Response<ProxyBody> {
    let n = shared.backends.len();
    let start = shared.next.fetch_add(1, Ordering::Relaxed);
    let Some(index) = (0..n)
        .map(|k| (start + k) % n)
        .find(|&i| !shared.backends[i].down.load(Ordering::Relaxed))
    else {
        return bad_gateway("every backend is marked down".to_owned());
    };
    if index != start % n {
        // Skipped some: continue the rotation after the one chosen.
        shared.next.store(index + 1, Ordering::Relaxed);
    }
    let backend = &shared.backends[index];
    backend.requests.fetch_add(1, Ordering::Relaxed);

    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let uri = Uri::builder()
        .scheme(backend.scheme.clone())
        .authority(backend.authority.clone())
        .path_and_query(path)
        .build();
    parts.uri = match uri {
        Ok(uri) => uri,
        Err(e) => return bad_gateway(format!("cannot build the backend URI: {e}")),
    };
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    // `Host` stays as the client sent it (the client keeps it: it only fills a missing one).

    match shared.client.request(Request::from_parts(parts, body)).await {
        Ok(answer) => {
            let (mut parts, body) = answer.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Either::Left(body))
        }
        Err(e) => bad_gateway(format!(
            "backend {}://{}: {}",
            backend.scheme,
            backend.authority,
            chain(&e)
        )),
    }
}

/// An error and its sources, `: `-separated (the client's own message is only "client error").
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// Removes the headers that describe one hop's connection, and those `Connection` names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
    ] {
        headers.remove(name);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
}

fn bad_gateway(why: String) -> Response<ProxyBody> {
    let mut answer = Response::new(Either::Right(Full::new(Bytes::from(format!("rr-proxy: {why}\n")))));
    *answer.status_mut() = StatusCode::BAD_GATEWAY;
    answer.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use http_body_util::{BodyExt as _, Empty, StreamBody};
    use hyper::body::Frame;
    use hyper::client::conn::http1;
    use tokio::net::TcpStream;

    use super::*;

    /// A backend answering every request with `<name> <method> <path?query> host=<Host>`
    /// (`/slow`: three chunks 300 ms apart; `/echo`: the request body). Returns its URL.
    async fn backend(name: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| async move {
                        Ok::<_, Infallible>(answer(name, req).await)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        url
    }

    type TestBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

    async fn answer(name: &'static str, req: Request<Incoming>) -> Response<TestBody> {
        let path = req.uri().path_and_query().map(|p| p.to_string()).unwrap_or_default();
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let route = req.uri().path().to_owned();
        match route.as_str() {
            "/slow" => {
                let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(1);
                tokio::spawn(async move {
                    for i in 0..3 {
                        if tx
                            .send(Ok(Frame::data(Bytes::from(format!("data: {i}\n\n")))))
                            .await
                            .is_err()
                        {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(300)).await;
                    }
                });
                let stream = tokio_stream(rx);
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(StreamBody::new(stream).boxed())
                    .unwrap()
            }
            "/echo" => {
                let body = req.into_body().collect().await.unwrap().to_bytes();
                Response::new(Full::new(body).boxed())
            }
            _ => Response::new(Full::new(Bytes::from(format!("{name} {} {path} host={host}", req.method()))).boxed()),
        }
    }

    /// An mpsc receiver as a stream (no tokio-stream dependency).
    fn tokio_stream<T>(mut rx: tokio::sync::mpsc::Receiver<T>) -> impl futures::Stream<Item = T> + Send + Sync + 'static
    where
        T: Send + Sync + 'static,
    {
        futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }

    /// One keep-alive HTTP/1.1 connection to `addr`.
    async fn connect(addr: SocketAddr) -> http1::SendRequest<TestBody> {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (send, conn) = http1::handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(conn);
        send
    }

    fn get(addr: SocketAddr, path: &str) -> Request<TestBody> {
        Request::get(path)
            .header(header::HOST, format!("localhost:{}", addr.port()))
            .body(Empty::new().boxed())
            .unwrap()
    }

    async fn text(send: &mut http1::SendRequest<TestBody>, req: Request<TestBody>) -> (StatusCode, String) {
        send.ready().await.unwrap();
        let answer = send.send_request(req).await.unwrap();
        let status = answer.status();
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn alternates_on_every_request_of_one_connection() {
        let (a, b) = (backend("a").await, backend("b").await);
        let proxy = start(vec![a, b]).await.unwrap();
        let mut send = connect(proxy.addr).await;
        let mut seen = Vec::new();
        for i in 0..6 {
            let (status, body) = text(&mut send, get(proxy.addr, &format!("/mcp?i={i}"))).await;
            assert_eq!(status, StatusCode::OK);
            seen.push(body);
        }
        let host = format!("localhost:{}", proxy.addr.port());
        for (i, body) in seen.iter().enumerate() {
            let name = if i % 2 == 0 { "a" } else { "b" };
            assert_eq!(body, &format!("{name} GET /mcp?i={i} host={host}"));
        }
        assert_eq!(proxy.counts(), vec![3, 3]);
    }

    #[tokio::test]
    async fn forwards_request_bodies() {
        let (a, b) = (backend("a").await, backend("b").await);
        let proxy = start(vec![a, b]).await.unwrap();
        let mut send = connect(proxy.addr).await;
        for i in 0..2 {
            let payload = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i}}}");
            let req = Request::post("/echo")
                .header(header::HOST, "127.0.0.1")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(payload.clone())).boxed())
                .unwrap();
            assert_eq!(text(&mut send, req).await, (StatusCode::OK, payload));
        }
        assert_eq!(proxy.counts(), vec![1, 1]);
    }

    #[tokio::test]
    async fn streams_a_slow_chunked_response() {
        let a = backend("a").await;
        let proxy = start(vec![a]).await.unwrap();
        let mut send = connect(proxy.addr).await;
        send.ready().await.unwrap();
        let begin = Instant::now();
        let answer = send.send_request(get(proxy.addr, "/slow")).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()[header::CONTENT_TYPE], "text/event-stream");
        let mut body = answer.into_body();
        let mut chunks = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.unwrap().into_data() {
                chunks.push((begin.elapsed(), String::from_utf8(data.to_vec()).unwrap()));
            }
        }
        let texts: Vec<&str> = chunks.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["data: 0\n\n", "data: 1\n\n", "data: 2\n\n"]);
        // The first chunk arrives before the backend has written the second one: no buffering.
        assert!(
            chunks[0].0 < Duration::from_millis(250),
            "first chunk after {:?}",
            chunks[0].0
        );
        assert!(
            chunks[1].0 >= Duration::from_millis(250),
            "second chunk after {:?}",
            chunks[1].0
        );
    }

    #[tokio::test]
    async fn unreachable_backend_is_a_502_and_down_backends_are_skipped() {
        let a = backend("a").await;
        // A port nobody listens on: bind, read the port, close.
        let dead = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            format!("http://{}", l.local_addr().unwrap())
        };
        let proxy = start(vec![a, dead]).await.unwrap();
        let mut send = connect(proxy.addr).await;
        let (status, body) = text(&mut send, get(proxy.addr, "/x")).await;
        assert_eq!((status, body.starts_with("a GET /x")), (StatusCode::OK, true));
        let (status, _) = text(&mut send, get(proxy.addr, "/x")).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY);
        // The connection survives the 502, and the next request goes to the next backend.
        let (status, _) = text(&mut send, get(proxy.addr, "/x")).await;
        assert_eq!(status, StatusCode::OK);

        proxy.set_down(1, true);
        for _ in 0..3 {
            let (status, _) = text(&mut send, get(proxy.addr, "/x")).await;
            assert_eq!(status, StatusCode::OK);
        }
        assert_eq!(proxy.counts(), vec![5, 1]);
        proxy.set_down(0, true);
        let (status, _) = text(&mut send, get(proxy.addr, "/x")).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY);
    }

    #[tokio::test]
    async fn stops_when_dropped() {
        let a = backend("a").await;
        let proxy = start(vec![a]).await.unwrap();
        let addr = proxy.addr;
        drop(proxy);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(TcpStream::connect(addr).await.is_err());
    }

    #[test]
    fn refuses_bad_backends() {
        for url in ["127.0.0.1:1", "https://127.0.0.1:1", "http://127.0.0.1:1/mcp"] {
            assert!(parse_backend(url).is_err(), "{url}");
        }
        assert!(parse_backend("http://127.0.0.1:1/").is_ok());
    }
}
