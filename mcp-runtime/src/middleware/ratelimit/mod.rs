//! [`RateLimit`]: the built-in rate-limit layer.
//!
//! Each counted request takes one request from its caller's bucket (a GCRA: `burst` at once,
//! then one per interval). A caller is its principal when authenticated, its address when
//! anonymous (an IPv6 client by its /64; stdio, which has no address, is one client per
//! process). Every call of a JSON-RPC batch goes through the chain on its own, so a batch of N
//! counted calls takes N. Over its quota a request is refused before any handler runs: JSON-RPC
//! error [`codes::RATE_LIMITED`](mcp_protocol::codes::RATE_LIMITED) with
//! `data.retryAfterMs`, and over HTTP status 429 with `Retry-After` (whole seconds, rounded up).
//!
//! The buckets live in a [`RateBuckets`] seam: in this process's memory by default, in the
//! shared store when the server has one (`McpServer::builder().store(…)`, or
//! [`RateLimit::buckets`]), so that several instances hold a client to one rate.

mod key;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::error::{Stage, retry_after_seconds, status_at};
use mcp_protocol::{Method, RpcError};

use key::BucketKey;
pub use key::Bucketing;

use super::{Inbound, Middleware, Next, Outcome};
use crate::api::handler::BoxFuture;
use crate::store::{Admission, MemoryBuckets, Quota, RateBuckets, StoreError};

/// The quota of a caller, decided per request by [`RateLimit::per_caller`].
pub type QuotaHook = Arc<dyn Fn(&AuthInfo) -> Option<Quota> + Send + Sync>;

/// What the layer does when the shared buckets cannot decide (the store is down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnStoreFailure {
    /// Decide with the layer's own in-process buckets until the store answers again (the
    /// default): each instance then holds a client to its rate on its own, so behind N
    /// instances a client gets at most N times its rate, never an unlimited one, and nothing is
    /// refused because of the store. A warning is logged (at most every 10 s).
    #[default]
    Local,
    /// Let the request through unlimited (a warning is logged, at most every 10 s).
    Open,
    /// Refuse the request: -32603 "Store unavailable", HTTP 503 with `Retry-After: 1`.
    Closed,
}

/// Which requests count (a few methods each: a list is searched faster than a set is hashed).
#[derive(Debug, Clone)]
enum Counted {
    /// The requests of these methods.
    Methods(Vec<Method>),
    /// Every request but these methods, `initialize`, `ping`, `server/discover` and the list
    /// methods (`…/list`).
    AllExcept(Vec<Method>),
}

/// Whose quota a request counts against.
#[derive(Clone)]
enum Quotas {
    /// One quota for every caller.
    Fixed(Quota),
    /// The quota the hook gives the caller (`None`: unlimited).
    PerCaller(QuotaHook),
}

/// The settings, shared by every request the layer sees.
#[derive(Clone)]
struct Settings {
    quota: Quotas,
    counted: Counted,
    notifications: bool,
    bucketing: Bucketing,
    buckets: Option<Arc<dyn RateBuckets>>,
    on_failure: OnStoreFailure,
}

/// The built-in rate-limit middleware layer (see the [module docs](self)).
///
/// By default it counts `tools/call` requests only, one bucket per caller, in this process's
/// memory (or the server's shared store), and lets everything else through: `server/discover`,
/// `initialize`, `ping`, the list methods and notifications are never counted unless asked.
///
/// ```
/// # mod mcp_server { pub use mcp_runtime::middleware::RateLimit; pub use mcp_runtime::store; }
/// use std::num::NonZeroU32;
/// use mcp_server::RateLimit;
/// use mcp_server::store::Quota;
///
/// // 10 tool calls per second per caller, 20 at once.
/// let limit = RateLimit::new("10:20".parse::<Quota>().unwrap());
/// // Every request but discovery, lists and notifications, per method.
/// let wide = RateLimit::new(Quota::per_second(NonZeroU32::new(50).unwrap())).all_requests().per_method();
/// # let _ = (limit, wide);
/// ```
#[derive(Clone)]
pub struct RateLimit {
    settings: Arc<Settings>,
    /// The in-process buckets: the buckets themselves without a shared seam, the fallback of
    /// [`OnStoreFailure::Local`] with one.
    local: Arc<MemoryBuckets<BucketKey>>,
    /// When the layer was made, and when it last warned about the store (ms since then).
    origin: Instant,
    warned: Arc<AtomicU64>,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.settings;
        f.debug_struct("RateLimit")
            .field(
                "quota",
                &match &s.quota {
                    Quotas::Fixed(q) => Some(q),
                    Quotas::PerCaller(_) => None,
                },
            )
            .field("counted", &s.counted)
            .field("notifications", &s.notifications)
            .field("bucketing", &s.bucketing)
            .field("shared", &s.buckets.is_some())
            .field("on_failure", &s.on_failure)
            .finish()
    }
}

/// How long between two warnings that the shared buckets failed.
const WARN_EVERY: Duration = Duration::from_secs(10);

impl RateLimit {
    /// Every caller gets `quota` for its `tools/call` requests.
    pub fn new(quota: Quota) -> RateLimit {
        Self::with(Quotas::Fixed(quota))
    }

    /// Each caller gets the quota `hook` gives its identity (called on each counted request;
    /// anonymous callers get [`AuthInfo::anonymous`]); `None` leaves the caller unlimited.
    ///
    /// ```
    /// # mod mcp_server { pub use mcp_runtime::middleware::RateLimit; pub use mcp_runtime::store; }
    /// use std::num::NonZeroU32;
    /// use mcp_server::RateLimit;
    /// use mcp_server::store::Quota;
    ///
    /// let limit = RateLimit::per_caller(|auth| match () {
    ///     _ if auth.has_scope("internal") => None,
    ///     _ if auth.has_scope("premium") => Some(Quota::per_second(NonZeroU32::new(100).unwrap())),
    ///     _ => Some(Quota::per_second(NonZeroU32::new(5).unwrap())),
    /// });
    /// # let _ = limit;
    /// ```
    pub fn per_caller<F>(hook: F) -> RateLimit
    where
        F: Fn(&AuthInfo) -> Option<Quota> + Send + Sync + 'static,
    {
        Self::with(Quotas::PerCaller(Arc::new(hook)))
    }

    fn with(quota: Quotas) -> RateLimit {
        let counted = Counted::Methods(vec![Method::ToolsCall]);
        RateLimit {
            settings: Arc::new(Settings {
                quota,
                counted,
                notifications: false,
                bucketing: Bucketing::PerCaller,
                buckets: None,
                on_failure: OnStoreFailure::Local,
            }),
            local: Arc::new(MemoryBuckets::default()),
            origin: Instant::now(),
            warned: Arc::new(AtomicU64::new(0)),
        }
    }

    fn set(mut self, f: impl FnOnce(&mut Settings)) -> Self {
        f(Arc::make_mut(&mut self.settings));
        self
    }

    /// Counts the requests of these methods only (by their wire names; default: `tools/call`).
    pub fn methods<I, S>(self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut list: Vec<Method> = Vec::new();
        for method in methods {
            let method = Method::parse(&method.into());
            if !list.contains(&method) {
                list.push(method);
            }
        }
        self.set(|s| s.counted = Counted::Methods(list))
    }

    /// Counts every request except `initialize`, `ping`, `server/discover`, the list methods
    /// (`tools/list`, `resources/list`, … : any method ending in `/list`) and those passed to
    /// [`exempt`](Self::exempt).
    pub fn all_requests(self) -> Self {
        self.set(|s| {
            if let Counted::Methods(_) = s.counted {
                s.counted = Counted::AllExcept(Vec::new());
            }
        })
    }

    /// Never counts `method` (with [`all_requests`](Self::all_requests); with
    /// [`methods`](Self::methods) it removes it from the counted set).
    pub fn exempt(self, method: impl Into<String>) -> Self {
        let method = Method::parse(&method.into());
        self.set(|s| match &mut s.counted {
            Counted::Methods(list) => list.retain(|m| *m != method),
            Counted::AllExcept(list) => {
                if !list.contains(&method) {
                    list.push(method);
                }
            }
        })
    }

    /// Counts notifications too (default: never). A refused notification is dropped (HTTP 429).
    pub fn notifications(self, count: bool) -> Self {
        self.set(|s| s.notifications = count)
    }

    /// One bucket per caller and tool (`tools/call`) or method (others), instead of one per
    /// caller.
    pub fn per_tool(self) -> Self {
        self.set(|s| s.bucketing = Bucketing::PerTool)
    }

    /// One bucket per caller and method, instead of one per caller.
    pub fn per_method(self) -> Self {
        self.set(|s| s.bucketing = Bucketing::PerMethod)
    }

    /// Keeps the buckets in `buckets` (a shared store's, `Store::buckets`) instead of this
    /// process's memory. A server built with a store and `McpServerBuilder::rate_limit` (in
    /// `mcp-server`) uses the store's without being told.
    pub fn buckets(self, buckets: Arc<dyn RateBuckets>) -> Self {
        self.set(|s| s.buckets = Some(buckets))
    }

    /// Whether the buckets were set with [`buckets`](Self::buckets).
    pub fn has_buckets(&self) -> bool {
        self.settings.buckets.is_some()
    }

    /// What to do when the shared buckets fail (default: [`OnStoreFailure::Local`]).
    pub fn on_store_failure(self, policy: OnStoreFailure) -> Self {
        self.set(|s| s.on_failure = policy)
    }

    /// Whether `request` counts against a bucket.
    fn counts(&self, request: &Inbound) -> bool {
        let Some(method) = request.request_method() else {
            return self.settings.notifications;
        };
        match &self.settings.counted {
            Counted::Methods(list) => list.contains(method),
            Counted::AllExcept(list) => {
                !(list.contains(method)
                    || method.as_str().ends_with("/list")
                    || matches!(method, Method::Initialize | Method::Ping | Method::Discover))
            }
        }
    }

    /// The caller's quota (`None`: unlimited).
    fn quota(&self, request: &Inbound) -> Option<Quota> {
        match &self.settings.quota {
            Quotas::Fixed(q) => Some(*q),
            Quotas::PerCaller(hook) => hook(request.auth()),
        }
    }

    /// Asks the shared buckets, applying the failure policy; `Err` is the answer to give
    /// instead.
    async fn admit_shared(
        &self,
        shared: &dyn RateBuckets,
        key: &BucketKey,
        quota: Quota,
    ) -> Result<Admission, Outcome> {
        match shared.acquire(&key.to_string(), quota).await {
            Ok(admission) => Ok(admission),
            Err(error) => {
                self.warn(&error);
                match self.settings.on_failure {
                    OnStoreFailure::Local => Ok(self.local.check(key, quota)),
                    OnStoreFailure::Open => Ok(Admission::Allowed),
                    OnStoreFailure::Closed => Err(Outcome::error(RpcError::store_unavailable())
                        .with_status(503)
                        .with_header("retry-after", "1")),
                }
            }
        }
    }

    fn warn(&self, error: &StoreError) {
        let now = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.warned.load(Ordering::Relaxed);
        let first = last == 0;
        if (first || now.saturating_sub(last) >= WARN_EVERY.as_millis() as u64)
            && self
                .warned
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(%error, policy = ?self.settings.on_failure, "rate-limit buckets unavailable");
        }
    }

    /// A counted request with shared buckets: the decision awaits the store.
    async fn shared(
        self,
        shared: Arc<dyn RateBuckets>,
        request: Inbound,
        next: Next,
        key: BucketKey,
        quota: Quota,
    ) -> Outcome {
        match self.admit_shared(&*shared, &key, quota).await {
            Ok(admission) => self.decided(admission, &key, request, next).await,
            Err(outcome) => outcome,
        }
    }

    /// Passes `request` on, or refuses it, as the buckets decided.
    fn decided(&self, admission: Admission, key: &BucketKey, request: Inbound, next: Next) -> BoxFuture<Outcome> {
        match admission {
            Admission::Allowed => Box::pin(next.run(request)),
            Admission::Limited { retry_after } => {
                tracing::debug!(method = request.method(), bucket = %key, ?retry_after, "rate limited");
                let refused = refusal(&request, retry_after);
                Box::pin(std::future::ready(refused))
            }
        }
    }
}

/// The answer to a request over its quota: the JSON-RPC error, HTTP 429 and `Retry-After`.
fn refusal(request: &Inbound, retry_after: Duration) -> Outcome {
    let error = RpcError::rate_limited(retry_after);
    let status = status_at(Stage::Quota, request.era(), error.code);
    Outcome::error(error)
        .with_status(status)
        .with_header("retry-after", retry_after_seconds(retry_after).to_string())
}

impl Middleware for RateLimit {
    fn call(&self, request: Inbound, next: Next) -> BoxFuture<Outcome> {
        if !self.counts(&request) {
            return Box::pin(next.run(request));
        }
        let Some(quota) = self.quota(&request) else {
            return Box::pin(next.run(request));
        };
        let key = key::bucket_key(&request, self.settings.bucketing);
        if let Some(shared) = &self.settings.buckets {
            return Box::pin(self.clone().shared(shared.clone(), request, next, key, quota));
        }
        // In this process the decision is made at once: no future of the layer's own.
        let admission = self.local.check(&key, quota);
        self.decided(admission, &key, request, next)
    }
}
