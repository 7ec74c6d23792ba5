//! Resources and resource templates.

use std::future::Future;
use std::sync::Arc;

use mcp_protocol::apps::check_resource;
use mcp_protocol::model::{CacheHint, Icon, ReadResourceResult, ResourceContents, ResourceDef, ResourceTemplateDef};
use mcp_runtime::Ctx;
use mcp_runtime::handler::{HandlerError, ResourceHandler, ResourceResult};
use mcp_runtime::registry::{RegistryError, ResourceEntry, TemplateEntry};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

mod vars;

/// What a resource handler may return: a [`ReadResourceResult`], its contents, one content,
/// or a `Result` of one of these with a [`HandlerError`].
pub trait IntoReadResult {
    /// Converts into the runtime's resource result.
    fn into_read_result(self) -> ResourceResult;
}

impl IntoReadResult for ReadResourceResult {
    fn into_read_result(self) -> ResourceResult {
        Ok(self)
    }
}

impl IntoReadResult for ResourceContents {
    fn into_read_result(self) -> ResourceResult {
        Ok(ReadResourceResult::new(vec![self]))
    }
}

impl IntoReadResult for Vec<ResourceContents> {
    fn into_read_result(self) -> ResourceResult {
        Ok(ReadResourceResult::new(self))
    }
}

impl<T: IntoReadResult> IntoReadResult for Result<T, HandlerError> {
    fn into_read_result(self) -> ResourceResult {
        self.and_then(IntoReadResult::into_read_result)
    }
}

fn wrap<F, Fut, R>(handler: F) -> Arc<dyn ResourceHandler>
where
    F: Fn(String, Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoReadResult,
{
    Arc::new(move |uri: String, vars: Map<String, Value>, ctx: Ctx| {
        let fut = handler(uri, vars, ctx);
        async move { fut.await.into_read_result() }
    })
}

/// A concrete resource ready to register.
pub struct Resource {
    def: ResourceDef,
    handler: Arc<dyn ResourceHandler>,
    cache: Option<CacheHint>,
    scopes: Vec<String>,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("def", &self.def)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource read by `handler(uri, variables, ctx)`.
    pub fn new<F, Fut, R>(uri: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(String, Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult,
    {
        Resource {
            def: ResourceDef::new(uri, name),
            handler: wrap(handler),
            cache: None,
            scopes: Vec::new(),
        }
    }

    /// A resource with fixed text contents.
    pub fn text(uri: impl Into<String>, name: impl Into<String>, mime_type: &str, text: impl Into<String>) -> Self {
        let (mime, text) = (mime_type.to_owned(), text.into());
        Resource::new(uri, name, move |uri, _, _| {
            let contents = ResourceContents::text(uri, mime.clone(), text.clone());
            async move { contents }
        })
        .mime_type(mime_type)
    }

    /// Sets the title.
    pub fn title(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_title(v);
        self
    }

    /// Sets the description.
    pub fn description(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_description(v);
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_mime_type(v);
        self
    }

    /// Adds an icon (listed from 2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def = self.def.with_icon(icon);
        self
    }

    /// Sets the icons, replacing those added before (listed from 2025-11-25 on).
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.def = self.def.with_icons(icons);
        self
    }

    /// Sets the annotations.
    pub fn annotations(mut self, v: Value) -> Self {
        self.def = self.def.with_annotations(v);
        self
    }

    /// Sets `_meta` of the `resources/list` entry.
    pub fn meta(mut self, v: Value) -> Self {
        self.def = self.def.with_meta(v);
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.def.uri
    }

    /// Checks the resource before it is registered: a `ui://` resource (MCP Apps) must have the
    /// MIME type `text/html;profile=mcp-app`.
    pub fn check(&self) -> Result<(), RegistryError> {
        check_resource(&self.def.uri, self.def.mime_type.as_deref())?;
        Ok(())
    }

    /// Sets a cache hint for reads of this resource (modern era).
    pub fn cache(mut self, hint: CacheHint) -> Self {
        self.cache = Some(hint);
        self
    }

    /// The OAuth scopes a read of this resource needs, besides those every `resources/read`
    /// needs. A caller short of one is refused before the handler runs, naming every scope the
    /// read needs; its reads are cached privately. A string that is not a scope token makes the
    /// registration fail.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The registry entry ([`check`](Self::check)ed; a scope that is not a scope token fails).
    pub fn into_entry(self) -> Result<ResourceEntry, RegistryError> {
        self.check()?;
        let mut e = ResourceEntry::new(self.def, self.handler).with_scopes(self.scopes)?;
        e.cache = self.cache;
        Ok(e)
    }
}

/// A resource template ready to register.
pub struct ResourceTemplate {
    def: ResourceTemplateDef,
    handler: Arc<dyn ResourceHandler>,
    cache: Option<CacheHint>,
    scopes: Vec<String>,
}

impl std::fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("def", &self.def)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplate {
    /// A template (RFC 6570 `{var}` / `{+var}`); reads of matching URIs go to
    /// `handler(uri, variables, ctx)`.
    pub fn new<F, Fut, R>(uri_template: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(String, Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult,
    {
        ResourceTemplate {
            def: ResourceTemplateDef::new(uri_template, name),
            handler: wrap(handler),
            cache: None,
            scopes: Vec::new(),
        }
    }

    /// A template whose variables deserialize into `V` (fields named as the template's
    /// variables): reads go to `handler(uri, vars, ctx)`. Each variable arrives as a string and
    /// is parsed into what its field asks for, as axum's `Path` does: a number, a `bool`, a
    /// `char`, a unit enum variant (by name), an `Option` (`None` for a field with no
    /// variable), a newtype of one of these, or the string itself. A value that does not parse
    /// is -32602 naming the variable (`invalid value for template variable "id": expected u64,
    /// got "abc"`), and so is a field the template has no variable for (unless it is an
    /// `Option` or has a `#[serde(default)]`).
    ///
    /// ```
    /// use mcp_server::prelude::*;
    ///
    /// #[derive(serde::Deserialize)]
    /// struct NoteVars { id: u64 }
    ///
    /// let notes = ResourceTemplate::typed("notes://{id}", "note", |uri, v: NoteVars, _ctx| async move {
    ///     match v.id {
    ///         1 => Ok(ResourceContents::text(uri, "text/plain", "the first note")),
    ///         // -32002 for a legacy client, -32602 for a modern one.
    ///         _ => Err(HandlerError::resource_not_found(uri)),
    ///     }
    /// });
    /// # let _ = notes;
    /// ```
    pub fn typed<V, F, Fut, R>(uri_template: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        V: DeserializeOwned + Send + 'static,
        F: Fn(String, V, Ctx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoReadResult,
    {
        let handler = Arc::new(handler);
        let raw = move |uri: String, vars: Map<String, Value>, ctx: Ctx| {
            let handler = handler.clone();
            async move {
                match vars::from_vars::<V>(&vars) {
                    Ok(v) => handler(uri, v, ctx).await.into_read_result(),
                    Err(e) => Err(HandlerError::invalid_params(e.to_string())),
                }
            }
        };
        ResourceTemplate::new(uri_template, name, raw)
    }

    /// Sets the title.
    pub fn title(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_title(v);
        self
    }

    /// Sets the description.
    pub fn description(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_description(v);
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, v: impl Into<String>) -> Self {
        self.def = self.def.with_mime_type(v);
        self
    }

    /// Adds an icon (listed from 2025-11-25 on).
    pub fn icon(mut self, icon: Icon) -> Self {
        self.def = self.def.with_icon(icon);
        self
    }

    /// Sets the icons, replacing those added before (listed from 2025-11-25 on).
    pub fn icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.def = self.def.with_icons(icons);
        self
    }

    /// Sets a cache hint for reads through this template (modern era).
    pub fn cache(mut self, hint: CacheHint) -> Self {
        self.cache = Some(hint);
        self
    }

    /// The OAuth scopes a read through this template needs, besides those every
    /// `resources/read` needs. `{name}` naming a variable of the template stands for its value
    /// in the URI being read, so a scope can name what is read (`notes:read:{id}` for
    /// `notes://{id}`); other text is literal. A caller short of one is refused before the
    /// handler runs, naming every scope the read needs. A scope that is not a scope token makes
    /// the registration fail.
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The registry entry.
    pub fn into_entry(self) -> Result<TemplateEntry, RegistryError> {
        let mut e = TemplateEntry::new(self.def, self.handler)?.with_scopes(self.scopes)?;
        e.cache = self.cache;
        Ok(e)
    }
}
