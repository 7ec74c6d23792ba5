//! Several instances, one server (behaviour invariant 34): two instances sharing state through a
//! `Store` behind a round-robin proxy that sends every HTTP request to the next backend (no
//! pinning), for both eras, with the in-memory store and with Redis.
//!
//! Each instance runs on a thread of its own with its own Tokio runtime, as a separate process
//! would: killing one (its runtime shut down at once, every task and connection of it dropped)
//! is an instance dying, heartbeat included. The proxy and the client run on the test's runtime.
//! The proxy's rotation is deterministic (request by request), so a test knows which instance
//! serves each request; [`Cluster::send`] reports it and [`Cluster::steer`] makes the next one
//! land on a chosen instance (with `server/discover` requests, which touch no state).
//!
//! Every scenario is one async fn taking a [`Cluster`], run twice by [`both_stores!`]: with
//! `Store::memory()` shared by the two instances, and with Redis (`MCP_TEST_REDIS_URL`, or a
//! `redis-server` child of the test, under a key prefix of its own).
//!
//! `scaleout/tools.rs` holds the tools and the probe every instance registers;
//! `scaleout/redis_server.rs` the `redis-server` helper; the scenarios are in `scaleout/legacy.rs`
//! (sessions, GET streams, server-to-client requests, cancellation, DELETE),
//! `scaleout/resume.rs` (`Last-Event-ID` on the other instance), `scaleout/modern.rs` (MRTR,
//! `subscriptions/listen`), `scaleout/pair.rs` (the 2024-11-05 HTTP+SSE pair), `scaleout/tasks.rs`
//! (both eras' tasks), `scaleout/ratelimit.rs` (one rate across instances) and `scaleout/faults.rs`
//! (an instance dying, Redis going away, a Redis Cluster primary dying). A scenario marked
//! `#[ignore]` shows a server bug (its
//! reason says which); run them with `-- --ignored`. `SCALEOUT_LOG=<filter>` (a `tracing`
//! env filter, e.g. `mcp_runtime=debug`) prints the instances' logs.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_protocol::request_state::StateKey;
use mcp_runtime::{Engine, Registry, ServerConfig, Store};
use mcp_store_redis::{RedisOptions, RedisStore};
use mcp_tests::proxy::Proxy;
use mcp_transport_http::{HttpConfig, serve};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::support::{Req, Resp, Server, Sse};
use tools::Probe;

/// The protocol revisions used here.
pub(crate) const LEGACY: &str = "2025-11-25";
pub(crate) const MODERN: &str = "2026-07-28";
/// The principal of every unauthenticated request.
pub(crate) const ANONYMOUS: &str = "anonymous";
/// How long a stream must stay silent to count as carrying nothing more.
pub(crate) const QUIET: Duration = Duration::from_millis(400);
/// A bound on one wait inside a test.
pub(crate) const WAIT: Duration = Duration::from_secs(8);

/// Runs a scenario against both stores: `<scenario>::memory` and `<scenario>::redis`, bounded
/// (20 s unless given); `ignore = "…"` marks both ignored (a server bug the scenario shows).
macro_rules! both_stores {
    ($scenario:ident) => {
        both_stores!($scenario, 20);
    };
    ($scenario:ident, $secs:expr $(, ignore = $reason:literal)?) => {
        mod $scenario {
            #[tokio::test]
            $(#[ignore = $reason])?
            async fn memory() {
                $crate::scaleout::bounded_for($secs, async {
                    super::$scenario($crate::scaleout::Cluster::memory().await).await
                })
                .await;
            }

            #[tokio::test]
            $(#[ignore = $reason])?
            async fn redis() {
                $crate::scaleout::bounded_for($secs, async {
                    super::$scenario($crate::scaleout::Cluster::redis().await).await
                })
                .await;
            }
        }
    };
}

#[path = "scaleout/faults.rs"]
mod faults;
#[path = "scaleout/legacy.rs"]
mod legacy;
#[path = "scaleout/modern.rs"]
mod modern;
#[path = "scaleout/pair.rs"]
mod pair;
#[path = "scaleout/ratelimit.rs"]
mod ratelimit;
#[path = "scaleout/redis_server.rs"]
mod redis_server;
#[path = "scaleout/resume.rs"]
mod resume;
#[path = "scaleout/tasks.rs"]
mod tasks;
#[path = "scaleout/tools.rs"]
mod tools;

/// Fails a test that runs longer than `secs` seconds.
pub(crate) async fn bounded_for<F: Future<Output = ()>>(secs: u64, f: F) {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("test timed out after {secs} s"));
}

/// The configuration of every instance: the same request-state key, a short task sweep (the
/// recovery of a dead instance's tasks runs on it) and a short task poll.
pub(crate) fn config() -> ServerConfig {
    let mut c = ServerConfig::default();
    c.request_state_key = Some(StateKey::new(&[7u8; 32]).expect("a 32-byte key"));
    c.task_sweep_interval = Duration::from_millis(200);
    c.task_poll_interval_ms = 100;
    c
}

/// What an instance is configured with, given the store it shares (default: [`config`]).
pub(crate) type Setup = Arc<dyn Fn(&Store) -> ServerConfig + Send + Sync>;

/// Where an instance keeps its shared state.
#[derive(Clone)]
enum Backend {
    /// A store of this process, shared by the instances.
    Memory(Store),
    /// A Redis, each instance with connections of its own, under one key prefix.
    Redis { url: String, prefix: String },
    /// A Redis Cluster (some of its nodes), likewise.
    RedisCluster { nodes: Vec<String>, prefix: String },
}

impl Backend {
    /// The store (a Redis store connects, so call it on the runtime that will use it).
    async fn store(&self) -> Store {
        match self {
            Backend::Memory(s) => s.clone(),
            Backend::Redis { url, prefix } => {
                let options = RedisOptions {
                    prefix: prefix.clone(),
                    ..Default::default()
                };
                RedisStore::connect_with(url, options)
                    .await
                    .unwrap_or_else(|e| panic!("connecting to Redis at {url}: {e}"))
                    .into_store()
            }
            Backend::RedisCluster { nodes, prefix } => {
                let options = RedisOptions {
                    prefix: prefix.clone(),
                    ..Default::default()
                };
                RedisStore::connect_cluster_with(nodes, options)
                    .await
                    .unwrap_or_else(|e| panic!("connecting to the Redis Cluster: {e}"))
                    .into_store()
            }
        }
    }
}

/// One instance of the server: `serve` on `127.0.0.1:0` on a thread and a Tokio runtime of its
/// own. Dropping it (or [`Instance::kill`]) shuts its runtime down at once: every task, stream and
/// connection of it is gone, as when a process dies.
pub(crate) struct Instance {
    pub(crate) addr: SocketAddr,
    pub(crate) registry: Arc<Registry>,
    pub(crate) engine: Engine,
    pub(crate) probe: Arc<Probe>,
    /// `Engine::instance_id`.
    pub(crate) id: String,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Instance {
    async fn start(name: &str, backend: Backend, setup: Setup) -> Instance {
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let (kill_tx, kill_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("instance-{name}"))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("instance runtime");
                rt.block_on(async move {
                    let store = backend.store().await;
                    let probe = Arc::new(Probe::default());
                    let registry = tools::registry(&probe);
                    let engine =
                        mcp_tests::engine::start(setup(&store), registry.clone(), mcp_runtime::Storage::Shared(store));
                    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                    let addr = listener.local_addr().expect("addr");
                    let shutdown = CancellationToken::new();
                    tokio::spawn(serve(
                        engine.clone(),
                        HttpConfig::default().sse_pair("/sse", "/messages"),
                        listener,
                        shutdown.clone(),
                    ));
                    let _ = ready_tx.send((addr, registry, engine, probe));
                    // Until killed (or the test is gone); then the runtime is dropped with all
                    // it runs, without a graceful shutdown.
                    let _ = kill_rx.await;
                });
                rt.shutdown_background();
            })
            .expect("instance thread");
        let (addr, registry, engine, probe) = ready_rx.await.expect("the instance started");
        let id = engine
            .instance_id()
            .expect("a shared engine has an instance id")
            .to_owned();
        Instance {
            addr,
            registry,
            engine,
            probe,
            id,
            kill: Some(kill_tx),
            thread: Some(thread),
        }
    }

    /// Kills the instance and waits until its runtime is gone.
    pub(crate) async fn kill(&mut self) {
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
        if let Some(t) = self.thread.take() {
            tokio::task::spawn_blocking(move || t.join())
                .await
                .expect("join")
                .expect("the instance thread ended cleanly");
        }
    }

    /// This instance's replica of a session, if it holds one.
    pub(crate) fn replica(&self, sid: &str) -> Option<Arc<mcp_runtime::Session>> {
        self.engine.held_session(sid, ANONYMOUS)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(k) = self.kill.take() {
            let _ = k.send(());
        }
    }
}

/// Two instances (A = backend 0, B = backend 1) behind the round-robin proxy, and a client that
/// talks to the proxy. Fields drop in order: the client, the proxy, the instances, then Redis.
pub(crate) struct Cluster {
    /// The client: every request goes through the proxy.
    pub(crate) client: Server,
    pub(crate) proxy: Proxy,
    pub(crate) a: Instance,
    pub(crate) b: Instance,
    /// The test's own view of the shared store (a connection of its own for Redis).
    pub(crate) store: Store,
    /// The Redis of the test, when it started one.
    pub(crate) redis: Option<redis_server::RedisServer>,
    /// The Redis Cluster of the test, when it runs on one, and the key prefix of the instances.
    pub(crate) redis_cluster: Option<(redis_server::RedisCluster, String)>,
}

impl Cluster {
    /// Two instances sharing one `Store::memory()`.
    pub(crate) async fn memory() -> Cluster {
        Self::memory_with(Arc::new(|_| config())).await
    }

    /// Two instances sharing one `Store::memory()`, configured by `setup`.
    pub(crate) async fn memory_with(setup: Setup) -> Cluster {
        let store = Store::memory();
        Self::start(Backend::Memory(store.clone()), store, None, setup).await
    }

    /// Two instances sharing a Redis (`MCP_TEST_REDIS_URL`, else a `redis-server` of the test's
    /// own), under a key prefix no other test uses.
    pub(crate) async fn redis() -> Cluster {
        Self::redis_with(Arc::new(|_| config())).await
    }

    /// Two instances sharing a Redis, configured by `setup`.
    pub(crate) async fn redis_with(setup: Setup) -> Cluster {
        let (url, server) = match std::env::var("MCP_TEST_REDIS_URL") {
            Ok(url) if !url.is_empty() => (url, None),
            _ => {
                let server = redis_server::RedisServer::start();
                (server.url(), Some(server))
            }
        };
        Self::on_redis_with(url, server, setup).await
    }

    /// Two instances on the Redis at `url` (`server`: the one the test started, if any).
    pub(crate) async fn on_redis(url: String, server: Option<redis_server::RedisServer>) -> Cluster {
        Self::on_redis_with(url, server, Arc::new(|_| config())).await
    }

    async fn on_redis_with(url: String, server: Option<redis_server::RedisServer>, setup: Setup) -> Cluster {
        let backend = Backend::Redis {
            url,
            prefix: redis_server::unique_prefix(),
        };
        let store = backend.store().await;
        Self::start(backend, store, server, setup).await
    }

    /// Two instances on `cluster`, under a key prefix no other test uses.
    pub(crate) async fn on_redis_cluster(cluster: redis_server::RedisCluster) -> Cluster {
        let prefix = redis_server::unique_prefix();
        let backend = Backend::RedisCluster {
            nodes: cluster.urls(),
            prefix: prefix.clone(),
        };
        let store = backend.store().await;
        let mut c = Self::start(backend, store, None, Arc::new(|_| config())).await;
        c.redis_cluster = Some((cluster, prefix));
        c
    }

    async fn start(backend: Backend, store: Store, redis: Option<redis_server::RedisServer>, setup: Setup) -> Cluster {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(std::env::var("SCALEOUT_LOG").unwrap_or_else(|_| "off".into()))
            .with_test_writer()
            .try_init();
        let a = Instance::start("a", backend.clone(), setup.clone()).await;
        let b = Instance::start("b", backend, setup).await;
        let proxy = mcp_tests::proxy::start(vec![format!("http://{}", a.addr), format!("http://{}", b.addr)])
            .await
            .expect("the proxy starts");
        let client = Server::external(proxy.addr, "/mcp", a.engine.clone(), a.registry.clone());
        Cluster {
            client,
            proxy,
            a,
            b,
            store,
            redis,
            redis_cluster: None,
        }
    }

    /// Instance `i` (0: A, 1: B).
    pub(crate) fn instance(&self, i: usize) -> &Instance {
        match i {
            0 => &self.a,
            _ => &self.b,
        }
    }

    /// Sends a request through the proxy; returns the answer and the instance that served it.
    pub(crate) async fn send(&self, req: Req) -> (Resp, usize) {
        let before = self.proxy.counts();
        let resp = req.send().await;
        (resp, landed(&before, &self.proxy.counts()))
    }

    /// Sends a request through the proxy after steering it to instance `i`.
    pub(crate) async fn send_to(&self, i: usize, req: Req) -> Resp {
        self.steer(i).await;
        let (resp, at) = self.send(req).await;
        assert_eq!(at, i, "the request was steered to instance {i}");
        resp
    }

    /// Makes the next request through the proxy land on instance `i`, with as many
    /// `server/discover` requests (stateless) as it takes.
    pub(crate) async fn steer(&self, i: usize) {
        for _ in 0..4 {
            if self.next_backend() == i {
                return;
            }
            let (resp, _) = self
                .send(self.modern(0, "server/discover", None, json!({}), false))
                .await;
            assert_eq!(resp.status, StatusCode::OK, "server/discover");
        }
        panic!("cannot steer to instance {i}");
    }

    /// The backend the proxy's rotation picks next (no backend is marked down).
    fn next_backend(&self) -> usize {
        (self.proxy.counts().iter().sum::<u64>() % 2) as usize
    }

    /// Asserts that the proxy sent requests to both instances.
    pub(crate) fn assert_both_used(&self) {
        let counts = self.proxy.counts();
        assert!(
            counts.iter().all(|&n| n > 0),
            "both instances served requests: {counts:?}"
        );
    }

    /// A POST of `body` naming session `sid` at `revision`.
    pub(crate) fn legacy(&self, sid: &str, revision: &str, body: Value) -> Req {
        self.client
            .post(body)
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", revision)
    }

    /// The GET stream request of session `sid`.
    pub(crate) fn get(&self, sid: &str) -> Req {
        self.client
            .req(Method::GET)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", LEGACY)
    }

    /// A modern request: the `_meta` envelope (elicitation declared, and the tasks extension when
    /// `tasks`) and the `Mcp-*` headers.
    pub(crate) fn modern(&self, id: i64, method: &str, name: Option<&str>, params: Value, tasks: bool) -> Req {
        let mut params = params;
        let mut caps = json!({"elicitation": {}});
        if tasks {
            caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
        }
        let meta = params
            .as_object_mut()
            .expect("params object")
            .entry("_meta")
            .or_insert_with(|| json!({}));
        meta["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
        meta["io.modelcontextprotocol/clientCapabilities"] = caps;
        meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "scaleout", "version": "1"});
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut req = self
            .client
            .post(body)
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(name) = name {
            req = req.header("mcp-name", name);
        }
        req
    }

    /// `initialize` at `revision` (sampling and elicitation declared) steered to instance `at`,
    /// then `notifications/initialized` (on the other instance); returns the session id.
    pub(crate) async fn initialize_on(&self, at: usize, revision: &str) -> String {
        let resp = self.send_to(at, self.client.post(init(revision))).await;
        assert_eq!(resp.status, StatusCode::OK, "initialize");
        let sid = resp.header("mcp-session-id").expect("a session id").to_owned();
        let body = resp.json().await;
        assert_eq!(body["result"]["protocolVersion"], revision, "{body}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (ack, on) = self.send(self.legacy(&sid, revision, initialized)).await;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "notifications/initialized");
        assert_ne!(on, at, "round robin: the next request went to the other instance");
        sid
    }

    /// Opens the GET stream of `sid` on instance `at`; returns it past its priming event, and the
    /// priming event's id.
    pub(crate) async fn open_get(&self, at: usize, sid: &str) -> (Sse, String) {
        let resp = self.send_to(at, self.get(sid)).await;
        assert_eq!(resp.status, StatusCode::OK, "GET stream");
        let mut sse = resp.sse();
        let priming = within("GET priming", sse.next()).await.expect("a priming event");
        assert!(
            priming.data.is_empty() && priming.retry.is_some(),
            "priming: {priming:?}"
        );
        let id = priming.id.expect("the priming event has an id");
        (sse, id)
    }
}

/// The backend whose count went up between two readings of `Proxy::counts`.
fn landed(before: &[u64], after: &[u64]) -> usize {
    let moved: Vec<usize> = (0..before.len()).filter(|&i| after[i] != before[i]).collect();
    assert_eq!(moved.len(), 1, "one request, one backend: {before:?} -> {after:?}");
    assert_eq!(after[moved[0]], before[moved[0]] + 1, "{before:?} -> {after:?}");
    moved[0]
}

/// A legacy `initialize` at `revision` declaring sampling and elicitation (form and URL).
pub(crate) fn init(revision: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": revision,
        "capabilities": {"sampling": {}, "elicitation": {"form": {}, "url": {}}},
        "clientInfo": {"name": "scaleout", "version": "1"}
    }})
}

/// A legacy request.
pub(crate) fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A legacy `tools/call`.
pub(crate) fn tool_call(id: i64, name: &str, args: Value) -> Value {
    request(id, "tools/call", json!({"name": name, "arguments": args}))
}

/// Bounds one wait, naming it when it hangs.
pub(crate) async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {WAIT:?}"))
}

/// Waits (bounded) until `cond` holds, checking every 10 ms.
pub(crate) async fn eventually(what: &str, cond: impl Fn() -> bool) {
    within(what, async {
        while !cond() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// The next event with data (priming events skipped), bounded; panics when the stream ends.
pub(crate) async fn next_message(sse: &mut Sse, what: &str) -> (Option<String>, Value) {
    within(what, async {
        loop {
            match sse.next().await {
                Some(e) if e.data.is_empty() => continue,
                Some(e) => return (e.id.clone(), e.json()),
                None => panic!("{what}: the stream ended"),
            }
        }
    })
    .await
}

/// Asserts that the stream carries nothing for [`QUIET`].
pub(crate) async fn assert_quiet(sse: &mut Sse, what: &str) {
    if let Some(e) = sse.next_within(QUIET).await {
        panic!("{what}: unexpected event {e:?}");
    }
}

/// Asserts that the stream ends (without another event) within `wait`.
pub(crate) async fn assert_ends(sse: &mut Sse, wait: Duration, what: &str) {
    match tokio::time::timeout(wait, sse.next()).await {
        Ok(None) => {}
        Ok(Some(e)) => panic!("{what}: an event instead of the end: {e:?}"),
        Err(_) => panic!("{what}: the stream is still open after {wait:?}"),
    }
}

/// `notifications/tools/list_changed` as a GET stream carries it.
pub(crate) fn tools_changed() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
}
