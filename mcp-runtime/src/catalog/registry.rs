//! [`Registry`]: the catalog's one writer. Reads are lock-free (an `Arc` snapshot of the
//! [`Catalog`]); writes build a new catalog under a writer lock, publish it atomically, and
//! announce the change, so that list-changed notifications reach sessions and listeners. An edit
//! that repeats a change another instance already announced is made through
//! [`Registry::unannounced`]: explicitly, never by a mode set elsewhere.
//!
//! With a shared store, this instance's own changes reach its streams only once the bus has
//! carried them ([`Registry::announce_when_heard`], called by the cluster when it starts): the
//! bus delivers in publish order to every instance alike, so a client that hears of a change
//! from one instance finds it applied on the others too (an application that replicates the
//! change itself broadcasts it before making it, see `Engine::on_broadcast`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use tokio::sync::broadcast;

use super::entries::{CompletionKey, PromptEntry, RegistryError, ResourceEntry, TemplateEntry, ToolEntry};
use super::snapshot::Catalog;
use super::visibility::CatalogKind;
use crate::api::handler::CompletionHandler;

use mcp_protocol::notifications::Change;
use serde_json::Value;

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

/// The registry of a server.
pub struct Registry {
    current: ArcSwap<Catalog>,
    writer: Mutex<()>,
    changes: broadcast::Sender<Change>,
    /// The changes made here (not those heard from other instances), for a shared store.
    local: broadcast::Sender<Change>,
    /// Whether this instance's own changes are announced when the bus brings them back (with a
    /// shared store), rather than at once.
    heard: AtomicBool,
}

/// Whether an edit is announced to the registry's subscribers (and, with a shared store, to
/// the other instances).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Announce {
    Yes,
    No,
}

/// Edits of a [`Registry`] that are not announced ([`Registry::unannounced`]).
#[derive(Debug, Clone, Copy)]
pub struct Unannounced<'r>(&'r Registry);

impl Unannounced<'_> {
    /// Adds (or replaces) a tool.
    pub fn add_tool(self, entry: ToolEntry) {
        self.0.add_tool_as(entry, Announce::No);
    }

    /// Removes a tool; `false` when unknown.
    pub fn remove_tool(self, name: &str) -> bool {
        self.0.remove_tool_as(name, Announce::No)
    }

    /// Adds (or replaces) a resource.
    pub fn add_resource(self, entry: ResourceEntry) {
        self.0.add_resource_as(entry, Announce::No);
    }

    /// Removes a resource by URI.
    pub fn remove_resource(self, uri: &str) -> bool {
        self.0.remove_resource_as(uri, Announce::No)
    }

    /// Adds (or replaces, by name) a resource template.
    pub fn add_template(self, entry: TemplateEntry) {
        self.0.add_template_as(entry, Announce::No);
    }

    /// Removes a template by name.
    pub fn remove_template(self, name: &str) -> bool {
        self.0.remove_template_as(name, Announce::No)
    }

    /// Adds (or replaces) a prompt.
    pub fn add_prompt(self, entry: PromptEntry) {
        self.0.add_prompt_as(entry, Announce::No);
    }

    /// Removes a prompt.
    pub fn remove_prompt(self, name: &str) -> bool {
        self.0.remove_prompt_as(name, Announce::No)
    }
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
            heard: AtomicBool::new(false),
        }
    }

    #[cfg(feature = "shared-store")]
    /// From now on, this registry's own changes are announced to its subscribers only when
    /// [`announce`](Registry::announce)d: the cluster does it when the bus brings the change back
    /// (or at once when the bus cannot take it).
    pub(crate) fn announce_when_heard(&self) {
        self.heard.store(true, Ordering::Release);
    }

    /// Sends a change made here: to the other instances (through the cluster, if any) and, unless
    /// the bus is to bring it back first, to this registry's subscribers.
    fn changed(&self, change: Change) {
        let _ = self.local.send(change.clone());
        if !self.heard.load(Ordering::Acquire) {
            let _ = self.changes.send(change);
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

    fn update(&self, change: Change, announce: Announce, edit: impl FnOnce(&mut Catalog) -> bool) -> bool {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Catalog::clone(&self.current.load());
        if !edit(&mut next) {
            return false;
        }
        next.reindex();
        self.current.store(Arc::new(next));
        if announce == Announce::Yes {
            self.changed(change);
        }
        true
    }

    /// Announces a change made elsewhere (another instance of the server) to this registry's
    /// subscribers, without touching the catalog.
    pub fn announce(&self, change: Change) {
        let _ = self.changes.send(change);
    }

    #[cfg(feature = "shared-store")]
    /// The changes made in this registry (not those [`announce`](Registry::announce)d).
    pub(crate) fn local_changes(&self) -> broadcast::Receiver<Change> {
        self.local.subscribe()
    }

    /// The same edits, made without announcing them: for a change another instance of the
    /// server made and announced already (on every instance's streams), applied here to keep
    /// the catalogs equal (an `on_broadcast` handler).
    pub fn unannounced(&self) -> Unannounced<'_> {
        Unannounced(self)
    }

    /// Adds (or replaces) a tool.
    pub fn add_tool(&self, entry: ToolEntry) {
        self.add_tool_as(entry, Announce::Yes);
    }

    /// Removes a tool; `false` when unknown.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.remove_tool_as(name, Announce::Yes)
    }

    /// Adds (or replaces) a resource.
    pub fn add_resource(&self, entry: ResourceEntry) {
        self.add_resource_as(entry, Announce::Yes);
    }

    /// Removes a resource by URI.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.remove_resource_as(uri, Announce::Yes)
    }

    /// Adds (or replaces, by name) a resource template.
    pub fn add_template(&self, entry: TemplateEntry) {
        self.add_template_as(entry, Announce::Yes);
    }

    /// Removes a template by name.
    pub fn remove_template(&self, name: &str) -> bool {
        self.remove_template_as(name, Announce::Yes)
    }

    /// Adds (or replaces) a prompt.
    pub fn add_prompt(&self, entry: PromptEntry) {
        self.add_prompt_as(entry, Announce::Yes);
    }

    /// Removes a prompt.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.remove_prompt_as(name, Announce::Yes)
    }

    fn add_tool_as(&self, entry: ToolEntry, announce: Announce) {
        let entry = Arc::new(entry);
        self.update(Change::Tools, announce, |c| {
            c.tools.retain(|t| t.def.name != entry.def.name);
            c.tools.push(entry);
            true
        });
    }

    fn remove_tool_as(&self, name: &str, announce: Announce) -> bool {
        self.update(Change::Tools, announce, |c| {
            let before = c.tools.len();
            c.tools.retain(|t| t.def.name != name);
            c.tools.len() != before
        })
    }

    fn add_resource_as(&self, entry: ResourceEntry, announce: Announce) {
        let entry = Arc::new(entry);
        self.update(Change::Resources, announce, |c| {
            c.resources.retain(|r| r.def.uri != entry.def.uri);
            c.resources.push(entry);
            true
        });
    }

    fn remove_resource_as(&self, uri: &str, announce: Announce) -> bool {
        self.update(Change::Resources, announce, |c| {
            let before = c.resources.len();
            c.resources.retain(|r| r.def.uri != uri);
            c.resources.len() != before
        })
    }

    fn add_template_as(&self, entry: TemplateEntry, announce: Announce) {
        let entry = Arc::new(entry);
        self.update(Change::Resources, announce, |c| {
            c.templates.retain(|t| t.def.name != entry.def.name);
            c.templates.push(entry);
            true
        });
    }

    fn remove_template_as(&self, name: &str, announce: Announce) -> bool {
        self.update(Change::Resources, announce, |c| {
            let before = c.templates.len();
            c.templates.retain(|t| t.def.name != name);
            c.templates.len() != before
        })
    }

    fn add_prompt_as(&self, entry: PromptEntry, announce: Announce) {
        let entry = Arc::new(entry);
        self.update(Change::Prompts, announce, |c| {
            c.prompts.retain(|p| p.def.name != entry.def.name);
            c.prompts.push(entry);
            true
        });
    }

    fn remove_prompt_as(&self, name: &str, announce: Announce) -> bool {
        self.update(Change::Prompts, announce, |c| {
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

    /// Sets (replaces) the `_meta` every page of the list of `kind` carries (`tools/list`,
    /// `prompts/list`, `resources/list`, `resources/templates/list`), in every era. It is static
    /// configuration, not a list change: nothing is announced, as for completions. A value that
    /// is not a JSON object is refused ([`RegistryError::ListMetaNotObject`]).
    pub fn set_list_meta(&self, kind: CatalogKind, meta: Value) -> Result<(), RegistryError> {
        let Value::Object(meta) = meta else {
            return Err(RegistryError::ListMetaNotObject(kind));
        };
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = Catalog::clone(&self.current.load());
        next.list_meta.set(kind, meta);
        // A new version: its pages are finalized afresh, with the new `_meta`.
        next.reindex();
        self.current.store(Arc::new(next));
        Ok(())
    }

    /// Announces that a resource's contents changed.
    pub fn notify_resource_updated(&self, uri: &str) {
        self.changed(Change::ResourceUpdated(Arc::from(uri)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ctx;
    use crate::api::handler::ToolResult;
    use crate::catalog::RegistryError;
    use mcp_protocol::model::CallToolResult;
    use mcp_protocol::model::ToolDef;
    use serde_json::json;
    use serde_json::{Map, Value};

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
    fn list_meta_is_an_object_set_per_list_and_not_announced() {
        let r = Registry::new();
        let mut rx = r.subscribe();
        let before = r.snapshot();
        for bad in [json!(null), json!([1]), json!("x"), json!(3)] {
            assert!(matches!(
                r.set_list_meta(CatalogKind::Prompt, bad),
                Err(RegistryError::ListMetaNotObject(CatalogKind::Prompt))
            ));
        }
        assert!(Arc::ptr_eq(&before, &r.snapshot()), "a refused value changes nothing");
        r.set_list_meta(CatalogKind::Tool, json!({"k": 1})).unwrap();
        let after = r.snapshot();
        assert_eq!(after.list_meta(CatalogKind::Tool), json!({"k": 1}).as_object());
        assert_eq!(after.list_meta(CatalogKind::Prompt), None);
        assert_eq!(before.list_meta(CatalogKind::Tool), None, "a new snapshot");
        assert!(rx.0.try_recv().is_err(), "static configuration: nothing announced");
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
