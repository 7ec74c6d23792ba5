//! The builder of a [`TestClient`]: era and revision, capabilities, client info, identity and
//! the scripted replies.

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::model::LoggingLevel;
use mcp_protocol::{Revision, RpcError};
use mcp_runtime::Engine;
use serde_json::{Map, Value, json};

use super::client::{Options, TestClient};
use super::exchange::ClientError;
use super::script::Script;

/// Configures a [`TestClient`]; [`connect`](Self::connect) starts it.
///
/// Defaults: the modern revision (2026-07-28), client info `mcp-test-client 0.0.0`, the
/// anonymous caller, capabilities derived from the scripted replies (`elicitation` when
/// [`on_elicit`](Self::on_elicit) or [`elicit_reply`](Self::elicit_reply) is set, `sampling`
/// for [`on_sampling`](Self::on_sampling), `roots` for [`roots`](Self::roots)), no log level,
/// a progress token on every request, at most 16 MRTR rounds.
///
/// ```
/// use mcp_server::prelude::*;
/// use mcp_server::testing::{TestClient, accept};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = McpServer::builder().name("s").version("1").build()?;
/// let client = TestClient::builder(&server)
///     .revision(Revision::V2025_06_18)
///     .client_info("my-test", "1.2.3")
///     .principal("alice")
///     .on_elicit(|_params| accept(json!({"ok": true})))
///     .log_level(LoggingLevel::Debug)
///     .connect()
///     .await?;
/// assert_eq!(client.revision(), Revision::V2025_06_18);
/// assert_eq!(client.initialize_result().unwrap()["protocolVersion"], "2025-06-18");
/// # Ok(())
/// # }
/// ```
#[must_use = "a builder does nothing until connect() is called"]
pub struct TestClientBuilder {
    engine: Engine,
    revision: Revision,
    capabilities: Option<Map<String, Value>>,
    extra_capabilities: Map<String, Value>,
    client_info: Value,
    auth: AuthInfo,
    log_level: Option<LoggingLevel>,
    progress: bool,
    max_rounds: usize,
    discover: bool,
    roots: Option<Vec<Value>>,
    script: Script,
}

impl TestClient {
    /// A builder for a client of `server` (see [`TestClientBuilder`] for the defaults).
    pub fn builder(server: &crate::McpServer) -> TestClientBuilder {
        server.drive();
        TestClientBuilder::new(server.engine().clone())
    }
}

impl std::fmt::Debug for TestClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClientBuilder")
            .field("revision", &self.revision)
            .field("principal", &self.auth.principal)
            .finish_non_exhaustive()
    }
}

impl TestClientBuilder {
    pub(crate) fn new(engine: Engine) -> Self {
        TestClientBuilder {
            engine,
            revision: Revision::LATEST_MODERN,
            capabilities: None,
            extra_capabilities: Map::new(),
            client_info: json!({"name": "mcp-test-client", "version": "0.0.0"}),
            auth: AuthInfo::anonymous(),
            log_level: None,
            progress: true,
            max_rounds: 16,
            discover: false,
            roots: None,
            script: Script::default(),
        }
    }

    /// The revision the client speaks; its era follows (2026-07-28 is modern, the others
    /// legacy).
    pub fn revision(mut self, revision: Revision) -> Self {
        self.revision = revision;
        self
    }

    /// The latest legacy revision (2025-11-25): `initialize`, a session, server-to-client
    /// requests.
    pub fn legacy(self) -> Self {
        self.revision(Revision::LATEST_LEGACY)
    }

    /// The modern revision (2026-07-28): `_meta` on every request, MRTR.
    pub fn modern(self) -> Self {
        self.revision(Revision::LATEST_MODERN)
    }

    /// The client capabilities, verbatim (an object); nothing is derived from the scripted
    /// replies then.
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = Some(capabilities.as_object().cloned().unwrap_or_default());
        self
    }

    /// Adds one capability to the derived ones, e.g. `("elicitation", json!({"form": {}, "url":
    /// {}}))` or `("extensions", json!({"io.modelcontextprotocol/tasks": {}}))`.
    pub fn capability(mut self, name: &str, value: Value) -> Self {
        self.extra_capabilities.insert(name.to_owned(), value);
        self
    }

    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`, modern era): the server
    /// may then answer a task-capable `tools/call` with a task (see
    /// [`TestClient::call_tool_as_task`]).
    pub fn tasks_extension(mut self) -> Self {
        let extensions = self.extra_capabilities.entry("extensions").or_insert_with(|| json!({}));
        if let Some(e) = extensions.as_object_mut() {
            e.insert(mcp_protocol::task_mode::TASKS_EXTENSION.into(), json!({}));
        }
        self
    }

    /// Declares an extension the client supports (`capabilities.extensions[id]`, at `initialize`
    /// or in each modern request's `_meta`), with its settings (`{}` for none).
    pub fn extension(mut self, id: &str, settings: Value) -> Self {
        let extensions = self.extra_capabilities.entry("extensions").or_insert_with(|| json!({}));
        if let Some(e) = extensions.as_object_mut() {
            e.insert(id.into(), settings);
        }
        self
    }

    /// The client info (`clientInfo` of `initialize`, or of each modern request's `_meta`).
    pub fn client_info(mut self, name: &str, version: &str) -> Self {
        self.client_info = json!({"name": name, "version": version});
        self
    }

    /// The identity the client acts as (what an authentication provider would have made of
    /// its credentials); handlers see it in `Ctx::auth`.
    pub fn auth(mut self, auth: AuthInfo) -> Self {
        self.auth = auth;
        self
    }

    /// Acts as `principal` (no scopes, no claims).
    pub fn principal(self, principal: &str) -> Self {
        self.auth(AuthInfo::new(principal))
    }

    /// The minimum log level: sent in every modern request's `_meta` (without one a modern
    /// request gets no log messages), or with `logging/setLevel` right after a legacy
    /// `initialize` (a legacy session starts at `info`) when the server declares logging
    /// (`McpServerBuilder::logging`; a server that does not sends no log messages).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Whether every request carries a progress token (default on): progress notifications
    /// are only sent for requests that carry one.
    pub fn progress_tokens(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// The most times one request is sent in an MRTR loop before
    /// [`ClientError::TooManyRounds`] (default 16).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// Modern era: calls `server/discover` on connect (see [`TestClient::discover_result`]).
    pub fn discover(mut self, on: bool) -> Self {
        self.discover = on;
        self
    }

    /// Answers every `elicitation/create` with `reply(params)` (an `ElicitResult`, see
    /// [`accept`](super::accept), [`decline`](super::decline), [`cancel`](super::cancel)).
    pub fn on_elicit(mut self, reply: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        self.script
            .handle("elicitation/create", Arc::new(move |p| Ok(reply(p))));
        self
    }

    /// Queues a reply for the next `elicitation/create` (queued replies are used once each,
    /// in order, before [`on_elicit`](Self::on_elicit)'s handler).
    pub fn elicit_reply(mut self, reply: Value) -> Self {
        self.script.queue("elicitation/create", reply);
        self
    }

    /// Answers every `sampling/createMessage` with `reply(params)` (a `CreateMessageResult`,
    /// see [`sampled_text`](super::sampled_text)).
    pub fn on_sampling(mut self, reply: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        self.script
            .handle("sampling/createMessage", Arc::new(move |p| Ok(reply(p))));
        self
    }

    /// Queues a reply for the next `sampling/createMessage`.
    pub fn sampling_reply(mut self, reply: Value) -> Self {
        self.script.queue("sampling/createMessage", reply);
        self
    }

    /// Answers `roots/list` with these roots (each `{"uri": …, "name": …}`).
    pub fn roots(mut self, roots: Vec<Value>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Answers server requests of `method` with `reply(params)`: a result, or the JSON-RPC
    /// error the client answers with (legacy era; in the modern era an error leaves the input
    /// request unanswered, and the server asks again).
    pub fn on_request(
        mut self,
        method: &str,
        reply: impl Fn(&Value) -> Result<Value, RpcError> + Send + Sync + 'static,
    ) -> Self {
        self.script.handle(method, Arc::new(reply));
        self
    }

    fn derived_capabilities(&self) -> Map<String, Value> {
        let mut caps = Map::new();
        if self.script.answers("elicitation/create") {
            caps.insert("elicitation".into(), json!({}));
        }
        if self.script.answers("sampling/createMessage") {
            caps.insert("sampling".into(), json!({}));
        }
        if self.script.answers("roots/list") {
            caps.insert("roots".into(), json!({}));
        }
        caps
    }

    /// Starts the client: a legacy client sends `initialize` and `notifications/initialized`
    /// (then `logging/setLevel` when a log level is set); a modern one sends nothing unless
    /// [`discover`](Self::discover) asked for `server/discover`.
    ///
    /// Needs a Tokio runtime (the client runs each call as a task).
    pub async fn connect(mut self) -> Result<TestClient, ClientError> {
        if let Some(roots) = self.roots.take() {
            let result = json!({ "roots": roots });
            self.script.handle("roots/list", Arc::new(move |_| Ok(result.clone())));
        }
        let mut capabilities = match self.capabilities.take() {
            Some(c) => c,
            None => self.derived_capabilities(),
        };
        capabilities.extend(std::mem::take(&mut self.extra_capabilities));
        let options = Options {
            revision: self.revision,
            capabilities: Value::Object(capabilities),
            client_info: self.client_info,
            auth: Arc::new(self.auth),
            log_level: self.log_level,
            progress: self.progress,
            max_rounds: self.max_rounds,
            script: self.script,
        };
        TestClient::open(self.engine, options, self.discover).await
    }
}
