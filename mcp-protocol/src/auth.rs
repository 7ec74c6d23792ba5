//! Who is asking: the authenticated identity that owns sessions, tasks,
//! request states and subscriptions.

use std::sync::Arc;

use serde_json::{Map, Value};

/// The principal of unauthenticated requests.
pub const ANONYMOUS: &str = "anonymous";

/// The outcome of authentication, as handlers see it.
///
/// Ownership is keyed on [`AuthInfo::principal`] only, never on the whole
/// value: claims such as `exp` change when a token is refreshed, the principal
/// does not (behaviour invariant 4).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AuthInfo {
    /// The stable identity.
    pub principal: Arc<str>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Provider-specific claims (JWT claims, key metadata, …).
    pub claims: Map<String, Value>,
}

impl AuthInfo {
    /// An identity with no scopes and no claims.
    pub fn new(principal: impl Into<Arc<str>>) -> Self {
        AuthInfo {
            principal: principal.into(),
            scopes: Vec::new(),
            claims: Map::new(),
        }
    }

    /// The anonymous identity of the `none` provider (its principal shared, not allocated per
    /// request).
    pub fn anonymous() -> Self {
        static PRINCIPAL: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
        Self::new(PRINCIPAL.get_or_init(|| Arc::from(ANONYMOUS)).clone())
    }

    /// This identity behind an `Arc`, as requests carry it: the plain anonymous identity (no
    /// scopes, no claims) is one value every request shares; any other is allocated.
    pub fn into_shared(self) -> Arc<AuthInfo> {
        static ANONYMOUS_INFO: std::sync::OnceLock<Arc<AuthInfo>> = std::sync::OnceLock::new();
        if self.scopes.is_empty() && self.claims.is_empty() && &*self.principal == ANONYMOUS {
            return ANONYMOUS_INFO.get_or_init(|| Arc::new(AuthInfo::anonymous())).clone();
        }
        Arc::new(self)
    }

    /// Sets the scopes.
    pub fn with_scopes(mut self, scopes: Vec<String>) -> Self {
        self.scopes = scopes;
        self
    }

    /// Sets the claims.
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = claims;
        self
    }

    /// Whether a scope was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// Whether every scope of `required` was granted.
    pub fn has_scopes<S: AsRef<str>>(&self, required: &[S]) -> bool {
        required.iter().all(|s| self.has_scope(s.as_ref()))
    }
}

/// Whether `scope` is an RFC 6749 §3.3 `scope-token`: one or more of `%x21 / %x23-5B /
/// %x5D-7E` (visible ASCII but `"` and `\`), so that it can be sent in a space-separated
/// `scope` parameter and inside a quoted `WWW-Authenticate` attribute.
pub fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty() && scope.chars().all(|c| matches!(c, '!'..='~') && c != '"' && c != '\\')
}
