//! One HTTP exchange with the provider or the fixture, over a fresh loopback connection.

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// An answer: its status, headers and body.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Answer {
    /// A header as text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// Sends `method url` with `headers` and `body`, within 20 s.
pub(crate) async fn exchange(method: Method, url: &str, headers: &[(&str, String)], body: Vec<u8>) -> Answer {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut req = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    let req = req.body(Full::new(Bytes::from(body))).expect("a request");
    let send = async {
        let resp = client.request(req).await.expect("an answer");
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.expect("a body").to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(20), send)
        .await
        .unwrap_or_else(|_| panic!("{url} did not answer within 20 s"))
}
