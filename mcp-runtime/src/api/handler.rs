//! Handler traits: what a tool, resource, prompt or completion runs.
//!
//! Each trait has a blanket implementation for async closures
//! (`Fn(args, Ctx) -> impl Future`), so a plain `async fn` or closure is a
//! handler. Handlers return their result or a [`HandlerError`]; the dispatcher
//! turns errors into the era's wire answer and never lets internal detail out.

use std::future::Future;
use std::pin::Pin;

use mcp_protocol::model::{CallToolResult, CompleteParams, Completion, GetPromptResult, ReadResourceResult};
use serde_json::{Map, Value};

use crate::api::Ctx;
pub use crate::api::error::{BoxError, HandlerError};

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The outcome of a tool handler.
pub type ToolResult = Result<CallToolResult, HandlerError>;

/// Runs a tool.
pub trait ToolHandler: Send + Sync + 'static {
    /// Calls the tool with its (validated) arguments.
    fn call(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<ToolResult>;

    /// Whether this handler reads its arguments from their JSON text itself
    /// ([`ToolHandler::call_text`]), as one that deserializes them into a type does: the runtime
    /// then hands it the text as the client sent it, and builds no tree of the arguments, when no
    /// input schema is to be checked (a check reads the tree). `false` by default.
    fn reads_text(&self) -> bool {
        false
    }

    /// Calls the tool with its arguments as the JSON text of an object, as the client sent them
    /// (well-formed, within the decoder's limits); called only when [`ToolHandler::reads_text`]
    /// says so. The default parses them ([`parse_arguments`]) and calls [`ToolHandler::call`].
    fn call_text(&self, arguments: &str, ctx: Ctx) -> BoxFuture<ToolResult> {
        self.call(parse_arguments(arguments), ctx)
    }
}

/// The arguments of a tool call from their JSON text, as the runtime parses them for
/// [`ToolHandler::call`]: a name given twice keeps its first occurrence (the decoder's rule);
/// anything but an object is no arguments.
pub fn parse_arguments(text: &str) -> Map<String, Value> {
    match mcp_protocol::jsonrpc::parse_value(text.as_bytes(), usize::MAX) {
        Ok(Value::Object(arguments)) => arguments,
        _ => Map::new(),
    }
}

impl<F, Fut> ToolHandler for F
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult> + Send + 'static,
{
    fn call(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<ToolResult> {
        Box::pin(self(arguments, ctx))
    }
}

/// The outcome of a resource handler.
pub type ResourceResult = Result<ReadResourceResult, HandlerError>;

/// Reads a resource, or a resource of a template.
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads `uri`; `variables` holds the template variables (empty for a
    /// concrete resource).
    fn read(&self, uri: String, variables: Map<String, Value>, ctx: Ctx) -> BoxFuture<ResourceResult>;
}

impl<F, Fut> ResourceHandler for F
where
    F: Fn(String, Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ResourceResult> + Send + 'static,
{
    fn read(&self, uri: String, variables: Map<String, Value>, ctx: Ctx) -> BoxFuture<ResourceResult> {
        Box::pin(self(uri, variables, ctx))
    }
}

/// The outcome of a prompt handler.
pub type PromptResult = Result<GetPromptResult, HandlerError>;

/// Renders a prompt.
pub trait PromptHandler: Send + Sync + 'static {
    /// Renders the prompt with its arguments (required ones are checked first).
    fn get(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<PromptResult>;
}

impl<F, Fut> PromptHandler for F
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = PromptResult> + Send + 'static,
{
    fn get(&self, arguments: Map<String, Value>, ctx: Ctx) -> BoxFuture<PromptResult> {
        Box::pin(self(arguments, ctx))
    }
}

/// The outcome of a completion handler.
pub type CompletionResult = Result<Completion, HandlerError>;

/// Completes an argument value.
pub trait CompletionHandler: Send + Sync + 'static {
    /// Suggests values for the argument of `params`.
    fn complete(&self, params: CompleteParams, ctx: Ctx) -> BoxFuture<CompletionResult>;
}

impl<F, Fut> CompletionHandler for F
where
    F: Fn(CompleteParams, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = CompletionResult> + Send + 'static,
{
    fn complete(&self, params: CompleteParams, ctx: Ctx) -> BoxFuture<CompletionResult> {
        Box::pin(self(params, ctx))
    }
}
