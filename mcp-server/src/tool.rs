//! Tools: raw (JSON arguments) or typed (arguments and output from `serde`
//! types, schemas derived with `schemars`).

use std::future::Future;
use std::sync::Arc;

use mcp_protocol::apps::ToolUi;
use mcp_protocol::model::{CallToolResult, Content, ToolDef};
use mcp_protocol::task_mode::TaskSupport;
use mcp_runtime::Ctx;
use mcp_runtime::handler::{HandlerError, ToolHandler, ToolResult};
use mcp_runtime::registry::{RegistryError, ToolEntry};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

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

/// The JSON Schema of a type, as a tool schema (2020-12, kept verbatim).
pub fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| serde_json::json!({"type": "object"}))
}

/// A tool ready to register.
pub struct Tool {
    def: ToolDef,
    handler: Arc<dyn ToolHandler>,
    validate_input: bool,
    validate_output: bool,
    timeout: Option<std::time::Duration>,
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
        Tool {
            def: ToolDef::new(name).with_description(description),
            handler,
            validate_input: true,
            validate_output: true,
            timeout: None,
        }
    }

    /// A tool whose arguments deserialize into `I`; the input schema is
    /// derived from `I`.
    pub fn typed<I, F, Fut, R>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        I: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(I, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let handler = Arc::new(handler);
        let raw = move |args: Map<String, Value>, ctx: Ctx| {
            let handler = handler.clone();
            async move {
                match serde_json::from_value::<I>(Value::Object(args)) {
                    Ok(input) => handler(input, ctx).await.into_tool_result(),
                    Err(e) => Ok(CallToolResult::error(format!("Invalid tool input: {e}"))),
                }
            }
        };
        Tool::new(name, description, raw).input_schema(schema_of::<I>())
    }

    /// A typed tool with structured output: `O` is serialized into
    /// `structuredContent` (and a text block), and the output schema is
    /// derived from `O`. An `Err` is answered as any tool's: a
    /// [`HandlerError::tool`] is `isError: true` with its message (no
    /// `structuredContent`), anything else internal.
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
        let wrapped = move |input: I, ctx: Ctx| {
            let handler = handler.clone();
            async move {
                let value = serde_json::to_value(handler(input, ctx).await?)?;
                Ok(CallToolResult::structured(value))
            }
        };
        Tool::typed(name, description, wrapped).output_schema(schema_of::<O>())
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.def = self.def.with_title(title);
        self
    }

    /// Sets the input schema (kept verbatim; must be an object schema).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.def = self.def.with_input_schema(schema);
        self
    }

    /// Sets the output schema (kept verbatim).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.def = self.def.with_output_schema(schema);
        self
    }

    /// Sets the annotations (behaviour hints).
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.def = self.def.with_annotations(annotations);
        self
    }

    /// Sets the icons.
    pub fn icons(mut self, icons: Value) -> Self {
        self.def = self.def.with_icons(icons);
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

    /// Sets whether the tool may or must run as a task.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.def = self.def.with_task_support(support);
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
    pub fn into_entry(self) -> Result<ToolEntry, RegistryError> {
        let entry = ToolEntry::new(self.def, self.handler, self.validate_input, self.validate_output)?;
        Ok(match self.timeout {
            Some(t) => entry.with_timeout(t),
            None => entry,
        })
    }
}
