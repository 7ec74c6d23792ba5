//! Origin and Host, checked first on every verb of every MCP route (behaviour invariant 3), and
//! the CORS headers added to the answer of a request whose origin passed.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use http::HeaderValue;
use mcp_protocol::RpcError;

use crate::guard;
use crate::response::rpc_error;
use crate::state::Shared;
use crate::status;

/// Origin and Host, checked first on every verb of every MCP route (403 with no CORS headers;
/// more than one `Origin` is refused the same way, whatever the order of the values).
/// The host is the target's authority when it has one (absolute form, HTTP/2 `:authority`),
/// else the `Host` header; two `Host` headers, or an HTTP/2 `Host` that disagrees with
/// `:authority`, are a malformed request (400). Returns the origin to echo in the CORS headers.
pub(crate) fn admit(shared: &Arc<Shared>, req: &Request) -> Result<Option<HeaderValue>, Box<Response>> {
    shared.start_tasks();
    let headers = req.headers();
    let Ok(origin) = guard::origin_of(headers) else {
        tracing::debug!("request refused: more than one Origin");
        return Err(Box::new(rpc_error(
            status::ORIGIN_REFUSED,
            None,
            &RpcError::invalid_request("Forbidden: more than one Origin"),
        )));
    };
    let host = match guard::host_of(headers, req.uri(), req.version()) {
        Ok(host) => host,
        Err(bad) => {
            tracing::debug!(?bad, "request refused: malformed Host");
            return Err(Box::new(rpc_error(
                status::MALFORMED_HOST,
                None,
                &RpcError::invalid_request("Bad Request: duplicate or conflicting Host"),
            )));
        }
    };
    if !shared.origins.allows(origin) || !shared.hosts.allows(host) {
        tracing::debug!(origin = ?origin.map(String::from_utf8_lossy), "request refused: origin or host not allowed");
        return Err(Box::new(rpc_error(
            status::ORIGIN_REFUSED,
            None,
            &RpcError::invalid_request("Forbidden: origin or host not allowed"),
        )));
    }
    Ok(origin.and_then(|o| HeaderValue::from_bytes(o).ok()))
}

/// Adds the CORS headers for a validated origin.
pub(crate) fn with_cors(shared: &Shared, mut resp: Response, cors: Option<HeaderValue>) -> Response {
    if let Some(o) = cors {
        shared.apply_cors(resp.headers_mut(), o);
    }
    resp
}
