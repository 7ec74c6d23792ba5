//! The `custom` provider: an async function or another provider decides.
//!
//! What it answers is checked (strict shapes, pitfall P10): an identity with
//! an empty principal is refused, and so is a refusal that is not a 4xx or
//! whose header could not be sent; both are logged and replaced by a plain
//! `Bearer realm="mcp"` 401.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;

use crate::{
    AuthInfo, AuthProvider, BearerChallenge, BoxFuture, Challenge, ClientAddr, DEFAULT_REALM, WwwAuthenticate,
};

/// What a custom function sees of a request: an owned copy of its head.
///
/// Its `Debug` output names the headers but shows no value, since header
/// values carry credentials.
#[derive(Clone)]
#[non_exhaustive]
pub struct RequestHead {
    /// The request method.
    pub method: http::Method,
    /// The request URI.
    pub uri: http::Uri,
    /// The request headers.
    pub headers: http::HeaderMap,
    /// The client's address, when the transport names it ([`ClientAddr`]).
    pub client: Option<IpAddr>,
}

impl RequestHead {
    /// Copies the head of `parts`.
    pub fn from_parts(parts: &http::request::Parts) -> Self {
        RequestHead {
            method: parts.method.clone(),
            uri: parts.uri.clone(),
            headers: parts.headers.clone(),
            client: ClientAddr::of(parts),
        }
    }
}

impl std::fmt::Debug for RequestHead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestHead")
            .field("method", &self.method)
            .field("path", &self.uri.path())
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("client", &self.client)
            .finish()
    }
}

type HeadFn = dyn Fn(RequestHead) -> BoxFuture<'static, Result<AuthInfo, Challenge>> + Send + Sync;

enum Inner {
    Provider(Arc<dyn AuthProvider>),
    Function(Arc<HeadFn>),
}

/// A provider whose decision is made by user code: an async function of the
/// request head, or any [`AuthProvider`] trait object.
///
/// ```
/// use mcp_auth::{AuthInfo, Challenge, CustomAuth, RequestHead};
///
/// let provider = CustomAuth::from_fn(|head: RequestHead| async move {
///     match head.headers.get("x-user").and_then(|v| v.to_str().ok()) {
///         Some(user) if !user.is_empty() => Ok(AuthInfo::new(user)),
///         _ => Err(Challenge::unauthorized("Bearer realm=\"mcp\"")),
///     }
/// });
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct CustomAuth {
    inner: Arc<Inner>,
}

impl CustomAuth {
    /// Wraps a provider (a trait object or any type implementing [`AuthProvider`]).
    pub fn new(provider: impl AuthProvider) -> Self {
        Self::from_provider(Arc::new(provider))
    }

    /// Wraps a shared provider.
    pub fn from_provider(provider: Arc<dyn AuthProvider>) -> Self {
        CustomAuth {
            inner: Arc::new(Inner::Provider(provider)),
        }
    }

    /// Wraps an async function of the request head.
    pub fn from_fn<F, Fut>(f: F) -> Self
    where
        F: Fn(RequestHead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AuthInfo, Challenge>> + Send + 'static,
    {
        let f: Arc<HeadFn> = Arc::new(move |head| Box::pin(f(head)));
        CustomAuth {
            inner: Arc::new(Inner::Function(f)),
        }
    }
}

impl std::fmt::Debug for CustomAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &*self.inner {
            Inner::Provider(_) => "provider",
            Inner::Function(_) => "function",
        };
        f.debug_struct("CustomAuth").field("kind", &kind).finish()
    }
}

impl AuthProvider for CustomAuth {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        Box::pin(async move {
            let outcome = match &*self.inner {
                Inner::Provider(p) => p.authenticate(parts).await,
                Inner::Function(f) => f(RequestHead::from_parts(parts)).await,
            };
            strict(outcome)
        })
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        match &*self.inner {
            Inner::Provider(p) => p.insufficient_scope(needed),
            Inner::Function(_) => BearerChallenge::new(DEFAULT_REALM)
                .insufficient_scope(needed, crate::challenge::INSUFFICIENT_SCOPE_DESCRIPTION),
        }
    }
}

fn fallback() -> Challenge {
    WwwAuthenticate::new("Bearer")
        .param("realm", DEFAULT_REALM)
        .unauthorized()
}

/// Admits only well-formed outcomes.
fn strict(outcome: Result<AuthInfo, Challenge>) -> Result<AuthInfo, Challenge> {
    match outcome {
        Ok(info) if info.principal.trim().is_empty() => {
            tracing::warn!("custom auth provider returned an empty principal; request refused");
            Err(fallback())
        }
        Ok(info) => Ok(info),
        Err(c) if !(400..500).contains(&c.status) => {
            tracing::warn!(
                status = c.status,
                "custom auth provider refused with a non-4xx status; sent 401"
            );
            Err(fallback())
        }
        Err(c)
            if c.www_authenticate
                .as_deref()
                .is_some_and(|h| http::HeaderValue::from_str(h).is_err()) =>
        {
            tracing::warn!("custom auth provider returned an invalid WWW-Authenticate value; sent 401");
            Err(fallback())
        }
        Err(c) => Err(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoAuth, test_parts};

    fn by_header() -> CustomAuth {
        CustomAuth::from_fn(|head: RequestHead| async move {
            match head.headers.get("x-user").and_then(|v| v.to_str().ok()) {
                Some(user) => Ok(AuthInfo::new(user).with_scopes(vec!["s".into()])),
                None => Err(Challenge::unauthorized("Custom realm=\"mcp\"")),
            }
        })
    }

    #[tokio::test]
    async fn function_accepts_and_rejects() {
        let p = by_header();
        let info = p.authenticate(&test_parts(&[("x-user", "bob")])).await.unwrap();
        assert_eq!(&*info.principal, "bob");
        assert_eq!(info.scopes, ["s"]);
        let c = p.authenticate(&test_parts(&[])).await.unwrap_err();
        assert_eq!(c, Challenge::unauthorized("Custom realm=\"mcp\""));
    }

    #[tokio::test]
    async fn trait_object_provider() {
        let p = CustomAuth::from_provider(Arc::new(NoAuth));
        assert_eq!(&*p.authenticate(&test_parts(&[])).await.unwrap().principal, "anonymous");
        let p = CustomAuth::new(by_header());
        assert_eq!(
            &*p.authenticate(&test_parts(&[("x-user", "c")])).await.unwrap().principal,
            "c"
        );
    }

    #[tokio::test]
    async fn empty_principal_is_refused() {
        let p = CustomAuth::from_fn(|_h: RequestHead| async { Ok(AuthInfo::new(" ")) });
        let c = p.authenticate(&test_parts(&[])).await.unwrap_err();
        assert_eq!(c, Challenge::unauthorized("Bearer realm=\"mcp\""));
    }

    #[tokio::test]
    async fn odd_refusals_become_401() {
        let p = CustomAuth::from_fn(|_h: RequestHead| async { Err(Challenge::new(200, None)) });
        assert_eq!(p.authenticate(&test_parts(&[])).await.unwrap_err().status, 401);
        let p = CustomAuth::from_fn(|_h: RequestHead| async { Err(Challenge::unauthorized("a\r\nb")) });
        let c = p.authenticate(&test_parts(&[])).await.unwrap_err();
        assert_eq!(c, Challenge::unauthorized("Bearer realm=\"mcp\""));
        let p = CustomAuth::from_fn(|_h: RequestHead| async { Err(Challenge::new(403, None)) });
        assert_eq!(
            p.authenticate(&test_parts(&[])).await.unwrap_err(),
            Challenge::new(403, None)
        );
    }

    #[test]
    fn head_debug_hides_header_values() {
        let parts = test_parts(&[("authorization", "Bearer s3cr3t")]);
        let shown = format!("{:?}", RequestHead::from_parts(&parts));
        assert!(shown.contains("authorization") && !shown.contains("s3cr3t"), "{shown}");
    }
}
