//! [`Catalog`]: one immutable version of everything registered (with the `_meta` its lists
//! carry), with its cache of finalized list pages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_protocol::task_mode::TaskSupport;
use mcp_protocol::{Era, Revision, apps};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::fast_map::FastMap;

use super::entries::{CompletionKey, PromptEntry, ResourceEntry, TemplateEntry, ToolEntry};
use super::list_meta::ListMeta;
use super::visibility::CatalogKind;
use crate::api::handler::CompletionHandler;

/// One immutable version of everything registered.
#[derive(Default, Clone)]
pub struct Catalog {
    pub(super) tools: Vec<Arc<ToolEntry>>,
    pub(super) tool_index: FastMap<String, usize>,
    pub(super) resources: Vec<Arc<ResourceEntry>>,
    pub(super) resource_index: FastMap<String, usize>,
    pub(super) templates: Vec<Arc<TemplateEntry>>,
    pub(super) prompts: Vec<Arc<PromptEntry>>,
    pub(super) prompt_index: FastMap<String, usize>,
    pub(super) completions: HashMap<CompletionKey, Arc<dyn CompletionHandler>>,
    /// The `_meta` of each list's results.
    pub(super) list_meta: ListMeta,
    pages: Arc<PageCache>,
    /// Whether some tool, resource, template or prompt needs scopes.
    scoped: bool,
    /// Whether some tool may run as a task (its `taskSupport` is not `forbidden`).
    tasks: bool,
    /// Whether the catalog holds an MCP App: a `ui://` resource or template, or a tool linked
    /// to one.
    apps: bool,
    /// Some tool has a secure parameters' schema (SEP-3221).
    secure_params: bool,
}

/// Identifies one finalized page of a catalog list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PageKey {
    pub(crate) method: mcp_protocol::Method,
    pub(crate) revision: Option<Revision>,
    pub(crate) era: Era,
    pub(crate) cursor: Option<String>,
    /// The client declared the secure-parameters extension (always `false` for a catalog with
    /// no secure parameter, whose pages are the same either way).
    pub(crate) secure_params: bool,
}

/// The most pages one catalog snapshot keeps (cursors are client input).
const MAX_CACHED_PAGES: usize = 256;

/// Finalized, serialized list pages of one catalog snapshot: a new snapshot
/// starts empty, so a change never serves a stale page.
#[derive(Default)]
struct PageCache {
    pages: Mutex<HashMap<PageKey, Arc<RawValue>>>,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("prompts", &self.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Catalog {
    /// A cached page.
    pub(crate) fn page(&self, key: &PageKey) -> Option<Arc<RawValue>> {
        self.pages
            .pages
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Keeps a page (up to a bound).
    pub(crate) fn store_page(&self, key: PageKey, page: Arc<RawValue>) {
        let mut pages = self.pages.pages.lock().unwrap_or_else(PoisonError::into_inner);
        if pages.len() < MAX_CACHED_PAGES {
            pages.insert(key, page);
        }
    }

    /// Tools sorted by name.
    pub fn tools(&self) -> &[Arc<ToolEntry>] {
        &self.tools
    }

    /// A tool by name.
    pub fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.tool_index.get(name).map(|i| &self.tools[*i])
    }

    /// Resources sorted by URI.
    pub fn resources(&self) -> &[Arc<ResourceEntry>] {
        &self.resources
    }

    /// A concrete resource by URI.
    pub fn resource(&self, uri: &str) -> Option<&Arc<ResourceEntry>> {
        self.resource_index.get(uri).map(|i| &self.resources[*i])
    }

    /// Templates sorted by name.
    pub fn templates(&self) -> &[Arc<TemplateEntry>] {
        &self.templates
    }

    /// The first template yielding `uri`, with its variables.
    pub fn match_template(&self, uri: &str) -> Option<(&Arc<TemplateEntry>, Map<String, Value>)> {
        self.templates
            .iter()
            .find_map(|t| t.template.matches(uri).map(|v| (t, v)))
    }

    /// Prompts sorted by name.
    pub fn prompts(&self) -> &[Arc<PromptEntry>] {
        &self.prompts
    }

    /// A prompt by name.
    pub fn prompt(&self, name: &str) -> Option<&Arc<PromptEntry>> {
        self.prompt_index.get(name).map(|i| &self.prompts[*i])
    }

    /// A completion handler.
    pub fn completion(&self, key: &CompletionKey) -> Option<&Arc<dyn CompletionHandler>> {
        self.completions.get(key)
    }

    /// The `_meta` every page of the list of `kind` carries, if set
    /// ([`Registry::set_list_meta`](super::Registry::set_list_meta)).
    pub fn list_meta(&self, kind: CatalogKind) -> Option<&Map<String, Value>> {
        self.list_meta.of(kind)
    }

    /// Whether any completion handler is registered.
    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty()
    }

    pub(super) fn reindex(&mut self) {
        self.pages = Arc::default();
        self.tools.sort_by(|a, b| a.def.name.cmp(&b.def.name));
        self.tool_index = self
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.def.name.clone(), i))
            .collect();
        self.resources.sort_by(|a, b| a.def.uri.cmp(&b.def.uri));
        self.resource_index = self
            .resources
            .iter()
            .enumerate()
            .map(|(i, r)| (r.def.uri.clone(), i))
            .collect();
        self.templates.sort_by(|a, b| a.def.name.cmp(&b.def.name));
        self.prompts.sort_by(|a, b| a.def.name.cmp(&b.def.name));
        self.prompt_index = self
            .prompts
            .iter()
            .enumerate()
            .map(|(i, p)| (p.def.name.clone(), i))
            .collect();
        self.scoped = self.tools.iter().any(|t| !t.scopes.is_empty())
            || self.resources.iter().any(|r| !r.scopes.is_empty())
            || self.templates.iter().any(|t| !t.scopes.is_empty())
            || self.prompts.iter().any(|p| !p.scopes.is_empty());
        self.tasks = self.tools.iter().any(|t| t.def.task_support != TaskSupport::Forbidden);
        self.secure_params = self.tools.iter().any(|t| t.def.secure_input_schema.is_some());
        self.apps = self.tools.iter().any(|t| apps::is_app_tool(t.def.meta.as_ref()))
            || self
                .resources
                .iter()
                .any(|r| apps::is_app_resource(&r.def.uri, r.def.mime_type.as_deref()))
            || self
                .templates
                .iter()
                .any(|t| apps::is_app_resource(&t.def.uri_template, t.def.mime_type.as_deref()));
    }

    /// Whether some tool may run as a task: the server then declares the tasks capability.
    pub fn offers_tasks(&self) -> bool {
        self.tasks
    }

    /// Whether the catalog holds an MCP App (a `ui://` resource or template, or a tool linked to
    /// one): the server then declares the MCP Apps extension.
    pub fn offers_apps(&self) -> bool {
        self.apps
    }

    /// Whether some tool has a secure parameters' schema: the server then declares the
    /// secure-parameters extension, and lists tools per client (whether it declared it).
    pub fn offers_secure_params(&self) -> bool {
        self.secure_params
    }

    /// Whether some tool, resource, template or prompt needs scopes.
    pub fn scoped(&self) -> bool {
        self.scoped
    }

    /// Every scope a tool, resource, template or prompt names (a template's with its variable
    /// placeholders), once each, sorted: for a metadata document's `scopes_supported`.
    pub fn scopes(&self) -> Vec<String> {
        let mut all: Vec<String> = self
            .tools
            .iter()
            .map(|t| &t.scopes)
            .chain(self.resources.iter().map(|r| &r.scopes))
            .chain(self.templates.iter().map(|t| &t.scopes))
            .chain(self.prompts.iter().map(|p| &p.scopes))
            .flat_map(|s| s.fixed_scopes().map(str::to_owned))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}
