//! Who is calling: the client address handed to the `AuthProvider` (as [`ClientAddr`]) and to
//! the engine, with the client's port when the connection is with the client itself.
//!
//! It is the socket's peer, unless that peer is one of [`HttpConfig::trusted_proxies`]: then
//! `X-Forwarded-For` is read from the right (the entry the nearest proxy appended) and the first
//! entry that is not itself a trusted proxy is the client. Entries further left were written by
//! whoever the trusted proxies received the request from, so they are never believed. A
//! forwarded value that is not an IP address ends the walk at the last address believed.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use http::request::Parts;
use mcp_auth::{AuthInfo, Challenge, ClientAddr};
use mcp_runtime::engine::Remote;

use crate::config::HttpConfig;

/// The header a reverse proxy appends the address it received a request from to.
const FORWARDED_FOR: &str = "x-forwarded-for";

/// The client address of a request: the peer, or what trusted proxies forwarded.
pub(crate) fn client_addr(config: &HttpConfig, parts: &Parts) -> Option<IpAddr> {
    let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>()?.0.ip().to_canonical();
    if !config.trusted_proxies.contains(&peer) {
        return Some(peer);
    }
    let forwarded: Vec<&str> = parts
        .headers
        .get_all(FORWARDED_FOR)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    let mut client = peer;
    for entry in forwarded.iter().rev() {
        let Ok(ip) = entry.parse::<IpAddr>() else {
            break;
        };
        client = ip.to_canonical();
        if !config.trusted_proxies.contains(&client) {
            break;
        }
    }
    Some(client)
}

/// The client's port: the socket's, unless its peer is a trusted proxy (a forwarded address
/// comes without one).
fn client_port(config: &HttpConfig, extensions: &http::Extensions) -> Option<u16> {
    let peer = extensions.get::<ConnectInfo<SocketAddr>>()?.0;
    (!config.trusted_proxies.contains(&peer.ip().to_canonical())).then_some(peer.port())
}

/// The client address [`authenticate`] named in `extensions`.
pub(crate) fn address(extensions: &http::Extensions) -> Option<IpAddr> {
    extensions.get::<ClientAddr>().map(|a| a.0)
}

/// Who is calling, as the engine is told: the address [`authenticate`] named in `extensions`,
/// and the client's port.
pub(crate) fn remote(config: &HttpConfig, extensions: &http::Extensions) -> Option<Remote> {
    let address = address(extensions)?;
    Some(Remote {
        address,
        port: client_port(config, extensions),
    })
}

/// Names the client in `parts` ([`ClientAddr`]) and asks the configured provider.
pub(crate) async fn authenticate(config: &HttpConfig, parts: &mut Parts) -> Result<AuthInfo, Challenge> {
    if let Some(ip) = client_addr(config, parts) {
        parts.extensions.insert(ClientAddr(ip));
    }
    config.auth.authenticate(parts).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(peer: Option<&str>, forwarded: &[&str]) -> Parts {
        let mut req = http::Request::builder();
        for f in forwarded {
            req = req.header(FORWARDED_FOR, *f);
        }
        let mut parts = req.body(()).unwrap().into_parts().0;
        if let Some(p) = peer {
            parts.extensions.insert(ConnectInfo(p.parse::<SocketAddr>().unwrap()));
        }
        parts
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    fn behind(proxies: &[&str]) -> HttpConfig {
        HttpConfig::default().trusted_proxies(proxies.iter().map(|p| p.parse().unwrap()))
    }

    #[test]
    fn the_peer_unless_a_trusted_proxy_forwards() {
        let direct = HttpConfig::default();
        assert_eq!(client_addr(&direct, &parts(None, &[])), None);
        assert_eq!(
            client_addr(&direct, &parts(Some("192.0.2.1:5"), &["198.51.100.9"])),
            ip("192.0.2.1"),
            "no proxy trusted: the header is ignored"
        );
        let lb = behind(&["10.0.0.1"]);
        assert_eq!(
            client_addr(&lb, &parts(Some("192.0.2.1:5"), &["198.51.100.9"])),
            ip("192.0.2.1"),
            "an untrusted peer's header is ignored"
        );
        assert_eq!(
            client_addr(&lb, &parts(Some("10.0.0.1:5"), &["198.51.100.9"])),
            ip("198.51.100.9")
        );
        assert_eq!(client_addr(&lb, &parts(Some("10.0.0.1:5"), &[])), ip("10.0.0.1"));
    }

    #[test]
    fn forged_entries_to_the_left_are_not_believed() {
        let lb = behind(&["10.0.0.1", "10.0.0.2"]);
        let p = parts(Some("10.0.0.1:5"), &["1.2.3.4, 198.51.100.9", "10.0.0.2"]);
        assert_eq!(client_addr(&lb, &p), ip("198.51.100.9"));
        let garbage = parts(Some("10.0.0.1:5"), &["1.2.3.4, nonsense, 10.0.0.2"]);
        assert_eq!(client_addr(&lb, &garbage), ip("10.0.0.2"), "the walk stops at garbage");
        let all_proxies = parts(Some("10.0.0.1:5"), &["10.0.0.2"]);
        assert_eq!(client_addr(&lb, &all_proxies), ip("10.0.0.2"));
    }

    #[test]
    fn the_port_of_a_direct_client_only() {
        let direct = HttpConfig::default();
        let lb = behind(&["10.0.0.1"]);
        let port = |config: &HttpConfig, peer: &str, forwarded: &[&str]| {
            client_port(config, &parts(Some(peer), forwarded).extensions)
        };
        assert_eq!(port(&direct, "192.0.2.1:5", &[]), Some(5));
        assert_eq!(
            port(&lb, "192.0.2.1:7", &["198.51.100.9"]),
            Some(7),
            "an untrusted peer is the client"
        );
        assert_eq!(
            port(&lb, "10.0.0.1:5", &["198.51.100.9"]),
            None,
            "a forwarded address has no port"
        );
        assert_eq!(port(&lb, "10.0.0.1:5", &[]), None, "nor has the proxy's own");
        assert_eq!(client_port(&direct, &parts(None, &[]).extensions), None);
    }

    #[test]
    fn the_remote_is_the_named_address_with_its_port() {
        let mut named = parts(Some("192.0.2.1:5"), &[]);
        named.extensions.insert(ClientAddr(ip("192.0.2.1").unwrap()));
        assert_eq!(
            remote(&HttpConfig::default(), &named.extensions),
            Some(Remote {
                address: ip("192.0.2.1").unwrap(),
                port: Some(5)
            })
        );
        let unnamed = parts(Some("192.0.2.1:5"), &[]);
        assert_eq!(
            remote(&HttpConfig::default(), &unnamed.extensions),
            None,
            "no address, no port"
        );
    }

    #[test]
    fn mapped_addresses_are_canonical() {
        let lb = behind(&["10.0.0.1"]);
        assert_eq!(
            client_addr(&lb, &parts(Some("[::ffff:10.0.0.1]:5"), &["::ffff:198.51.100.9"])),
            ip("198.51.100.9")
        );
    }
}
