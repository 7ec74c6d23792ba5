//! The client's address, as the transport hands it to a provider.
//!
//! [`AuthProvider::authenticate`](crate::AuthProvider::authenticate) sees the request's parts;
//! a transport that knows who is calling puts a [`ClientAddr`] in their extensions before it
//! asks the provider (the HTTP transport does: the socket's peer, or the address a trusted
//! proxy forwarded). Providers that throttle failed attempts key them by it.

use std::net::IpAddr;

/// The address of the client a request comes from, carried in the request's extensions.
///
/// ```
/// use mcp_auth::ClientAddr;
///
/// let mut parts = http::Request::new(()).into_parts().0;
/// assert_eq!(ClientAddr::of(&parts), None);
/// parts.extensions.insert(ClientAddr("192.0.2.7".parse().unwrap()));
/// assert_eq!(ClientAddr::of(&parts), Some("192.0.2.7".parse().unwrap()));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientAddr(pub IpAddr);

impl ClientAddr {
    /// The client address a transport put in `parts`, if any.
    pub fn of(parts: &http::request::Parts) -> Option<IpAddr> {
        parts.extensions.get::<ClientAddr>().map(|c| c.0)
    }
}
