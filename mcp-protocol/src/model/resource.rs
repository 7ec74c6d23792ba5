//! Resources and resource templates, and `resources/read` results.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::ResourceContents;
use super::icon::Icon;
use super::shown::Shown;
use crate::revision::Revision;

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
    /// Icons (listed from 2025-11-25 on; empty: none).
    pub icons: Vec<Icon>,
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
            icons: Vec::new(),
            meta: None,
        }
    }

    setters! {
        /// Sets the title.
        with_title(title: text);
        /// Sets the description.
        with_description(description: text);
        /// Sets the MIME type.
        with_mime_type(mime_type: text);
        /// Sets the annotations.
        with_annotations(annotations: json);
        /// Sets `_meta`.
        with_meta(meta: json);
    }

    /// Adds an icon (listed from 2025-11-25 on).
    pub fn with_icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the icons (listed from 2025-11-25 on).
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = icons.into_iter().collect();
        self
    }

    /// Sets the size in bytes.
    pub fn with_size(mut self, v: u64) -> Self {
        self.size = Some(v);
        self
    }
    fn shown(&self) -> Shown<'_> {
        Shown {
            title: self.title.as_ref(),
            description: self.description.as_ref(),
            mime_type: self.mime_type.as_ref(),
            annotations: self.annotations.as_ref(),
            icons: &self.icons,
            meta: self.meta.as_ref(),
        }
    }

    /// Renders for a revision.
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let mut m = Map::new();
        m.insert("uri".into(), Value::String(self.uri.clone()));
        m.insert("name".into(), Value::String(self.name.clone()));
        if let Some(s) = self.size {
            m.insert("size".into(), Value::from(s));
        }
        self.shown().render(&mut m, revision);
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
    /// Icons (listed from 2025-11-25 on; empty: none).
    pub icons: Vec<Icon>,
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
            icons: Vec::new(),
            meta: None,
        }
    }

    setters! {
        /// Sets the title.
        with_title(title: text);
        /// Sets the description.
        with_description(description: text);
        /// Sets the MIME type.
        with_mime_type(mime_type: text);
        /// Sets the annotations.
        with_annotations(annotations: json);
        /// Sets `_meta`.
        with_meta(meta: json);
    }

    /// Adds an icon (listed from 2025-11-25 on).
    pub fn with_icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the icons (listed from 2025-11-25 on).
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = icons.into_iter().collect();
        self
    }

    fn shown(&self) -> Shown<'_> {
        Shown {
            title: self.title.as_ref(),
            description: self.description.as_ref(),
            mime_type: self.mime_type.as_ref(),
            annotations: self.annotations.as_ref(),
            icons: &self.icons,
            meta: self.meta.as_ref(),
        }
    }

    /// Renders for a revision.
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let mut m = Map::new();
        m.insert("uriTemplate".into(), Value::String(self.uri_template.clone()));
        m.insert("name".into(), Value::String(self.name.clone()));
        self.shown().render(&mut m, revision);
        Value::Object(m)
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

    /// A result of one text content.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ReadResourceResult::new(vec![ResourceContents::text(uri, mime_type, text)])
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

    #[test]
    fn icons_from_2025_11_25() {
        let icon = Icon::new("https://x/i.svg").with_mime_type("image/svg+xml");
        let wire = json!([{"src": "https://x/i.svg", "mimeType": "image/svg+xml"}]);
        let r = ResourceDef::new("test://a", "a").with_icon(icon.clone());
        let t = ResourceTemplateDef::new("test://t/{id}", "t").with_icons([icon]);
        for v in [
            r.render(Some(Revision::V2025_06_18)),
            t.render(Some(Revision::V2025_06_18)),
        ] {
            assert!(v.get("icons").is_none(), "{v}");
        }
        for rev in [Some(Revision::V2025_11_25), Some(Revision::V2026_07_28), None] {
            assert_eq!(r.render(rev)["icons"], wire, "{rev:?}");
            assert_eq!(t.render(rev)["icons"], wire, "{rev:?}");
        }
    }
}
