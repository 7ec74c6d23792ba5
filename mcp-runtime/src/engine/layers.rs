//! The middleware chain around what the engine answers itself (`initialize`,
//! `subscriptions/listen`) and around notifications, and how its outcome becomes an answer.

use std::sync::Arc;

use mcp_protocol::error::{Stage, status_at};
use mcp_protocol::jsonrpc::encode_error;
use mcp_protocol::meta::meta_version;
use mcp_protocol::{Era, Notification, RequestId, RpcError};

use super::peer::Peer;
use super::step::Answer;
use crate::middleware::inbound::Message;
use crate::middleware::outcome::Body;
use crate::middleware::{Inbound, Middlewares, Outcome, Terminal};
use crate::reply::Reply;
use crate::session::{Session, SessionHandle};

/// The answer to a request a layer refused or answered, or that the engine answered at once:
/// the reply's frame, the status a layer chose (else the protocol's for `stage`), its headers,
/// and the session `initialize` minted.
pub(super) fn answer(
    outcome: Outcome,
    stage: Stage,
    era: Era,
    id: &RequestId,
    session: Option<Arc<Session>>,
) -> Answer {
    let reply = match outcome.body {
        Body::Reply(r @ (Reply::Result(_) | Reply::Encoded(_) | Reply::Error(_))) => r,
        Body::Reply(Reply::Cancelled) | Body::Stream(_) | Body::Accepted => Reply::Error(RpcError::internal()),
    };
    let (code, required_scopes) = match &reply {
        Reply::Error(e) => (Some(e.code), e.required_scopes()),
        _ => (None, None),
    };
    let frame = reply.encode(id).unwrap_or_default();
    let status = outcome
        .status
        .unwrap_or_else(|| code.map_or(200, |code| status_at(stage, era, code)));
    Answer {
        frame,
        headers: outcome.headers,
        status,
        session: if code.is_none() {
            session.map(SessionHandle)
        } else {
            None
        },
        required_scopes,
    }
}

/// A request as the chain sees it.
pub(super) fn inbound(
    peer: &Peer<'_>,
    message: Message,
    era: Era,
    revision: Option<mcp_protocol::Revision>,
    session: Option<Arc<Session>>,
) -> Inbound {
    Inbound {
        message,
        auth: peer.auth.clone(),
        era,
        revision,
        session,
        remote: peer.address(),
        attachments: peer.take_attachments(),
    }
}

/// Runs a notification through the chain: `Ok` when every layer admitted it; a refusal is
/// dropped, answered only when a layer gave it an HTTP status.
pub(super) async fn admit(
    chain: &Middlewares,
    peer: &Peer<'_>,
    era: Era,
    session: Option<&Arc<Session>>,
    note: &Notification,
) -> Result<(), Option<Answer>> {
    if chain.is_empty() {
        return Ok(());
    }
    let revision = match era {
        Era::Modern => meta_version(note.params.as_ref()).and_then(|v| mcp_protocol::Revision::parse(&v)),
        Era::Legacy => session.map(|s| s.revision()).or(peer.revision.known()),
    };
    let request = inbound(
        peer,
        Message::Notification(note.clone()),
        era,
        revision,
        session.cloned(),
    );
    let terminal: Terminal = Box::new(|_| Box::pin(async { Outcome::accepted() }));
    let outcome = chain.run(request, terminal).await;
    if outcome.is_accepted() {
        return Ok(());
    }
    tracing::debug!(method = %note.method, "notification refused by a middleware layer");
    let Some(status) = outcome.status else {
        return Err(None);
    };
    let error = outcome.rpc_error().cloned().unwrap_or_else(RpcError::internal);
    Err(Some(Answer {
        frame: encode_error(None, &error),
        headers: outcome.headers,
        status,
        session: None,
        required_scopes: error.required_scopes(),
    }))
}
