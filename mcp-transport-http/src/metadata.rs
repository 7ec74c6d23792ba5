//! The RFC 9728 protected-resource metadata document
//! ([`HttpConfig::with_resource_metadata`](crate::HttpConfig::with_resource_metadata)): public,
//! cacheable, served before the Origin check. Its `scopes_supported` lists the scopes the
//! server's operations need (the engine's, as the catalog is when the document is asked for)
//! besides any the document names.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL};
use http::{HeaderValue, Method};

use serde_json::Value;

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
            let body = serde_json::to_vec(&with_scopes(doc, shared.engine.scopes_supported())).unwrap_or_default();
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

/// The document with `scopes` added to its `scopes_supported` (those it names first).
fn with_scopes(doc: &Value, scopes: Vec<String>) -> std::borrow::Cow<'_, Value> {
    if scopes.is_empty() {
        return std::borrow::Cow::Borrowed(doc);
    }
    let mut doc = doc.clone();
    if let Value::Object(m) = &mut doc {
        let listed = m.entry("scopes_supported").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = listed {
            for scope in scopes {
                if !list.iter().any(|s| s.as_str() == Some(&scope)) {
                    list.push(Value::String(scope));
                }
            }
        }
    }
    std::borrow::Cow::Owned(doc)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::with_scopes;

    #[test]
    fn scopes_are_added_once_after_those_named() {
        let doc = json!({"resource": "https://h/mcp", "scopes_supported": ["b", "a"]});
        let merged = with_scopes(&doc, vec!["a".into(), "c".into()]);
        assert_eq!(merged["scopes_supported"], json!(["b", "a", "c"]));
        let bare = json!({"resource": "https://h/mcp"});
        assert_eq!(with_scopes(&bare, vec!["x".into()])["scopes_supported"], json!(["x"]));
        assert_eq!(*with_scopes(&bare, Vec::new()), bare);
    }
}
