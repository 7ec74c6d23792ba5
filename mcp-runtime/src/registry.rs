//! The registry: tools, resources, templates, prompts and completions.
//!
//! Reads are lock-free: every request loads an `Arc` snapshot of the catalog.
//! Writes (add or remove at run time) build a new catalog under a writer lock,
//! publish it atomically, and announce the change so that list-changed
//! notifications reach sessions and listeners.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use mcp_protocol::headers::{ParamHeader, XMcpHeaderError, parse_param_headers};
use mcp_protocol::model::{CacheHint, PromptDef, ResourceDef, ResourceTemplateDef, ToolDef};
use mcp_protocol::schema::{CompiledSchema, SchemaError, compile};
use mcp_protocol::{Era, Revision};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::api::handler::{CompletionHandler, PromptHandler, ResourceHandler, ToolHandler};
use crate::uri_template::{TemplateError, UriTemplate};

/// Why a registration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The input or output schema does not compile.
    #[error("tool {tool}: invalid {which} schema: {source}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// Why.
        source: SchemaError,
    },
    /// An `x-mcp-header` annotation is invalid.
    #[error("tool {tool}: {source}")]
    InvalidHeaderAnnotation {
        /// The tool.
        tool: String,
        /// Why.
        source: XMcpHeaderError,
    },
    /// The input schema is not an object schema.
    #[error("tool {0}: inputSchema must be a JSON object with \"type\": \"object\"")]
    InputSchemaNotObject(String),
    /// A resource template cannot be routed.
    #[error(transparent)]
    InvalidTemplate(#[from] TemplateError),
}

/// A registered tool.
pub struct ToolEntry {
    /// The definition, as listed.
    pub def: ToolDef,
    pub(crate) handler: Arc<dyn ToolHandler>,
    pub(crate) input: Option<CompiledSchema>,
    pub(crate) output: Option<CompiledSchema>,
    /// The `x-mcp-header` parameters of the input schema.
    pub param_headers: Vec<ParamHeader>,
    /// The deadline of this tool's handler runs, overriding
    /// `ServerConfig::handler_timeout` (inline) and `ServerConfig::task_ttl` (as a task)
    /// when set (default `None`). See [`ToolEntry::with_timeout`].
    pub timeout: Option<std::time::Duration>,
}

impl ToolEntry {
    /// Validates a tool for registration: the schemas compile, the input
    /// schema is an object schema, `x-mcp-header` annotations are valid.
    /// Input is validated against the schema at every call when
    /// `validate_input`; structured output against `outputSchema` when
    /// `validate_output`.
    pub fn new(
        def: ToolDef,
        handler: Arc<dyn ToolHandler>,
        validate_input: bool,
        validate_output: bool,
    ) -> Result<Self, RegistryError> {
        if def.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RegistryError::InputSchemaNotObject(def.name.clone()));
        }
        let schema_err = |which, source| RegistryError::InvalidSchema {
            tool: def.name.clone(),
            which,
            source,
        };
        let input = compile(&def.input_schema).map_err(|e| schema_err("input", e))?;
        let output = match &def.output_schema {
            Some(s) => Some(compile(s).map_err(|e| schema_err("output", e))?),
            None => None,
        };
        let param_headers =
            parse_param_headers(&def.input_schema).map_err(|source| RegistryError::InvalidHeaderAnnotation {
                tool: def.name.clone(),
                source,
            })?;
        Ok(ToolEntry {
            def,
            handler,
            input: validate_input.then_some(input),
            output: output.filter(|_| validate_output),
            param_headers,
            timeout: None,
        })
    }

    /// Sets the deadline of this tool's handler runs (behaviour invariant 15): it replaces
    /// `ServerConfig::handler_timeout` when the call runs inline and `ServerConfig::task_ttl`
    /// when it runs as a task (the task record still lives for its ttl). A run past it is the
    /// tool error "Tool execution timed out".
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// A registered concrete resource.
pub struct ResourceEntry {
    /// The definition.
    pub def: ResourceDef,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// A cache hint for reads of this resource (else the server default).
    pub cache: Option<CacheHint>,
}

impl ResourceEntry {
    /// A resource.
    pub fn new(def: ResourceDef, handler: Arc<dyn ResourceHandler>) -> Self {
        ResourceEntry {
            def,
            handler,
            cache: None,
        }
    }
}

/// A registered resource template.
pub struct TemplateEntry {
    /// The definition.
    pub def: ResourceTemplateDef,
    pub(crate) template: UriTemplate,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// A cache hint for reads through this template.
    pub cache: Option<CacheHint>,
}

impl TemplateEntry {
    /// A template; fails when the URI template cannot be routed.
    pub fn new(def: ResourceTemplateDef, handler: Arc<dyn ResourceHandler>) -> Result<Self, RegistryError> {
        let template = UriTemplate::parse(&def.uri_template)?;
        Ok(TemplateEntry {
            def,
            template,
            handler,
            cache: None,
        })
    }
}

/// A registered prompt.
pub struct PromptEntry {
    /// The definition.
    pub def: PromptDef,
    pub(crate) handler: Arc<dyn PromptHandler>,
}

impl PromptEntry {
    /// A prompt.
    pub fn new(def: PromptDef, handler: Arc<dyn PromptHandler>) -> Self {
        PromptEntry { def, handler }
    }
}

/// What a completion handler completes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CompletionKey {
    /// An argument of a prompt.
    Prompt {
        /// Prompt name.
        name: String,
        /// Argument name.
        argument: String,
    },
    /// A variable of a resource template.
    Resource {
        /// The URI template.
        uri: String,
        /// Variable name.
        argument: String,
    },
}

pub use mcp_protocol::notifications::Change;

/// The registry changes one stream receives, with the one lag policy: a receiver that fell
/// behind gets every list announced as changed ([`Change::EVERY_LIST`]), never a silent loss.
#[derive(Debug)]
pub struct ChangeFeed(broadcast::Receiver<Change>);

impl ChangeFeed {
    /// The next changes to announce; `None` once the registry is gone.
    pub async fn next(&mut self) -> Option<Vec<Change>> {
        match self.0.recv().await {
            Ok(change) => Some(vec![change]),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "registry changes missed; announcing every list as changed");
                Some(Change::EVERY_LIST.to_vec())
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }
}

/// One immutable version of everything registered.
#[derive(Default, Clone)]
pub struct Catalog {
    tools: Vec<Arc<ToolEntry>>,
    tool_index: HashMap<String, usize>,
    resources: Vec<Arc<ResourceEntry>>,
    resource_index: HashMap<String, usize>,
    templates: Vec<Arc<TemplateEntry>>,
    prompts: Vec<Arc<PromptEntry>>,
    prompt_index: HashMap<String, usize>,
    completions: HashMap<CompletionKey, Arc<dyn CompletionHandler>>,
    pages: Arc<PageCache>,
}

/// Identifies one finalized page of a catalog list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PageKey {
    pub(crate) method: mcp_protocol::Method,
    pub(crate) revision: Option<Revision>,
    pub(crate) era: Era,
    pub(crate) cursor: Option<String>,
}

/// The most pages one catalog snapshot keeps (cursors are client input).
const MAX_CACHED_PAGES: usize = 256;

/// Finalized, serialized list pages of one catalog snapshot: a new snapshot
/// starts empty, so a change never serves a stale page.
#[derive(Default)]
struct PageCache {
    pages: Mutex<HashMap<PageKey, Arc<RawValue>>>,
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

    /// Whether any completion handler is registered.
    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty()
    }

    fn reindex(&mut self) {
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
    }
}

/// The registry of a server.
pub struct Registry {
    current: ArcSwap<Catalog>,
    writer: Mutex<()>,
    changes: broadcast::Sender<Change>,
    /// The changes made here (not those heard from other instances), for a shared store.
    local: broadcast::Sender<Change>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.snapshot();
        f.debug_struct("Registry")
            .field("tools", &c.tools.len())
            .field("resources", &c.resources.len())
            .field("templates", &c.templates.len())
            .field("prompts", &c.prompts.len())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        let (changes, _) = broadcast::channel(256);
        Registry {
            current: ArcSwap::from_pointee(Catalog::default()),
            writer: Mutex::new(()),
            changes,
            local: broadcast::channel(256).0,
        }
    }

    /// The current catalog (lock-free).
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.load_full()
    }

    /// Changes as they happen.
    pub fn subscribe(&self) -> ChangeFeed {
        ChangeFeed(self.changes.subscribe())
    }

    fn update(&self, change: Change, edit: impl FnOnce(&mut Catalog) -> bool) -> bool {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Catalog::clone(&self.current.load());
        if !edit(&mut next) {
            return false;
        }
        next.reindex();
        self.current.store(Arc::new(next));
        if !crate::cluster::quiet() {
            let _ = self.local.send(change.clone());
            let _ = self.changes.send(change);
        }
        true
    }

    /// Announces a change made elsewhere (another instance of the server) to this registry's
    /// subscribers, without touching the catalog.
    pub fn announce(&self, change: Change) {
        let _ = self.changes.send(change);
    }

    /// The changes made in this registry (not those [`announce`](Registry::announce)d).
    pub(crate) fn local_changes(&self) -> broadcast::Receiver<Change> {
        self.local.subscribe()
    }

    /// Adds (or replaces) a tool.
    pub fn add_tool(&self, entry: ToolEntry) {
        let entry = Arc::new(entry);
        self.update(Change::Tools, |c| {
            c.tools.retain(|t| t.def.name != entry.def.name);
            c.tools.push(entry);
            true
        });
    }

    /// Removes a tool; `false` when unknown.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.update(Change::Tools, |c| {
            let before = c.tools.len();
            c.tools.retain(|t| t.def.name != name);
            c.tools.len() != before
        })
    }

    /// Adds (or replaces) a resource.
    pub fn add_resource(&self, entry: ResourceEntry) {
        let entry = Arc::new(entry);
        self.update(Change::Resources, |c| {
            c.resources.retain(|r| r.def.uri != entry.def.uri);
            c.resources.push(entry);
            true
        });
    }

    /// Removes a resource by URI.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.update(Change::Resources, |c| {
            let before = c.resources.len();
            c.resources.retain(|r| r.def.uri != uri);
            c.resources.len() != before
        })
    }

    /// Adds (or replaces, by name) a resource template.
    pub fn add_template(&self, entry: TemplateEntry) {
        let entry = Arc::new(entry);
        self.update(Change::Resources, |c| {
            c.templates.retain(|t| t.def.name != entry.def.name);
            c.templates.push(entry);
            true
        });
    }

    /// Removes a template by name.
    pub fn remove_template(&self, name: &str) -> bool {
        self.update(Change::Resources, |c| {
            let before = c.templates.len();
            c.templates.retain(|t| t.def.name != name);
            c.templates.len() != before
        })
    }

    /// Adds (or replaces) a prompt.
    pub fn add_prompt(&self, entry: PromptEntry) {
        let entry = Arc::new(entry);
        self.update(Change::Prompts, |c| {
            c.prompts.retain(|p| p.def.name != entry.def.name);
            c.prompts.push(entry);
            true
        });
    }

    /// Removes a prompt.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.update(Change::Prompts, |c| {
            let before = c.prompts.len();
            c.prompts.retain(|p| p.def.name != name);
            c.prompts.len() != before
        })
    }

    /// Adds (or replaces) a completion handler.
    pub fn add_completion(&self, key: CompletionKey, handler: Arc<dyn CompletionHandler>) {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Catalog::clone(&self.current.load());
        next.completions.insert(key, handler);
        self.current.store(Arc::new(next));
    }

    /// Announces that a resource's contents changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        let change = Change::ResourceUpdated(Arc::from(uri));
        let _ = self.local.send(change.clone());
        let _ = self.changes.send(change);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ctx;
    use crate::api::handler::ToolResult;
    use mcp_protocol::model::CallToolResult;
    use serde_json::json;

    async fn noop(_: Map<String, Value>, _: Ctx) -> ToolResult {
        Ok(CallToolResult::text("x"))
    }

    fn tool(name: &str) -> ToolEntry {
        ToolEntry::new(ToolDef::new(name), Arc::new(noop), true, true).unwrap()
    }

    #[test]
    fn add_remove_sorted_and_announced() {
        let r = Registry::new();
        let mut rx = r.subscribe();
        r.add_tool(tool("b"));
        r.add_tool(tool("a"));
        r.add_tool(tool("b"));
        let names: Vec<_> = r.snapshot().tools().iter().map(|t| t.def.name.clone()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(r.snapshot().tool("a").is_some());
        assert!(r.remove_tool("a"));
        assert!(!r.remove_tool("a"));
        assert_eq!(rx.0.try_recv().unwrap(), Change::Tools);
        let mut n = 1;
        while rx.0.try_recv().is_ok() {
            n += 1;
        }
        assert_eq!(n, 4, "3 adds and 1 effective remove");
    }

    #[test]
    fn snapshots_are_stable() {
        let r = Registry::new();
        r.add_tool(tool("a"));
        let before = r.snapshot();
        r.remove_tool("a");
        assert_eq!(before.tools().len(), 1);
        assert_eq!(r.snapshot().tools().len(), 0);
    }

    #[test]
    fn registration_validation() {
        let bad_type = ToolDef::new("t").with_input_schema(json!({"type": "string"}));
        assert!(matches!(
            ToolEntry::new(bad_type, Arc::new(noop), true, true),
            Err(RegistryError::InputSchemaNotObject(_))
        ));
        let bad_header = ToolDef::new("t")
            .with_input_schema(json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}));
        assert!(matches!(
            ToolEntry::new(bad_header, Arc::new(noop), true, true),
            Err(RegistryError::InvalidHeaderAnnotation { .. })
        ));
        let good_header = ToolDef::new("t").with_input_schema(
            json!({"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}),
        );
        let e = ToolEntry::new(good_header, Arc::new(noop), true, true).unwrap();
        assert_eq!(e.param_headers.len(), 1);
    }
}
