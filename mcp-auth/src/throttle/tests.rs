use super::*;

const S: Duration = Duration::from_secs(1);

fn ip(s: &str) -> Option<IpAddr> {
    Some(s.parse().unwrap())
}

/// Per address 4, per pair 2, per user 3; blocks of 1 s doubling to 8 s, forgotten after 60 s.
fn small() -> ThrottleConfig {
    let limit = |n| FailureLimit::new(n, S, 8 * S, 60 * S);
    ThrottleConfig {
        per_address: Some(limit(4)),
        per_address_user: Some(limit(2)),
        per_user: Some(limit(3)),
        trust_after_success: 3600 * S,
        max_entries: 16,
    }
}

fn throttle(config: ThrottleConfig) -> Throttle {
    Throttle::new(config).unwrap()
}

/// Charges `n` failures for `user` from `client`; panics if one is refused.
fn fail(t: &Throttle, client: Option<IpAddr>, user: &str, n: u32, now: Instant) {
    let a = t.attempt(client, Some(user));
    for i in 0..n {
        t.charge(&a, now)
            .unwrap_or_else(|w| panic!("failure {i} refused for {w:?}"));
    }
}

#[test]
fn blocks_double_and_are_capped() {
    let l = FailureLimit::new(3, S, 5 * S, 60 * S);
    assert_eq!(l.block(2), None);
    assert_eq!(l.block(3), Some(S));
    assert_eq!(l.block(4), Some(2 * S));
    assert_eq!(l.block(5), Some(4 * S));
    assert_eq!(l.block(6), Some(5 * S));
    assert_eq!(l.block(u32::MAX), Some(5 * S));
    assert_eq!(FailureLimit::new(0, S, S, S).failures, 1);
}

#[test]
fn an_address_over_its_limit_is_refused_then_backs_off() {
    let t = throttle(small());
    let t0 = Instant::now();
    let a = t.attempt(ip("192.0.2.1"), Some("x"));
    // Four failures for four different users: the address limit, not the pair's.
    for (i, user) in ["a", "b", "c", "d"].into_iter().enumerate() {
        let attempt = t.attempt(ip("192.0.2.1"), Some(user));
        assert!(t.check(&attempt, t0).is_ok(), "attempt {i}");
        t.charge(&attempt, t0).unwrap();
    }
    assert_eq!(t.check(&a, t0), Err(S), "the fourth failure blocks for 1 s");
    assert_eq!(t.charge(&a, t0).unwrap_err(), S, "a refused attempt is not counted");
    assert_eq!(t.check(&a, t0 + S / 2), Err(S / 2));
    // The block ended: one more attempt, whose failure doubles the block.
    t.charge(&a, t0 + S).unwrap();
    assert_eq!(t.check(&a, t0 + S), Err(2 * S));
    t.charge(&a, t0 + 3 * S).unwrap();
    assert_eq!(t.check(&a, t0 + 3 * S), Err(4 * S));
    // Another address is not affected.
    assert!(t.check(&t.attempt(ip("192.0.2.2"), Some("x")), t0 + 3 * S).is_ok());
    // A minute without failures (and no block holding) forgets them.
    assert!(t.check(&a, t0 + 70 * S).is_ok());
    t.charge(&a, t0 + 70 * S).unwrap();
    assert!(t.check(&a, t0 + 70 * S).is_ok(), "counting from zero again");
}

#[test]
fn ipv6_counts_by_its_64_prefix_and_mapped_v4_as_v4() {
    let t = throttle(small());
    let now = Instant::now();
    for host in 1..=4 {
        fail(&t, ip(&format!("2001:db8:1:2::{host}")), &format!("u{host}"), 1, now);
    }
    let same_prefix = t.attempt(ip("2001:db8:1:2:ffff::1"), Some("z"));
    assert!(t.check(&same_prefix, now).is_err());
    assert!(t.check(&t.attempt(ip("2001:db8:1:3::1"), Some("z")), now).is_ok());
    for user in ["a", "b", "c", "d"] {
        fail(&t, ip("::ffff:198.51.100.4"), user, 1, now);
    }
    assert!(t.check(&t.attempt(ip("198.51.100.4"), Some("z")), now).is_err());
}

#[test]
fn a_pair_is_blocked_before_its_address() {
    let t = throttle(small());
    let now = Instant::now();
    fail(&t, ip("192.0.2.1"), "alice", 2, now);
    assert!(t.check(&t.attempt(ip("192.0.2.1"), Some("alice")), now).is_err());
    assert!(t.check(&t.attempt(ip("192.0.2.1"), Some("bob")), now).is_ok());
}

#[test]
fn a_success_refunds_its_charge_and_clears_the_pair() {
    let t = throttle(small());
    let now = Instant::now();
    let a = t.attempt(ip("192.0.2.1"), Some("alice"));
    t.charge(&a, now).unwrap();
    // Three more failures would block the address; one of four succeeds instead.
    let ok = t.charge(&a, now).unwrap();
    t.succeeded(&a, Some(ok), now);
    fail(&t, ip("192.0.2.1"), "bob", 1, now);
    fail(&t, ip("192.0.2.1"), "alice", 1, now);
    assert!(
        t.check(&a, now).is_ok(),
        "3 failures counted, not 4; alice's pair cleared"
    );
    fail(&t, ip("192.0.2.1"), "carol", 1, now);
    assert!(t.check(&a, now).is_err());
}

#[test]
fn a_success_that_reached_the_limit_lifts_the_block_it_set() {
    let t = throttle(small().per_address_user(None));
    let now = Instant::now();
    fail(&t, ip("192.0.2.1"), "a", 3, now);
    let a = t.attempt(ip("192.0.2.1"), Some("alice"));
    let charged = t.charge(&a, now).unwrap();
    assert!(t.check(&a, now).is_err(), "the fourth charge blocks");
    t.succeeded(&a, Some(charged), now);
    assert!(t.check(&a, now).is_ok(), "refunded: the block it set is lifted");
}

#[test]
fn the_per_user_limit_spares_addresses_the_user_signed_in_from() {
    let t = throttle(small());
    let now = Instant::now();
    let home = t.attempt(ip("192.0.2.1"), Some("alice"));
    t.succeeded(&home, None, now);
    // Three attackers, one failure each: under their address and pair limits, at alice's.
    for n in 1..=3 {
        fail(&t, ip(&format!("203.0.113.{n}")), "alice", 1, now);
    }
    let new_place = t.attempt(ip("198.51.100.9"), Some("alice"));
    assert_eq!(t.check(&new_place, now), Err(S), "a new address is slowed");
    assert!(t.check(&home, now).is_ok(), "alice's own address is not");
    assert!(t.check(&t.attempt(ip("198.51.100.9"), Some("bob")), now).is_ok());
    // Only slowed: the block ends.
    assert!(t.check(&new_place, now + S).is_ok());
    // Trust ends an hour after the success: the next wave slows alice's address too.
    let later = now + 3601 * S;
    for n in 4..=6 {
        fail(&t, ip(&format!("203.0.113.{n}")), "alice", 1, later);
    }
    assert_eq!(t.check(&home, later), Err(S));
}

#[test]
fn without_an_address_only_the_user_counts() {
    let t = throttle(small());
    let now = Instant::now();
    fail(&t, None, "alice", 3, now);
    assert!(t.check(&t.attempt(None, Some("alice")), now).is_err());
    assert!(t.check(&t.attempt(None, Some("bob")), now).is_ok());
    assert!(t.check(&t.attempt(None, None), now).is_ok());
}

#[test]
fn disabled_counts_nothing() {
    let t = throttle(ThrottleConfig::disabled());
    let now = Instant::now();
    fail(&t, ip("192.0.2.1"), "alice", 1000, now);
    assert!(t.check(&t.attempt(ip("192.0.2.1"), Some("alice")), now).is_ok());
}

#[test]
fn tables_are_bounded() {
    let t = throttle(small().max_entries(8));
    let now = Instant::now();
    for n in 0..1000u32 {
        let [a, b, c, d] = n.to_be_bytes();
        fail(&t, Some(IpAddr::from([10, b ^ a, c, d])), &format!("user{n}"), 1, now);
    }
    let tables = t.tables();
    assert!(tables.address.len() <= 8 && tables.pair.len() <= 8 && tables.user.len() <= 8);
}

#[test]
fn user_names_are_not_held_in_clear() {
    let t = throttle(small());
    let a = t.attempt(ip("192.0.2.1"), Some("alice"));
    let b = t.attempt(ip("192.0.2.1"), Some("alice"));
    assert_eq!((a.address, a.pair, a.user), (b.address, b.pair, b.user));
    let other = throttle(small()).attempt(ip("192.0.2.1"), Some("alice"));
    assert_ne!(a.user, other.user, "keyed per process");
    assert!(!format!("{t:?}{a:?}").contains("alice"));
}
