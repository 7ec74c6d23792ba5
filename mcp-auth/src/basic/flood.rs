//! The basic provider under a flood of wrong passwords: throttling by address and user, the
//! credential cache, and what each costs (counted in password checks, not timed).

use std::net::IpAddr;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::*;
use crate::throttle::FailureLimit;
use crate::{MIN_PBKDF2_ITERATIONS, test_parts};

const HOME: &str = "192.0.2.10";
const ATTACKER: &str = "203.0.113.66";

fn limit(n: u32) -> FailureLimit {
    FailureLimit::new(
        n,
        Duration::from_secs(60),
        Duration::from_secs(600),
        Duration::from_secs(600),
    )
}

/// Three failures per address, five per (address, user), four per user.
fn config() -> ThrottleConfig {
    ThrottleConfig::default()
        .per_address(Some(limit(3)))
        .per_address_user(Some(limit(5)))
        .per_user(Some(limit(4)))
}

fn builder() -> BasicAuthBuilder {
    BasicAuth::builder()
        .password_iterations(MIN_PBKDF2_ITERATIONS)
        .throttle(config())
        .user(BasicUser::plain("bob", "builder"))
}

async fn from(p: &BasicAuth, client: &str, user_password: &str) -> Result<AuthInfo, Challenge> {
    let authorization = format!("Basic {}", STANDARD.encode(user_password));
    let mut parts = test_parts(&[("authorization", &authorization)]);
    let ip: IpAddr = client.parse().unwrap();
    parts.extensions.insert(ClientAddr(ip));
    p.authenticate(&parts).await
}

fn is_throttled(c: &Challenge) -> bool {
    c.status == 429 && c.www_authenticate.is_none() && c.retry_after.is_some()
}

#[tokio::test]
async fn a_repeated_good_password_is_checked_once() {
    let p = builder().build().unwrap();
    for _ in 0..10 {
        assert_eq!(&*from(&p, HOME, "bob:builder").await.unwrap().principal, "bob");
    }
    let stats = p.stats();
    assert_eq!((stats.password_checks, stats.cache_hits), (1, 9));
    // A wrong password is never answered from the cache.
    assert_eq!(from(&p, HOME, "bob:builde").await.unwrap_err().status, 401);
    assert_eq!(p.stats().password_checks, 2);
}

#[tokio::test]
async fn without_the_cache_every_request_is_checked() {
    let p = builder().credential_cache(CacheConfig::disabled()).build().unwrap();
    for _ in 0..3 {
        from(&p, HOME, "bob:builder").await.unwrap();
    }
    assert_eq!((p.stats().password_checks, p.stats().cache_hits), (3, 0));
}

#[tokio::test]
async fn a_flooding_address_is_refused_without_checks_and_others_are_served() {
    let p = builder().build().unwrap();
    for creds in ["bob:1", "bob:2", "nobody:3"] {
        assert_eq!(from(&p, ATTACKER, creds).await.unwrap_err().status, 401, "{creds}");
    }
    for creds in ["bob:4", "nobody:5", "bob:builder"] {
        let refused = from(&p, ATTACKER, creds).await.unwrap_err();
        assert!(is_throttled(&refused), "{creds}: {refused:?}");
        assert_eq!(refused.retry_after_secs(), Some(60));
    }
    assert_eq!(p.stats().password_checks, 3, "refused attempts cost no check");
    assert_eq!(p.stats().throttled, 3);
    assert_eq!(&*from(&p, HOME, "bob:builder").await.unwrap().principal, "bob");
}

#[tokio::test]
async fn a_known_and_an_unknown_user_are_refused_alike() {
    let p = builder().build().unwrap();
    for creds in ["bob:1", "bob:2", "bob:3"] {
        from(&p, "198.51.100.1", creds).await.unwrap_err();
    }
    for creds in ["eve:1", "eve:2", "eve:3"] {
        from(&p, "198.51.100.2", creds).await.unwrap_err();
    }
    let known = from(&p, "198.51.100.1", "bob:4").await.unwrap_err();
    let unknown = from(&p, "198.51.100.2", "eve:4").await.unwrap_err();
    let seen = |c: &Challenge| (c.status, c.www_authenticate.clone(), c.retry_after_secs());
    assert_eq!(seen(&known), seen(&unknown));
    assert!(is_throttled(&known));
}

#[tokio::test]
async fn throttled_attempts_take_no_place_under_the_hashing_bound() {
    let p = builder().max_concurrent_hashes(1).build().unwrap();
    for creds in ["bob:1", "bob:2", "bob:3"] {
        from(&p, ATTACKER, creds).await.unwrap_err();
    }
    let held = p.hashing.hold();
    assert!(is_throttled(&from(&p, ATTACKER, "bob:4").await.unwrap_err()));
    // Another client's attempt waits for the check ahead of it rather than being refused.
    let (home, ()) = tokio::join!(from(&p, HOME, "bob:builder"), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(held);
    });
    assert!(home.is_ok());
    assert_eq!(p.stats().overloaded, 0);
}

#[tokio::test]
async fn a_bound_full_for_the_whole_wait_is_503() {
    let p = builder()
        .max_concurrent_hashes(1)
        .hash_wait(Duration::from_millis(50))
        .build()
        .unwrap();
    let _held = p.hashing.hold();
    let busy = from(&p, HOME, "bob:builder").await.unwrap_err();
    assert_eq!((busy.status, busy.retry_after_secs()), (503, Some(1)));
    assert_eq!(p.stats().overloaded, 1);
}

#[tokio::test]
async fn one_address_holds_its_share_of_the_checks_and_no_more() {
    // One place at a time, two per address: a third attempt from the attacker, while two of
    // its own are checked or waiting, is refused at once; the home client's is served.
    let p = std::sync::Arc::new(
        builder()
            .max_concurrent_hashes(1)
            .max_hashes_per_address(2)
            .build()
            .unwrap(),
    );
    let held = p.hashing.hold();
    let waiting: Vec<_> = (1..=2)
        .map(|n| {
            let p = p.clone();
            tokio::spawn(async move { from(&p, ATTACKER, &format!("bob:{n}")).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let third = from(&p, ATTACKER, "bob:3").await.unwrap_err();
    assert_eq!((third.status, third.retry_after_secs()), (429, Some(1)));
    assert_eq!(p.stats().over_address_share, 1);
    let (home, ()) = tokio::join!(from(&p, HOME, "bob:builder"), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(held);
    });
    assert!(home.is_ok(), "behind at most the attacker's share");
    for w in waiting {
        assert_eq!(w.await.unwrap().unwrap_err().status, 401);
    }
}

#[tokio::test]
async fn a_throttled_client_cannot_guess_against_the_cache() {
    let p = builder().build().unwrap();
    from(&p, HOME, "bob:builder").await.unwrap();
    for creds in ["bob:1", "bob:2", "bob:3"] {
        from(&p, ATTACKER, creds).await.unwrap_err();
    }
    assert!(is_throttled(&from(&p, ATTACKER, "bob:builder").await.unwrap_err()));
    assert_eq!(p.stats().cache_hits, 0);
}

#[tokio::test]
async fn a_user_under_attack_still_signs_in_from_home() {
    let p = builder().credential_cache(CacheConfig::disabled()).build().unwrap();
    from(&p, HOME, "bob:builder").await.unwrap();
    // Four addresses, one failure each: the user's limit, under every address's.
    for n in 1..=4 {
        from(&p, &format!("203.0.113.{n}"), "bob:guess").await.unwrap_err();
    }
    let elsewhere = from(&p, "198.51.100.7", "bob:builder").await.unwrap_err();
    assert!(is_throttled(&elsewhere), "a new address is slowed: {elsewhere:?}");
    assert_eq!(&*from(&p, HOME, "bob:builder").await.unwrap().principal, "bob");
    assert_eq!(
        from(&p, HOME, "bob:typo").await.unwrap_err().status,
        401,
        "checked, not refused"
    );
}

#[tokio::test]
async fn a_success_clears_the_address_and_user_record() {
    let c = config()
        .per_address(None)
        .per_user(None)
        .per_address_user(Some(limit(2)));
    let p = builder().throttle(c).build().unwrap();
    for _ in 0..3 {
        assert_eq!(from(&p, HOME, "bob:typo").await.unwrap_err().status, 401);
        assert!(from(&p, HOME, "bob:builder").await.is_ok());
    }
    from(&p, HOME, "bob:typo").await.unwrap_err();
    from(&p, HOME, "bob:typo").await.unwrap_err();
    assert!(is_throttled(&from(&p, HOME, "bob:typo").await.unwrap_err()));
}
