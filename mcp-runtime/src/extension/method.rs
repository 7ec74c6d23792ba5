//! [`CustomMethod`]: a request method outside the core catalogue (a vendor method, or an
//! extension's), with its handler, the eras that serve it, and (typed) the JSON Schemas of its
//! params and result.

use std::future::Future;
use std::sync::Arc;

use mcp_protocol::RpcError;
use mcp_protocol::extension::{ExtensionError, check_method};
use mcp_protocol::schema::{CompiledSchema, validator};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::api::handler::BoxFuture;
use crate::api::{Ctx, HandlerError};

/// The outcome of a custom method's handler: its result, as JSON.
pub type MethodResult = Result<Value, HandlerError>;

/// Runs a custom method.
pub trait MethodHandler: Send + Sync + 'static {
    /// Calls the method with its params (an object without `_meta`, which [`Ctx::meta`] holds;
    /// `{}` when the client sent none).
    fn call(&self, params: Map<String, Value>, ctx: Ctx) -> BoxFuture<MethodResult>;
}

impl<F, Fut> MethodHandler for F
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = MethodResult> + Send + 'static,
{
    fn call(&self, params: Map<String, Value>, ctx: Ctx) -> BoxFuture<MethodResult> {
        Box::pin(self(params, ctx))
    }
}

/// Which eras serve a custom method (or declare an extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Eras {
    /// The legacy revisions (in a session) and 2026-07-28 (default).
    #[default]
    Both,
    /// 2026-07-28 only.
    Modern,
    /// The legacy revisions only.
    Legacy,
}

impl Eras {
    /// Whether `era` is one of them.
    pub fn has(self, era: mcp_protocol::Era) -> bool {
        use mcp_protocol::Era;
        matches!(
            (self, era),
            (Eras::Both, _) | (Eras::Modern, Era::Modern) | (Eras::Legacy, Era::Legacy)
        )
    }

    /// The revisions of these eras, newest first: what a server serving them lists
    /// (`-32022`'s `supported`, a Server Card's `supportedProtocolVersions`).
    pub fn revisions(self) -> impl Iterator<Item = mcp_protocol::Revision> {
        mcp_protocol::Revision::ALL
            .into_iter()
            .rev()
            .filter(move |r| self.has(r.era()))
    }
}

/// A request method the core protocol does not define: its name, its handler, the eras that
/// serve it and, for a typed method, the schemas of its params and result.
///
/// ```
/// # mod mcp_server { pub use mcp_runtime::HandlerError; pub use mcp_runtime::extension::CustomMethod; }
/// use mcp_server::CustomMethod;
/// use mcp_server::HandlerError;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Search { query: String }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Hits { hits: Vec<String> }
///
/// let search = CustomMethod::typed("com.example/search", |p: Search, _ctx| async move {
///     Ok::<_, HandlerError>(Hits { hits: vec![p.query] })
/// })
/// .expect("a valid method name");
/// assert_eq!(search.name(), "com.example/search");
/// ```
#[derive(Clone)]
pub struct CustomMethod {
    name: Arc<str>,
    /// The metric label of the method: its name, kept for the life of the process (methods
    /// are registered by code, a bounded set).
    label: &'static str,
    eras: Eras,
    handler: Arc<dyn MethodHandler>,
    params_schema: Option<Value>,
    result_schema: Option<Value>,
    cacheable: bool,
    long_lived: bool,
}

impl std::fmt::Debug for CustomMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomMethod")
            .field("name", &self.name)
            .field("eras", &self.eras)
            .finish_non_exhaustive()
    }
}

impl CustomMethod {
    /// A method whose handler takes the JSON params and returns a JSON result. Refused when
    /// the name is a core method, empty, `rpc.`-prefixed or a `notifications/` name.
    pub fn new(name: &str, handler: impl MethodHandler) -> Result<Self, ExtensionError> {
        check_method(name)?;
        Ok(CustomMethod {
            name: Arc::from(name),
            label: Box::leak(name.to_owned().into_boxed_str()),
            eras: Eras::Both,
            handler: Arc::new(handler),
            params_schema: None,
            result_schema: None,
            cacheable: false,
            long_lived: false,
        })
    }

    /// A method with typed params and result: the params are validated against `P`'s JSON
    /// Schema (-32602 naming what does not fit) and deserialized into `P`; the result is
    /// serialized from `R`. Both schemas are kept ([`CustomMethod::params_schema`],
    /// [`CustomMethod::result_schema`]).
    pub fn typed<P, R, F, Fut>(name: &str, handler: F) -> Result<Self, ExtensionError>
    where
        P: DeserializeOwned + JsonSchema + Send + 'static,
        R: Serialize + JsonSchema + 'static,
        F: Fn(P, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
    {
        let params_schema = schema_of::<P>();
        let compiled = validator(&params_schema)
            .map_err(|_| ExtensionError::InvalidMethod(name.to_owned(), "its params schema does not compile"))?;
        let typed = Typed {
            schema: compiled,
            handler,
            marker: std::marker::PhantomData,
        };
        let mut method = CustomMethod::new(name, typed)?;
        method.params_schema = Some(params_schema);
        method.result_schema = Some(schema_of::<R>());
        Ok(method)
    }

    /// Serves the method in these eras only (default: both).
    pub fn eras(mut self, eras: Eras) -> Self {
        self.eras = eras;
        self
    }

    /// Its complete 2026-07-28 results carry the server's cache hint (`ttlMs`, `cacheScope`),
    /// as `tools/list` and `resources/read` do: for a method whose results are a
    /// `CacheableResult` of its extension (e.g. `skills/list`). The hint is the server's
    /// (`McpServerBuilder::cache_hint`), private when a visibility hook is set, never on an
    /// MRTR retry; a result that already has `ttlMs` or `cacheScope` keeps its own. Legacy
    /// results are never decorated.
    pub fn cacheable(mut self) -> Self {
        self.cacheable = true;
        self
    }

    /// Its requests are long-lived streams (a subscription that lasts until the client
    /// cancels it, like the Events extension's `events/stream`): exempt from the in-flight
    /// request bound, held instead by the transport's stream budget (over HTTP: answered with
    /// a stream at once, refused with the budget's error when it is full, no keep-alive
    /// comments: the handler's own notifications keep it alive).
    pub fn long_lived(mut self) -> Self {
        self.long_lived = true;
        self
    }

    /// Whether its requests are long-lived streams ([`long_lived`](Self::long_lived)).
    pub fn is_long_lived(&self) -> bool {
        self.long_lived
    }

    /// Whether its modern results carry the cache hint ([`cacheable`](Self::cacheable)).
    pub fn is_cacheable(&self) -> bool {
        self.cacheable
    }

    /// The method name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The eras that serve it.
    pub fn served_in(&self) -> Eras {
        self.eras
    }

    /// The JSON Schema of its params (typed methods).
    pub fn params_schema(&self) -> Option<&Value> {
        self.params_schema.as_ref()
    }

    /// The JSON Schema of its result (typed methods).
    pub fn result_schema(&self) -> Option<&Value> {
        self.result_schema.as_ref()
    }

    /// The metric label.
    pub(crate) fn label(&self) -> &'static str {
        self.label
    }

    /// The handler.
    pub(crate) fn handler(&self) -> &Arc<dyn MethodHandler> {
        &self.handler
    }
}

/// The JSON Schema of a type (2020-12), as a typed method's params and an extension's typed
/// declarations are derived (`{"type": "object"}` should it not serialize).
pub fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| serde_json::json!({"type": "object"}))
}

/// A typed handler: validation, deserialization, the handler, serialization.
struct Typed<P, R, F> {
    /// The params' validator (none when this build does not validate).
    schema: Option<CompiledSchema>,
    handler: F,
    marker: std::marker::PhantomData<fn(P) -> R>,
}

impl<P, R, F, Fut> MethodHandler for Typed<P, R, F>
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    F: Fn(P, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
{
    fn call(&self, params: Map<String, Value>, ctx: Ctx) -> BoxFuture<MethodResult> {
        let params = Value::Object(params);
        if let Some(schema) = &self.schema
            && let Err(violations) = schema.validate(&params)
        {
            let e = RpcError::invalid_params(format!("Invalid params: {violations}"));
            return Box::pin(async move { Err(HandlerError::Rpc(e)) });
        }
        let params: P = match serde_json::from_value(params) {
            Ok(p) => p,
            Err(e) => {
                let e = RpcError::invalid_params(format!("Invalid params: {e}"));
                return Box::pin(async move { Err(HandlerError::Rpc(e)) });
            }
        };
        let fut = (self.handler)(params, ctx);
        Box::pin(async move {
            let result = fut.await?;
            serde_json::to_value(result).map_err(HandlerError::from)
        })
    }
}
