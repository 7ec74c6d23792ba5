//! The transport's configuration and its errors.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_auth::{AuthProvider, NoAuth};

/// How the Streamable HTTP endpoint behaves. Build it with [`HttpConfig::default`] and the
/// builder methods; every default is documented on its method.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The endpoint's path (default `/mcp`).
    pub path: String,
    /// Allowed `Origin` values (default `None`: the loopback origins on a loopback bind; a
    /// non-loopback bind refuses to start without a list). See [`HttpConfig::allowed_origins`].
    pub allowed_origins: Option<Vec<String>>,
    /// Allowed `Host` values (default `None`: loopback names on any port on a loopback bind, any
    /// host otherwise). See [`HttpConfig::allowed_hosts`].
    pub allowed_hosts: Option<Vec<String>>,
    /// Whether a request without an `Origin` header is accepted (default true: non-browser clients
    /// send none).
    pub allow_missing_origin: bool,
    /// Largest accepted request body (default 16 MiB); larger ones are answered 413.
    pub max_body_bytes: usize,
    /// Deepest accepted JSON nesting (default 64).
    pub max_depth: usize,
    /// Most POST requests handled at once (default 10,000); over it, 503 with a JSON-RPC error.
    pub max_in_flight: usize,
    /// Events kept per session for `Last-Event-ID` replay, and the capacity of each request's
    /// outbound channel (default 256).
    pub sse_buffer_size: usize,
    /// How often idle legacy sessions are swept by [`serve`](crate::serve) (default 60 s).
    pub session_sweep_interval: Duration,
    /// Whether legacy sessions are minted (default true). Without them `initialize` answers with
    /// no `Mcp-Session-Id`, legacy requests run sessionless, and GET/DELETE answer 405.
    pub sessions_enabled: bool,
    /// The `retry:` delay announced on the GET stream (SEP-1699; default 1 s).
    pub sse_retry: Duration,
    /// How often an idle SSE stream carries a keep-alive comment (default 15 s).
    pub sse_keep_alive: Duration,
    /// Who is asking (default [`NoAuth`]: everyone is `anonymous`). Every verb is authenticated
    /// before any session lookup.
    pub auth: Arc<dyn AuthProvider>,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("path", &self.path)
            .field("allowed_origins", &self.allowed_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allow_missing_origin", &self.allow_missing_origin)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_depth", &self.max_depth)
            .field("max_in_flight", &self.max_in_flight)
            .field("sse_buffer_size", &self.sse_buffer_size)
            .field("session_sweep_interval", &self.session_sweep_interval)
            .field("sessions_enabled", &self.sessions_enabled)
            .field("sse_retry", &self.sse_retry)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            allowed_origins: None,
            allowed_hosts: None,
            allow_missing_origin: true,
            max_body_bytes: mcp_protocol::jsonrpc::DEFAULT_MAX_BYTES,
            max_depth: mcp_protocol::jsonrpc::DEFAULT_MAX_DEPTH,
            max_in_flight: 10_000,
            sse_buffer_size: 256,
            session_sweep_interval: Duration::from_secs(60),
            sessions_enabled: true,
            sse_retry: Duration::from_secs(1),
            sse_keep_alive: Duration::from_secs(15),
            auth: Arc::new(NoAuth),
        }
    }
}

impl HttpConfig {
    /// Sets the endpoint's path (default `/mcp`; must start with `/`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Sets the allowed origins. Each entry is `scheme://host` (the scheme's default port),
    /// `scheme://host:port`, or `scheme://host:*` (any port); `*` allows every origin and `null`
    /// allows the literal `Origin: null`. Matching is structural (scheme, host, port), never a
    /// string prefix. Default: `http(s)://localhost`, `127.0.0.1` and `[::1]` on any port, which a
    /// non-loopback [`serve`](crate::serve) refuses (it needs an explicit list).
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the allowed `Host` header values (DNS-rebinding protection): `name` (any port),
    /// `name:port`, or `*` (any host). Default: `localhost`, `127.0.0.1` and `[::1]` on any port
    /// for a loopback bind (and for [`router`](crate::router)), any host for another bind.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Whether a request without `Origin` is accepted (default true).
    pub fn allow_missing_origin(mut self, allow: bool) -> Self {
        self.allow_missing_origin = allow;
        self
    }

    /// Sets the body size limit (default 16 MiB).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets the JSON nesting limit (default 64).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.max_depth = depth;
        self
    }

    /// Sets the cap on POST requests handled at once (default 10,000).
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n;
        self
    }

    /// Sets the per-session replay buffer and per-request channel size (default 256, at least 1).
    pub fn sse_buffer_size(mut self, n: usize) -> Self {
        self.sse_buffer_size = n.max(1);
        self
    }

    /// Sets the session sweep interval (default 60 s).
    pub fn session_sweep_interval(mut self, every: Duration) -> Self {
        self.session_sweep_interval = every;
        self
    }

    /// Enables or disables legacy sessions (default enabled).
    pub fn sessions_enabled(mut self, enabled: bool) -> Self {
        self.sessions_enabled = enabled;
        self
    }

    /// Sets the `retry:` delay of the GET stream (default 1 s).
    pub fn sse_retry(mut self, delay: Duration) -> Self {
        self.sse_retry = delay;
        self
    }

    /// Sets the keep-alive interval of SSE streams (default 15 s).
    pub fn sse_keep_alive(mut self, every: Duration) -> Self {
        self.sse_keep_alive = every;
        self
    }

    /// Sets the authentication provider (default [`NoAuth`]).
    pub fn auth(mut self, provider: Arc<dyn AuthProvider>) -> Self {
        self.auth = provider;
        self
    }
}

/// Why the transport could not be built or could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A non-loopback bind needs an explicit `allowed_origins` list.
    #[error("binding {addr} (not a loopback address) requires allowed_origins")]
    AllowedOriginsRequired {
        /// The address bound.
        addr: SocketAddr,
    },
    /// An `allowed_origins` entry does not parse.
    #[error("invalid allowed origin {0:?}: expected scheme://host[:port|:*], * or null")]
    InvalidOrigin(String),
    /// An `allowed_hosts` entry does not parse.
    #[error("invalid allowed host {0:?}: expected name[:port] or *")]
    InvalidHost(String),
    /// The endpoint path does not start with `/`.
    #[error("invalid endpoint path {0:?}: it must start with /")]
    InvalidPath(String),
    /// The listener failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
