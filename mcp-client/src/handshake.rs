//! The handshake: which revision the client and the server speak (spec 2026-07-28,
//! basic/versioning §Era detection; basic/lifecycle for the legacy `initialize`).
//!
//! Unless a revision is pinned, the client asks `server/discover` first, at the newest modern
//! revision. A result settles a modern revision both list; a recognised modern error naming
//! other revisions is asked again once at the newest of them; anything else (another error,
//! an HTTP answer that is not a modern one, no answer within the probe's timeout) falls back
//! to `initialize` at the newest legacy revision, followed by `notifications/initialized`.
//! The reading of each answer is `mcp_protocol::client`'s.

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::client::{self, DiscoverOutcome};
use mcp_protocol::{Era, Revision};
use serde_json::{Map, Value};

use crate::client::{Client, RequestOptions};
use crate::conn::{Conn, Negotiated, Regreet};
use crate::error::ClientError;

/// Settles a revision with the server (`want`: a pinned one) and opens the door to requests.
pub(crate) async fn greet(client: &Client, want: Option<Revision>, probe: Duration) -> Result<(), ClientError> {
    let negotiated = match discover(client, want, probe).await? {
        Some(n) => n,
        None => initialize(client, want.unwrap_or(Revision::LATEST_LEGACY)).await?,
    };
    let revision = negotiated.revision;
    client.conn.settle(negotiated);
    if revision.era() == Era::Legacy {
        client.notify("notifications/initialized", Value::Null).await?;
        client.conn.link.greeted();
    }
    tracing::debug!(revision = revision.as_str(), "connected");
    Ok(())
}

/// Greets a restarted child again at the revision settled before.
pub(crate) fn regreet(options: Arc<crate::client::Options>, probe: Duration) -> Regreet {
    Arc::new(move |conn: Arc<Conn>| {
        let client = Client {
            conn,
            options: options.clone(),
        };
        tokio::spawn(async move {
            let want = client.conn.negotiated().map(|n| n.revision);
            if let Err(e) = greet(&client, want, probe).await {
                tracing::warn!(error = %e, "the restarted server could not be greeted");
            }
        });
    })
}

/// Tries `server/discover`: `Some` when the server is modern, `None` to fall back to
/// `initialize`.
async fn discover(client: &Client, want: Option<Revision>, probe: Duration) -> Result<Option<Negotiated>, ClientError> {
    if want.is_some_and(|r| r.era() == Era::Legacy) {
        return Ok(None);
    }
    let pinned = want.is_some();
    let mut asked = want.unwrap_or(Revision::LATEST_MODERN);
    for _ in 0..2 {
        let answer = tokio::time::timeout(
            probe,
            client.round(asked, "server/discover", Map::new(), &RequestOptions::default()),
        )
        .await;
        let error = match answer {
            Ok(Ok(result)) => {
                return match client::read_discover(&result, asked) {
                    Some(revision) if !pinned || revision == asked => Ok(Some(Negotiated { revision, result })),
                    _ => Err(ClientError::NoCommonRevision),
                };
            }
            Ok(Err(ClientError::Rpc(e))) => e,
            Ok(Err(e @ ClientError::Closed(_))) => return Err(e),
            Ok(Err(e)) if pinned => return Err(e),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "server/discover failed: trying initialize");
                return Ok(None);
            }
            Err(_) if pinned => return Err(ClientError::Timeout(probe)),
            Err(_) => {
                tracing::debug!(?probe, "no answer to server/discover: trying initialize");
                return Ok(None);
            }
        };
        match client::discover_outcome(&error) {
            DiscoverOutcome::Retry(r) if r != asked && !pinned => asked = r,
            DiscoverOutcome::Legacy if !pinned => return Ok(None),
            _ => return Err(ClientError::Rpc(error)),
        }
    }
    Err(ClientError::NoCommonRevision)
}

/// The legacy handshake's request.
async fn initialize(client: &Client, asked: Revision) -> Result<Negotiated, ClientError> {
    let envelope = mcp_protocol::client::Envelope {
        revision: asked,
        capabilities: &client.options.capabilities,
        client_info: &client.conn.client_info,
        log_level: None,
    };
    let Value::Object(params) = client::initialize_params(&envelope) else {
        return Err(ClientError::Unexpected("initialize params".into()));
    };
    let result = client
        .round(asked, "initialize", params, &RequestOptions::default())
        .await?;
    let revision = client::initialized_revision(&result)?;
    Ok(Negotiated { revision, result })
}
