//! What a handler asks of the client: server-to-client requests on the call's stream (legacy
//! era), with the task and URL-elicitation rules they follow.

use std::sync::Arc;

use mcp_protocol::jsonrpc::encode_request;
use mcp_protocol::meta::RELATED_TASK;
use mcp_protocol::mrtr::missing_capability;
use mcp_protocol::notifications::cancelled;
use mcp_protocol::{Era, Feature, RequestId, RpcError};
use serde_json::{Value, json};

use super::ctx::{Ctx, Origin};
use super::error::{ClientRequestError, HandlerError};
use crate::elicitation::ElicitationError;
use crate::session::Session;
use crate::sink::Sink;

/// A URL-mode elicitation's outcome: the id the runtime gave it (to pass to
/// [`Engine::complete_elicitation`](crate::Engine::complete_elicitation) later) and the client's answer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UrlElicitation {
    /// The `elicitationId` sent to the client.
    pub elicitation_id: String,
    /// The client's `ElicitResult` (`action`: `accept`, `decline` or `cancel`).
    pub response: Value,
}

impl Ctx {
    /// Sends one input request (`{method, params}`) as a legacy
    /// server-to-client request, after the capability check.
    pub(crate) async fn fulfil(&self, req: &Value) -> Result<Value, HandlerError> {
        if let Some(required) = missing_capability(req, self.client_capabilities(), self.revision()) {
            return Err(HandlerError::Rpc(RpcError::missing_capability(required)));
        }
        let method = req.get("method").and_then(Value::as_str).unwrap_or_default();
        let params = req.get("params").cloned().unwrap_or_else(|| json!({}));
        Ok(self.request(method, params).await?)
    }

    /// Sends a server-to-client request on the request's stream and waits
    /// for the client's answer (legacy era only).
    ///
    /// In a 2025-11-25 task the request carries the `related-task` `_meta`,
    /// the task is `input_required` until the answer arrives, and the
    /// request travels on the task's stream: the creating call's while it is
    /// open (stdio), else the stream of the client's next `tasks/result`.
    ///
    /// A URL-mode `elicitation/create` of a 2025-11-25 session gets its
    /// `elicitationId` from the runtime (see [`Ctx::elicit_url`]).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientRequestError> {
        let mut params = params;
        let url_id = match method {
            "elicitation/create" => self.prepare_url_elicitation(&mut params)?,
            _ => None,
        };
        let outcome = self.request_as_task(method, params).await;
        if let Some(id) = url_id {
            self.settle_url_elicitation(&id, &outcome);
        }
        outcome
    }

    async fn request_as_task(&self, method: &str, params: Value) -> Result<Value, ClientRequestError> {
        let Some(task) = self.inner.task.clone() else {
            return self.send_request(method, params).await;
        };
        let mut params = params;
        if let Some(obj) = params.as_object_mut() {
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(RELATED_TASK.into(), json!({ "taskId": task.id() }));
            }
        }
        task.begin_client_request().await;
        let outcome = tokio::select! {
            () = task.streaming() => self.send_request(method, params).await,
            () = self.inner.cancel.cancelled() => Err(ClientRequestError::Cancelled),
        };
        task.end_client_request().await;
        outcome
    }

    async fn send_request(&self, method: &str, params: Value) -> Result<Value, ClientRequestError> {
        let Origin::Session(session) = &self.inner.origin else {
            return Err(match self.era() {
                Era::Modern => ClientRequestError::NotInEra,
                Era::Legacy => ClientRequestError::NoStream,
            });
        };
        if !self.inner.sink.can_stream() {
            return Err(ClientRequestError::NoStream);
        }
        if session.is_closed() {
            return Err(ClientRequestError::Cancelled);
        }
        let (id, rx) = session.register_request();
        // However this future ends (answered, timed out, or dropped with its handler), the
        // pending entry goes with it (behaviour invariant 20), and a request left unanswered
        // is cancelled towards the client.
        let mut pending = PendingGuard {
            session,
            sink: &self.inner.sink,
            id: id.clone(),
            sent: false,
            answered: false,
        };
        if !self.inner.sink.send(encode_request(&id, method, Some(&params))).await {
            return Err(ClientRequestError::NoStream);
        }
        pending.sent = true;
        let timeout = self.inner.client_request_timeout;
        let outcome = tokio::select! {
            r = rx => {
                pending.answered = r.is_ok();
                r.map_err(|_| ClientRequestError::Cancelled)
            }
            _ = self.inner.cancel.cancelled() => Err(ClientRequestError::Cancelled),
            _ = session.closed().cancelled() => {
                // The session is gone: there is no client to tell.
                pending.sent = false;
                Err(ClientRequestError::Cancelled)
            }
            _ = tokio::time::sleep(timeout) => Err(ClientRequestError::Timeout(timeout)),
        };
        outcome?.map_err(ClientRequestError::Client)
    }

    /// `sampling/createMessage` (needs the client's `sampling` capability).
    pub async fn create_message(&self, params: Value) -> Result<Value, ClientRequestError> {
        if !self.client_capabilities().sampling() {
            return Err(ClientRequestError::CapabilityMissing("sampling"));
        }
        self.request("sampling/createMessage", params).await
    }

    /// `elicitation/create` in form mode, or URL mode when `params.mode` is
    /// `"url"` (needs the matching declared elicitation capability), with
    /// `params` as they are (legacy era only). [`Ctx::elicit`] is the typed
    /// form for both eras.
    pub async fn elicit_raw(&self, params: Value) -> Result<Value, ClientRequestError> {
        let url = params.get("mode").and_then(Value::as_str) == Some("url");
        let caps = self.client_capabilities();
        let declared = if url {
            caps.elicitation_url(self.revision())
        } else {
            caps.elicitation_form()
        };
        let in_revision = self.revision().is_none_or(|r| r.has(Feature::Elicitation));
        if !declared || !in_revision {
            return Err(ClientRequestError::CapabilityMissing("elicitation"));
        }
        self.request("elicitation/create", params).await
    }

    /// `roots/list` (needs the client's `roots` capability).
    pub async fn list_roots(&self) -> Result<Value, ClientRequestError> {
        if !self.client_capabilities().roots() {
            return Err(ClientRequestError::CapabilityMissing("roots"));
        }
        self.request("roots/list", json!({})).await
    }
}

/// Forgets a pending server-to-client request when the request's future ends, however it ends;
/// one that was sent and never answered (the call was cancelled, it timed out, or its handler
/// was dropped) is cancelled towards the client with `notifications/cancelled`, so that the
/// client stops asking its user or model for an answer nobody waits for.
struct PendingGuard<'a> {
    session: &'a Session,
    sink: &'a Sink,
    id: RequestId,
    sent: bool,
    answered: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.session.forget_request(&self.id);
        if self.sent && !self.answered {
            let frame = cancelled(&self.id, Some("The request was cancelled"));
            if !self.sink.try_send(frame) {
                tracing::debug!(id = %self.id, "cancellation of a server-to-client request not delivered");
            }
        }
    }
}

impl Ctx {
    /// The session if it serves URL elicitation ids (a 2025-11-25 session).
    fn id_session(&self) -> Option<&Arc<Session>> {
        self.session()
            .filter(|s| self.era() == Era::Legacy && s.revision().has(Feature::ElicitationComplete))
    }

    /// Reserves a URL-mode `elicitationId` owned by the caller and this
    /// session, to embed in the elicitation's URL before eliciting with it
    /// (pass it as `params.elicitationId` to [`Ctx::elicit_raw`]). Only in a
    /// 2025-11-25 session; refused over `max_elicitations_per_principal`.
    pub fn url_elicitation_id(&self) -> Result<String, ElicitationError> {
        let session = self.id_session().ok_or(ElicitationError::NotInSession)?;
        let id = self.elicitations().register(&self.auth().principal, session)?;
        Ok(id.to_string())
    }

    /// Elicits in URL mode (`elicitation/create {mode: "url", message, url,
    /// elicitationId}`, legacy 2025-11-25 sessions with the client's
    /// `elicitation.url` capability) and returns the id the runtime gave it
    /// with the client's answer. Call [`Engine::complete_elicitation`](crate::Engine::complete_elicitation)
    /// with the id when the out-of-band interaction is over.
    pub async fn elicit_url(&self, message: &str, url: &str) -> Result<UrlElicitation, ClientRequestError> {
        self.elicit_url_as(message, url, None).await
    }

    /// [`Ctx::elicit_url`] under an id the handler chose (`Some`: 1 to 128 printable ASCII
    /// characters that no live URL elicitation has, such as the id of the sign-in flow the URL
    /// starts; -32602-class [`ElicitationError::InvalidId`] or [`ElicitationError::IdTaken`]
    /// otherwise), or a fresh one (`None`). Only the caller that elicited may complete it.
    pub async fn elicit_url_as(
        &self,
        message: &str,
        url: &str,
        id: Option<&str>,
    ) -> Result<UrlElicitation, ClientRequestError> {
        if self.era() == Era::Modern {
            return Err(ClientRequestError::NotInEra);
        }
        if !self.client_capabilities().elicitation_url(self.revision()) {
            return Err(ClientRequestError::CapabilityMissing("elicitation"));
        }
        let session = self
            .id_session()
            .ok_or(ClientRequestError::Elicitation(ElicitationError::NotInSession))?;
        let id = self
            .elicitations()
            .register_as(&self.auth().principal, session, id)
            .map(|id| id.to_string())
            .map_err(ClientRequestError::Elicitation)?;
        let params = json!({"mode": "url", "message": message, "url": url, "elicitationId": id});
        let response = self.elicit_raw(params).await?;
        Ok(UrlElicitation {
            elicitation_id: id,
            response,
        })
    }

    /// Gives a URL-mode `elicitation/create` of a 2025-11-25 session its
    /// `elicitationId`: the one already in `params` when the caller owns it
    /// for this session, else a fresh one. Returns the id (`None`: not a
    /// URL-mode elicitation of such a session).
    pub(crate) fn prepare_url_elicitation(&self, params: &mut Value) -> Result<Option<Arc<str>>, ClientRequestError> {
        if params.get("mode").and_then(Value::as_str) != Some("url") {
            return Ok(None);
        }
        let Some(session) = self.id_session() else {
            return Ok(None);
        };
        let principal = &self.auth().principal;
        let given = params.get("elicitationId").and_then(Value::as_str);
        let id = match given {
            Some(id) if self.elicitations().owns(id, principal, session) => Arc::from(id),
            _ => {
                if given.is_some() {
                    tracing::debug!("elicitationId not reserved by this session: replaced");
                }
                self.elicitations()
                    .register(principal, session)
                    .map_err(ClientRequestError::Elicitation)?
            }
        };
        if let Some(obj) = params.as_object_mut() {
            obj.insert("elicitationId".into(), Value::String(id.to_string()));
        }
        Ok(Some(id))
    }

    /// Keeps the record of an accepted URL elicitation; forgets it when the
    /// request failed or the user declined or cancelled.
    pub(crate) fn settle_url_elicitation(&self, id: &str, outcome: &Result<Value, ClientRequestError>) {
        let accepted = outcome
            .as_ref()
            .is_ok_and(|v| v.get("action").and_then(Value::as_str) == Some("accept"));
        if !accepted {
            self.elicitations().forget(id);
        }
    }
}
