//! The health probes ([`HttpConfig::probes`](crate::HttpConfig::probes)): liveness (`200 ok`
//! while the process serves) and readiness (see [`Readiness`]). They are routes of their own,
//! answered before everything the MCP endpoint checks (Origin and Host, authentication, the
//! in-flight cap, rate limits): a kubelet or a balancer probes with an address for `Host` and
//! no credentials. `GET` and `HEAD` (axum answers `HEAD` with the headers of `GET`); other
//! methods `405`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};

use crate::state::{Readiness, Shared};

/// Liveness: `200 ok`, whatever the endpoint's state.
pub(crate) async fn live() -> Response {
    text(StatusCode::OK, "ok")
}

/// Readiness: `200 ok`, or `503` with the reason (`draining`, `store unreachable`).
pub(crate) async fn ready(State(shared): State<Arc<Shared>>) -> Response {
    let readiness = shared.readiness().await;
    let status = if readiness == Readiness::Ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    text(status, readiness.as_str())
}

/// A plain-text answer that no cache keeps.
fn text(status: StatusCode, body: &'static str) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
