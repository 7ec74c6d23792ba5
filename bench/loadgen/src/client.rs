//! One keep-alive HTTP/1.1 connection (hyper's client connection, no pool): a bench client owns
//! one and sends its requests on it one after the other. [`H2Conn`] is one HTTP/2 connection
//! with prior knowledge (h2c), for M1's many listen streams on one connection.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{SendRequest, handshake};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

/// Every failure of the bench is a one-line reason.
pub(crate) type Result<T> = std::result::Result<T, String>;

/// Where requests go: a loopback `http://HOST:PORT/PATH` URL.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    addr: SocketAddr,
    authority: HeaderValue,
    path: String,
}

impl Target {
    /// Parses `http://127.0.0.1:PORT/PATH`; anything but a loopback address is refused (the
    /// bench never sends load elsewhere).
    pub(crate) fn parse(url: &str) -> Result<Target> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].to_owned()),
            None => (rest, "/".to_owned()),
        };
        let addr: SocketAddr = authority
            .parse()
            .map_err(|e| format!("{url}: the host must be an IP address and a port: {e}"))?;
        if !addr.ip().is_loopback() {
            return Err(format!("{url}: the bench only targets loopback addresses"));
        }
        let authority = HeaderValue::from_str(authority).map_err(|e| format!("{url}: {e}"))?;
        Ok(Target { addr, authority, path })
    }
}

/// A complete answer.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// The `Mcp-Session-Id` header, if any.
    pub(crate) session: Option<String>,
    /// The whole body (JSON, or an SSE stream that ended).
    pub(crate) body: Bytes,
}

/// One keep-alive connection.
pub(crate) struct Conn {
    target: Target,
    send: SendRequest<Full<Bytes>>,
}

impl Conn {
    /// Connects (with `TCP_NODELAY`) and performs the HTTP/1.1 handshake.
    pub(crate) async fn open(target: &Target) -> Result<Conn> {
        let tcp = TcpStream::connect(target.addr)
            .await
            .map_err(|e| format!("connect {}: {e}", target.addr))?;
        tcp.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        let (send, conn) = handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP handshake: {e}"))?;
        tokio::spawn(async move {
            // Ends when the connection closes; an error is seen by the next request.
            let _ = conn.await;
        });
        Ok(Conn {
            target: target.clone(),
            send,
        })
    }

    /// Sends a request and returns its response head with the body still streaming.
    pub(crate) async fn start(
        &mut self,
        method: Method,
        headers: &[(&'static str, &str)],
        body: Bytes,
    ) -> Result<Response<Incoming>> {
        let mut req = Request::builder()
            .method(method)
            .uri(self.target.path.as_str())
            .header(HOST, self.target.authority.clone())
            .header(ACCEPT, "application/json, text/event-stream");
        if !body.is_empty() {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(body)).map_err(|e| format!("request: {e}"))?;
        self.send.ready().await.map_err(|e| format!("connection: {e}"))?;
        self.send.send_request(req).await.map_err(|e| format!("send: {e}"))
    }

    /// Sends a request and reads the whole answer.
    pub(crate) async fn send(
        &mut self,
        method: Method,
        headers: &[(&'static str, &str)],
        body: Bytes,
    ) -> Result<Reply> {
        let resp = self.start(method, headers, body).await?;
        let status = resp.status();
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok(Reply { status, session, body })
    }

    /// A POST of a JSON body.
    pub(crate) async fn post(&mut self, headers: &[(&'static str, &str)], body: Bytes) -> Result<Reply> {
        self.send(Method::POST, headers, body).await
    }
}

/// One HTTP/2 connection with prior knowledge (h2c); its streams run concurrently.
pub(crate) struct H2Conn {
    target: Target,
    send: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
}

impl H2Conn {
    /// Connects (with `TCP_NODELAY`) and performs the HTTP/2 handshake (no upgrade: the
    /// connection preface first).
    pub(crate) async fn open(target: &Target) -> Result<H2Conn> {
        let tcp = TcpStream::connect(target.addr)
            .await
            .map_err(|e| format!("connect {}: {e}", target.addr))?;
        tcp.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
        let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .map_err(|e| format!("HTTP/2 handshake: {e}"))?;
        tokio::spawn(async move {
            // Ends when the connection closes; an error is seen by the next request.
            let _ = conn.await;
        });
        Ok(H2Conn {
            target: target.clone(),
            send,
        })
    }

    /// Sends a POST on a new stream and returns its response head with the body still
    /// streaming.
    pub(crate) async fn start(&self, headers: &[(&'static str, &str)], body: Bytes) -> Result<Response<Incoming>> {
        let uri = format!("http://{}{}", self.target.addr, self.target.path);
        let mut req = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(Full::new(body)).map_err(|e| format!("request: {e}"))?;
        let mut send = self.send.clone();
        send.ready().await.map_err(|e| format!("connection: {e}"))?;
        send.send_request(req).await.map_err(|e| format!("send: {e}"))
    }
}

/// Reads an SSE body until its first complete event with data and returns that data, leaving
/// the stream open (the caller keeps the body to hold the stream).
pub(crate) async fn first_event(body: &mut Incoming) -> Result<String> {
    let mut buf = String::new();
    loop {
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            if let Some(data) = sse_data(&event) {
                return Ok(data);
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.push_str(&String::from_utf8_lossy(&data).replace('\r', ""));
                }
            }
            Some(Err(e)) => return Err(format!("stream: {e}")),
            None => return Err("the stream ended before its first event".to_owned()),
        }
    }
}

/// The `data` of one SSE event, if it has any.
pub(crate) fn sse_data(event: &str) -> Option<String> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    let data = data.join("\n");
    (!data.trim().is_empty()).then_some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets() {
        assert!(Target::parse("http://127.0.0.1:8080/mcp").is_ok());
        assert!(Target::parse("http://[::1]:8080/mcp").is_ok());
        assert!(Target::parse("http://10.0.0.1:8080/mcp").is_err());
        assert!(Target::parse("https://127.0.0.1:8080/mcp").is_err());
    }
}
