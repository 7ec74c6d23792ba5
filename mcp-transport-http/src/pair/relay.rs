//! The messages of a pair held here that reached other instances: the engine's relay brings
//! them to the pair's inbox, in the order the bus carried them, and each is handed to the engine
//! exactly as a POST reaching this instance would be ([`message::handle`]), one after the other;
//! the forwarding instance answers its client as the outcome says.

use std::sync::Arc;

use mcp_protocol::jsonrpc::{decode, encode_error};
use mcp_runtime::observe::Network;
use mcp_runtime::relay::{PairMessage, PairOutcome};
use mcp_runtime::{Peer, Sessions};
use tokio::sync::mpsc;

use super::message;
use crate::body::limits;
use crate::state::{Pair, Shared};
use crate::status;

/// Hands the pair's forwarded messages to the engine until its stream ends (those still queued
/// then are answered `Gone`: the pair ended before they were handled).
pub(crate) async fn inbox(shared: Arc<Shared>, pair: Arc<Pair>, mut rx: mpsc::Receiver<PairMessage>) {
    loop {
        let m = tokio::select! {
            () = pair.ended().cancelled() => return,
            m = rx.recv() => match m {
                Some(m) => m,
                None => return,
            },
        };
        let PairMessage {
            auth,
            client,
            body,
            receipt,
            ..
        } = m;
        if *auth.principal != *pair.principal {
            receipt.answer(PairOutcome::Gone);
            continue;
        }
        let Ok(permit) = shared.permit(client.map(|r| r.address)) else {
            receipt.answer(PairOutcome::Busy);
            continue;
        };
        let inbound = match decode(body.as_bytes(), &limits(&shared.config)) {
            Ok(i) => i,
            // The forwarding instance decoded it; a stricter limit here refuses it alike.
            Err(e) => {
                let frame = encode_error(e.id(), &e.to_rpc_error());
                receipt.answer(PairOutcome::Answered {
                    status: status::at(mcp_protocol::error::Stage::Envelope, e.to_rpc_error().code).as_u16(),
                    body: String::from_utf8_lossy(&frame).into_owned(),
                });
                continue;
            }
        };
        // Relayed by another instance: HTTP, of a version the relay does not carry.
        let mut peer = Peer::new(Arc::new(auth), Sessions::Slot(&pair.slot)).with_network(Network::HTTP);
        peer.remote = client;
        peer.legacy_only = true;
        let outcome = match message::handle(&shared, &pair, &peer, inbound, permit).await {
            None => PairOutcome::Accepted,
            Some(a) => PairOutcome::Answered {
                status: a.status,
                body: String::from_utf8_lossy(&a.frame).into_owned(),
            },
        };
        receipt.answer(outcome);
    }
}
