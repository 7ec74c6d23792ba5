//! The cluster when the `shared-store` feature is off: a type with no values.
//!
//! Without the feature there is no `Storage::Shared`, so a runtime's cluster is always
//! `None`. This stand-in keeps the runtime's code one text in both builds: its `Option<Arc<Cluster>>`
//! branches still type-check, and every method below is unreachable (`match *self {}` on an
//! empty enum), so none of the cluster's code (the bus listener, the heartbeat, the replicas,
//! the deliveries) is compiled into a server that serves from one process. The signatures are
//! those of `cluster/mod.rs`, `delivery.rs` and `on_behalf.rs`, which the compiler checks for
//! both builds through the call sites.

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::auth::AuthInfo;
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::background::Background;
use crate::catalog::Registry;
use crate::elicitation::Elicitations;
use crate::mailbox::{Mail, MailOutcome};
use crate::quota::ClientKey;
use crate::remote::Remote;
use crate::session::Session;
use crate::session::store::{Elsewhere, SessionStore};
use crate::store::{MailboxRecord, SessionField, SessionRecord, Store, StoreError};
use crate::tasks::Tasks;

/// An application's handler of broadcast messages on one topic.
pub(crate) type UserHandler = Arc<dyn Fn(&Value) + Send + Sync>;

/// No instance's part of any shared store: this build has none.
#[derive(Debug)]
pub(crate) enum Cluster {}

#[allow(clippy::unused_async, clippy::unused_self)]
impl Cluster {
    pub(crate) fn instance(&self) -> &Arc<str> {
        match *self {}
    }

    pub(crate) fn session_ttl(&self) -> Duration {
        match *self {}
    }

    pub(crate) fn store(&self) -> &Store {
        match *self {}
    }

    pub(crate) fn started_elsewhere(&self, _: &ClientKey) -> Elsewhere {
        match *self {}
    }

    pub(crate) fn gaps(&self) -> watch::Receiver<u64> {
        match *self {}
    }

    pub(crate) fn bind(&self, _: &Arc<SessionStore>, _: &Arc<Tasks>, _: &Arc<Elicitations>) {
        match *self {}
    }

    pub(crate) fn start(&self, _: &Arc<Registry>) -> Vec<Background> {
        match *self {}
    }

    pub(crate) fn broadcast(&self, _: &str, _: Value) -> Result<(), StoreError> {
        match *self {}
    }

    pub(crate) async fn broadcast_everywhere(&self, _: &str, _: Value, _: Duration) -> Result<(), StoreError> {
        match *self {}
    }

    pub(crate) fn attach(self: &Arc<Self>, _: &Session) {
        match **self {}
    }

    pub(crate) fn on_user(&self, _: String, _: UserHandler) {
        match *self {}
    }

    pub(crate) async fn create(&self, _: &Session) -> Result<(), StoreError> {
        match *self {}
    }

    pub(crate) async fn load(&self, _: &str, _: &str, _: &[SessionField]) -> Result<Option<Arc<Session>>, StoreError> {
        match *self {}
    }

    pub(crate) async fn end(&self, _: &str) -> Result<Option<SessionRecord>, StoreError> {
        match *self {}
    }

    pub(crate) async fn complete_elicitation(&self, _: &str, _: &str) -> bool {
        match *self {}
    }

    pub(crate) async fn hold_mailbox(
        &self,
        _: &str,
        _: &str,
        _: CancellationToken,
    ) -> Result<mpsc::Receiver<Mail>, StoreError> {
        match *self {}
    }

    pub(crate) async fn forward_mail(
        &self,
        _: &MailboxRecord,
        _: &AuthInfo,
        _: Option<Remote>,
        _: Value,
        _: Duration,
    ) -> Result<MailOutcome, StoreError> {
        match *self {}
    }
}
