//! [`ListMeta`]: the `_meta` a server author puts on the results of its four catalog lists
//! (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`; the schema's
//! `PaginatedResult` allows it as on any result).
//!
//! It is static configuration of a catalog version, kept in the [`Catalog`](super::Catalog)
//! snapshot beside the items, so that one list request reads it from the snapshot it lists and
//! the snapshot's cached pages carry it. Setting it announces nothing: no item changed.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::visibility::CatalogKind;

/// The `_meta` of each list, if set.
#[derive(Debug, Default, Clone)]
pub(crate) struct ListMeta([Option<Arc<Map<String, Value>>>; 4]);

/// Where the list of `kind` keeps its `_meta`.
fn slot(kind: CatalogKind) -> usize {
    match kind {
        CatalogKind::Tool => 0,
        CatalogKind::Prompt => 1,
        CatalogKind::Resource => 2,
        CatalogKind::ResourceTemplate => 3,
    }
}

impl ListMeta {
    /// The `_meta` of the list of `kind`.
    pub(crate) fn of(&self, kind: CatalogKind) -> Option<&Map<String, Value>> {
        self.0[slot(kind)].as_deref()
    }

    /// Sets (replaces) the `_meta` of the list of `kind`.
    pub(crate) fn set(&mut self, kind: CatalogKind, meta: Map<String, Value>) {
        self.0[slot(kind)] = Some(Arc::new(meta));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_list_keeps_its_own() {
        let mut m = ListMeta::default();
        let obj = |v: Value| v.as_object().cloned().unwrap();
        m.set(CatalogKind::Tool, obj(json!({"t": 1})));
        m.set(CatalogKind::ResourceTemplate, obj(json!({"rt": 2})));
        m.set(CatalogKind::Tool, obj(json!({"t": 3})));
        assert_eq!(m.of(CatalogKind::Tool), Some(&obj(json!({"t": 3}))));
        assert_eq!(m.of(CatalogKind::ResourceTemplate), Some(&obj(json!({"rt": 2}))));
        assert_eq!(m.of(CatalogKind::Prompt), None);
        assert_eq!(m.of(CatalogKind::Resource), None);
    }
}
