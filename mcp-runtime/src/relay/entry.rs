//! The runtime's entry points of the pair relay (see [`super`]).

use mcp_protocol::auth::AuthInfo;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{FORWARD_WAIT, PairMessage, PairOutcome};
use crate::remote::Remote;
use crate::runtime::Runtime;
use crate::store::{PairRecord, StoreError};

impl Runtime {
    /// Holds a pair whose stream this instance opens for `principal`, until `ended` is
    /// cancelled. Without a shared store, `Ok(None)` (every POST of the pair must reach this
    /// instance). With one, the pair's record is written before this answers (so that the
    /// stream may name its message path), refreshed every third of [`PAIR_TTL`](super::PAIR_TTL) and deleted
    /// once `ended` is cancelled; the receiver yields the messages of the pair other instances
    /// forward, in the order the bus brought them, until `ended`.
    pub(crate) async fn hold_pair(
        &self,
        id: &str,
        principal: &str,
        ended: CancellationToken,
    ) -> Result<Option<mpsc::Receiver<PairMessage>>, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(None);
        };
        cluster.hold_pair(id, principal, ended).await.map(Some)
    }

    /// The record of an open pair, held here or on another instance, if `principal` opened it:
    /// an unknown pair, an expired one and another principal's are all `Ok(None)`. Always
    /// `Ok(None)` without a shared store.
    pub(crate) async fn find_pair(&self, id: &str, principal: &str) -> Result<Option<PairRecord>, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(None);
        };
        Ok(cluster
            .store()
            .pairs
            .load(id)
            .await?
            .filter(|r| r.principal == principal))
    }

    /// Forwards a POSTed message of `pair` to its holder and waits (at most [`FORWARD_WAIT`])
    /// for what it made of it. A holder that does not answer in time and is known dead has its
    /// pair's record removed: [`PairOutcome::Gone`]. `Err` when the bus cannot take the message,
    /// or a live holder did not answer in time (the message may still be handled).
    pub(crate) async fn forward_pair_message(
        &self,
        pair: &PairRecord,
        auth: &AuthInfo,
        client: Option<Remote>,
        body: &str,
    ) -> Result<PairOutcome, StoreError> {
        let Some(cluster) = self.cluster() else {
            return Ok(PairOutcome::Gone);
        };
        cluster.forward_pair(pair, auth, client, body, FORWARD_WAIT).await
    }
}
