//! Who a per-client bound counts against: the bounds that keep clients apart (sessions and
//! running tasks per client, rate-limit buckets) count per authenticated principal, and per
//! client address for anonymous callers, who all share the `anonymous` principal. An IPv6
//! client counts by its /64 (one host holds a whole /64); an IPv4-mapped IPv6 address is its
//! IPv4 address. Without an address (stdio, a transport that does not give one) anonymous
//! callers share one count, as they share one client.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use mcp_protocol::auth::ANONYMOUS;

/// The client a per-client bound counts against. A principal and an address never compare
/// equal, whatever the principal's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    /// An authenticated principal (or the anonymous one, without an address).
    Principal(Arc<str>),
    /// An anonymous caller, by its address (an IPv6 one masked to its /64).
    Address(IpAddr),
}

impl ClientKey {
    /// The client of a caller: its principal, or its address when anonymous.
    pub(crate) fn of(principal: &Arc<str>, remote: Option<IpAddr>) -> Self {
        match remote {
            Some(ip) if **principal == *ANONYMOUS => ClientKey::Address(client_prefix(ip)),
            _ => ClientKey::Principal(principal.clone()),
        }
    }
}

#[cfg(feature = "shared-store")]
impl ClientKey {
    /// The client a store key names (the [`Display`](fmt::Display) form read back); `None` for
    /// anything else.
    pub(crate) fn parse(key: &str) -> Option<Self> {
        if let Some(address) = key.strip_prefix("a:") {
            let ip = address.strip_suffix("/64").unwrap_or(address);
            return ip.parse().ok().map(ClientKey::Address);
        }
        let (len, principal) = key.strip_prefix('p')?.split_once(':')?;
        (len.parse::<usize>().ok()? == principal.len()).then(|| ClientKey::Principal(principal.into()))
    }
}

/// As a store key: `p<len>:<principal>` (length-prefixed, so that no principal can name
/// another key) or `a:<address>` (`a:<prefix>::/64` for IPv6).
impl fmt::Display for ClientKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientKey::Principal(p) => write!(f, "p{}:{p}", p.len()),
            ClientKey::Address(IpAddr::V6(v6)) => write!(f, "a:{v6}/64"),
            ClientKey::Address(ip) => write!(f, "a:{ip}"),
        }
    }
}

/// The part of an address that names one client: the IPv4 address, or the /64 of an IPv6 one.
fn client_prefix(addr: IpAddr) -> IpAddr {
    match addr.to_canonical() {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    #[test]
    fn anonymous_callers_are_told_apart_by_address_principals_are_not() {
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let anon: Arc<str> = Arc::from(ANONYMOUS);
        assert_eq!(ClientKey::of(&anon, Some(a)).to_string(), "a:127.0.0.1");
        assert_ne!(ClientKey::of(&anon, Some(a)), ClientKey::of(&anon, Some(b)));
        assert_eq!(ClientKey::of(&anon, None).to_string(), "p9:anonymous");
        let alice: Arc<str> = Arc::from("alice");
        assert_eq!(ClientKey::of(&alice, Some(a)), ClientKey::of(&alice, Some(b)));
        // A principal named like an address is still a principal.
        let named: Arc<str> = Arc::from("a:127.0.0.1");
        assert_ne!(ClientKey::of(&named, Some(a)), ClientKey::of(&anon, Some(a)));
        assert_ne!(ClientKey::of(&named, Some(a)).to_string(), "a:127.0.0.1");
    }

    #[test]
    fn ipv6_clients_count_by_their_64() {
        let anon: Arc<str> = Arc::from(ANONYMOUS);
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        assert_eq!(ClientKey::of(&anon, Some(a)), ClientKey::of(&anon, Some(b)));
        assert_eq!(ClientKey::of(&anon, Some(a)).to_string(), "a:2001:db8:1:2::/64");
        let mapped = IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped());
        assert_eq!(ClientKey::of(&anon, Some(mapped)).to_string(), "a:10.0.0.1");
    }

    #[cfg(feature = "shared-store")]
    #[test]
    fn store_keys_read_back_as_the_client_they_name() {
        let anon: Arc<str> = Arc::from(ANONYMOUS);
        let alice: Arc<str> = Arc::from("ali:ce");
        for key in [
            ClientKey::of(&alice, None),
            ClientKey::of(&anon, Some("127.0.0.2".parse().unwrap())),
            ClientKey::of(&anon, Some("2001:db8:1:2:aaaa::1".parse().unwrap())),
        ] {
            assert_eq!(ClientKey::parse(&key.to_string()), Some(key));
        }
        for bad in ["", "p3:ab", "pX:a", "a:nope", "q1:a"] {
            assert_eq!(ClientKey::parse(bad), None, "{bad}");
        }
    }
}
