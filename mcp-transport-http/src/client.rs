//! Who is calling: the client address handed to the `AuthProvider` (as [`ClientAddr`]) and to
//! the engine.
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
    fn mapped_addresses_are_canonical() {
        let lb = behind(&["10.0.0.1"]);
        assert_eq!(
            client_addr(&lb, &parts(Some("[::ffff:10.0.0.1]:5"), &["::ffff:198.51.100.9"])),
            ip("198.51.100.9")
        );
    }
}
