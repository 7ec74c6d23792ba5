//! `Implementation`: the name and version of a client or server.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Icon;
use crate::revision::{Feature, Revision};

/// Identifies a server (or client) implementation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable title (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons (2025-11-25+; empty: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// Website (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            icons: Vec::new(),
            website_url: None,
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description (listed from 2025-11-25 on).
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
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

    /// Sets the website (listed from 2025-11-25 on).
    pub fn with_website_url(mut self, url: impl Into<String>) -> Self {
        self.website_url = Some(url.into());
        self
    }

    /// Renders for a revision (`None`: everything).
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let (Some(r), Some(obj)) = (revision, v.as_object_mut()) {
            if !r.has(Feature::Titles) {
                obj.remove("title");
            }
            if !r.has(Feature::Icons) {
                obj.remove("icons");
                obj.remove("description");
                obj.remove("websiteUrl");
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn icons_and_their_siblings_from_2025_11_25() {
        let info = Implementation::new("s", "1")
            .with_title("Server")
            .with_description("d")
            .with_icon(Icon::new("https://x/i.png").with_sizes(["any"]))
            .with_website_url("https://x");
        let full = info.render(Some(Revision::V2025_11_25));
        assert_eq!(full["icons"], json!([{"src": "https://x/i.png", "sizes": ["any"]}]));
        assert_eq!(full["websiteUrl"], "https://x");
        assert_eq!(info.render(Some(Revision::V2026_07_28)), full);
        assert_eq!(info.render(None), full);
        assert_eq!(
            info.render(Some(Revision::V2025_06_18)),
            json!({"name": "s", "version": "1", "title": "Server"})
        );
        assert_eq!(
            Implementation::new("s", "1").render(None),
            json!({"name": "s", "version": "1"})
        );
    }
}
