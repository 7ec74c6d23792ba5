//! `ToolAnnotations`: hints about a tool's behaviour (2025-03-26+).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Hints about what a tool does, as the schema's `ToolAnnotations`: `title`,
/// `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`. They are
/// hints: a client must not trust them from an untrusted server. An absent
/// hint takes the specification's default (`readOnlyHint` false,
/// `destructiveHint` true, `idempotentHint` false, `openWorldHint` true) and is
/// left out of the JSON; fields a later revision adds are kept in
/// [`ToolAnnotations::extra`] when annotations are read.
///
/// ```
/// use mcp_protocol::model::ToolAnnotations;
///
/// let hints = ToolAnnotations::new().with_read_only(true).with_open_world(false);
/// assert_eq!(
///     serde_json::to_value(&hints).unwrap(),
///     serde_json::json!({"readOnlyHint": true, "openWorldHint": false})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A human-readable title (the tool's own `title` is preferred from 2025-06-18 on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite, rather than only add (default true;
    /// meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect (default
    /// false; meaningful only when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It interacts with an open world of external entities (a web search),
    /// rather than a closed domain (a memory) (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Fields this library does not know, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolAnnotations {
    /// No hint.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets `readOnlyHint`.
    pub fn with_read_only(mut self, v: bool) -> Self {
        self.read_only_hint = Some(v);
        self
    }

    /// Sets `destructiveHint`.
    pub fn with_destructive(mut self, v: bool) -> Self {
        self.destructive_hint = Some(v);
        self
    }

    /// Sets `idempotentHint`.
    pub fn with_idempotent(mut self, v: bool) -> Self {
        self.idempotent_hint = Some(v);
        self
    }

    /// Sets `openWorldHint`.
    pub fn with_open_world(mut self, v: bool) -> Self {
        self.open_world_hint = Some(v);
        self
    }

    /// Whether no field is set (such annotations are not listed).
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.read_only_hint.is_none()
            && self.destructive_hint.is_none()
            && self.idempotent_hint.is_none()
            && self.open_world_hint.is_none()
            && self.extra.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_as_the_schema_names_them() {
        let all = ToolAnnotations::new()
            .with_title("Delete")
            .with_read_only(false)
            .with_destructive(true)
            .with_idempotent(true)
            .with_open_world(false);
        assert_eq!(
            serde_json::to_value(&all).unwrap(),
            json!({"title": "Delete", "readOnlyHint": false, "destructiveHint": true,
                   "idempotentHint": true, "openWorldHint": false})
        );
        assert_eq!(serde_json::to_value(ToolAnnotations::new()).unwrap(), json!({}));
        assert!(ToolAnnotations::new().is_empty());
        assert!(!all.is_empty());
    }

    #[test]
    fn unknown_fields_are_kept() {
        let wire = json!({"readOnlyHint": true, "futureHint": "x"});
        let read: ToolAnnotations = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(read.read_only_hint, Some(true));
        assert_eq!(read.extra["futureHint"], "x");
        assert!(!read.is_empty());
        assert_eq!(serde_json::to_value(&read).unwrap(), wire);
    }
}
