//! [`AuthProvider`]: what authenticates a request from its parts, and the refusal it gives a
//! request short of the scopes its operation needs.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;

use crate::challenge::{BearerChallenge, Challenge, DEFAULT_REALM, INSUFFICIENT_SCOPE_DESCRIPTION};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Authenticates requests.
///
/// A provider sees the request's parts (method, URI, headers) only, never the
/// body, so that it runs before anything else is read or looked up. A transport that knows
/// the client's address puts a [`ClientAddr`](crate::ClientAddr) in the parts' extensions (the HTTP transport
/// does), for providers that throttle failed attempts by address.
pub trait AuthProvider: Send + Sync + 'static {
    /// Authenticates one request from its parts (method, URI, headers).
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>>;

    /// The refusal of an authenticated request whose credentials lack scopes the operation it
    /// asks for needs (a tool, a resource, a prompt or a method that declares scopes): a 403
    /// whose challenge names every scope in `needed` (RFC 6750 §3.1 `insufficient_scope`), so
    /// that a client can step up once.
    ///
    /// The default is a `Bearer` challenge in the default realm; providers that point clients
    /// at their RFC 9728 metadata document (the bearer provider, [`RequireScopes`](crate::RequireScopes)) add
    /// `resource_metadata` and their realm.
    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        BearerChallenge::new(DEFAULT_REALM).insufficient_scope(needed, INSUFFICIENT_SCOPE_DESCRIPTION)
    }
}

impl<P: AuthProvider + ?Sized> AuthProvider for Arc<P> {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        (**self).authenticate(parts)
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        (**self).insufficient_scope(needed)
    }
}

impl<P: AuthProvider + ?Sized> AuthProvider for Box<P> {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        (**self).authenticate(parts)
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        (**self).insufficient_scope(needed)
    }
}
