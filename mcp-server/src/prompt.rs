//! Prompts.

use std::future::Future;
use std::sync::Arc;

use mcp_protocol::model::{GetPromptResult, PromptArgument, PromptDef};
use mcp_runtime::Ctx;
use mcp_runtime::handler::{HandlerError, PromptHandler};
use mcp_runtime::registry::PromptEntry;
use serde_json::{Map, Value};

/// A prompt ready to register.
pub struct Prompt {
    def: PromptDef,
    handler: Arc<dyn PromptHandler>,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt").field("def", &self.def).finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt rendered by `handler(arguments, ctx)`. Required arguments
    /// are checked before the handler runs.
    pub fn new<F, Fut, E>(name: impl Into<String>, description: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, E>> + Send + 'static,
        E: Into<HandlerError> + 'static,
    {
        let handler = Arc::new(move |args: Map<String, Value>, ctx: Ctx| {
            let fut = handler(args, ctx);
            async move { fut.await.map_err(Into::into) }
        });
        Prompt {
            def: PromptDef::new(name).with_description(description),
            handler,
        }
    }

    /// Declares an argument.
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        self.def = self.def.with_argument(PromptArgument::new(name, description, required));
        self
    }

    /// Sets the title.
    pub fn title(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_title(v);
        self
    }

    /// The registry entry of the prompt.
    pub fn into_entry(self) -> PromptEntry {
        PromptEntry::new(self.def, self.handler)
    }
}
