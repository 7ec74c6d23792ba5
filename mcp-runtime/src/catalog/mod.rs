//! The catalog: what the server offers (tools, resources, templates, prompts, completions, the
//! `_meta` of its lists), how it is registered and changed ([`Registry`]), read ([`Catalog`]
//! snapshots), routed (URI templates), shown per principal ([`Visibility`]) and guarded by the
//! scopes each item needs ([`Scopes`], [`MethodScopes`]).

mod entries;
mod list_meta;
mod registry;
pub(crate) mod scope_check;
pub(crate) mod scopes;
mod snapshot;
pub(crate) mod uri_template;
pub(crate) mod validator;
mod visibility;

pub use entries::{CompletionKey, PromptEntry, RegistryError, ResourceEntry, TemplateEntry, ToolEntry};
pub use mcp_protocol::notifications::Change;
pub use registry::{ChangeFeed, Registry, Unannounced};
pub use scopes::{MethodScopes, ScopeError, Scopes};
pub use snapshot::Catalog;
pub(crate) use snapshot::PageKey;
pub use validator::SchemaUse;
pub(crate) use visibility::visible;
pub use visibility::{CatalogKind, Visibility};
