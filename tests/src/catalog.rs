//! Catalog items the suites share: a server declares `resources` only when it has one
//! (capabilities follow what is registered), so the suites that subscribe or list resources on
//! a tools server register [`text_resource`].

use std::sync::Arc;

use mcp_protocol::model::{ReadResourceResult, ResourceContents, ResourceDef};
use mcp_runtime::Ctx;
use mcp_runtime::registry::ResourceEntry;
use serde_json::{Map, Value};

/// A `text/plain` resource at `uri` whose contents are `text`.
pub fn text_resource(uri: &'static str, text: &'static str) -> ResourceEntry {
    ResourceEntry::new(
        ResourceDef::new(uri, uri),
        Arc::new(move |_: String, _: Map<String, Value>, _: Ctx| async move {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                uri,
                "text/plain",
                text,
            )]))
        }),
    )
}
