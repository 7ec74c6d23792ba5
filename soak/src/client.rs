//! One HTTP/1.1 connection (hyper's client connection, no pool) to a loopback target, and the
//! requests the soak sends on it.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{SendRequest, handshake};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Why a request got no answer (a one-line reason).
pub(crate) type Result<T> = std::result::Result<T, String>;

/// The `Accept` of every well-formed POST.
pub(crate) const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Where requests go: a loopback `http://IP:PORT/PATH` URL.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    addr: SocketAddr,
    authority: HeaderValue,
    path: String,
}

impl Target {
    /// Parses `http://127.0.0.1:PORT/PATH`; anything but a loopback address is refused (the
    /// soak never sends load elsewhere).
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
            return Err(format!("{url}: the soak only targets loopback addresses"));
        }
        let authority = HeaderValue::from_str(authority).map_err(|e| format!("{url}: {e}"))?;
        Ok(Target { addr, authority, path })
    }
}

/// One request: the verb, its headers and its body.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    /// The verb.
    pub(crate) method: Method,
    /// `Content-Type` (sent when the body is not empty); `None` leaves it out.
    pub(crate) content_type: Option<&'static str>,
    /// `Accept`; `None` leaves it out.
    pub(crate) accept: Option<&'static str>,
    /// Other headers.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The body.
    pub(crate) body: Bytes,
}

impl Req {
    /// A well-formed JSON POST.
    pub(crate) fn post(body: impl Into<Bytes>) -> Req {
        Req {
            method: Method::POST,
            content_type: Some("application/json"),
            accept: Some(ACCEPT_BOTH),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// Adds a header.
    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Req {
        self.headers.push((name, value.into()));
        self
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
    /// Connects (with `TCP_NODELAY`) and performs the HTTP/1.1 handshake within `timeout`.
    pub(crate) async fn open(target: &Target, timeout: Duration) -> Result<Conn> {
        let connect = async {
            let tcp = TcpStream::connect(target.addr)
                .await
                .map_err(|e| format!("connect {}: {e}", target.addr))?;
            tcp.set_nodelay(true).map_err(|e| format!("TCP_NODELAY: {e}"))?;
            handshake(TokioIo::new(tcp))
                .await
                .map_err(|e| format!("HTTP handshake: {e}"))
        };
        let (send, conn) = tokio::time::timeout(timeout, connect)
            .await
            .map_err(|_| format!("connect: no connection within {} ms", timeout.as_millis()))??;
        tokio::spawn(async move {
            // Ends when the connection closes or the `Conn` is dropped; an error is seen by the
            // request in flight.
            let _ = conn.await;
        });
        Ok(Conn {
            target: target.clone(),
            send,
        })
    }

    /// Whether the connection may take another request.
    pub(crate) fn is_open(&self) -> bool {
        !self.send.is_closed()
    }

    /// Sends a request and returns its response head, the body still streaming.
    pub(crate) async fn start(&mut self, req: &Req) -> Result<Response<Incoming>> {
        let mut builder = Request::builder()
            .method(req.method.clone())
            .uri(self.target.path.as_str())
            .header(HOST, self.target.authority.clone());
        if let Some(accept) = req.accept {
            builder = builder.header(ACCEPT, accept);
        }
        if let (Some(ct), false) = (req.content_type, req.body.is_empty()) {
            builder = builder.header(CONTENT_TYPE, ct);
        }
        for (name, value) in &req.headers {
            builder = builder.header(*name, value.as_str());
        }
        let request = builder
            .body(Full::new(req.body.clone()))
            .map_err(|e| format!("request: {e}"))?;
        self.send.ready().await.map_err(|e| format!("connection: {e}"))?;
        self.send.send_request(request).await.map_err(|e| format!("send: {e}"))
    }

    /// Sends a request and reads the whole answer within `timeout`.
    pub(crate) async fn send(&mut self, req: &Req, timeout: Duration) -> Result<Reply> {
        let exchange = async {
            let resp = self.start(req).await?;
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
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
    }
}

/// Reads an SSE body until its next complete event with data, returning that data; `buf`
/// carries what was read past the event. `None` when the stream ended.
pub(crate) async fn next_event(body: &mut Incoming, buf: &mut String) -> Result<Option<String>> {
    loop {
        while let Some(end) = buf.find("\n\n") {
            let event: String = buf.drain(..end + 2).collect();
            if let Some(data) = sse_data(&event) {
                return Ok(Some(data));
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    buf.push_str(&String::from_utf8_lossy(&data).replace('\r', ""));
                }
            }
            Some(Err(e)) => return Err(format!("stream: {e}")),
            None => return Ok(None),
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

    #[test]
    fn sse_data_joins_lines() {
        assert_eq!(sse_data("id: 1\ndata: a\ndata: b\n\n").as_deref(), Some("a\nb"));
        assert_eq!(sse_data(": keep-alive\n\n"), None);
    }
}
