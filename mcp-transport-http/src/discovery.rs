//! The discovery documents (SEP-2127): the server's card at `<endpoint>/server-card`
//! ([`HttpConfig::with_server_card`](crate::HttpConfig::with_server_card)) and a domain's AI
//! Catalog at `/.well-known/ai-catalog.json`
//! ([`HttpConfig::with_catalog`](crate::HttpConfig::with_catalog)).
//!
//! Both are public, read-only and the same for every caller, so they are answered before the
//! Origin check and authentication, to any origin (`Access-Control-Allow-Origin: *`; a browser
//! may send `If-None-Match` and read the `ETag`), with
//! `Cache-Control: public, max-age=3600` and a strong `ETag` (a digest of the body, the same on
//! every instance serving the same document): a client that holds the current version gets
//! `304 Not Modified` (`If-None-Match`). The body is encoded once, when the routes are built.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::response::Response;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH,
};
use http::{HeaderMap, HeaderValue, Method};
use mcp_protocol::discovery;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::response::{empty, not_allowed};
use crate::status;

/// A discovery document as it is served: its body, media type and entity tag.
#[derive(Debug)]
pub(crate) struct Document {
    body: Bytes,
    media_type: HeaderValue,
    etag: HeaderValue,
}

impl Document {
    /// `value`, served as `media_type`.
    pub(crate) fn new(value: &Value, media_type: &'static str) -> Arc<Document> {
        let body = Bytes::from(serde_json::to_vec(value).unwrap_or_default());
        let digest = Sha256::digest(&body);
        let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        let etag = HeaderValue::from_str(&format!("\"{hex}\"")).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
        Arc::new(Document {
            body,
            media_type: HeaderValue::from_static(media_type),
            etag,
        })
    }

    /// The Server Card, as `application/mcp-server-card+json`.
    pub(crate) fn card(value: &Value) -> Arc<Document> {
        Document::new(value, discovery::SERVER_CARD_MEDIA_TYPE)
    }

    /// The AI Catalog, as `application/ai-catalog+json`.
    pub(crate) fn catalog(value: &Value) -> Arc<Document> {
        Document::new(value, discovery::CATALOG_MEDIA_TYPE)
    }

    /// Whether `If-None-Match` names this version (`*`, or a list holding its tag, compared
    /// weakly as RFC 9110 §13.1.2 asks).
    fn held_by(&self, headers: &HeaderMap) -> bool {
        let ours = self.etag.as_bytes();
        headers.get_all(IF_NONE_MATCH).iter().any(|value| {
            value.as_bytes().split(|b| *b == b',').any(|tag| {
                let tag = tag.trim_ascii();
                tag == b"*" || tag.strip_prefix(b"W/").unwrap_or(tag) == ours
            })
        })
    }

    /// Every verb on the document's path: GET and HEAD serve it (304 when the client holds it),
    /// OPTIONS answers a preflight, anything else is 405.
    pub(crate) fn serve(&self, req: &Request) -> Response {
        let mut resp = match *req.method() {
            Method::GET | Method::HEAD if self.held_by(req.headers()) => empty(status::NOT_MODIFIED),
            Method::GET | Method::HEAD => {
                let body = match *req.method() {
                    Method::HEAD => Body::empty(),
                    _ => Body::from(self.body.clone()),
                };
                let mut r = Response::new(body);
                *r.status_mut() = status::DOCUMENT;
                r.headers_mut().insert(CONTENT_TYPE, self.media_type.clone());
                r
            }
            Method::OPTIONS => empty(status::PREFLIGHT),
            _ => return with_cors(not_allowed("GET, HEAD, OPTIONS")),
        };
        let headers = resp.headers_mut();
        headers.insert(ETAG, self.etag.clone());
        headers.insert(CACHE_CONTROL, HeaderValue::from_static(discovery::CACHE_CONTROL));
        with_cors(resp)
    }
}

/// The CORS headers discovery documents carry: any origin may read them.
fn with_cors(mut resp: Response) -> Response {
    let headers = resp.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static("GET"));
    headers.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(discovery::CORS_ALLOW_HEADERS),
    );
    headers.insert(
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(discovery::CORS_EXPOSE_HEADERS),
    );
    resp
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(method: Method, if_none_match: Option<&str>) -> Request {
        let mut b = http::Request::builder().method(method).uri("/mcp/server-card");
        if let Some(v) = if_none_match {
            b = b.header(IF_NONE_MATCH, v);
        }
        b.body(Body::empty()).unwrap()
    }

    #[test]
    fn the_tag_follows_the_body_and_a_held_tag_is_not_modified() {
        let a = Document::card(&json!({"name": "com.example/a"}));
        let b = Document::card(&json!({"name": "com.example/b"}));
        assert_ne!(a.etag, b.etag);
        assert_eq!(a.etag, Document::card(&json!({"name": "com.example/a"})).etag, "stable");
        let tag = a.etag.to_str().unwrap().to_owned();
        for held in [tag.clone(), format!("W/{tag}"), format!("\"x\", {tag}"), "*".to_owned()] {
            let r = a.serve(&request(Method::GET, Some(&held)));
            assert_eq!(r.status(), status::NOT_MODIFIED, "{held}");
            assert_eq!(r.headers()[ETAG], a.etag);
        }
        let other = a.serve(&request(Method::GET, Some("\"other\"")));
        assert_eq!(other.status(), status::DOCUMENT);
        assert_eq!(other.headers()[CONTENT_TYPE], discovery::SERVER_CARD_MEDIA_TYPE);
        assert_eq!(other.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(other.headers()[CACHE_CONTROL], discovery::CACHE_CONTROL);
    }

    #[test]
    fn only_reads_are_served() {
        let a = Document::catalog(&json!({"specVersion": "1.0", "entries": []}));
        let post = a.serve(&request(Method::POST, None));
        assert_eq!(post.status(), status::VERB_NOT_SERVED);
        assert_eq!(post.headers()[ACCESS_CONTROL_ALLOW_ORIGIN], "*");
        assert_eq!(a.serve(&request(Method::OPTIONS, None)).status(), status::PREFLIGHT);
        assert_eq!(a.serve(&request(Method::HEAD, None)).status(), status::DOCUMENT);
    }
}
