//! The MCP model: the wire types of every method and result, and their
//! per-era rendering.
//!
//! Definitions (tools, resources, prompts) are stored once and rendered per
//! revision: fields a revision does not know are left out (`title` before
//! 2025-06-18, `icons` before 2025-11-25, …). Results are decorated for their
//! era in one place ([`render`]): `resultType` and `serverInfo` in the modern
//! era, object-only `structuredContent` for legacy clients, cache hints.
//! Tasks ([`task`]) have one model rendered per era (nested or flat
//! `CreateTaskResult`, `ttl` or `ttlMs`).

mod capabilities;
mod completion;
mod content;
mod implementation;
mod logging;
mod prompt;
pub mod render;
mod resource;
pub mod task;
mod tool;

pub use capabilities::{ClientCapabilities, ServerFeatures, server_capabilities};
pub use completion::{CompleteArgument, CompleteContext, CompleteParams, CompleteReference, Completion};
pub use content::{Content, ResourceContents};
pub use implementation::Implementation;
pub use logging::LoggingLevel;
pub use prompt::{GetPromptResult, PromptArgument, PromptDef, PromptMessage, Role};
pub use render::{CacheHint, CacheScope};
pub use resource::{ReadResourceResult, ResourceDef, ResourceTemplateDef};
pub use task::{Task, TaskPayload, TaskStatus};
pub use tool::{CallToolParams, CallToolResult, ToolDef};
