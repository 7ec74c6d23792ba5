//! The message path of the 2024-11-05 pair: each POST names its pair (`sessionId`), is
//! answered `202` once its message is handed to the engine (this instance's, or the one holding
//! the pair's stream, as mail to the pair's mailbox: see [`super::relay`]), and the answer
//! travels on the pair's stream.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::response::Response;
use http::Method;
use mcp_protocol::auth::AuthInfo;
use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::{Inbound, decode};
use mcp_protocol::{Message, RpcError};
use mcp_runtime::engine::BatchStep;
use mcp_runtime::engine::Remote;
use mcp_runtime::mailbox::MailOutcome;
use mcp_runtime::store::MailboxRecord;
use mcp_runtime::{Answer, Peer, SessionHandle, Sessions, Sink, Step};
use serde_json::Value;

use super::relay::PairAnswer;
use crate::admit::{admit, with_cors};
use crate::body::{limits, read_body};
use crate::guard;
use crate::response::{
    answer, challenge, empty, json, not_allowed, overloaded, refused, session_not_found, store_unavailable,
    unsupported_media_type,
};
use crate::state::{Pair, Permit, Shared};
use crate::status;

/// Every verb on the message path: Origin and Host first, then POST delivers a message.
pub(crate) async fn entry(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let cors = match admit(&shared, &req) {
        Ok(c) => c,
        Err(r) => return *r,
    };
    let resp = match *req.method() {
        Method::POST => post(&shared, req).await,
        Method::OPTIONS => empty(status::PREFLIGHT),
        _ => not_allowed("POST, OPTIONS"),
    };
    with_cors(&shared, resp, cors)
}

/// The `sessionId` query parameter.
fn session_param(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .find_map(|kv| kv.strip_prefix("sessionId="))
        .filter(|v| !v.is_empty())
}

/// Where the pair a POST names is held.
enum Holder {
    /// Here: the message goes to the engine.
    Here(Arc<Pair>),
    /// On another instance (known from the shared store): the message is forwarded there.
    Elsewhere(MailboxRecord),
}

/// Finds the pair `id` of `principal`: held here, or (with a shared store) on another instance.
/// An unknown pair and another principal's are the same `404`.
async fn locate(shared: &Shared, id: &str, principal: &str) -> Result<Holder, Response> {
    if let Some(pair) = shared.pairs.get(id, principal) {
        return Ok(Holder::Here(pair));
    }
    match shared.engine.find_mailbox(id, principal).await {
        Ok(Some(record)) => Ok(Holder::Elsewhere(record)),
        Ok(None) => Err(session_not_found()),
        Err(e) => {
            tracing::warn!(error = %e, "HTTP+SSE pair not looked up: shared store unavailable");
            Err(store_unavailable())
        }
    }
}

/// Hands a POSTed message of a pair to the engine, or to the instance holding the pair; its
/// answer goes to the pair's stream.
async fn post(shared: &Arc<Shared>, req: Request) -> Response {
    if !guard::is_json_body(req.headers()) {
        return unsupported_media_type();
    }
    let (mut parts, body) = req.into_parts();
    let auth = match crate::client::authenticate(&shared.config, &mut parts).await {
        Ok(a) => a.into_shared(),
        Err(c) => return challenge(&c),
    };
    let Some(id) = session_param(parts.uri.query()) else {
        return refused(
            Stage::Session,
            None,
            &RpcError::invalid_request("sessionId query parameter required"),
        );
    };
    let holder = match locate(shared, id, &auth.principal).await {
        Ok(h) => h,
        Err(r) => return r,
    };
    let permit = match shared.permit(crate::client::address(&parts.extensions)) {
        Ok(p) => p,
        Err(b) => return b.response(),
    };
    let bytes = match read_body(&shared.config, body, &parts).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let inbound = match decode(&bytes, &limits(&shared.config)) {
        Ok(i) => i,
        Err(e) if !e.wants_reply() => return empty(status::NOTHING_TO_ANSWER),
        Err(e) => return refused(Stage::Envelope, e.id(), &e.to_rpc_error()),
    };
    let pair = match holder {
        Holder::Here(pair) => pair,
        Holder::Elsewhere(record) => {
            let client = crate::client::remote(&shared.config, &parts.extensions);
            return forward(shared, &record, &auth, client, &bytes).await;
        }
    };
    // `MCP-Protocol-Version` is not part of this transport: no revision is declared beside the
    // body, and the pair serves the legacy revisions only.
    let mut peer = Peer::new(auth, Sessions::Slot(&pair.slot)).with_network(crate::bridge::network(parts.version));
    peer.remote = crate::client::remote(&shared.config, &parts.extensions);
    peer.legacy_only = true;
    let peer = peer.with_attachments(crate::bridge::attachments(parts.extensions));
    match handle(shared, &pair, &peer, inbound, permit).await {
        Some(a) => answer(&shared.config, a),
        None => empty(status::NOTHING_TO_ANSWER),
    }
}

/// Forwards a message to the instance holding its pair, and answers as it says: `202` once
/// the holder handed it to its engine, as a local POST.
async fn forward(
    shared: &Shared,
    record: &MailboxRecord,
    auth: &AuthInfo,
    client: Option<Remote>,
    bytes: &[u8],
) -> Response {
    // It decoded: it is UTF-8. The mail is the body as POSTed, a JSON string.
    let Ok(body) = std::str::from_utf8(bytes) else {
        return refused(Stage::Envelope, None, &RpcError::parse_error("body is not UTF-8"));
    };
    let mail = Value::String(body.to_owned());
    match shared.engine.forward_mail(record, auth, client, mail).await {
        Ok(MailOutcome::Handled(answer)) => match PairAnswer::read(answer) {
            Some(PairAnswer::Accepted) => empty(status::NOTHING_TO_ANSWER),
            Some(PairAnswer::Answered { status: s, body }) => json(status::answer(s), body.into_bytes()),
            None => {
                tracing::warn!(pair = %record.id, "HTTP+SSE message forwarded, but the holder's answer is unreadable");
                store_unavailable()
            }
        },
        Ok(MailOutcome::Busy) => overloaded(),
        Ok(_) => session_not_found(),
        Err(e) => {
            tracing::warn!(pair = %record.id, error = %e, "HTTP+SSE message not forwarded");
            store_unavailable()
        }
    }
}

/// Hands a pair's message to the engine (a local POST's, or one another instance forwarded):
/// replies and call frames go to the pair's stream; `Some` when it is answered on the POST
/// itself (a refused batch).
pub(crate) async fn handle(
    shared: &Arc<Shared>,
    pair: &Arc<Pair>,
    peer: &Peer<'_>,
    inbound: Inbound,
    permit: Permit,
) -> Option<Answer> {
    let engine = &shared.engine;
    match inbound {
        Inbound::Single(Message::Response(r)) => engine.deliver(peer, r).await,
        Inbound::Single(Message::Notification(n)) => {
            engine.notification(peer, &n).await;
        }
        Inbound::Single(Message::Request(r)) => match engine.request(peer, r).await {
            // Written before the 202, so that a session `initialize` minted exists when the
            // client sends its next message.
            Step::Answer(a) => {
                if let Some(session) = &a.session {
                    joined(shared, pair, session);
                }
                pair.push(a.frame).await;
            }
            Step::Call(call) => {
                let out = pair.clone();
                shared.tracker.spawn(async move {
                    let _permit = permit;
                    let done = call.run(Sink::new(out.out.clone())).await;
                    if let Some(frame) = done.frame() {
                        out.push(frame).await;
                    }
                });
            }
            Step::Listen(_) => tracing::debug!("no subscription streams on the HTTP+SSE pair"),
        },
        Inbound::Batch(items) => match engine.batch(peer, items).await {
            BatchStep::Answer(a) => return Some(a),
            BatchStep::Run(batch) => {
                let out = pair.clone();
                shared.tracker.spawn(async move {
                    let _permit = permit;
                    let done = batch.run(Sink::new(out.out.clone())).await;
                    if let Some(frame) = done.frame {
                        out.push(frame).await;
                    }
                });
            }
        },
    }
    None
}

/// The pair's session exists: its events reach the stream from now on.
fn joined(shared: &Shared, pair: &Pair, session: &SessionHandle) {
    pair.joined.send_replace(Some(shared.hub.channel(session)));
    if pair.ended().is_cancelled() {
        // The stream ended meanwhile: the session must not outlive it.
        session.close();
        shared.hub.remove(session.id());
    }
    tracing::debug!(revision = %session.revision(), "HTTP+SSE session initialized");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_parameter() {
        assert_eq!(session_param(Some("sessionId=mcp_1")), Some("mcp_1"));
        assert_eq!(session_param(Some("a=b&sessionId=x")), Some("x"));
        assert_eq!(session_param(Some("sessionId=")), None);
        assert_eq!(session_param(Some("session=x")), None);
        assert_eq!(session_param(None), None);
    }
}
