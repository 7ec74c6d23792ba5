//! [`Skills`]: the catalog a server serves, the extension that declares it and its methods,
//! and the resources (`skill://…`) registered in the server's catalog.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwap;
use mcp_protocol::model::{ResourceDef, ResourceTemplateDef};
use mcp_protocol::skills::{DIRECTORY_READ, DIRECTORY_READ_SETTING, EXTENSION, GET, LIST, SKILL_MD_MIME_TYPE};
use mcp_runtime::extension::{CustomMethod, Extension};
use mcp_runtime::handler::ResourceHandler;
use mcp_runtime::registry::{Registry, ResourceEntry, TemplateEntry};
use mcp_runtime::{Ctx, HandlerError};
use serde_json::{Map, Value, json};

use crate::catalog::Catalog;
use crate::error::SkillError;
use crate::skill::Skill;
use crate::{load, methods};

/// The URI template every skill file is read through.
pub const FILES_TEMPLATE: &str = "skill://{+path}";

/// The skills a server serves. Cheap to clone: clones share the catalog, so a
/// [`reload`](Self::reload) is seen by every method and resource of the server.
///
/// Contents are held in memory: what `resources/read` returns is byte for byte what the
/// digests of `skills/list` and `skills/get` describe. A change on disk is picked up by an
/// explicit [`reload`](Self::reload) (or [`replace`](Self::replace)), which swaps the whole
/// catalog at once or, when the new tree is refused, keeps the old one.
#[derive(Clone)]
pub struct Skills {
    inner: Arc<Inner>,
    directory_read: bool,
    page_size: usize,
}

struct Inner {
    catalog: ArcSwap<Catalog>,
    source: Option<PathBuf>,
    /// The registry the `SKILL.md` resources are listed in, once attached.
    registry: Mutex<Option<Weak<Registry>>>,
    /// The `SKILL.md` URIs listed there.
    listed: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills")
            .field("skills", &self.inner.catalog.load().skills.keys().collect::<Vec<_>>())
            .field("source", &self.inner.source)
            .field("directory_read", &self.directory_read)
            .finish_non_exhaustive()
    }
}

impl Skills {
    /// Loads every skill under `root` (see the [crate docs](crate) for the layout and the
    /// rules); refused as a whole, with an error naming the file, when any part breaks one.
    pub fn from_dir(root: impl AsRef<Path>) -> Result<Self, SkillError> {
        let root = root.as_ref();
        let catalog = Catalog::new(load::load(root)?)?;
        Ok(Self::with(catalog, Some(root.to_owned())))
    }

    /// Skills built in code.
    pub fn new(skills: impl IntoIterator<Item = Skill>) -> Result<Self, SkillError> {
        Ok(Self::with(Catalog::new(skills)?, None))
    }

    fn with(catalog: Catalog, source: Option<PathBuf>) -> Self {
        Skills {
            inner: Arc::new(Inner {
                catalog: ArcSwap::from_pointee(catalog),
                source,
                registry: Mutex::new(None),
                listed: Mutex::new(Vec::new()),
            }),
            directory_read: true,
            page_size: 50,
        }
    }

    /// Whether `resources/directory/read` is served and `directoryRead: true` declared
    /// (default: yes).
    pub fn directory_read(mut self, on: bool) -> Self {
        self.directory_read = on;
        self
    }

    /// Entries per page of `skills/list` and children per page of `resources/directory/read`
    /// (default 50; 0: everything on one page).
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = n;
        self
    }

    /// The skills served now, by `SKILL.md` URI order.
    pub fn skills(&self) -> Vec<Arc<Skill>> {
        self.inner.catalog.load().skills.values().cloned().collect()
    }

    /// Loads the directory again and swaps the catalog. On error the current catalog stays.
    pub fn reload(&self) -> Result<(), SkillError> {
        let root = self.inner.source.as_deref().ok_or(SkillError::NotFromDirectory)?;
        self.swap(Catalog::new(load::load(root)?)?);
        Ok(())
    }

    /// Replaces the skills with these. On error the current catalog stays.
    pub fn replace(&self, skills: impl IntoIterator<Item = Skill>) -> Result<(), SkillError> {
        self.swap(Catalog::new(skills)?);
        Ok(())
    }

    fn swap(&self, catalog: Catalog) {
        self.inner.catalog.store(Arc::new(catalog));
        let registry = lock(&self.inner.registry).as_ref().and_then(Weak::upgrade);
        if let Some(registry) = registry {
            self.list_manifests(&registry);
        }
    }

    /// The extension to register on the server: `io.modelcontextprotocol/skills` (settings
    /// `{"directoryRead": true}` or `{}`), served in both eras to every client (a client uses
    /// it after reading the declaration), with `skills/list`, `skills/get` (their 2026-07-28
    /// results carry the server's cache hint) and, when enabled, `resources/directory/read`.
    pub fn extension(&self) -> Extension {
        let settings = if self.directory_read {
            json!({ DIRECTORY_READ_SETTING: true })
        } else {
            json!({})
        };
        let mut extension = Extension::new(EXTENSION)
            .and_then(|e| e.settings(settings))
            .unwrap_or_else(|e| unreachable!("the skills extension is official: {e}"))
            .serving_undeclared_clients();
        let (inner, size) = (self.inner.clone(), self.page_size);
        extension =
            extension.method(method(LIST, move |p, _ctx| methods::list(&inner.catalog.load(), &p, size)).cacheable());
        let inner = self.inner.clone();
        extension = extension.method(method(GET, move |p, _ctx| methods::get(&inner.catalog.load(), &p)).cacheable());
        if self.directory_read {
            let inner = self.inner.clone();
            extension = extension.method(method(DIRECTORY_READ, move |p, ctx| {
                methods::directory(&inner.catalog.load(), &p, size, ctx.revision())
            }));
        }
        extension
    }

    /// Registers the skill resources in `registry`: every `SKILL.md` as a listed resource
    /// (name and description from its frontmatter, `text/markdown`), and the template
    /// [`FILES_TEMPLATE`] through which every skill file is read. A later
    /// [`reload`](Self::reload) updates the listed resources (and so announces the change).
    pub fn attach(&self, registry: &Arc<Registry>) {
        let handler = self.reader();
        let template = ResourceTemplateDef::new(FILES_TEMPLATE, "skill-files")
            .with_description("The files of the skills this server serves (SEP-2640).");
        match TemplateEntry::new(template, handler) {
            Ok(entry) => registry.add_template(entry),
            Err(e) => unreachable!("the skill files template is valid: {e}"),
        }
        *lock(&self.inner.registry) = Some(Arc::downgrade(registry));
        self.list_manifests(registry);
    }

    /// Lists the current `SKILL.md` resources, removing those that are gone.
    fn list_manifests(&self, registry: &Registry) {
        let catalog = self.inner.catalog.load();
        let mut listed = lock(&self.inner.listed);
        for gone in listed.iter().filter(|u| !catalog.is_manifest(u)) {
            registry.remove_resource(gone);
        }
        listed.clear();
        for skill in catalog.manifests() {
            let uri = skill.uri();
            let size = skill
                .files()
                .get(mcp_protocol::skills::SKILL_MD)
                .map_or(0, |f| f.bytes().len());
            let mut def = ResourceDef::new(uri.clone(), skill.name())
                .with_mime_type(SKILL_MD_MIME_TYPE)
                .with_size(size as u64);
            if let Some(d) = skill.frontmatter().get("description").and_then(Value::as_str) {
                def = def.with_description(d);
            }
            registry.add_resource(ResourceEntry::new(def, self.reader()));
            listed.push(uri);
        }
    }

    /// The `resources/read` handler of skill files.
    fn reader(&self) -> Arc<dyn ResourceHandler> {
        let inner = self.inner.clone();
        Arc::new(move |uri: String, _vars: Map<String, Value>, _ctx: Ctx| {
            let result = methods::read(&inner.catalog.load(), &uri);
            async move { result }
        })
    }
}

/// A custom method answering synchronously from the catalog.
fn method<F>(name: &str, f: F) -> CustomMethod
where
    F: Fn(Map<String, Value>, Ctx) -> Result<Value, HandlerError> + Send + Sync + 'static,
{
    CustomMethod::new(name, move |p, ctx| {
        let result = f(p, ctx);
        async move { result }
    })
    .unwrap_or_else(|e| unreachable!("the skills methods are not core methods: {e}"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
