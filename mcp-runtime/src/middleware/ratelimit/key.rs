//! The bucket a request counts against: its caller (the principal, or the client's address for
//! anonymous callers), and the tool or method when the limit is per tool or per method.

use std::fmt::Write;
use std::net::IpAddr;

use mcp_protocol::auth::ANONYMOUS;

use crate::middleware::Inbound;

/// How a caller's requests are split into buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bucketing {
    /// One bucket per caller for every counted request.
    #[default]
    PerCaller,
    /// One bucket per caller and method.
    PerMethod,
    /// One bucket per caller and tool for `tools/call` (per caller and method for other
    /// counted methods).
    PerTool,
}

/// The bucket key of `request`: `p<len>:<principal>` for an authenticated caller,
/// `a:<address>` for an anonymous one with an address (an IPv6 client by its /64, which one
/// host holds whole), `p9:anonymous` for an anonymous one without (stdio: one client per
/// process); then `|m:<method>` or `|t:<tool>` when split. The principal is length-prefixed, so
/// no principal can name another's bucket.
pub(crate) fn bucket_key(request: &Inbound, bucketing: Bucketing) -> String {
    let principal = request.principal();
    let mut key = String::with_capacity(principal.len() + 24);
    match request.remote() {
        Some(addr) if principal == ANONYMOUS => {
            let _ = write!(key, "a:{}", client_prefix(addr));
        }
        _ => {
            let _ = write!(key, "p{}:{principal}", principal.len());
        }
    }
    match (bucketing, request.tool_name()) {
        (Bucketing::PerCaller, _) => {}
        (Bucketing::PerTool, Some(tool)) => {
            let _ = write!(key, "|t:{tool}");
        }
        (Bucketing::PerTool | Bucketing::PerMethod, _) => {
            let _ = write!(key, "|m:{}", request.method());
        }
    }
    key
}

/// The part of a client's address that names one client: the whole IPv4 address, the /64 of an
/// IPv6 one (an IPv4-mapped IPv6 address is its IPv4 address).
fn client_prefix(addr: IpAddr) -> String {
    match addr.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    #[test]
    fn clients_are_told_apart_by_address_prefix() {
        assert_eq!(client_prefix(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2))), "127.0.0.2");
        let a: Ipv6Addr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: Ipv6Addr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        assert_eq!(client_prefix(IpAddr::V6(a)), client_prefix(IpAddr::V6(b)));
        assert_eq!(client_prefix(IpAddr::V6(a)), "2001:db8:1:2::/64");
        let mapped = Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped();
        assert_eq!(client_prefix(IpAddr::V6(mapped)), "10.0.0.1");
    }
}
