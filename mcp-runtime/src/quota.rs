//! Who a quota counts against: the bounds that keep clients apart (sessions and running tasks
//! per client) count per authenticated principal, and per client address for anonymous
//! callers, who all share the `anonymous` principal. Without the address (stdio, a custom
//! transport that does not give one) anonymous callers share one count, as they share one
//! client.

use std::net::IpAddr;
use std::sync::Arc;

use mcp_protocol::auth::ANONYMOUS;

/// The key a per-client bound counts against: the principal, or `anonymous@<address>`.
pub(crate) fn client_key(principal: &Arc<str>, remote: Option<IpAddr>) -> Arc<str> {
    match remote {
        Some(ip) if **principal == *ANONYMOUS => Arc::from(format!("{ANONYMOUS}@{ip}")),
        _ => principal.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_callers_are_told_apart_by_address_principals_are_not() {
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let anon: Arc<str> = Arc::from(ANONYMOUS);
        assert_eq!(&*client_key(&anon, Some(a)), "anonymous@127.0.0.1");
        assert_ne!(client_key(&anon, Some(a)), client_key(&anon, Some(b)));
        assert_eq!(&*client_key(&anon, None), "anonymous");
        let alice: Arc<str> = Arc::from("alice");
        assert_eq!(client_key(&alice, Some(a)), client_key(&alice, Some(b)));
    }
}
