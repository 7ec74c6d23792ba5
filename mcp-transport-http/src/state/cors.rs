//! The CORS headers of every answer to a validated `Origin`: the origin echoed (never a
//! wildcard) with `Vary: Origin`, the allowed methods, the allowed request headers (the fixed
//! ones and every `mcp-param-*` a registered tool declares) and the exposed ones.

use std::sync::{Arc, Mutex, PoisonError};

use http::HeaderMap;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, HeaderValue, VARY,
};
use mcp_protocol::headers::ParamHeader;
use mcp_runtime::Engine;
use mcp_runtime::registry::Catalog;

const BASE_ALLOW_HEADERS: &str = "content-type, accept, authorization, dpop, mcp-session-id, mcp-protocol-version, last-event-id, mcp-method, mcp-name";
const EXPOSE_HEADERS: &str = "mcp-session-id, mcp-protocol-version, www-authenticate, dpop-nonce, retry-after";

/// The `Access-Control-Allow-Headers` value, kept for the registry's catalog it was computed
/// from.
#[derive(Default)]
pub(crate) struct AllowHeaders(Mutex<Option<(Arc<Catalog>, HeaderValue)>>);

impl AllowHeaders {
    /// The fixed request headers plus every registered `mcp-param-*` (recomputed when the
    /// catalog changes).
    fn value(&self, engine: &Engine) -> HeaderValue {
        let catalog = engine.registry().snapshot();
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((c, v)) = cache.as_ref()
            && Arc::ptr_eq(c, &catalog)
        {
            return v.clone();
        }
        let mut names: Vec<String> = Vec::new();
        for tool in catalog.tools() {
            let headers = tool.param_headers.iter().chain(&tool.secure_param_headers);
            for name in headers.map(ParamHeader::header_name) {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        let mut value = BASE_ALLOW_HEADERS.to_owned();
        for n in names {
            value.push_str(", ");
            value.push_str(&n);
        }
        let value = HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static(BASE_ALLOW_HEADERS));
        *cache = Some((catalog, value.clone()));
        value
    }

    /// Adds the CORS headers for a validated `origin` to an answer of a route serving `methods`.
    pub(crate) fn apply(&self, engine: &Engine, headers: &mut HeaderMap, origin: HeaderValue, methods: &'static str) {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.append(VARY, HeaderValue::from_static("Origin"));
        headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(methods));
        headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, self.value(engine));
        headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
        headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    }
}
