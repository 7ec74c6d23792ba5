//! [`Parts`]: what the dispatcher's methods use of a runtime, borrowed for one request. The
//! methods take these parts, never the runtime itself, so that nothing below the runtime
//! depends on it.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use serde_json::value::RawValue;

use crate::catalog::{Catalog, CatalogKind, visible};
use crate::config::ServerConfig;
use crate::elicitation::Elicitations;
use crate::exec::RoundLimits;
use crate::exec::rounds::Rounds;
use crate::tasks::Tasks;

/// The runtime's services as one request's dispatch sees them.
pub(crate) struct Parts<'a> {
    /// The configuration.
    pub(crate) config: &'a ServerConfig,
    /// The catalog snapshot the request is served from.
    pub(crate) catalog: Arc<Catalog>,
    /// The MRTR rounds (request-state sealing).
    pub(crate) rounds: &'a Rounds,
    /// The tasks.
    pub(crate) tasks: &'a Arc<Tasks>,
    /// The URL-mode elicitation records (handed to every `Ctx`).
    pub(crate) elicitations: &'a Arc<Elicitations>,
    /// The server's `Implementation`, serialized once, as modern results carry it (`None`:
    /// not sent).
    pub(crate) server_info: Option<&'a RawValue>,
}

impl Parts<'_> {
    /// Whether `auth` sees the catalog item `name` of `kind`.
    pub(crate) fn visible(&self, auth: &AuthInfo, kind: CatalogKind, name: &str) -> bool {
        visible(self.config.visibility.as_ref(), auth, kind, name)
    }

    /// Whether two callers may see different lists: a visibility hook, or lists that show
    /// what is in each caller's scope when some item needs scopes.
    pub(crate) fn per_caller_lists(&self) -> bool {
        self.config.visibility.is_some() || (self.config.lists_in_scope && self.catalog.scoped())
    }

    /// The limits of an inline handler run.
    pub(crate) fn limits(&self) -> RoundLimits {
        RoundLimits::of(self.config)
    }
}
