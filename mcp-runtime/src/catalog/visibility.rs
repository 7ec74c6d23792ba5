//! Per-principal catalogs: an optional hook that decides which tools,
//! prompts, resources and templates a caller sees.
//!
//! A hidden item is absent for that caller everywhere: it is left out of
//! `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list`; calling a hidden tool answers exactly as an
//! unknown tool (-32602 "Unknown tool: X"); getting a hidden
//! prompt or reading a hidden resource answers as an unknown one; completions
//! of a hidden prompt or template are empty. While a hook is set, the modern
//! cache hints of lists and reads are always `private`, so that no shared
//! cache serves one principal's catalog to another (behaviour invariant 31).

use std::fmt;
use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;

/// What kind of catalog item the hook is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CatalogKind {
    /// A tool, named by its `name`.
    Tool,
    /// A prompt, named by its `name`.
    Prompt,
    /// A resource, named by its `uri`.
    Resource,
    /// A resource template, named by its `uriTemplate`.
    ResourceTemplate,
}

type Hook = dyn Fn(&AuthInfo, CatalogKind, &str) -> bool + Send + Sync;

/// The visibility hook: `Fn(&AuthInfo, CatalogKind, &str) -> bool`, called
/// with the caller's identity, the kind of item and the key a client names
/// it by (a tool's or prompt's name, a resource's URI, a template's URI
/// template); `true` shows the item.
///
/// ```
/// # mod mcp_server { pub mod catalog { pub use mcp_runtime::visibility::{CatalogKind, Visibility}; } }
/// use mcp_server::catalog::{CatalogKind, Visibility};
///
/// // Tools whose name starts with `admin_` only for principals with the `admin` scope.
/// let hook = Visibility::new(|auth, kind, name| {
///     kind != CatalogKind::Tool || !name.starts_with("admin_") || auth.has_scope("admin")
/// });
/// # let _ = hook;
/// ```
#[derive(Clone)]
pub struct Visibility(Arc<Hook>);

impl Visibility {
    /// A hook from a function.
    pub fn new(f: impl Fn(&AuthInfo, CatalogKind, &str) -> bool + Send + Sync + 'static) -> Self {
        Visibility(Arc::new(f))
    }

    /// Whether `auth` sees the item `name` of `kind`.
    pub fn allows(&self, auth: &AuthInfo, kind: CatalogKind, name: &str) -> bool {
        (self.0)(auth, kind, name)
    }
}

impl fmt::Debug for Visibility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Visibility(<hook>)")
    }
}

/// Whether `auth` sees the catalog item `name` of `kind` under `hook` (always, without one).
pub(crate) fn visible(hook: Option<&Visibility>, auth: &AuthInfo, kind: CatalogKind, name: &str) -> bool {
    hook.is_none_or(|v| v.allows(auth, kind, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_decides_per_principal() {
        let v = Visibility::new(|auth, kind, name| {
            kind != CatalogKind::Tool || name != "secret" || &*auth.principal == "root"
        });
        assert!(v.allows(&AuthInfo::new("root"), CatalogKind::Tool, "secret"));
        assert!(!v.allows(&AuthInfo::new("bob"), CatalogKind::Tool, "secret"));
        assert!(v.allows(&AuthInfo::new("bob"), CatalogKind::Prompt, "secret"));
        assert_eq!(format!("{v:?}"), "Visibility(<hook>)");
    }
}
