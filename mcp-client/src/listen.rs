//! `subscriptions/listen` (spec 2026-07-28, basic/patterns/subscriptions): one long-lived
//! request whose stream carries the notifications the client asked for, each naming the
//! request's id as its subscription id, until the client ends it.

use mcp_protocol::RequestId;
use mcp_protocol::client::ServerNotification;
use mcp_protocol::meta::SUBSCRIPTION_ID;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::client::{Client, RequestOptions};
use crate::error::ClientError;

/// An open subscription. Dropping it ends the subscription (its stream is closed, or
/// `notifications/cancelled` sent on stdio).
#[derive(Debug)]
pub struct Subscription {
    id: RequestId,
    acknowledged: Value,
    notes: broadcast::Receiver<ServerNotification>,
    request: JoinHandle<Result<Value, ClientError>>,
}

impl Subscription {
    /// The subscription's id (the listen request's id).
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The filter the server honours (the `notifications` of its acknowledgement).
    pub fn acknowledged(&self) -> &Value {
        &self.acknowledged
    }

    /// The next notification of this subscription; `None` once the server ended it.
    pub async fn next(&mut self) -> Option<ServerNotification> {
        loop {
            match self.notes.recv().await {
                Ok(n) if names(&n, &self.id) => return Some(n),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
            if self.request.is_finished() {
                return None;
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.request.abort();
    }
}

/// Whether a notification belongs to subscription `id`.
fn names(n: &ServerNotification, id: &RequestId) -> bool {
    n.params.get("_meta").and_then(|m| m.get(SUBSCRIPTION_ID)) == Some(&id.to_value())
}

impl Client {
    /// Opens a `subscriptions/listen` stream for `filter` (`{"toolsListChanged": true,
    /// "resourceSubscriptions": ["…"]}`, …) and waits for the server's acknowledgement (within
    /// the request timeout). Modern era only: a legacy client has its session's notifications
    /// ([`Client::notifications`]) and [`Client::subscribe_resource`].
    pub async fn listen(&self, filter: Value) -> Result<Subscription, ClientError> {
        if self.era() != mcp_protocol::Era::Modern {
            return Err(ClientError::Unexpected(
                "subscriptions/listen is a modern method: a legacy session gets its notifications on its own stream"
                    .into(),
            ));
        }
        let id = self.conn.next_id();
        let mut notes = self.conn.subscribe();
        let mut params = Map::new();
        params.insert("notifications".into(), filter);
        let client = self.clone();
        let (rid, revision) = (id.clone(), self.revision());
        let mut request = tokio::spawn(async move {
            client
                .round_as(
                    rid,
                    revision,
                    "subscriptions/listen",
                    params,
                    &RequestOptions::default(),
                )
                .await
        });
        let acknowledged = tokio::time::timeout(self.options.timeout, async {
            loop {
                tokio::select! {
                    n = notes.recv() => match n {
                        Ok(n) if n.method == "notifications/subscriptions/acknowledged" && names(&n, &id) => {
                            return Ok(n.params.get("notifications").cloned().unwrap_or_else(|| json!({})));
                        }
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return Err(ClientError::Closed("the client closed".into())),
                    },
                    done = &mut request => return Err(match done {
                        Ok(Err(e)) => e,
                        _ => ClientError::Unexpected("the subscription ended before its acknowledgement".into()),
                    }),
                }
            }
        })
        .await;
        match acknowledged {
            Ok(Ok(acknowledged)) => Ok(Subscription {
                id,
                acknowledged,
                notes,
                request,
            }),
            Ok(Err(e)) => {
                request.abort();
                Err(e)
            }
            Err(_) => {
                request.abort();
                Err(ClientError::Timeout(self.options.timeout))
            }
        }
    }
}
