//! The MCP model: the wire types of every method and result, and their
//! per-era rendering.
//!
//! Definitions (tools, resources, prompts) are stored once and rendered per
//! revision: fields a revision does not know are left out (`title` before
//! 2025-06-18, `icons` before 2025-11-25, tool `annotations` before 2025-03-26, …).
//! Tool annotations and icons are typed ([`ToolAnnotations`], [`Icon`]). Results are decorated for their
//! era in one place ([`render`]): `resultType` and `serverInfo` in the modern
//! era, object-only `structuredContent` for legacy clients, cache hints.
//! Tasks ([`task`]) have one model rendered per era (nested or flat
//! `CreateTaskResult`, `ttl` or `ttlMs`).

/// Builder setters of the definitions' optional presentation fields:
/// `text` fields take `impl Into<String>`, `json` fields a `Value`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($field:ident: $kind:tt);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, v: setters!(@ty $kind)) -> Self {
                self.$field = Some(setters!(@into $kind v));
                self
            }
        )*
    };
    (@ty text) => { impl Into<String> };
    (@ty json) => { serde_json::Value };
    (@into text $v:ident) => { $v.into() };
    (@into json $v:ident) => { $v };
}

mod capabilities;
mod completion;
mod content;
mod icon;
mod implementation;
mod initialize;
mod listed;
mod listen;
mod logging;
mod prompt;
pub mod render;
mod resource;
mod sampling;
mod shown;
pub mod task;
mod tool;
mod tool_annotations;

pub use capabilities::{ClientCapabilities, ServerFeatures, server_capabilities};
pub use completion::{CompleteArgument, CompleteContext, CompleteParams, CompleteReference, Completion};
pub use content::{Content, ResourceContents};
pub use icon::{Icon, IconTheme};
pub use implementation::Implementation;
pub use initialize::{InitializeParams, InitializeResult};
pub use listed::{Listed, PromptInfo, ResourceInfo, TemplateInfo, ToolInfo};
pub use listen::{ListenFilter, listen_completion};
pub use logging::LoggingLevel;
pub use prompt::{GetPromptResult, PromptArgument, PromptDef, PromptMessage, Role};
pub use render::{CacheHint, CacheScope};
pub use resource::{ReadResourceResult, ResourceDef, ResourceTemplateDef};
pub use sampling::IncludeContext;
pub use task::{Task, TaskPayload, TaskStatus};
pub use tool::{CallToolParams, CallToolParamsRef, CallToolResult, STRUCTURED_RESULT_KEY, ToolDef};
pub use tool_annotations::ToolAnnotations;
