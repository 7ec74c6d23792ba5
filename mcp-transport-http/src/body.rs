//! Reading a request body within the configured bounds: its size
//! ([`HttpConfig::max_body_bytes`], 413), the time it may take
//! ([`HttpConfig::body_timeout`], 408), and the limits its JSON-RPC decoding keeps.

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::StreamExt;
use http::HeaderMap;
use http::header::{CONNECTION, CONTENT_LENGTH, HeaderValue};
use mcp_protocol::RpcError;
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::DecodeLimits;

use crate::config::HttpConfig;
use crate::response::{refused, rpc_error};
use crate::status;

/// Why a body could not be read.
enum BodyError {
    TooLarge,
    Io,
}

async fn read_limited(body: Body, headers: &HeaderMap, max: usize) -> Result<Bytes, BodyError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut stream = body.into_data_stream();
    // A body that arrives in one chunk (most do) is that chunk, neither copied nor allocated;
    // one in several is gathered into a buffer.
    let mut first: Option<Bytes> = None;
    let mut buf = Vec::new();
    let mut len = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| BodyError::Io)?;
        len += chunk.len();
        if len > max {
            return Err(BodyError::TooLarge);
        }
        if first.is_none() && buf.is_empty() {
            first = Some(chunk);
            continue;
        }
        if let Some(first) = first.take() {
            buf.reserve(declared.map_or(len, |n| n as usize).max(len));
            buf.extend_from_slice(&first);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(first.unwrap_or_else(|| Bytes::from(buf)))
}

/// 413: a body over `max` bytes.
pub(crate) fn too_large(max: usize) -> Response {
    rpc_error(
        status::BODY_TOO_LARGE,
        None,
        &RpcError::invalid_request(format!("Request body exceeds {max} bytes")),
    )
}

/// Reads a request body within [`HttpConfig::max_body_bytes`] (413) and
/// [`HttpConfig::body_timeout`].
///
/// A body that does not arrive in time is answered `408 Request Timeout`, the status HTTP
/// defines for "the server did not receive a complete request message within the time it was
/// prepared to wait" (RFC 9110 §15.5.9): the request was not wrong, so a 400 would blame the
/// client for its content, and clients and proxies know 408 may be retried on a new connection.
/// The body is a JSON-RPC error (-32600, no id: the request was never read) with
/// `Connection: close` (HTTP/1.1), since the rest of that body may still arrive.
pub(crate) async fn read_body(
    config: &HttpConfig,
    body: Body,
    parts: &http::request::Parts,
) -> Result<Bytes, Response> {
    let max = config.max_body_bytes;
    let timeout = config.body_timeout;
    match tokio::time::timeout(timeout, read_limited(body, &parts.headers, max)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(BodyError::TooLarge)) => Err(too_large(max)),
        Ok(Err(BodyError::Io)) => Err(refused(
            Stage::Envelope,
            None,
            &RpcError::parse_error("Could not read the request body"),
        )),
        Err(_) => {
            tracing::debug!(?timeout, "request body timed out");
            let e = RpcError::invalid_request(format!("Request body not received within {} ms", timeout.as_millis()));
            let mut r = rpc_error(status::BODY_TIMED_OUT, None, &e);
            if parts.version < http::Version::HTTP_2 {
                r.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
            }
            Err(r)
        }
    }
}

/// The limits a body read by [`read_body`] is decoded within: its size, nesting and batch
/// length.
pub(crate) fn limits(config: &HttpConfig) -> DecodeLimits {
    DecodeLimits::new(config.max_body_bytes, config.max_depth).with_max_batch(config.max_batch)
}
