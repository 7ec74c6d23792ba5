//! The transport's configuration: [`HttpConfig`] and its builder methods, and [`HttpMode`].

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use mcp_auth::{AuthProvider, NoAuth};
use serde_json::Value;

#[cfg(feature = "tls")]
use crate::error::HttpError;
#[cfg(feature = "tls")]
use crate::tls;

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
    /// Long-lived streams take no slot of it once open: they have
    /// [`HttpConfig::max_streams`].
    pub max_in_flight: usize,
    /// Most requests one client address has handled at once (default 1,000, a tenth of
    /// [`HttpConfig::max_in_flight`]); over it, 429 with `Retry-After` and a JSON-RPC error.
    /// See [`HttpConfig::max_in_flight_per_address`].
    pub max_in_flight_per_address: usize,
    /// Most long-lived streams held at once, every kind and client together (default 8,192): a
    /// `subscriptions/listen`, a session's GET stream (or its resumption of a POST stream), the
    /// 2024-11-05 pair's SSE stream. Over it a stream is refused with 503, `Retry-After` and a
    /// JSON-RPC error; calls are served as before. Never more than
    /// [`HttpConfig::max_connections`] less a quarter of it: that quarter of the connections
    /// is always left to calls. See [`HttpConfig::max_streams`].
    pub max_streams: usize,
    /// Most long-lived streams one client address holds at once (default 64); over it a
    /// stream is refused with 429 and `Retry-After`. See [`HttpConfig::max_streams`].
    pub max_streams_per_address: usize,
    /// Most messages in one JSON-RPC batch (default 128): a longer batch is refused with 400
    /// and -32600 before it is decoded whole. Each request of a batch also takes a slot of
    /// [`HttpConfig::max_in_flight`] while it runs.
    pub max_batch: usize,
    /// Events kept per session for `Last-Event-ID` replay of the GET stream, events kept per
    /// resumable POST stream, and the capacity of each request's outbound channel (default 256).
    pub sse_buffer_size: usize,
    /// How often idle legacy sessions are swept by [`serve`](crate::serve) (default 60 s).
    pub session_sweep_interval: Duration,
    /// Whether legacy sessions are minted (default true). Without them `initialize` answers with
    /// no `Mcp-Session-Id`, legacy requests run sessionless, and GET/DELETE answer 405.
    pub sessions_enabled: bool,
    /// The `retry:` delay announced on resumable streams: the GET stream and the legacy POST
    /// streams of a session (SEP-1699; default 1 s).
    pub sse_retry: Duration,
    /// How often an idle SSE stream carries a keep-alive comment (default 15 s).
    pub sse_keep_alive: Duration,
    /// Who is asking (default [`NoAuth`]: everyone is `anonymous`). Every verb is authenticated
    /// before any session lookup.
    pub auth: Arc<dyn AuthProvider>,
    /// Streamable HTTP (default) or the simple POST-only mode. See [`HttpMode`].
    pub mode: HttpMode,
    /// Most connections served at once by [`serve`](crate::serve) (default 16,384). At the cap,
    /// the longest-idle connection (no request in flight) is closed to admit a new one; when
    /// every connection has a request in flight, a connection of the peer address holding the
    /// most is closed if it holds at least two more than the newcomer's, and otherwise the new
    /// one is closed at once. The slot is released however a connection ends.
    pub max_connections: usize,
    /// How long reading one request body may take (default 60 s); a slower body is answered
    /// `408 Request Timeout` with a JSON-RPC error.
    pub body_timeout: Duration,
    /// How long a graceful shutdown ([`serve`](crate::serve), an
    /// [`EndpointHandle`](crate::EndpointHandle)) waits for the calls in flight, once every
    /// stream has ended (default 10 s). Past it every session is closed and the calls still
    /// running are cancelled (each with the engine's `cancel_grace` to clean up).
    pub shutdown_grace: Duration,
    /// How long a graceful shutdown keeps serving as usual once `/readyz` answers 503, before
    /// it stops accepting connections and ends the streams (default zero). See
    /// [`HttpConfig::readiness_delay`].
    pub readiness_delay: Duration,
    /// The paths of the health probes, `(liveness, readiness)` (default `/livez` and
    /// `/readyz`; `None`: not served). See [`HttpConfig::probes`].
    pub probes: Option<(String, String)>,
    /// TLS for [`serve`](crate::serve) (default none: cleartext HTTP/1.1 and h2c). See
    /// [`HttpConfig::with_tls`]. Feature `tls`.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The 2024-11-05 HTTP+SSE pair: `(sse_path, sse_message_path)` (default none). See
    /// [`HttpConfig::sse_pair`].
    pub sse_pair: Option<(String, String)>,
    /// SEP-1699 polling: a legacy `tools/call` still running this long after it started has its
    /// POST stream closed by the server (default none: never). See [`HttpConfig::poll_after`].
    pub poll_after: Option<Duration>,
    /// The tools [`HttpConfig::poll_after`] applies to (default `None`: every tool).
    pub poll_tools: Option<Vec<String>>,
    /// How long a modern call may run before its answer becomes a stream (default none:
    /// only when it emits a notification). See [`HttpConfig::open_stream_after`].
    pub open_stream_after: Option<Duration>,
    /// The RFC 9728 protected-resource metadata document (default none). See
    /// [`HttpConfig::with_resource_metadata`].
    pub resource_metadata: Option<Arc<Value>>,
    /// The Server Card served at `<path>/server-card` (default none). See
    /// [`HttpConfig::with_server_card`].
    pub server_card: Option<Arc<Value>>,
    /// The AI Catalog served at `/.well-known/ai-catalog.json` (default none). See
    /// [`HttpConfig::with_catalog`].
    pub catalog: Option<Arc<Value>>,
    /// How long [`serve`](crate::serve) waits for a request's headers on HTTP/1.1 (default
    /// 30 s): a client that drips them, or sends nothing after a reply on a keep-alive
    /// connection, has its connection closed. See [`HttpConfig::header_read_timeout`].
    pub header_read_timeout: Duration,
    /// How long [`serve`](crate::serve) keeps a connection that has no request in flight
    /// (default 60 s): a connection that never sends a byte, an HTTP/2 connection with no open
    /// stream. See [`HttpConfig::idle_timeout`].
    pub idle_timeout: Duration,
    /// How long a response write may make no progress (default 30 s): a client that stops
    /// reading has the stream ended, then its connection closed. See
    /// [`HttpConfig::stall_timeout`].
    pub stall_timeout: Duration,
    /// The HTTP/2 keep-alive ping interval (default 30 s; `None`: no pings). See
    /// [`HttpConfig::h2_keep_alive`].
    pub h2_keep_alive_interval: Option<Duration>,
    /// How long an HTTP/2 keep-alive ping may go unanswered before the connection is closed
    /// (default 20 s).
    pub h2_keep_alive_timeout: Duration,
    /// Most concurrent streams of one HTTP/2 connection (default 200), announced in
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`; a stream over it is refused (`REFUSED_STREAM`).
    pub h2_max_concurrent_streams: u32,
    /// Largest HTTP/2 header list, decoded (default 16 KiB), announced in
    /// `SETTINGS_MAX_HEADER_LIST_SIZE`; a larger (or one that decompresses larger) block is
    /// refused.
    pub h2_max_header_list_size: u32,
    /// Most HTTP/2 streams reset by the client before the server accepted them (default 20):
    /// past it the connection is closed with `GOAWAY` (the "rapid reset" attack).
    pub h2_max_pending_accept_reset_streams: usize,
    /// Most HTTP/2 streams the server resets for a client's protocol errors (default 1,024):
    /// past it the connection is closed with `GOAWAY`.
    pub h2_max_local_error_reset_streams: usize,
    /// Most bytes buffered for sending on one HTTP/2 stream (default 400 KiB).
    pub h2_max_send_buf_size: usize,
    /// Reverse proxies whose `X-Forwarded-For` is believed (default none: the client address
    /// is the socket's peer). See [`HttpConfig::trusted_proxies`].
    pub trusted_proxies: Vec<IpAddr>,
}

/// How the endpoint serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpMode {
    /// Streamable HTTP: POST, GET, DELETE and OPTIONS, legacy sessions, SSE replies, both eras.
    #[default]
    Streamable,
    /// POST only (other verbs `405` with `Allow: POST, OPTIONS`), no sessions, no SSE: every
    /// reply is JSON, and server-to-client requests fail at once. Notifications are answered
    /// `202 Accepted`, as the specification says (the reference implementation answers `204`).
    /// Origin, Host, CORS and authentication are the same as in the streamable mode.
    Simple,
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
            .field("max_in_flight_per_address", &self.max_in_flight_per_address)
            .field("max_streams", &self.max_streams)
            .field("max_streams_per_address", &self.max_streams_per_address)
            .field("max_batch", &self.max_batch)
            .field("sse_buffer_size", &self.sse_buffer_size)
            .field("session_sweep_interval", &self.session_sweep_interval)
            .field("sessions_enabled", &self.sessions_enabled)
            .field("sse_retry", &self.sse_retry)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .field("mode", &self.mode)
            .field("max_connections", &self.max_connections)
            .field("body_timeout", &self.body_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("readiness_delay", &self.readiness_delay)
            .field("probes", &self.probes)
            .field("tls", &self.has_tls())
            .field("sse_pair", &self.sse_pair)
            .field("poll_after", &self.poll_after)
            .field("poll_tools", &self.poll_tools)
            .field("open_stream_after", &self.open_stream_after)
            .field("resource_metadata", &self.resource_metadata.is_some())
            .field("server_card", &self.server_card.is_some())
            .field("catalog", &self.catalog.is_some())
            .field("header_read_timeout", &self.header_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("stall_timeout", &self.stall_timeout)
            .field("h2_keep_alive_interval", &self.h2_keep_alive_interval)
            .field("h2_keep_alive_timeout", &self.h2_keep_alive_timeout)
            .field("h2_max_concurrent_streams", &self.h2_max_concurrent_streams)
            .field("h2_max_header_list_size", &self.h2_max_header_list_size)
            .field(
                "h2_max_pending_accept_reset_streams",
                &self.h2_max_pending_accept_reset_streams,
            )
            .field(
                "h2_max_local_error_reset_streams",
                &self.h2_max_local_error_reset_streams,
            )
            .field("h2_max_send_buf_size", &self.h2_max_send_buf_size)
            .field("trusted_proxies", &self.trusted_proxies)
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
            max_in_flight_per_address: 1_000,
            max_streams: 8_192,
            max_streams_per_address: 64,
            max_batch: mcp_protocol::jsonrpc::DEFAULT_MAX_BATCH,
            sse_buffer_size: 256,
            session_sweep_interval: Duration::from_secs(60),
            sessions_enabled: true,
            sse_retry: Duration::from_secs(1),
            sse_keep_alive: Duration::from_secs(15),
            auth: Arc::new(NoAuth),
            mode: HttpMode::Streamable,
            max_connections: 16_384,
            body_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            readiness_delay: Duration::ZERO,
            probes: Some(("/livez".to_owned(), "/readyz".to_owned())),
            #[cfg(feature = "tls")]
            tls: None,
            sse_pair: None,
            poll_after: None,
            poll_tools: None,
            open_stream_after: None,
            resource_metadata: None,
            server_card: None,
            catalog: None,
            header_read_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            stall_timeout: Duration::from_secs(30),
            h2_keep_alive_interval: Some(Duration::from_secs(30)),
            h2_keep_alive_timeout: Duration::from_secs(20),
            h2_max_concurrent_streams: 200,
            h2_max_header_list_size: 16 * 1024,
            h2_max_pending_accept_reset_streams: 20,
            h2_max_local_error_reset_streams: 1024,
            h2_max_send_buf_size: 400 * 1024,
            trusted_proxies: Vec::new(),
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

    /// Sets the share of [`HttpConfig::max_in_flight`] one client address may hold (default
    /// 1,000): a client holding that many requests in flight (slow bodies, slow calls) is
    /// answered 429 with `Retry-After` and -32603 "Too many requests in flight from this
    /// address", and the other slots stay everyone else's. The address is the one
    /// [`HttpConfig::trusted_proxies`] resolve; clients behind one address share its share.
    pub fn max_in_flight_per_address(mut self, n: usize) -> Self {
        self.max_in_flight_per_address = n;
        self
    }

    /// Sets the stream budget: the most long-lived streams held at once, in all (default 8,192)
    /// and per client address (default 64). A stream is a `subscriptions/listen`, a session's GET
    /// stream or its resumption of a POST stream, or the 2024-11-05 pair's SSE stream; it takes
    /// no slot of [`HttpConfig::max_in_flight`] once open, so that streams never starve calls.
    /// Over the total a new stream is refused with 503 and `Retry-After`, over its address's
    /// share with 429 and `Retry-After` (a JSON-RPC error naming the bound in both cases). The
    /// total is held to [`HttpConfig::max_connections`] less a quarter of it (rounded up), so
    /// that connections holding no stream always remain for calls. Clients behind one address
    /// (a NAT, a proxy not named in [`HttpConfig::trusted_proxies`]) share its share.
    pub fn max_streams(mut self, total: usize, per_address: usize) -> Self {
        self.max_streams = total;
        self.max_streams_per_address = per_address;
        self
    }

    /// Sets [`HttpConfig::max_batch`] (default 128).
    pub fn max_batch(mut self, n: usize) -> Self {
        self.max_batch = n;
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

    /// Sets the `retry:` delay of resumable streams (default 1 s).
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

    /// Sets [`HttpConfig::trusted_proxies`]: the addresses of the reverse proxies in front of
    /// the server (default none). The client address handed to the `AuthProvider`
    /// ([`mcp_auth::ClientAddr`], what failed attempts are throttled by) is the socket's peer;
    /// when that peer is a trusted proxy, it is the rightmost `X-Forwarded-For` entry that is
    /// not a trusted proxy. Behind a proxy, list it here, or every client counts as the
    /// proxy's address; never list an address that clients can reach the server from
    /// directly, or they can name any address.
    pub fn trusted_proxies(mut self, proxies: impl IntoIterator<Item = IpAddr>) -> Self {
        self.trusted_proxies = proxies.into_iter().map(|p| p.to_canonical()).collect();
        self
    }

    /// The simple POST-only mode with every other default (see [`HttpMode::Simple`]).
    pub fn simple() -> Self {
        HttpConfig::default().mode(HttpMode::Simple)
    }

    /// Sets the mode (default [`HttpMode::Streamable`]).
    pub fn mode(mut self, mode: HttpMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the connection cap of [`serve`](crate::serve) (default 16,384, at least 1).
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n.max(1);
        self
    }

    /// Sets the body-read timeout (default 60 s).
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Sets how long a shutdown waits for calls in flight (default 10 s; see
    /// [`HttpConfig::shutdown_grace`]).
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Whether TLS is configured (never without the `tls` feature).
    fn has_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// Sets how long a graceful shutdown keeps serving once readiness has fallen (default
    /// zero). When the shutdown begins ([`serve`](crate::serve)'s token,
    /// [`EndpointHandle::trigger`](crate::EndpointHandle::trigger)), `/readyz` answers 503 at
    /// once; for `delay` everything else goes on as usual (connections are accepted, streams
    /// stay open, calls are served), so that a load balancer or the Kubernetes endpoints
    /// controller sees the probe fail and stops sending clients; then the listener closes,
    /// the streams end and the calls in flight get [`HttpConfig::shutdown_grace`]. Behind a
    /// balancer, a delay of a little more than the probe's period times its failure threshold
    /// (a few seconds) avoids refused connections during a rolling update; keep the delay
    /// plus the grace below the platform's own kill deadline (Kubernetes'
    /// `terminationGracePeriodSeconds`, 30 s by default).
    pub fn readiness_delay(mut self, delay: Duration) -> Self {
        self.readiness_delay = delay;
        self
    }

    /// Serves the health probes on these paths (defaults `/livez` and `/readyz`; each must
    /// start with `/` and differ from the endpoint's other paths). Both answer `GET` and
    /// `HEAD` with a plain-text body and `Cache-Control: no-store`, before the Origin and Host
    /// checks, authentication and every limit of the MCP endpoint (a kubelet probes with the
    /// pod's IP as `Host` and no credentials):
    ///
    /// - liveness answers `200 ok` while the process serves (during a shutdown too);
    /// - readiness answers `503 draining` once a graceful shutdown has begun (see
    ///   [`HttpConfig::readiness_delay`]), `503 store unreachable` while the engine's shared
    ///   store does not answer its check (`mcp_runtime::Store::check`, asked at most about
    ///   once a second, answers cached meanwhile), `200 ok` otherwise.
    pub fn probes(mut self, liveness: impl Into<String>, readiness: impl Into<String>) -> Self {
        self.probes = Some((liveness.into(), readiness.into()));
        self
    }

    /// Serves no health probes (the application answers them itself, for example with
    /// [`EndpointHandle::readiness`](crate::EndpointHandle::readiness)).
    pub fn without_probes(mut self) -> Self {
        self.probes = None;
        self
    }

    /// Serves TLS with a PEM certificate chain (leaf first) and a PEM private key (PKCS#8,
    /// PKCS#1 or SEC1), offering ALPN `h2` then `http/1.1`. The server uses the `ring`
    /// cryptography provider, TLS 1.2 and 1.3.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_tls(mut self, cert_chain_pem: &[u8], key_pem: &[u8]) -> Result<Self, HttpError> {
        self.tls = Some(tls::server_config(cert_chain_pem, key_pem)?);
        Ok(self)
    }

    /// Serves TLS with a ready `rustls` configuration. When its `alpn_protocols` is empty, `h2`
    /// and `http/1.1` are offered; otherwise it is used as given.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn with_rustls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(tls::with_alpn(config));
        self
    }

    /// Serves the 2024-11-05 HTTP+SSE transport beside the Streamable endpoint: a GET on
    /// `sse_path` opens the session's stream, whose first event names
    /// `<sse_message_path>?sessionId=<id>`, where the client POSTs its messages (answered
    /// `202`, the replies travel on the stream). Both paths must start with `/` and be distinct
    /// from the endpoint's path. The event names the path as configured: a router nested under
    /// a prefix must include it here.
    pub fn sse_pair(mut self, sse_path: impl Into<String>, sse_message_path: impl Into<String>) -> Self {
        self.sse_pair = Some((sse_path.into(), sse_message_path.into()));
        self
    }

    /// SEP-1699 polling (default off). A legacy `tools/call` of a session that is still running
    /// `after` its start has its POST stream closed by the server: the stream is opened first
    /// if the call had not streamed yet (a priming event with an id and a `retry:` field), then
    /// ended without the reply. Everything the call emits afterwards, and its reply, wait in the
    /// stream's buffer until the client resumes with a GET carrying `Last-Event-ID`. Use
    /// [`HttpConfig::poll_tools`] to limit it to some tools. Zero closes right after priming.
    pub fn poll_after(mut self, after: Duration) -> Self {
        self.poll_after = Some(after);
        self
    }

    /// Limits [`HttpConfig::poll_after`] to the named tools (default: every tool).
    pub fn poll_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.poll_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Opens the stream of a modern (2026-07-28) call that is still running `after` its start
    /// without having emitted anything (default off: a call is answered `application/json`
    /// unless it emits a notification first). The answer becomes `text/event-stream` at once,
    /// with an empty event (`data:` and nothing else, which SSE clients do not dispatch), and
    /// keep-alive comments every [`HttpConfig::sse_keep_alive`] while the call runs; the reply
    /// ends the stream as usual. A client, and every proxy between, then sees a long call alive
    /// instead of a silent request that an idle timeout may cut; closing the stream still
    /// cancels the call. Legacy calls keep their own rules ([`HttpConfig::poll_after`]); in the
    /// simple mode nothing streams.
    pub fn open_stream_after(mut self, after: Duration) -> Self {
        self.open_stream_after = Some(after);
        self
    }

    /// Serves an RFC 9728 protected-resource metadata document at
    /// `/.well-known/oauth-protected-resource` and at the path-suffixed
    /// `/.well-known/oauth-protected-resource<endpoint path>`, before the Origin check (any
    /// client may read it), with `cache-control: public, max-age=300`. The document comes from
    /// the auth configuration (`mcp-auth`'s `ResourceMetadata`).
    pub fn with_resource_metadata(mut self, document: Value) -> Self {
        self.resource_metadata = Some(Arc::new(document));
        self
    }

    /// Serves this server's card (SEP-2127) at the reserved `<path>/server-card`, as
    /// `application/mcp-server-card+json`: public (before the Origin check and authentication,
    /// `Access-Control-Allow-Origin: *`), cacheable (`Cache-Control: public, max-age=3600`, a
    /// strong `ETag`, `304` on `If-None-Match`). Make the card from the server itself
    /// (`McpServer::server_card` in `mcp-server`), so that it cannot contradict what the
    /// server answers once connected.
    pub fn with_server_card(mut self, card: Value) -> Self {
        self.server_card = Some(Arc::new(card));
        self
    }

    /// Serves an AI Catalog (SEP-2127's discovery) at `/.well-known/ai-catalog.json`, as
    /// `application/ai-catalog+json` and otherwise as the card is served: the cards of the
    /// servers a host offers (`mcp_server::server_card::catalog`). Serve it from the host's root,
    /// where clients look for it.
    pub fn with_catalog(mut self, catalog: Value) -> Self {
        self.catalog = Some(Arc::new(catalog));
        self
    }

    /// Sets the HTTP/1.1 header-read timeout of [`serve`](crate::serve) (default 30 s, at least
    /// 10 ms). It runs from the moment a connection waits for a request's headers until they
    /// are whole: a client that drips them has its connection closed (no answer is possible
    /// mid-head), and so does a keep-alive connection that sends nothing after a reply for this
    /// long.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets the idle timeout of [`serve`](crate::serve) (default 60 s, at least 10 ms). A
    /// connection with no request in flight for this long is closed: an HTTP/2 connection with
    /// a `GOAWAY`, an HTTP/1.1 one (or one that never sent a byte) by closing the socket. On
    /// HTTP/1.1 the wait between requests is also bounded by
    /// [`HttpConfig::header_read_timeout`], whichever is shorter. When
    /// [`HttpConfig::max_connections`] is reached, the longest-idle connection is closed to admit
    /// a new one.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets the stall timeout of [`serve`](crate::serve) (default 30 s, at least 10 ms). A
    /// response whose client takes nothing of it for this long (an HTTP/1.1 client whose TCP
    /// window stays full, an HTTP/2 client that never opens the stream's flow-control window)
    /// is ended: its body is dropped, which stops the SSE pump that feeds it and frees its
    /// pending replies. If the client still holds the stream one more `stall_timeout` later,
    /// the connection is closed.
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall_timeout = timeout;
        self
    }

    /// Sets the HTTP/2 keep-alive: a ping every `interval` (default 30 s; `None`: no pings),
    /// and the connection closed when one is not answered within `timeout` (default 20 s).
    pub fn h2_keep_alive(mut self, interval: Option<Duration>, timeout: Duration) -> Self {
        self.h2_keep_alive_interval = interval;
        self.h2_keep_alive_timeout = timeout;
        self
    }

    /// Sets [`HttpConfig::h2_max_concurrent_streams`] (default 200, at least 1).
    pub fn h2_max_concurrent_streams(mut self, n: u32) -> Self {
        self.h2_max_concurrent_streams = n.max(1);
        self
    }

    /// Sets [`HttpConfig::h2_max_header_list_size`] (default 16 KiB).
    pub fn h2_max_header_list_size(mut self, bytes: u32) -> Self {
        self.h2_max_header_list_size = bytes;
        self
    }

    /// Sets [`HttpConfig::h2_max_pending_accept_reset_streams`] (default 20).
    pub fn h2_max_pending_accept_reset_streams(mut self, n: usize) -> Self {
        self.h2_max_pending_accept_reset_streams = n;
        self
    }

    /// Sets [`HttpConfig::h2_max_local_error_reset_streams`] (default 1,024).
    pub fn h2_max_local_error_reset_streams(mut self, n: usize) -> Self {
        self.h2_max_local_error_reset_streams = n;
        self
    }

    /// Sets [`HttpConfig::h2_max_send_buf_size`] (default 400 KiB, at least 1).
    pub fn h2_max_send_buf_size(mut self, bytes: usize) -> Self {
        self.h2_max_send_buf_size = bytes.max(1);
        self
    }

    /// Whether `tool` has its POST stream closed after [`HttpConfig::poll_after`].
    pub(crate) fn polls(&self, tool: &str) -> Option<Duration> {
        let after = self.poll_after?;
        match &self.poll_tools {
            Some(list) if !list.iter().any(|t| t == tool) => None,
            _ => Some(after),
        }
    }
}
