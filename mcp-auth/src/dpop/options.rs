//! How a bearer provider treats DPoP: the mode and the options.

use std::sync::Arc;
use std::time::Duration;

use crate::dpop::replay::ReplayCache;

/// The JWS algorithms accepted for DPoP proofs unless configured otherwise.
pub const DEFAULT_ALGORITHMS: &[&str] = &["ES256", "RS256"];
/// Every JWS algorithm that may be accepted for DPoP proofs: the asymmetric ones this crate
/// verifies.
pub const SUPPORTED_ALGORITHMS: &[&str] = &[
    "ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA",
];
/// How far a proof's `iat` may be from the server's time, either way, unless configured.
pub const DEFAULT_IAT_WINDOW: Duration = Duration::from_secs(60);
/// The longest DPoP proof accepted unless configured otherwise, in bytes (8 KiB).
pub const DEFAULT_MAX_PROOF_LEN: usize = 8 * 1024;
/// How long a server-provided nonce stays fresh unless configured otherwise.
pub const DEFAULT_NONCE_LIFETIME: Duration = Duration::from_secs(300);
/// The shortest nonce secret accepted, in bytes.
pub const MIN_NONCE_SECRET: usize = 32;

/// Which schemes a bearer provider accepts (see the [module documentation](super)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DpopMode {
    /// `Bearer` only, as a DPoP-unaware resource server: a DPoP-bound token sent as a bearer
    /// token is accepted, the `DPoP` scheme is unknown.
    #[default]
    Off,
    /// `Bearer` for unbound tokens and `DPoP` for bound ones; a bound token sent as a bearer
    /// token is refused.
    Allowed,
    /// `DPoP` only: every token must be bound and every request carry a proof.
    Required,
}

#[derive(Clone)]
pub(crate) enum NonceSecret {
    Random,
    Given(Vec<u8>),
}

/// The options of DPoP checking, for
/// [`BearerAuthBuilder::dpop_options`](crate::BearerAuthBuilder::dpop_options).
///
/// ```
/// use std::time::Duration;
/// use mcp_auth::{BearerAuth, DpopMode, DpopOptions};
///
/// let provider = BearerAuth::builder()
///     .es256_pem(include_str!("../../testdata/ec_public.pem"))
///     .audience("https://mcp.example.com/mcp")
///     .dpop(DpopMode::Required)
///     .dpop_url("https://mcp.example.com/mcp")
///     .dpop_options(
///         DpopOptions::new()
///             .algorithms(["ES256"])
///             .iat_window(Duration::from_secs(30))
///             .require_nonce(),
///     )
///     .build()
///     .unwrap();
/// # let _ = provider;
/// ```
#[derive(Clone)]
pub struct DpopOptions {
    pub(crate) algorithms: Vec<String>,
    pub(crate) iat_window: Duration,
    pub(crate) max_proof_len: usize,
    pub(crate) nonce: Option<NonceSecret>,
    pub(crate) nonce_lifetime: Duration,
    pub(crate) replay_cache: Option<Arc<dyn ReplayCache>>,
}

impl Default for DpopOptions {
    fn default() -> Self {
        DpopOptions {
            algorithms: DEFAULT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect(),
            iat_window: DEFAULT_IAT_WINDOW,
            max_proof_len: DEFAULT_MAX_PROOF_LEN,
            nonce: None,
            nonce_lifetime: DEFAULT_NONCE_LIFETIME,
            replay_cache: None,
        }
    }
}

impl std::fmt::Debug for DpopOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopOptions")
            .field("algorithms", &self.algorithms)
            .field("iat_window", &self.iat_window)
            .field("max_proof_len", &self.max_proof_len)
            .field("nonce", &self.nonce.is_some())
            .field("nonce_lifetime", &self.nonce_lifetime)
            .field("replay_cache", &self.replay_cache.is_some())
            .finish()
    }
}

impl DpopOptions {
    /// The defaults: ES256 and RS256, a 60 s `iat` window, 8 KiB proofs, no nonce, an
    /// in-memory replay cache of [`DEFAULT_REPLAY_ENTRIES`](super::DEFAULT_REPLAY_ENTRIES).
    pub fn new() -> Self {
        Self::default()
    }

    /// The JWS algorithms accepted for proofs, by their `alg` names (advertised in `algs`, in
    /// this order): some of [`SUPPORTED_ALGORITHMS`]. Any other name (`none`, `HS256`, …) or
    /// none at all fails `build()`.
    pub fn algorithms<S: Into<String>>(mut self, algorithms: impl IntoIterator<Item = S>) -> Self {
        self.algorithms = algorithms.into_iter().map(Into::into).collect();
        self
    }

    /// How far a proof's `iat` may be from the server's time, either way (whole seconds, at
    /// least 1). Proofs are remembered against replay for as long.
    pub fn iat_window(mut self, window: Duration) -> Self {
        self.iat_window = window;
        self
    }

    /// The longest proof accepted, in bytes (at least 512); longer ones are refused unread.
    pub fn max_proof_len(mut self, bytes: usize) -> Self {
        self.max_proof_len = bytes;
        self
    }

    /// Requires proofs to carry a nonce issued by this server (RFC 9449 §9), under a secret
    /// drawn at random when the provider is built: instances of one server behind a load
    /// balancer should share one with [`nonce_secret`](Self::nonce_secret) instead.
    pub fn require_nonce(mut self) -> Self {
        if self.nonce.is_none() {
            self.nonce = Some(NonceSecret::Random);
        }
        self
    }

    /// Requires nonces (as [`require_nonce`](Self::require_nonce)) made with this secret (at
    /// least [`MIN_NONCE_SECRET`] bytes), so that every instance sharing it accepts the nonces
    /// of the others.
    pub fn nonce_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.nonce = Some(NonceSecret::Given(secret.into()));
        self
    }

    /// How long a nonce stays fresh (default 5 min; whole seconds, at least 1).
    pub fn nonce_lifetime(mut self, lifetime: Duration) -> Self {
        self.nonce_lifetime = lifetime;
        self
    }

    /// Where used proofs are remembered, instead of a [`MemoryReplayCache`](super::MemoryReplayCache)
    /// of this process: a cache shared by every instance of the server (e.g.
    /// `mcp_store_redis::RedisReplayCache`) makes proofs single-use across them.
    pub fn replay_cache(mut self, cache: impl ReplayCache) -> Self {
        self.replay_cache = Some(Arc::new(cache));
        self
    }
}
