//! Every HTTP status this crate answers with, chosen in one place.
//!
//! A status that follows from a JSON-RPC error is `mcp-protocol`'s
//! ([`mcp_protocol::error::status_at`], the one mapping): the engine hands it back with its
//! answers and completed calls ([`answer`], [`completed`]), and the few errors this crate raises
//! itself take it from the same mapping ([`at`]). What the protocol does not map is the
//! transport's own: what HTTP, CORS and the MCP transport specifications say about verbs, bodies
//! and streams. Each of those is named once below, with the reason for its number. An SSE
//! stream is HTTP's default `200 OK`, set by nothing here.

use http::StatusCode;
use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::{Era, RpcError};

/// The status of an error this crate raises at `stage` of the pipeline (the envelope, a
/// session, a server-wide bound), from the protocol's mapping. These stages answer alike in
/// both eras; the legacy era is the one whose sessions and envelopes are checked here.
pub(crate) fn at(stage: Stage, code: i32) -> StatusCode {
    numbered(status_at(stage, Era::Legacy, code), StatusCode::BAD_REQUEST)
}

/// The status of a server-wide bound reached (the in-flight cap, an `AuthProvider` over its own
/// bound), from the protocol's mapping: 503, so that the client retries later.
pub(crate) fn overload() -> StatusCode {
    at(Stage::Overload, RpcError::overloaded().code)
}

/// The status of an answer the engine gave at once (`Answer::status`, a refusal or an immediate
/// reply).
pub(crate) fn answer(status: u16) -> StatusCode {
    numbered(status, StatusCode::BAD_REQUEST)
}

/// The status of a call's reply (`Completed::status`).
pub(crate) fn completed(status: u16) -> StatusCode {
    numbered(status, StatusCode::OK)
}

/// The status of a refused authentication, as the `AuthProvider`'s challenge gives it.
pub(crate) fn challenge(status: u16) -> StatusCode {
    numbered(status, StatusCode::UNAUTHORIZED)
}

/// A status handed over as a number, or `otherwise` when it is no valid status code.
fn numbered(status: u16, otherwise: StatusCode) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(otherwise)
}

/// `202 Accepted`, empty: input that expects no answer on this response (a notification, a
/// client's response, a batch of them, an undecodable message that wanted no reply). The
/// Streamable HTTP transport says so for notifications and responses, in every mode
/// (behaviour invariant 5); on the 2024-11-05 pair every message is acknowledged so, its answer
/// travelling on the pair's stream (invariant 22).
pub(crate) const NOTHING_TO_ANSWER: StatusCode = StatusCode::ACCEPTED;

/// `200 OK`: the JSON array answering a batch. Its answers travel together, each with its own
/// result or error (JSON-RPC 2.0 §6), so the response as a whole is a success.
pub(crate) const BATCH_ANSWERED: StatusCode = StatusCode::OK;

/// `200 OK`: a public document (the RFC 9728 protected-resource metadata, RFC 9728 §3.2; a
/// Server Card or an MCP Catalog, SEP-2127).
pub(crate) const DOCUMENT: StatusCode = StatusCode::OK;

/// `304 Not Modified`: a discovery document whose `ETag` the client already holds
/// (`If-None-Match`, RFC 9110 §13.1.2, §15.4.5).
pub(crate) const NOT_MODIFIED: StatusCode = StatusCode::NOT_MODIFIED;

/// `204 No Content`: the answer to `OPTIONS`, a CORS preflight (the Fetch standard asks for an
/// "ok status", 200–299; the CORS headers are added beside it).
pub(crate) const PREFLIGHT: StatusCode = StatusCode::NO_CONTENT;

/// `204 No Content`: DELETE ended the session (RFC 9110 §9.3.5: a successful DELETE with
/// nothing to say).
pub(crate) const SESSION_ENDED: StatusCode = StatusCode::NO_CONTENT;

/// `204 No Content`: a GET with `Last-Event-ID` names a POST stream with nothing left to send;
/// SEP-1699 has a client stop reconnecting on it.
pub(crate) const NOTHING_TO_RESUME: StatusCode = StatusCode::NO_CONTENT;

/// `400 Bad Request`: two `Host` headers, or an HTTP/2 `Host` that disagrees with `:authority`
/// (RFC 9112 §3.2, RFC 9113 §8.3.1).
pub(crate) const MALFORMED_HOST: StatusCode = StatusCode::BAD_REQUEST;

/// `403 Forbidden`: an `Origin` or `Host` not allowed (the Streamable HTTP transport's
/// DNS-rebinding rule; behaviour invariant 3).
pub(crate) const ORIGIN_REFUSED: StatusCode = StatusCode::FORBIDDEN;

/// `404 Not Found`: a route whose configuration is absent (the RFC 9728 document, the
/// 2024-11-05 pair); the router only mounts them when configured.
pub(crate) const NOT_CONFIGURED: StatusCode = StatusCode::NOT_FOUND;

/// `405 Method Not Allowed`, with `Allow`: a verb the route does not serve. The Streamable HTTP
/// transport answers so a GET or DELETE where there are no sessions (the simple mode, sessions
/// disabled, a modern client; behaviour invariant 6); RFC 9110 §15.5.6 asks for `Allow`.
pub(crate) const VERB_NOT_SERVED: StatusCode = StatusCode::METHOD_NOT_ALLOWED;

/// `406 Not Acceptable`: `Accept` lacks what the answer may be (`application/json` and
/// `text/event-stream` for a POST, `text/event-stream` for a GET stream; RFC 9110 §15.5.7).
pub(crate) const NOT_ACCEPTABLE: StatusCode = StatusCode::NOT_ACCEPTABLE;

/// `408 Request Timeout`: a body not received within `body_timeout`. RFC 9110 §15.5.9 defines
/// it for a request the server stopped waiting for: the request was not wrong, and clients and
/// proxies know it may be retried on a new connection.
pub(crate) const BODY_TIMED_OUT: StatusCode = StatusCode::REQUEST_TIMEOUT;

/// `413 Content Too Large`: a body over `max_body_bytes` (RFC 9110 §15.5.14).
pub(crate) const BODY_TOO_LARGE: StatusCode = StatusCode::PAYLOAD_TOO_LARGE;

/// `415 Unsupported Media Type`: a POST whose body is not declared `application/json`
/// (RFC 9110 §15.5.16).
pub(crate) const NOT_JSON: StatusCode = StatusCode::UNSUPPORTED_MEDIA_TYPE;

/// `429 Too Many Requests`, with `Retry-After`: a client address holds its share of the
/// stream budget (`HttpConfig::max_streams_per_address`). RFC 6585 §4: the user sent too many
/// requests; the listen bound per peer answers alike.
pub(crate) const TOO_MANY_STREAMS: StatusCode = StatusCode::TOO_MANY_REQUESTS;

/// `429 Too Many Requests`, with `Retry-After`: a client address holds its share of the
/// in-flight cap (`HttpConfig::max_in_flight_per_address`; RFC 6585 §4).
pub(crate) const TOO_MANY_IN_FLIGHT: StatusCode = StatusCode::TOO_MANY_REQUESTS;

/// `500 Internal Server Error`: the task running a request failed (it panicked); RFC 9110
/// §15.6.1. The body is a generic -32603: no detail reaches the wire.
pub(crate) const TASK_FAILED: StatusCode = StatusCode::INTERNAL_SERVER_ERROR;

/// `503 Service Unavailable`, empty: the 2024-11-05 pair's stream could not take its first
/// event; RFC 9110 §15.6.4 (the server may serve it later).
pub(crate) const STREAM_NOT_OPENED: StatusCode = StatusCode::SERVICE_UNAVAILABLE;

#[cfg(test)]
mod tests {
    use mcp_protocol::error::codes;

    use super::*;

    /// Each status is in the class its doc gives it: the answers that carry no failure succeed,
    /// the refusals of what the client sent are client errors, the server's own failures are
    /// server errors.
    #[test]
    fn each_status_is_in_the_class_its_doc_gives() {
        let succeeded = [
            ("NOTHING_TO_ANSWER", NOTHING_TO_ANSWER),
            ("BATCH_ANSWERED", BATCH_ANSWERED),
            ("DOCUMENT", DOCUMENT),
            ("PREFLIGHT", PREFLIGHT),
            ("SESSION_ENDED", SESSION_ENDED),
            ("NOTHING_TO_RESUME", NOTHING_TO_RESUME),
        ];
        for (name, s) in succeeded {
            assert!(s.is_success(), "{name}: {s}");
        }
        let the_clients = [
            ("MALFORMED_HOST", MALFORMED_HOST),
            ("ORIGIN_REFUSED", ORIGIN_REFUSED),
            ("NOT_CONFIGURED", NOT_CONFIGURED),
            ("VERB_NOT_SERVED", VERB_NOT_SERVED),
            ("NOT_ACCEPTABLE", NOT_ACCEPTABLE),
            ("BODY_TIMED_OUT", BODY_TIMED_OUT),
            ("BODY_TOO_LARGE", BODY_TOO_LARGE),
            ("NOT_JSON", NOT_JSON),
            ("TOO_MANY_STREAMS", TOO_MANY_STREAMS),
            ("TOO_MANY_IN_FLIGHT", TOO_MANY_IN_FLIGHT),
        ];
        for (name, s) in the_clients {
            assert!(s.is_client_error(), "{name}: {s}");
        }
        assert!(NOT_MODIFIED.is_redirection(), "NOT_MODIFIED: {NOT_MODIFIED}");
        for (name, s) in [("TASK_FAILED", TASK_FAILED), ("STREAM_NOT_OPENED", STREAM_NOT_OPENED)] {
            assert!(s.is_server_error(), "{name}: {s}");
        }
        // Answered with an empty body: no status whose body is the answer (200) among them.
        for (name, s) in [
            ("NOTHING_TO_ANSWER", NOTHING_TO_ANSWER),
            ("PREFLIGHT", PREFLIGHT),
            ("SESSION_ENDED", SESSION_ENDED),
            ("NOTHING_TO_RESUME", NOTHING_TO_RESUME),
        ] {
            assert_ne!(s, StatusCode::OK, "{name}");
        }
    }

    /// "Try again later" is said with 503 when the server as a whole is full and with 429 when
    /// one client address holds its share (RFC 6585 §4), each with `Retry-After`: the refusals
    /// of the in-flight cap and of the stream budget answer so, as their docs say.
    #[test]
    fn refusals_to_retry_later_are_503_or_429_with_retry_after() {
        use crate::state::{NoSlot, StreamRefusal};
        let retry_after = |r: &axum::response::Response| r.headers().get(http::header::RETRY_AFTER).cloned();
        assert_eq!(overload(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(STREAM_NOT_OPENED, StatusCode::SERVICE_UNAVAILABLE);

        let full = NoSlot::Full.response();
        assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
        let mine = NoSlot::AddressFull.response();
        assert_eq!(mine.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(retry_after(&mine).is_some(), "429 without Retry-After");

        for (refusal, want) in [
            (StreamRefusal::Full, StatusCode::SERVICE_UNAVAILABLE),
            (StreamRefusal::AddressFull, StatusCode::TOO_MANY_REQUESTS),
        ] {
            let r = refusal.response(None);
            assert_eq!(r.status(), want, "{refusal:?}");
            assert!(retry_after(&r).is_some(), "{refusal:?} without Retry-After");
        }
    }

    #[test]
    fn the_protocol_statuses() {
        assert_eq!(at(Stage::Envelope, codes::PARSE_ERROR).as_u16(), 400);
        assert_eq!(at(Stage::Session, RpcError::session_not_found().code).as_u16(), 404);
        assert_eq!(at(Stage::Session, RpcError::session_required().code).as_u16(), 400);
        assert_eq!(at(Stage::Overload, RpcError::store_unavailable().code).as_u16(), 503);
        assert_eq!(overload().as_u16(), 503);
        assert_eq!(answer(0), StatusCode::BAD_REQUEST);
        assert_eq!(completed(0), StatusCode::OK);
        assert_eq!(challenge(0), StatusCode::UNAUTHORIZED);
        assert_eq!(challenge(403), StatusCode::FORBIDDEN);
    }
}
