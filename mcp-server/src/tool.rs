//! Tools: raw (JSON arguments) or typed (arguments and output from `serde`
//! types, schemas derived with `schemars`).

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use mcp_protocol::apps::ToolUi;
use mcp_protocol::model::{CallToolResult, Content, Icon, ToolAnnotations, ToolDef};
use mcp_protocol::task_mode::TaskSupport;
use mcp_runtime::Ctx;
use mcp_runtime::handler::{BoxFuture, HandlerError, ToolHandler, ToolResult, parse_arguments};
use mcp_runtime::registry::{RegistryError, SchemaUse, ToolEntry};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::schema::{self, SchemaStyle, WrapError};

/// What a tool handler may return.
pub trait IntoToolResult {
    /// Converts into the runtime's tool result.
    fn into_tool_result(self) -> ToolResult;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> ToolResult {
        Ok(self)
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::text(self))
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::new(vec![self]))
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> ToolResult {
        Ok(CallToolResult::new(self))
    }
}

/// A handler's `Result`: `Ok` as above, `Err` by its [`HandlerError`] kind (a
/// [`HandlerError::tool`] is the tool error the model sees). The error type is
/// [`HandlerError`] and only it, so that `async move { Ok(..) }` needs no annotation; `?`
/// converts any other error.
impl<T: IntoToolResult> IntoToolResult for Result<T, HandlerError> {
    fn into_tool_result(self) -> ToolResult {
        self.and_then(IntoToolResult::into_tool_result)
    }
}

/// A tool ready to register.
pub struct Tool {
    def: ToolDef,
    handler: Arc<dyn ToolHandler>,
    validate_input: bool,
    validate_output: bool,
    timeout: Option<std::time::Duration>,
    scopes: Vec<String>,
    resumable: bool,
    derived: Derived,
}

/// The schemas a typed tool derives from its types, derived again when the style changes.
#[derive(Debug, Clone, Default)]
struct Derived {
    /// The input schema's derivation, until one is given as JSON.
    input: Option<fn(SchemaStyle) -> Value>,
    /// The output schema's derivation (unwrapped), until one is given as JSON.
    output: Option<fn(SchemaStyle) -> Value>,
    /// The secure parameters' schema's derivation, until one is given as JSON.
    secure: Option<fn(SchemaStyle) -> Value>,
    /// The output is not an object: values are sent as `{"result": …}`, the schema wrapped.
    wrapped: bool,
    /// Why the output schema could not be wrapped (the registration is refused).
    unwrappable: Option<WrapError>,
}

/// The handler of a [`Tool::typed`] tool: its arguments deserialized into `I`, from their JSON
/// text when the runtime hands that over (no tree of them is built), else from the tree.
struct Typed<I, F> {
    handler: Arc<F>,
    input: PhantomData<fn() -> I>,
}

impl<I, F, Fut, R> Typed<I, F>
where
    I: DeserializeOwned + Send + 'static,
    F: Fn(I, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult,
{
    /// Runs the handler on `input`, or answers why the arguments are not an `I`; either when
    /// the future is first polled, where the runtime guards the run.
    fn run(&self, input: Result<I, serde_json::Error>, ctx: Ctx) -> BoxFuture<ToolResult> {
        let handler = self.handler.clone();
        Box::pin(async move {
            match input {
                Ok(input) => handler(input, ctx).await.into_tool_result(),
                Err(e) => Ok(CallToolResult::error(format!("Invalid tool input: {e}"))),
            }
        })
    }
}

impl<I, F, Fut, R> ToolHandler for Typed<I, F>
where
    I: DeserializeOwned + Send + 'static,
    F: Fn(I, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult,
{
    fn call(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<ToolResult> {
        self.run(serde_json::from_value(Value::Object(arguments)), ctx)
    }

    fn reads_text(&self) -> bool {
        true
    }

    fn call_text(&self, arguments: &str, ctx: Ctx) -> BoxFuture<ToolResult> {
        match serde_json::from_str(arguments) {
            Ok(input) => self.run(Ok(input), ctx),
            // Refused from the tree instead, as when the arguments are checked first: the same
            // message, and a name given twice keeps its first occurrence before the type is
            // asked (serde would refuse a struct's field given twice).
            Err(_) => self.call(parse_arguments(arguments), ctx),
        }
    }
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("def", &self.def).finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool whose handler takes the JSON arguments (an object; `{}` when
    /// the client sent none). The input schema defaults to `{"type":"object"}`.
    pub fn new<F, Fut, R>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let handler = Arc::new(move |args: Map<String, Value>, ctx: Ctx| {
            let fut = handler(args, ctx);
            async move { fut.await.into_tool_result() }
        });
        Tool::with_handler(name, description, handler)
    }

    /// A tool of `handler`, with the defaults of [`Tool::new`].
    fn with_handler(name: impl Into<String>, description: impl Into<String>, handler: Arc<dyn ToolHandler>) -> Self {
        Tool {
            def: ToolDef::new(name).with_description(description),
            handler,
            validate_input: true,
            validate_output: true,
            timeout: None,
            resumable: false,
            scopes: Vec::new(),
            derived: Derived::default(),
        }
    }

    /// A tool whose arguments deserialize into `I`; the input schema is
    /// derived from `I` (inlined, its root an object schema: see [`Tool::schema_style`]).
    pub fn typed<I, F, Fut, R>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let handler = Typed {
            handler: Arc::new(handler),
            input: PhantomData,
        };
        let mut tool = Tool::with_handler(name, description, Arc::new(handler));
        tool.derived.input = Some(schema::input_schema::<I>);
        tool.def.input_schema = schema::input_schema::<I>(SchemaStyle::default());
        tool
    }

    /// A typed tool with structured output: `O` is serialized into
    /// `structuredContent` (and a text block), and the output schema is
    /// derived from `O`. An `Err` is answered as any tool's: a
    /// [`HandlerError::tool`] is `isError: true` with its message (no
    /// `structuredContent`), anything else internal.
    ///
    /// `structuredContent` and the root of `outputSchema` are JSON objects. An `O` whose schema
    /// does not describe objects only (a `Vec`, an `Option`, a number, an enum of strings, …)
    /// is sent as `{"result": value}`, in every era, with the output schema wrapped to match
    /// (`{"type": "object", "properties": {"result": …}, "required": ["result"]}`); the text
    /// block is the JSON of the value itself.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Div { a: f64, b: f64 }
    /// #[derive(serde::Serialize, schemars::JsonSchema)]
    /// struct Quotient { value: f64 }
    ///
    /// let tool = Tool::structured("divide", "Divides a by b", |i: Div, _ctx| async move {
    ///     if i.b == 0.0 {
    ///         return Err(HandlerError::tool("cannot divide by zero"));
    ///     }
    ///     Ok(Quotient { value: i.a / i.b })
    /// });
    /// # let _ = tool;
    /// ```
    pub fn structured<I, O, F, Fut>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + JsonSchema + 'static,
        F: Fn(I, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let wrap = !schema::describes_object(&schema::output_schema::<O>(SchemaStyle::Inline));
        let run = move |input: I, ctx: Ctx| {
            let handler = handler.clone();
            async move {
                let value = serde_json::to_value(handler(input, ctx).await?)?;
                Ok(match wrap {
                    true => CallToolResult::structured_wrapped(value),
                    false => CallToolResult::structured(value),
                })
            }
        };
        let mut tool = Tool::typed(name, description, run);
        tool.derived.output = Some(schema::output_schema::<O>);
        tool.derived.wrapped = wrap;
        tool.schema_style(SchemaStyle::default())
    }

    /// How the schemas derived from the tool's types are shaped (default
    /// [`SchemaStyle::Inline`]: no `$ref`, which several clients refuse, except where a
    /// recursive type recurs; an object schema at the root). [`SchemaStyle::Verbatim`] keeps
    /// them as `schemars` generates them. A schema given as JSON is never reshaped.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    /// use mcp_server::SchemaStyle;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Point { x: f64, y: f64 }
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Move { to: Point }
    ///
    /// let inline = Tool::typed("move", "Moves", |_: Move, _ctx| async { "moved" });
    /// assert_eq!(inline.def().input_schema["properties"]["to"]["type"], "object");
    /// let verbatim = Tool::typed("move", "Moves", |_: Move, _ctx| async { "moved" })
    ///     .schema_style(SchemaStyle::Verbatim);
    /// assert_eq!(verbatim.def().input_schema["properties"]["to"]["$ref"], "#/$defs/Point");
    /// ```
    pub fn schema_style(mut self, style: SchemaStyle) -> Self {
        if let Some(derive) = self.derived.input {
            self.def.input_schema = derive(style);
        }
        if let Some(derive) = self.derived.secure {
            self.def.secure_input_schema = Some(derive(style));
        }
        self.derived.unwrappable = None;
        if let Some(derive) = self.derived.output {
            let schema = derive(style);
            self.def.output_schema = Some(match self.derived.wrapped {
                true => schema::wrap(schema.clone()).unwrap_or_else(|e| {
                    self.derived.unwrappable = Some(e);
                    schema
                }),
                false => schema,
            });
        }
        self
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def = self.def.with_title(title);
        self
    }

    /// Sets the input schema (kept verbatim, `$ref`s included; must be an object schema).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.derived.input = None;
        self.def = self.def.with_input_schema(schema);
        self
    }

    /// Gives the tool secure parameters (SEP-3221; the tools guide's "Secure parameters") whose schema
    /// is derived from `S`: values the host application supplies in `secureArguments` (a
    /// tenant, a database instance, a session token), never the model. A client that declared
    /// the extension gets the schema as `secureInputSchema`; a client that did not is not
    /// shown the tool when `S` requires a field, and its calls of it are refused (-32021). The
    /// runtime refuses a call whose `arguments` name a secure parameter, or whose secure
    /// arguments miss a required one or fail the schema, before the handler runs (-32602, the
    /// message naming no value); the handler reads them with
    /// [`Ctx::secure_arguments::<S>()`](Ctx::secure_arguments). No field of `S` may share a
    /// name with the input schema's properties (the registration fails).
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Query { sql: String }
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Target { project: String, instance: String }
    ///
    /// let tool = Tool::typed("execute_sql", "Runs a query", |q: Query, ctx: Ctx| async move {
    ///     let target: Target = ctx.secure_arguments()?;
    ///     Ok(format!("{} on {}/{}", q.sql, target.project, target.instance))
    /// })
    /// .secure_input::<Target>();
    /// let secure = tool.def().secure_input_schema.as_ref().unwrap();
    /// assert_eq!(secure["properties"]["instance"]["type"], "string");
    /// assert!(tool.def().input_schema["properties"].get("instance").is_none());
    /// ```
    pub fn secure_input<S: JsonSchema>(mut self) -> Self {
        self.derived.secure = Some(schema::input_schema::<S>);
        self.def.secure_input_schema = Some(schema::input_schema::<S>(SchemaStyle::default()));
        self
    }

    /// Sets the secure parameters' schema (kept verbatim; an object schema): see
    /// [`Tool::secure_input`].
    pub fn secure_input_schema(mut self, schema: Value) -> Self {
        self.derived.secure = None;
        self.def = self.def.with_secure_input_schema(schema);
        self
    }

    /// Sets the output schema (kept verbatim, `$ref`s included). For a [`Tool::structured`]
    /// tool whose output is sent as `{"result": …}`, it must describe that object.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.derived.output = None;
        self.derived.unwrappable = None;
        self.def = self.def.with_output_schema(schema);
        self
    }

    /// Sets the behaviour hints, replacing those set before.
    ///
    /// ```
    /// use mcp_server::prelude::*;
    /// use mcp_server::ToolAnnotations;
    ///
    /// let rm = Tool::new("rm", "Deletes a file", |_args, _ctx| async { "deleted" })
    ///     .annotations(ToolAnnotations::new().with_title("Delete a file").with_destructive(true))
    ///     .idempotent()
    ///     .open_world(false);
    /// assert_eq!(
    ///     serde_json::to_value(rm.def().annotations.as_ref().unwrap()).unwrap(),
    ///     json!({"title": "Delete a file", "destructiveHint": true, "idempotentHint": true,
    ///            "openWorldHint": false})
    /// );
    /// ```
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.def.annotations = Some(annotations);
        self
    }

    /// Hints that the tool does not modify its environment (`readOnlyHint: true`).
    pub fn read_only(self) -> Self {
        self.hint(|a| a.with_read_only(true))
    }

    /// Hints whether the tool may destroy or overwrite, rather than only add
    /// (`destructiveHint`; a client assumes `true` when it is absent and the tool is not
    /// read-only).
    pub fn destructive(self, destructive: bool) -> Self {
        self.hint(|a| a.with_destructive(destructive))
    }

    /// Hints that calling the tool again with the same arguments has no further effect
    /// (`idempotentHint: true`).
    pub fn idempotent(self) -> Self {
        self.hint(|a| a.with_idempotent(true))
    }

    /// Hints whether the tool interacts with an open world of external entities, as a web
    /// search does, rather than a closed domain (`openWorldHint`; a client assumes `true`
    /// when it is absent).
    pub fn open_world(self, open_world: bool) -> Self {
        self.hint(|a| a.with_open_world(open_world))
    }

    fn hint(mut self, set: impl FnOnce(ToolAnnotations) -> ToolAnnotations) -> Self {
        let annotations = self.def.annotations.take().unwrap_or_default();
        self.def.annotations = Some(set(annotations));
        self
    }

    /// Adds an icon (listed from 2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def.icons.push(icon);
        self
    }

    /// Sets the icons, replacing those added before (listed from 2025-11-25 on).
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.def.icons = icons.into_iter().collect();
        self
    }

    /// Sets `_meta`.
    pub fn meta(mut self, meta: Value) -> Self {
        self.def = self.def.with_meta(meta);
        self
    }

    /// Links the tool to an MCP App (`_meta.ui`, kept beside the other `_meta` keys): the
    /// `ui://` resource that renders its results and who may call it. See [`crate::apps`].
    pub fn ui(mut self, ui: ToolUi) -> Self {
        self.def.meta = Some(ui.merge_into(self.def.meta.take()));
        self
    }

    /// Links the tool to the MCP App at `resource_uri`, visible to the model and the app; a URI
    /// outside `ui://` is refused when the tool is registered (`RegistryError::Apps`).
    pub fn app(self, resource_uri: impl Into<String>) -> Self {
        let mut ui = ToolUi::without_resource();
        ui.resource_uri = Some(resource_uri.into());
        self.ui(ui)
    }

    /// Sets this tool's deadline, overriding the server's `handler_timeout`
    /// (default 60 s) for this tool, whether the call runs inline or as a task
    /// (where it replaces `task_ttl` as the deadline). A call past it is the
    /// tool error "Tool execution timed out" (a failed task, as a 2025-11-25
    /// task).
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The OAuth scopes a call of this tool needs, besides those every `tools/call` needs
    /// ([`McpServerBuilder::method_scopes`](crate::McpServerBuilder::method_scopes)). A caller
    /// short of one is refused before the handler runs, naming every scope the call needs (over
    /// HTTP a 403 `insufficient_scope` challenge the client can step up from). A string that is
    /// not a scope token makes the registration fail.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets whether the tool may or must run as a task.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.def = self.def.with_task_support(support);
        self
    }

    /// Makes the tool's tasks outlive the worker running them: when it stops (killed, or its
    /// instance drained on a deploy), a worker of any instance sharing the store runs the task
    /// again from the last checkpoint the handler saved ([`Ctx::checkpoint`](crate::Ctx::checkpoint),
    /// read back with [`Ctx::resumed_from`](crate::Ctx::resumed_from)), up to
    /// [`TaskRuns::max_attempts`](crate::tasks::TaskRuns) with a backoff. Runs are at least
    /// once: [`Ctx::task_id`](crate::Ctx::task_id) and [`Ctx::attempt`](crate::Ctx::attempt)
    /// make an idempotency key for side effects. See the tasks guide. Needs the `shared-store`
    /// feature (on by default) and a store (`McpServerBuilder::store`) for a task to outlive its
    /// process; without the feature it changes nothing.
    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }

    /// Whether arguments are validated against the input schema (default on).
    pub fn validate_input(mut self, on: bool) -> Self {
        self.validate_input = on;
        self
    }

    /// Whether structured output is validated against the output schema
    /// (default on).
    pub fn validate_output(mut self, on: bool) -> Self {
        self.validate_output = on;
        self
    }

    /// The definition.
    pub fn def(&self) -> &ToolDef {
        &self.def
    }

    /// The registry entry of the tool (to register it in a [`mcp_runtime::Registry`] directly).
    /// Fails when a schema given as JSON is invalid (one derived from the tool's types is
    /// valid by construction, and compiled at its first use), or when the output of a [`Tool::structured`] tool is
    /// not an object and its [`SchemaStyle::Verbatim`] schema cannot be wrapped
    /// ([`RegistryError::OutputSchemaNotWrappable`]).
    pub fn into_entry(self) -> Result<ToolEntry, RegistryError> {
        if let Some(e) = self.derived.unwrappable {
            return Err(RegistryError::OutputSchemaNotWrappable {
                tool: self.def.name,
                reason: e.to_string(),
            });
        }
        // A schema derived from the tool's types is compiled at its first use.
        let input = match self.derived.input {
            Some(_) => SchemaUse::derived(self.validate_input),
            None => SchemaUse::given(self.validate_input),
        };
        let output = match self.derived.output {
            Some(_) => SchemaUse::derived(self.validate_output),
            None => SchemaUse::given(self.validate_output),
        };
        let entry = ToolEntry::with_schemas(self.def, self.handler, input, output)?.with_scopes(self.scopes)?;
        let entry = match self.timeout {
            Some(t) => entry.with_timeout(t),
            None => entry,
        };
        Ok(if self.resumable { entry.resumable() } else { entry })
    }
}
