//! `required_scopes`: a wrapper that fails closed.

use crate::{AuthInfo, AuthProvider, BearerChallenge, BoxFuture, Challenge, DEFAULT_REALM};

/// Wraps a provider and refuses identities that lack any of the required
/// scopes with a 403 `insufficient_scope` naming the required scopes
/// (RFC 6750 §3.1).
///
/// It fails closed: an identity with no scopes at all lacks every required
/// scope. Refusals of the inner provider pass through unchanged.
///
/// ```
/// use mcp_auth::{AuthProviderExt, NoAuth};
///
/// let provider = NoAuth.require_scopes(["mcp:tools"]).resource_metadata("https://h/.well-known/oauth-protected-resource");
/// # let _ = provider;
/// ```
#[derive(Debug, Clone)]
pub struct RequireScopes<P> {
    inner: P,
    scopes: Vec<String>,
    challenge: BearerChallenge,
}

impl<P: AuthProvider> RequireScopes<P> {
    /// Requires every scope of `scopes` (empty strings are ignored) from the identities `inner` admits.
    pub fn new<S: Into<String>>(inner: P, scopes: impl IntoIterator<Item = S>) -> Self {
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).filter(|s| !s.is_empty()).collect();
        RequireScopes {
            inner,
            challenge: BearerChallenge::new(DEFAULT_REALM),
            scopes,
        }
    }

    /// The realm of the 403 challenge (default `mcp`).
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.challenge = self.challenge.realm(realm);
        self
    }

    /// The scheme of the 403 challenge (default `Bearer`).
    pub fn scheme(mut self, scheme: impl Into<String>) -> Self {
        self.challenge = self.challenge.scheme(scheme);
        self
    }

    /// Names the RFC 9728 metadata document in the 403 challenge.
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.challenge = self.challenge.resource_metadata(url);
        self
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The required scopes.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }
}

impl<P: AuthProvider> AuthProvider for RequireScopes<P> {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        Box::pin(async move {
            let info = self.inner.authenticate(parts).await?;
            check_scopes(&info, &self.scopes, &self.challenge)?;
            Ok(info)
        })
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        self.challenge
            .insufficient_scope(needed, crate::challenge::INSUFFICIENT_SCOPE_DESCRIPTION)
    }
}

/// Refuses `info` with a 403 when it lacks one of `required`.
pub(crate) fn check_scopes(info: &AuthInfo, required: &[String], challenge: &BearerChallenge) -> Result<(), Challenge> {
    match required.iter().find(|s| !info.has_scope(s)) {
        None => Ok(()),
        Some(missing) => {
            tracing::debug!(principal = %info.principal, scope = %missing, "request lacks a required scope");
            Err(challenge.insufficient_scope(required, &format!("missing scope {missing}")))
        }
    }
}

pub(crate) use mcp_protocol::auth::is_scope_token as valid_scope;

/// Adapters available on every provider.
pub trait AuthProviderExt: AuthProvider + Sized {
    /// Wraps the provider in [`RequireScopes`].
    fn require_scopes<S: Into<String>>(self, scopes: impl IntoIterator<Item = S>) -> RequireScopes<Self> {
        RequireScopes::new(self, scopes)
    }
}

impl<P: AuthProvider> AuthProviderExt for P {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CustomAuth, NoAuth, RequestHead, test_parts};

    fn with_scopes(scopes: &'static [&'static str]) -> CustomAuth {
        CustomAuth::from_fn(move |_head: RequestHead| async move {
            Ok(AuthInfo::new("alice").with_scopes(scopes.iter().map(|s| s.to_string()).collect()))
        })
    }

    #[tokio::test]
    async fn all_required_scopes_pass() {
        let p = with_scopes(&["a", "b", "c"]).require_scopes(["a", "b"]);
        let info = p.authenticate(&test_parts(&[])).await.unwrap();
        assert_eq!(&*info.principal, "alice");
    }

    #[tokio::test]
    async fn a_missing_scope_is_a_403_naming_the_scopes() {
        let p = with_scopes(&["a"])
            .require_scopes(["a", "b"])
            .resource_metadata("https://h/.well-known/oauth-protected-resource");
        let c = p.authenticate(&test_parts(&[])).await.unwrap_err();
        assert_eq!(c.status, 403);
        assert_eq!(
            c.www_authenticate.as_deref(),
            Some(
                r#"Bearer realm="mcp", error="insufficient_scope", error_description="missing scope b", scope="a b", resource_metadata="https://h/.well-known/oauth-protected-resource""#
            )
        );
    }

    #[tokio::test]
    async fn fails_closed_without_scopes() {
        let p = NoAuth.require_scopes(["read"]).scheme("ApiKey").realm("api");
        let c = p.authenticate(&test_parts(&[])).await.unwrap_err();
        assert_eq!(c.status, 403);
        let h = c.www_authenticate.unwrap();
        assert!(
            h.starts_with(r#"ApiKey realm="api", error="insufficient_scope""#),
            "{h}"
        );
        assert!(h.contains(r#"scope="read""#), "{h}");
    }

    #[tokio::test]
    async fn inner_refusals_pass_through() {
        let inner =
            CustomAuth::from_fn(|_head: RequestHead| async { Err(Challenge::unauthorized("Basic realm=\"x\"")) });
        let c = inner
            .require_scopes(["a"])
            .authenticate(&test_parts(&[]))
            .await
            .unwrap_err();
        assert_eq!(c, Challenge::unauthorized("Basic realm=\"x\""));
    }

    #[tokio::test]
    async fn no_required_scopes_admits_everyone() {
        let p = NoAuth.require_scopes(Vec::<String>::new());
        assert!(p.authenticate(&test_parts(&[])).await.is_ok());
        assert!(p.scopes().is_empty());
    }

    #[test]
    fn scope_tokens() {
        assert!(valid_scope("files:read"));
        assert!(!valid_scope(""));
        assert!(!valid_scope("a b"));
        assert!(!valid_scope("a\"b"));
    }
}
