//! [`ClientBuilder`]: who the client says it is, what it answers, its bounds, and the
//! transport it connects over.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use mcp_protocol::jsonrpc::DecodeLimits;
use mcp_protocol::model::LoggingLevel;
use mcp_protocol::{Revision, RpcError};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::client::{Client, Options};
use crate::conn::Conn;
use crate::error::ClientError;
use crate::handlers::{Handler, Handlers};
use crate::handshake;
use crate::link::http::Http;
use crate::link::stdio::{Restart, ServerCommand, Stdio};
use crate::link::{INBOX, Link};

/// Builds a [`Client`] and connects it.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    name: String,
    version: String,
    revision: Option<Revision>,
    handlers: Handlers,
    timeout: Duration,
    probe: Duration,
    max_rounds: usize,
    log_level: Option<LoggingLevel>,
    limits: DecodeLimits,
    restart: Option<Restart>,
    headers: HeaderMap,
    relay: bool,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            revision: None,
            handlers: Handlers::default(),
            timeout: Duration::from_secs(60),
            probe: Duration::from_secs(3),
            max_rounds: 8,
            log_level: None,
            limits: DecodeLimits::default(),
            restart: None,
            headers: HeaderMap::new(),
            relay: false,
        }
    }
}

fn handler<F, Fut>(f: F) -> Handler
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
{
    Arc::new(move |params| Box::pin(f(params)))
}

impl Client {
    /// A builder: `Client::builder().name("me").stdio(command).await?`.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }
}

impl ClientBuilder {
    /// The client's name in its `Implementation` (default: `mcp-client`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The client's version in its `Implementation`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// Speaks only `revision` (no discovery of the era): `initialize` for a legacy one,
    /// `server/discover` for a modern one.
    pub fn revision(mut self, revision: Revision) -> Self {
        self.revision = Some(revision);
        self
    }

    /// How long a request waits for its final answer (default 60 s); past it the request is
    /// cancelled and fails with [`ClientError::Timeout`].
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long `server/discover` is waited for before falling back to `initialize` (default
    /// 3 s; a legacy stdio server may not answer it at all).
    pub fn discover_timeout(mut self, timeout: Duration) -> Self {
        self.probe = timeout;
        self
    }

    /// The most MRTR rounds one request may take (default 8).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// The level of log messages asked of the server on every modern request (a legacy
    /// client calls [`Client::set_log_level`]).
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// The largest message read from the server (default 16 MiB): a longer stdio line or SSE
    /// event is dropped, a longer HTTP body refused.
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_bytes = bytes;
        self
    }

    /// Answers `elicitation/create` (declares the `elicitation` capability, form mode).
    pub fn on_elicit<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.handlers.elicit = Some(handler(f));
        self
    }

    /// Declares URL-mode elicitation too (the elicitation handler answers both modes).
    pub fn elicit_url(mut self) -> Self {
        self.handlers.elicit_url = true;
        self
    }

    /// Answers `sampling/createMessage` (declares the `sampling` capability).
    pub fn on_sample<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.handlers.sample = Some(handler(f));
        self
    }

    /// Answers `roots/list` with these roots (each `{uri, name?}`; declares `roots`).
    pub fn roots(mut self, roots: Vec<Value>) -> Self {
        let result = json!({"roots": roots});
        self.handlers.roots = Some(handler(move |_| {
            let result = result.clone();
            async move { Ok(result) }
        }));
        self
    }

    /// Declares every capability a server may ask for (elicitation in both modes, sampling,
    /// roots) whatever the handlers: for a client that relays what its server asks to someone
    /// else, per request ([`RequestOptions::on_input`](crate::RequestOptions::on_input)), as a
    /// mount does. What no handler answers is answered -32601.
    pub fn relay(mut self) -> Self {
        self.relay = true;
        self
    }

    /// Starts a stdio child again when it exits, after a backoff (`Restart::default()`: 100 ms
    /// doubling to 10 s); the client greets it again. Without it a child that exits closes the
    /// client.
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = Some(restart);
        self
    }

    /// Sends a header on every HTTP request (credentials, routing).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.insert(name, value);
        self
    }

    /// Sends `Authorization: Bearer <token>` on every HTTP request.
    pub fn bearer(self, token: &str) -> Result<Self, ClientError> {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| ClientError::Unexpected("the token cannot travel in a header".into()))?;
        value.set_sensitive(true);
        Ok(self.header(AUTHORIZATION, value))
    }

    /// Starts `command` and connects to it over its stdin and stdout.
    pub async fn stdio(self, command: ServerCommand) -> Result<Client, ClientError> {
        let (tx, rx) = mpsc::channel(INBOX);
        let link = Link::Stdio(Stdio::start(command, self.restart, self.limits.max_bytes, tx)?);
        self.connect(link, rx).await
    }

    /// Connects to the Streamable HTTP endpoint at `url` (`http://host:port/path`).
    pub async fn http(self, url: &str) -> Result<Client, ClientError> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| ClientError::Transport(format!("{url:?} is not a URL: {e}")))?;
        if uri.scheme_str() != Some("http") {
            return Err(ClientError::Transport(format!(
                "{url:?}: only http:// URLs are supported"
            )));
        }
        let (tx, rx) = mpsc::channel(INBOX);
        let link = Link::Http(Http::new(uri, self.headers.clone(), self.limits.max_bytes, tx));
        self.connect(link, rx).await
    }

    async fn connect(self, link: Link, inbox: mpsc::Receiver<crate::link::Event>) -> Result<Client, ClientError> {
        let client_info = json!({"name": self.name, "version": self.version});
        let options = Arc::new(Options {
            capabilities: if self.relay {
                json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}})
            } else {
                self.handlers.capabilities()
            },
            timeout: self.timeout,
            max_rounds: self.max_rounds,
            log_level: Mutex::new(self.log_level),
        });
        let conn = Conn::start(link, inbox, self.handlers, client_info, self.limits);
        *conn
            .rehandshake
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handshake::regreet(options.clone(), self.probe));
        let client = Client { conn, options };
        match tokio::time::timeout(self.timeout, handshake::greet(&client, self.revision, self.probe)).await {
            Ok(Ok(())) => Ok(client),
            Ok(Err(e)) => {
                client.close().await;
                Err(e)
            }
            Err(_) => {
                client.close().await;
                Err(ClientError::Timeout(self.timeout))
            }
        }
    }
}
