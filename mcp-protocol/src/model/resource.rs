//! Resources and resource templates, and `resources/read` results.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::ResourceContents;
use crate::revision::{Feature, Revision};

/// A concrete resource as listed by `resources/list`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceDef {
    /// The URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Title (2025-06-18+).
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type.
    pub mime_type: Option<String>,
    /// Size in bytes, when known.
    pub size: Option<u64>,
    /// Annotations, verbatim.
    pub annotations: Option<Value>,
    /// Icons (2025-11-25+).
    pub icons: Option<Value>,
    /// Extra metadata.
    pub meta: Option<Value>,
}

impl ResourceDef {
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceDef {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, v: impl Into<String>) -> Self {
        self.title = Some(v.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, v: impl Into<String>) -> Self {
        self.description = Some(v.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, v: impl Into<String>) -> Self {
        self.mime_type = Some(v.into());
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, v: Value) -> Self {
        self.annotations = Some(v);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, v: Value) -> Self {
        self.icons = Some(v);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, v: Value) -> Self {
        self.meta = Some(v);
        self
    }

    /// Sets the size in bytes.
    pub fn with_size(mut self, v: u64) -> Self {
        self.size = Some(v);
        self
    }
    /// Renders for a revision.
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let mut m = Map::new();
        m.insert("uri".into(), Value::String(self.uri.clone()));
        m.insert("name".into(), Value::String(self.name.clone()));
        if let Some(s) = self.size {
            m.insert("size".into(), Value::from(s));
        }
        render_common(
            &mut m,
            revision,
            &self.title,
            &self.description,
            &self.mime_type,
            &self.annotations,
            &self.icons,
            &self.meta,
        );
        Value::Object(m)
    }
}

/// A resource template as listed by `resources/templates/list`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceTemplateDef {
    /// The RFC 6570 URI template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Title (2025-06-18+).
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// MIME type of the resources it yields.
    pub mime_type: Option<String>,
    /// Annotations, verbatim.
    pub annotations: Option<Value>,
    /// Icons (2025-11-25+).
    pub icons: Option<Value>,
    /// Extra metadata.
    pub meta: Option<Value>,
}

impl ResourceTemplateDef {
    /// A template with a URI template and a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplateDef {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, v: impl Into<String>) -> Self {
        self.title = Some(v.into());
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, v: impl Into<String>) -> Self {
        self.description = Some(v.into());
        self
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, v: impl Into<String>) -> Self {
        self.mime_type = Some(v.into());
        self
    }

    /// Sets the annotations.
    pub fn with_annotations(mut self, v: Value) -> Self {
        self.annotations = Some(v);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, v: Value) -> Self {
        self.icons = Some(v);
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, v: Value) -> Self {
        self.meta = Some(v);
        self
    }
    /// Renders for a revision.
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let mut m = Map::new();
        m.insert("uriTemplate".into(), Value::String(self.uri_template.clone()));
        m.insert("name".into(), Value::String(self.name.clone()));
        render_common(
            &mut m,
            revision,
            &self.title,
            &self.description,
            &self.mime_type,
            &self.annotations,
            &self.icons,
            &self.meta,
        );
        Value::Object(m)
    }
}

#[allow(clippy::too_many_arguments)]
fn render_common(
    m: &mut Map<String, Value>,
    revision: Option<Revision>,
    title: &Option<String>,
    description: &Option<String>,
    mime_type: &Option<String>,
    annotations: &Option<Value>,
    icons: &Option<Value>,
    meta: &Option<Value>,
) {
    let has = |f: Feature| revision.is_none_or(|r| r.has(f));
    if let Some(t) = title.as_ref().filter(|_| has(Feature::Titles)) {
        m.insert("title".into(), Value::String(t.clone()));
    }
    if let Some(d) = description {
        m.insert("description".into(), Value::String(d.clone()));
    }
    if let Some(mt) = mime_type {
        m.insert("mimeType".into(), Value::String(mt.clone()));
    }
    if let Some(a) = annotations {
        m.insert("annotations".into(), a.clone());
    }
    if let Some(i) = icons.as_ref().filter(|_| has(Feature::Icons)) {
        m.insert("icons".into(), i.clone());
    }
    if let Some(meta) = meta {
        m.insert("_meta".into(), meta.clone());
    }
}

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReadResourceResult {
    /// The contents (several for a resource with sub-resources).
    pub contents: Vec<ResourceContents>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ReadResourceResult {
    /// A result with contents.
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadResourceResult { contents, meta: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders() {
        let r = ResourceDef {
            title: Some("T".into()),
            description: Some("d".into()),
            mime_type: Some("text/plain".into()),
            ..ResourceDef::new("test://a", "a")
        };
        assert_eq!(
            r.render(Some(Revision::V2025_03_26)),
            json!({"uri": "test://a", "name": "a", "description": "d", "mimeType": "text/plain"})
        );
        assert_eq!(r.render(Some(Revision::V2025_06_18))["title"], "T");
        let t = ResourceTemplateDef::new("test://t/{id}", "t");
        assert_eq!(t.render(None), json!({"uriTemplate": "test://t/{id}", "name": "t"}));
    }
}
