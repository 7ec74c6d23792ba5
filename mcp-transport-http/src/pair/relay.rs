//! The messages of a pair held here that reached other instances. The pair is a mailbox of the
//! engine's addressed delivery ([`mcp_runtime::mailbox`]; its id is the pair's): a POST reaching
//! another instance is forwarded as mail whose payload is the POSTed body (a JSON
//! string), the engine brings it to the pair's inbox in the order the bus carried
//! it, and each is handed to the engine exactly as a POST reaching this instance would be
//! ([`message::handle`]), one after the other. What the holder made of it travels back as a
//! [`PairAnswer`] inside [`MailOutcome::Handled`], and the forwarding instance answers its client
//! as it says ([`PairAnswer::read`]); the engine's own [`MailOutcome::Gone`] and
//! [`MailOutcome::Busy`] are `404` and `503` there.

use std::sync::Arc;

use mcp_protocol::error::Stage;
use mcp_protocol::jsonrpc::{decode, encode_error};
use mcp_protocol::{RequestId, RpcError};
use mcp_runtime::mailbox::{Mail, MailOutcome, MailReceipt};
use mcp_runtime::observe::Network;
use mcp_runtime::{Peer, Sessions};
use serde_json::Value;
use tokio::sync::mpsc;

use super::message;
use crate::body::limits;
use crate::state::{Pair, Shared};
use crate::status;

/// What the instance holding a pair made of a POST another instance forwarded to it, when it
/// handled it (it travels in [`MailOutcome::Handled`] as `{"k":"accepted"}` or
/// `{"k":"answered","status":…,"body":…}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
pub(crate) enum PairAnswer {
    /// Handed to the holder's engine; the answer travels on the pair's stream (`202`).
    Accepted,
    /// Answered on the POST itself (a refused batch, a body the holder refused): the HTTP
    /// status and the JSON body.
    Answered {
        /// The HTTP status.
        status: u16,
        /// The JSON body.
        body: String,
    },
}

impl PairAnswer {
    /// Reads what a holder sent (`None` for anything else).
    pub(crate) fn read(value: Value) -> Option<PairAnswer> {
        serde_json::from_value(value).ok()
    }

    /// Sends it to the forwarding instance.
    fn send(self, receipt: MailReceipt) {
        // A unit variant and a struct of a number and a string: serializing cannot fail.
        let value = serde_json::to_value(&self).unwrap_or_default();
        receipt.answer(MailOutcome::Handled(value));
    }
}

/// A message refused before it reached the engine, answered on the POST.
fn refused(id: Option<&RequestId>, error: &RpcError) -> PairAnswer {
    let frame = encode_error(id, error);
    PairAnswer::Answered {
        status: status::at(Stage::Envelope, error.code).as_u16(),
        body: String::from_utf8_lossy(&frame).into_owned(),
    }
}

/// Hands the pair's forwarded messages to the engine until its stream ends (those still queued
/// then are answered `Gone`: the pair ended before they were handled).
pub(crate) async fn inbox(shared: Arc<Shared>, pair: Arc<Pair>, mut rx: mpsc::Receiver<Mail>) {
    loop {
        let m = tokio::select! {
            () = pair.ended().cancelled() => return,
            m = rx.recv() => match m {
                Some(m) => m,
                None => return,
            },
        };
        let Mail {
            auth,
            client,
            payload,
            receipt,
            ..
        } = m;
        if *auth.principal != *pair.principal {
            receipt.answer(MailOutcome::Gone);
            continue;
        }
        let Ok(permit) = shared.permit(client.map(|r| r.address)) else {
            receipt.answer(MailOutcome::Busy);
            continue;
        };
        let Value::String(body) = payload else {
            // Not what a POST forwards: refused as a body that does not parse.
            refused(None, &RpcError::parse_error("forwarded message is not a body")).send(receipt);
            continue;
        };
        let inbound = match decode(body.as_bytes(), &limits(&shared.config)) {
            Ok(i) => i,
            // The forwarding instance decoded it; a stricter limit here refuses it alike.
            Err(e) => {
                refused(e.id(), &e.to_rpc_error()).send(receipt);
                continue;
            }
        };
        // Forwarded by another instance: HTTP, of a version the mail does not carry.
        let mut peer = Peer::new(Arc::new(auth), Sessions::Slot(&pair.slot)).with_network(Network::HTTP);
        peer.remote = client;
        peer.legacy_only = true;
        let answer = match message::handle(&shared, &pair, &peer, inbound, permit).await {
            None => PairAnswer::Accepted,
            Some(a) => PairAnswer::Answered {
                status: a.status,
                body: String::from_utf8_lossy(&a.frame).into_owned(),
            },
        };
        answer.send(receipt);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_answer_reads_back_as_written() {
        for answer in [
            PairAnswer::Accepted,
            PairAnswer::Answered {
                status: 400,
                body: r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#.into(),
            },
        ] {
            let sent = serde_json::to_value(&answer).unwrap();
            assert_eq!(PairAnswer::read(sent), Some(answer));
        }
    }

    #[test]
    fn what_no_holder_writes_is_not_an_answer() {
        for value in [
            Value::Null,
            json!("accepted"),
            json!({ "k": "later" }),
            json!({ "k": "answered", "status": 70000, "body": "" }),
            json!({ "k": "answered", "status": 400 }),
        ] {
            assert_eq!(PairAnswer::read(value.clone()), None, "{value}");
        }
    }
}
