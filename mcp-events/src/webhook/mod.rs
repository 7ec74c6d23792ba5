//! Webhook delivery (`events/subscribe`, `events/unsubscribe`): subscriptions keyed by
//! (principal, callback URL, type, arguments), granted a lifetime the client refreshes, whose
//! occurrences are POSTed to the callback signed per Standard Webhooks, after the endpoint
//! proved it wants them.
//!
//! - **Consent.** Before the first delivery to a (principal, URL), the server POSTs a
//!   `verification` envelope with a single-use challenge, which the endpoint echoes
//!   (`{"challenge": …}`, compared in constant time); an origin the operator trusts
//!   ([`EventsBuilder::trust_callback_origin`](crate::EventsBuilder::trust_callback_origin))
//!   needs no handshake. A failed handshake is -32015 with the failure's category, never the
//!   endpoint's words.
//! - **SSRF.** `https` only, and only globally routable addresses, checked when the name is
//!   resolved for every exchange ([`client`]); an origin the operator permits
//!   ([`Events::permit_callback_origin`](crate::Events::permit_callback_origin)) is exempt.
//! - **Delivery.** One task per subscription delivers its type's occurrences in order from its
//!   watermark, each retried on 5xx, 408, 425, 429 and failures to connect (1 s, 5 s, 30 s,
//!   5 min apart, re-signed each time), never after 410, 413 or a redirect; the watermark moves
//!   past what was delivered or abandoned. Sustained failure (95 % of at least 100 attempts in
//!   an hour) suspends it until the client refreshes. A body over 256 KiB is abandoned.
//! - **Lifetime.** A grant of the suggested `ttlMs` within bounds (default one hour, between a
//!   minute and a day). `ttlMs: null` is granted the longest finite lifetime, unless the
//!   operator allows grants without expiry ([`WebhookSettings::no_expiry`]: for subscriptions
//!   kept in a store that outlives the process); then it is granted none (`refreshBefore:
//!   null`), and such a subscription whose deliveries keep failing, without one success for
//!   the window given, is dropped, since nobody will ever let it lapse.
//! - **Stopping.** When the server's engine stops (its driver ends), its delivery tasks stop
//!   and give up their leases, so that another instance sharing the subscriptions takes them
//!   over at once.

pub mod client;
pub(crate) mod deliver;
pub(crate) mod methods;
pub mod store;

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use mcp_runtime::store::{Admission, MemoryBuckets, Quota};

use client::Sender;
use store::{MemorySubscriptions, SubscriptionStore};

/// The bounds of webhook subscriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookSettings {
    /// The lifetime granted when the client suggests none (one hour).
    pub default_ttl: Duration,
    /// The shortest lifetime granted (one minute).
    pub min_ttl: Duration,
    /// The longest lifetime granted (one day).
    pub max_ttl: Duration,
    /// How long one attempt may take, connection and answer included (5 s).
    pub attempt_timeout: Duration,
    /// At most this many subscriptions per principal (100): -32013 past it.
    pub max_per_principal: usize,
    /// How long a replaced secret still signs after a rotation (5 minutes).
    pub rotation_grace: Duration,
    /// How long an instance's hold on a subscription's deliveries lasts unrenewed (15 s): it
    /// renews it every third of that while it delivers, and when it stops (killed, cut off)
    /// another instance sharing the subscriptions takes the deliveries over within about this
    /// long, from the last watermark saved.
    pub lease: Duration,
    /// How many verification handshakes this instance starts toward one callback host
    /// (20 at once, then one a second): a server never becomes a way to flood a third party with
    /// POSTs, however many subscribes name it. Past it, `events/subscribe` is -32013 with
    /// `data.limit: "verifications"` and when to try again.
    pub verifications_per_host: Quota,
    /// Whether `ttlMs: null` is granted no expiry, and after how long of failing deliveries
    /// (no success since the first failure) such a subscription is dropped. `None` (the
    /// default): `ttlMs: null` is granted [`max_ttl`](Self::max_ttl). Meant for subscriptions
    /// kept in a store that outlives the process.
    pub no_expiry: Option<Duration>,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            default_ttl: Duration::from_secs(3600),
            min_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(86_400),
            attempt_timeout: Duration::from_secs(5),
            max_per_principal: 100,
            rotation_grace: Duration::from_secs(300),
            lease: Duration::from_secs(15),
            verifications_per_host: Quota::per_second(NonZeroU32::MIN)
                .with_burst(NonZeroU32::new(20).unwrap_or(NonZeroU32::MIN)),
            no_expiry: None,
        }
    }
}

/// The webhook side of [`Events`](crate::Events).
pub(crate) struct Webhooks {
    pub(crate) settings: WebhookSettings,
    pub(crate) store: Arc<dyn SubscriptionStore>,
    pub(crate) sender: Sender,
    /// Origins exempt from the scheme and routability rules.
    permitted: RwLock<HashSet<String>>,
    /// Origins that need no verification handshake.
    trusted: RwLock<HashSet<String>>,
    /// (principal, URL) pairs whose endpoint echoed a challenge.
    verified: Mutex<HashSet<(String, String)>>,
    /// The verification handshakes started per callback host.
    verifications: MemoryBuckets,
    /// The delivery task of each subscription this instance runs.
    pub(crate) workers: Mutex<HashMap<String, tokio::task::AbortHandle>>,
    /// This instance's name as a lease holder (drawn at random).
    pub(crate) holder: String,
}

impl WebhookSettings {
    /// Grants `ttlMs: null` no expiry, dropping such a subscription once its deliveries have
    /// failed for `window` without one success (see [`no_expiry`](Self::no_expiry)).
    pub fn with_no_expiry(mut self, window: Duration) -> Self {
        self.no_expiry = Some(window);
        self
    }

    /// When (ms) subscription `sub` is dropped for failing: set only when it is granted without
    /// expiry and its deliveries are failing, at the end of the failure window.
    pub(crate) fn drop_due(&self, sub: &store::Subscription) -> Option<u64> {
        let (Some(window), Some(since)) = (self.no_expiry, sub.failed_since_ms) else {
            return None;
        };
        (!sub.expires()).then(|| since.saturating_add(u64::try_from(window.as_millis()).unwrap_or(u64::MAX)))
    }

    /// Whether subscription `sub` is granted without expiry and its deliveries have failed for
    /// the whole window at `now` (ms): it is dropped.
    pub(crate) fn collects(&self, sub: &store::Subscription, now: u64) -> bool {
        self.drop_due(sub).is_some_and(|due| now >= due)
    }
}

impl Webhooks {
    pub(crate) fn new(
        settings: WebhookSettings,
        store: Option<Arc<dyn SubscriptionStore>>,
        permitted: HashSet<String>,
        trusted: HashSet<String>,
    ) -> Self {
        Webhooks {
            settings,
            store: store.unwrap_or_else(|| Arc::new(MemorySubscriptions::default())),
            sender: Sender::new(settings.attempt_timeout),
            permitted: RwLock::new(permitted),
            trusted: RwLock::new(trusted),
            verified: Mutex::new(HashSet::new()),
            verifications: MemoryBuckets::new(),
            workers: Mutex::new(HashMap::new()),
            holder: format!("{:016x}", crate::time::random_u64()),
        }
    }

    pub(crate) fn permits(&self, origin: &str) -> bool {
        self.permitted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(origin)
    }

    pub(crate) fn permit(&self, origin: &str) {
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        self.permitted.write().unwrap_or_else(|e| e.into_inner()).insert(origin);
    }

    pub(crate) fn trusts(&self, origin: &str) -> bool {
        self.trusted.read().unwrap_or_else(|e| e.into_inner()).contains(origin)
    }

    pub(crate) fn is_verified(&self, principal: &str, url: &str) -> bool {
        let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        verified.contains(&(principal.to_owned(), url.to_owned()))
    }

    /// Takes one verification handshake toward `host` from its budget; when it is spent, the
    /// rate (a minute's worth) and how long until the next is allowed.
    pub(crate) fn verification_toward(&self, host: &str) -> Result<(), (u64, Duration)> {
        let host = host.to_ascii_lowercase();
        let quota = self.settings.verifications_per_host;
        match self.verifications.check(host.as_str(), quota) {
            Admission::Allowed => Ok(()),
            Admission::Limited { retry_after } => {
                let interval = u64::try_from(quota.interval().as_micros()).unwrap_or(u64::MAX).max(1);
                Err((60_000_000 / interval, retry_after))
            }
        }
    }

    pub(crate) fn mark_verified(&self, principal: &str, url: &str) {
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        verified.insert((principal.to_owned(), url.to_owned()));
    }
}

/// `scheme://host[:port]` of an origin or URL as given to an allow-list.
pub(crate) fn normalize_origin(origin: &str) -> String {
    origin.trim_end_matches('/').to_ascii_lowercase()
}
