//! `Implementation`: the name and version of a client or server.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    /// Icons (2025-11-25+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Value>,
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
            icons: None,
            website_url: None,
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
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
