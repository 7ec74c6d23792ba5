//! What a transport or an application asks of a started engine beside its messages: the
//! configuration and the catalog's change feed, legacy sessions (found, ended, swept), the
//! shared store and its bus, addressed delivery (mailboxes), and the server's own services
//! (broadcasts, URL-elicitation completion, shutdown). Each is one call into the runtime the
//! engine wires; nothing here runs on the request path.

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::Revision;
use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::ServerFeatures;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::catalog::{ChangeFeed, Registry};
use crate::config::ServerConfig;
use crate::elicitation::ElicitationError;
use crate::engine::handle::Engine;
use crate::mailbox::{Mail, MailOutcome};
use crate::remote::Remote;
use crate::session::{Session, SessionHandle};
use crate::store::{MailboxRecord, Store, StoreError, TaskStore};

impl Engine {
    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        self.runtime.config()
    }

    /// The catalog's registry.
    pub fn registry(&self) -> &Arc<Registry> {
        self.runtime.registry()
    }

    /// The catalog's changes from now on (`list_changed` and resource updates), for a
    /// transport's fan-out to its streams.
    pub fn changes(&self) -> ChangeFeed {
        self.runtime.registry().subscribe()
    }

    /// What the server offers, from the registry and the configuration.
    pub fn features(&self) -> ServerFeatures {
        self.runtime.features()
    }

    /// The server capabilities for a revision.
    pub fn capabilities(&self, revision: Option<Revision>) -> Value {
        self.runtime.capabilities(revision)
    }

    /// Every scope an operation of this server can need, once each, sorted: what a
    /// protected-resource metadata document lists in `scopes_supported`.
    pub fn scopes_supported(&self) -> Vec<String> {
        self.runtime.scopes_supported()
    }

    /// A principal's legacy session: held here or (with a shared store) loaded from the store
    /// as a replica. Unknown, expired and other principals' sessions are all `Ok(None)`; `Err`
    /// when the store cannot be asked (the session may well exist).
    pub async fn find_session(&self, id: &str, principal: &str) -> Result<Option<SessionHandle>, StoreError> {
        Ok(self.runtime.find_session(id, principal).await?.map(SessionHandle))
    }

    /// A principal's session as this instance holds it in memory (its own, or a replica loaded
    /// earlier), without asking the store or checking that the store still has it: what
    /// diagnostics and tests look at. Transports serve messages with [`Engine::find_session`].
    pub fn held_session(&self, id: &str, principal: &str) -> Option<Arc<Session>> {
        self.runtime.sessions().get(id, principal)
    }

    /// Ends a principal's session (DELETE): here and, with a shared store, on every instance.
    /// `Ok(false)` when unknown or another principal's.
    pub async fn end_session(&self, id: &str, principal: &str) -> Result<bool, StoreError> {
        self.runtime.end_session(id, principal).await
    }

    /// Closes and removes the sessions idle for longer than `session_ttl`, with the 2025-11-25
    /// tasks they own; returns how many sessions were removed. A transport that keeps sessions
    /// runs it periodically.
    pub async fn sweep_sessions(&self) -> usize {
        self.runtime.sweep_sessions().await
    }

    /// The drain of the tasks running here (a graceful shutdown): no task is claimed from the
    /// queue any more; the tasks running here get `grace` to end, then the rest are handed back:
    /// a resumable tool's task goes back to the queue with its checkpoint, for a worker of
    /// another instance to claim at once; any other fails with
    /// [`INSTANCE_STOPPED`](crate::tasks::INSTANCE_STOPPED). Returns how many went back to the
    /// queue. Call it before [`close_sessions`](Self::close_sessions), which cancels the
    /// legacy tasks of the sessions it closes.
    pub async fn drain_tasks(&self, grace: Duration) -> usize {
        self.runtime.drain_tasks(grace).await
    }

    /// Closes every session held here (the end of a graceful shutdown's grace).
    pub fn close_sessions(&self) {
        self.runtime.sessions().clear();
    }

    /// How many legacy sessions this instance holds (its own and replicas).
    pub fn session_count(&self) -> usize {
        self.runtime.sessions().len()
    }

    /// The shared store, if state is shared with other instances.
    pub fn store(&self) -> Option<&Store> {
        self.runtime.store()
    }

    /// This instance's id among the instances sharing a store (`None` without a store).
    pub fn instance_id(&self) -> Option<&str> {
        self.runtime.instance_id()
    }

    /// A receiver woken whenever messages between instances may have been lost (streams re-read
    /// their logs); `None` without a store.
    pub fn bus_gaps(&self) -> Option<watch::Receiver<u64>> {
        self.runtime.bus_gaps()
    }

    /// Holds a mailbox this instance opens for `principal`, until `ended` (see
    /// [`crate::mailbox`]). Without a shared store, `Ok(None)` (every message for the mailbox
    /// must reach this instance). With one, the mailbox's record is written before this answers
    /// (so that the transport may name the mailbox to its client), refreshed every third of
    /// [`MAILBOX_TTL`](crate::mailbox::MAILBOX_TTL) and deleted once `ended` is cancelled; the
    /// receiver yields the mail other instances forward, in the order the bus brought it.
    pub async fn hold_mailbox(
        &self,
        id: &str,
        principal: &str,
        ended: CancellationToken,
    ) -> Result<Option<mpsc::Receiver<Mail>>, StoreError> {
        match self.runtime.cluster() {
            Some(cluster) => cluster.hold_mailbox(id, principal, ended).await.map(Some),
            None => Ok(None),
        }
    }

    /// The record of an open mailbox, held here or on another instance, if `principal` opened
    /// it: an unknown mailbox, an expired one and another principal's are all `Ok(None)`, and so
    /// is every mailbox without a shared store.
    pub async fn find_mailbox(&self, id: &str, principal: &str) -> Result<Option<MailboxRecord>, StoreError> {
        let Some(store) = self.runtime.store() else {
            return Ok(None);
        };
        Ok(store.mailboxes.load(id).await?.filter(|r| r.principal == principal))
    }

    /// Forwards mail (the transport's `payload`, sent as `auth` by `client`) to the instance
    /// holding `mailbox`, and waits (at most [`FORWARD_WAIT`](crate::mailbox::FORWARD_WAIT))
    /// for what it made of it. A holder that does not answer in time and is known dead has its
    /// mailbox's record removed: [`MailOutcome::Gone`]. `Err` when the bus cannot take the mail,
    /// or a live holder did not answer in time (the mail may still be handled).
    pub async fn forward_mail(
        &self,
        mailbox: &MailboxRecord,
        auth: &AuthInfo,
        client: Option<Remote>,
        payload: Value,
    ) -> Result<MailOutcome, StoreError> {
        match self.runtime.cluster() {
            Some(cluster) => {
                let wait = crate::mailbox::FORWARD_WAIT;
                cluster.forward_mail(mailbox, auth, client, payload, wait).await
            }
            None => Ok(MailOutcome::Gone),
        }
    }

    /// Sends an application message to every other instance sharing the store (nothing
    /// without one); they run the handlers registered with [`Engine::on_broadcast`].
    pub fn broadcast(&self, topic: &str, payload: Value) -> Result<(), StoreError> {
        self.runtime.broadcast(topic, payload)
    }

    /// [`Engine::broadcast`], then waits (at most `wait`) until the bus has handed the message
    /// to every instance.
    pub async fn broadcast_everywhere(&self, topic: &str, payload: Value, wait: Duration) -> Result<(), StoreError> {
        self.runtime.broadcast_everywhere(topic, payload, wait).await
    }

    /// Registers a handler of the application messages other instances broadcast on `topic`.
    pub fn on_broadcast(&self, topic: impl Into<String>, handler: impl Fn(&Value) + Send + Sync + 'static) {
        self.runtime.on_broadcast(topic, handler);
    }

    /// Ends a 2025-11-25 URL-mode elicitation for `principal` (on whichever instance holds it).
    pub async fn complete_elicitation(&self, elicitation_id: &str, principal: &str) -> Result<(), ElicitationError> {
        self.runtime.complete_elicitation(elicitation_id, principal).await
    }

    /// How many URL-mode elicitations `principal` has pending.
    pub fn pending_elicitations(&self, principal: &str) -> usize {
        self.runtime.pending_elicitations(principal)
    }

    /// The store tasks are kept in.
    pub fn task_store(&self) -> &Arc<dyn TaskStore> {
        self.runtime.task_store()
    }

    /// Removes the expired tasks now; returns how many.
    pub async fn sweep_tasks(&self) -> usize {
        self.runtime.sweep_tasks().await
    }

    /// Ends every open `subscriptions/listen` stream (graceful shutdown).
    pub fn shutdown(&self) {
        self.runtime.shutdown();
    }
}
