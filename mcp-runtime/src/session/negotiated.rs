//! [`Negotiated`]: what `initialize` settled for a session and what the client set since (the
//! log level, `notifications/initialized`, resource subscriptions).
//!
//! Each setter answers whether it changed anything, so that the session announces only real
//! changes to the other instances; [`Negotiated::apply`] takes theirs.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use mcp_protocol::bounds::SubscriptionBounds;
use mcp_protocol::model::{ClientCapabilities, LoggingLevel};
use mcp_protocol::{Revision, RpcError};
use serde_json::Value;

#[cfg(feature = "shared-store")]
use crate::store::SessionField;

/// A session's negotiated state.
#[derive(Debug)]
pub(crate) struct Negotiated {
    revision: Revision,
    client_capabilities: ClientCapabilities,
    client_info: Value,
    log_level: AtomicU8,
    initialized: AtomicBool,
    subscriptions: Mutex<HashSet<String>>,
}

impl Negotiated {
    /// What `initialize` settled: the log level starts at `info`.
    pub(crate) fn new(revision: Revision, client_capabilities: ClientCapabilities, client_info: Value) -> Self {
        Negotiated {
            revision,
            client_capabilities,
            client_info,
            log_level: AtomicU8::new(level_index(LoggingLevel::Info)),
            initialized: AtomicBool::new(false),
            subscriptions: Mutex::new(HashSet::new()),
        }
    }

    pub(crate) fn revision(&self) -> Revision {
        self.revision
    }

    pub(crate) fn client_capabilities(&self) -> &ClientCapabilities {
        &self.client_capabilities
    }

    pub(crate) fn client_info(&self) -> &Value {
        &self.client_info
    }

    pub(crate) fn log_level(&self) -> LoggingLevel {
        LoggingLevel::ALL[usize::from(self.log_level.load(Ordering::Relaxed))]
    }

    pub(crate) fn set_log_level(&self, level: LoggingLevel) {
        self.log_level.store(level_index(level), Ordering::Relaxed);
    }

    pub(crate) fn is_initialized(&self) -> bool {
        self.initialized.load(Ordering::Relaxed)
    }

    /// Records `notifications/initialized`; `true` the first time.
    pub(crate) fn mark_initialized(&self) -> bool {
        !self.initialized.swap(true, Ordering::Relaxed)
    }

    /// Subscribes to a URI; `true` when it was not subscribed.
    pub(crate) fn subscribe(&self, uri: &str) -> bool {
        self.subscriptions().insert(uri.to_owned())
    }

    /// Subscribes within `bounds`: `Ok(true)` when added, `Ok(false)` when already there, and
    /// -32602 for a new URI past [`SubscriptionBounds::max_entries`].
    pub(crate) fn subscribe_within(&self, uri: &str, bounds: &SubscriptionBounds) -> Result<bool, RpcError> {
        let mut subs = self.subscriptions();
        if subs.contains(uri) {
            return Ok(false);
        }
        bounds.check_one_more(subs.len())?;
        subs.insert(uri.to_owned());
        Ok(true)
    }

    /// Unsubscribes from a URI; `true` when it was subscribed.
    pub(crate) fn unsubscribe(&self, uri: &str) -> bool {
        self.subscriptions().remove(uri)
    }

    pub(crate) fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions().contains(uri)
    }

    /// Forgets every subscription (the session ended).
    pub(crate) fn clear_subscriptions(&self) {
        self.subscriptions().clear();
    }

    #[cfg(feature = "shared-store")]
    /// Applies a change another instance made to the record (`Tasks` and `Holder` are not
    /// negotiated state: nothing to do here).
    pub(crate) fn apply(&self, field: &SessionField) {
        match field {
            SessionField::LogLevel(l) => self.set_log_level(*l),
            SessionField::Initialized => {
                self.mark_initialized();
            }
            SessionField::Subscribe(uri) => {
                self.subscribe(uri);
            }
            SessionField::Unsubscribe(uri) => {
                self.unsubscribe(uri);
            }
            SessionField::Tasks | SessionField::Holder(_) => {}
        }
    }

    fn subscriptions(&self) -> MutexGuard<'_, HashSet<String>> {
        self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn level_index(level: LoggingLevel) -> u8 {
    LoggingLevel::ALL.iter().position(|l| *l == level).unwrap_or(1) as u8
}
