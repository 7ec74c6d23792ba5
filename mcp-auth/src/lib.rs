//! # mcp-auth
//!
//! Authentication for MCP servers. An MCP server on a network is an OAuth 2.1
//! resource server: every request (every HTTP verb, before any session
//! lookup) is authenticated by an [`AuthProvider`], which turns the request's
//! parts into an [`AuthInfo`] (a stable principal, scopes, claims) or refuses
//! it with a [`Challenge`] (401 or 403 with an RFC 6750 `WWW-Authenticate`).
//!
//! The principal is what owns sessions, tasks, request states and
//! subscriptions: another principal's state answers as "not found".
//!
//! This crate holds the trait and the [`NoAuth`] provider (the default:
//! everyone is `anonymous`). Bearer/JWT, API-key, basic and custom providers
//! plug in behind the same trait.

use std::future::Future;
use std::pin::Pin;

pub use mcp_protocol::auth::{ANONYMOUS, AuthInfo};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A refusal: the HTTP status and the headers that explain it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("authentication failed with status {status}")]
#[non_exhaustive]
pub struct Challenge {
    /// 401 (no or bad credentials) or 403 (insufficient scope).
    pub status: u16,
    /// The `WWW-Authenticate` header value, if any.
    pub www_authenticate: Option<String>,
}

impl Challenge {
    /// A 401 with a challenge header.
    pub fn unauthorized(www_authenticate: impl Into<String>) -> Self {
        Challenge {
            status: 401,
            www_authenticate: Some(www_authenticate.into()),
        }
    }

    /// A 403 with a challenge header.
    pub fn forbidden(www_authenticate: impl Into<String>) -> Self {
        Challenge {
            status: 403,
            www_authenticate: Some(www_authenticate.into()),
        }
    }
}

/// Authenticates requests.
pub trait AuthProvider: Send + Sync + 'static {
    /// Authenticates one request from its parts (method, URI, headers).
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>>;
}

/// The default provider: every request is `anonymous`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoAuth;

impl AuthProvider for NoAuth {
    fn authenticate<'a>(&'a self, _parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        Box::pin(async { Ok(AuthInfo::anonymous()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn none_is_anonymous() {
        let (parts, ()) = http::Request::new(()).into_parts();
        let info = NoAuth.authenticate(&parts).await.unwrap();
        assert_eq!(&*info.principal, ANONYMOUS);
        assert!(info.scopes.is_empty());
    }
}
