//! The rules a webhook callback follows before the server sends it anything (SSRF guards):
//! `https` only, and an address the server connects to must be globally routable per the IANA
//! IPv4 and IPv6 Special-Purpose Address Registries, unless the callback's origin is
//! allow-listed by the server's operator. The check runs on every address a name resolves to,
//! at delivery time, and the connection goes to the address checked (DNS rebinding); redirects
//! are never followed ([`super::webhook::outcome`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::RpcError;

/// Why a callback is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// Not an absolute `http(s)` URL with a host (userinfo, fragments and whitespace refused).
    #[error("delivery.url is not a valid callback URL")]
    Malformed,
    /// The scheme is not `https`.
    #[error("delivery.url must use https")]
    NotHttps,
    /// The host is (or resolves to) an address that is not globally routable.
    #[error("delivery.url does not name a globally routable address")]
    NotRoutable,
}

impl From<CallbackError> for RpcError {
    fn from(e: CallbackError) -> Self {
        RpcError::invalid_params(e.to_string())
    }
}

/// Whether `ip` is globally routable: in none of the special-purpose blocks that are not
/// (loopback, private, shared, link-local, documentation, benchmarking, reserved, multicast,
/// unspecified, unique-local, and IPv4-mapped or NAT64 forms of those).
pub fn is_globally_routable(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_global(v4),
        IpAddr::V6(v6) => v6_global(v6),
    }
}

fn v4_global(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0                                   // 0.0.0.0/8 "this network"
        || a == 10                             // 10/8 private
        || (a == 100 && (64..128).contains(&b)) // 100.64/10 shared (CGN)
        || a == 127                            // loopback
        || (a == 169 && b == 254)              // link-local
        || (a == 172 && (16..32).contains(&b))  // 172.16/12 private
        || (a == 192 && b == 0 && c == 0)      // 192.0.0/24 IETF assignments
        || (a == 192 && b == 0 && c == 2)      // TEST-NET-1
        || (a == 192 && b == 88 && c == 99)    // 6to4 relay anycast (deprecated)
        || (a == 192 && b == 168)              // 192.168/16 private
        || (a == 198 && (b == 18 || b == 19))  // benchmarking
        || (a == 198 && b == 51 && c == 100)   // TEST-NET-2
        || (a == 203 && b == 0 && c == 113)    // TEST-NET-3
        || a >= 224) // multicast, reserved, broadcast
}

fn v6_global(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_global(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96): the IPv4 address it carries decides.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return v4_global(Ipv4Addr::new(a, b, c, d));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || s[0..6] == [0, 0, 0, 0, 0, 0]       // IPv4-compatible (deprecated)
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // 64:ff9b:1::/48 local NAT64
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // 100::/64 discard
        || (s[0] == 0x2001 && s[1] < 0x200)    // 2001::/23 IETF protocol assignments
        || (s[0] == 0x2001 && s[1] == 0xdb8)   // documentation
        || s[0] == 0x2002                      // 6to4
        || (s[0] & 0xfff0) == 0x3ff0           // 3fff::/20 documentation
        || (s[0] & 0xfe00) == 0xfc00           // unique local
        || (s[0] & 0xffc0) == 0xfe80           // link-local
        || (s[0] & 0xffc0) == 0xfec0           // site-local (deprecated)
        || (s[0] & 0xff00) == 0xff00) // multicast
}

#[cfg(test)]
mod tests {
    use super::*;

    fn global(s: &str) -> bool {
        is_globally_routable(s.parse().unwrap())
    }

    #[test]
    fn the_design_s_examples_and_the_registries_blocks_are_refused() {
        for private in [
            "127.0.0.1",
            "127.255.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "192.0.2.1",
            "198.18.0.1",
            "203.0.113.9",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "ff02::1",
            "2002::1",
            "100::1",
            "::127.0.0.1",
        ] {
            assert!(!global(private), "{private}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "198.20.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2a00:1450::1",
        ] {
            assert!(global(public), "{public}");
        }
    }

    #[test]
    fn refusals_are_invalid_params() {
        for e in [
            CallbackError::Malformed,
            CallbackError::NotHttps,
            CallbackError::NotRoutable,
        ] {
            assert_eq!(RpcError::from(e).code, -32602);
        }
    }
}
