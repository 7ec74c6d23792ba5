//! The RFC 9728 protected-resource metadata document
//! ([`HttpConfig::with_resource_metadata`](crate::HttpConfig::with_resource_metadata)): public,
//! cacheable, served before the Origin check.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL};
use http::{HeaderValue, Method};

use crate::response::{empty, json, not_allowed};
use crate::state::Shared;
use crate::status;

/// The RFC 9728 well-known path of the protected-resource metadata document.
pub(crate) const PATH: &str = "/.well-known/oauth-protected-resource";

/// Every verb on the document's paths: GET and HEAD serve it.
pub(crate) async fn serve(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let Some(doc) = &shared.config.resource_metadata else {
        return empty(status::NOT_CONFIGURED);
    };
    let mut resp = match *req.method() {
        Method::GET | Method::HEAD => {
            let body = serde_json::to_vec(&**doc).unwrap_or_default();
            let mut r = json(status::DOCUMENT, body);
            r.headers_mut()
                .insert(CACHE_CONTROL, HeaderValue::from_static("public, max-age=300"));
            r
        }
        Method::OPTIONS => empty(status::PREFLIGHT),
        _ => not_allowed("GET, HEAD, OPTIONS"),
    };
    // Public metadata carries no credential: any page may read it.
    resp.headers_mut()
        .insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    resp
}
