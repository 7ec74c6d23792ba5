//! `Icon`: an image a client may show beside a tool, resource, prompt or
//! implementation (2025-11-25+).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The background an icon is designed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// For a light background.
    Light,
    /// For a dark background.
    Dark,
}

/// An optionally sized icon, as the schema's `Icon`: `src`, `mimeType`,
/// `sizes`, `theme`. Absent fields are left out of the JSON; fields a later
/// revision adds are kept in [`Icon::extra`] when an icon is read.
///
/// ```
/// use mcp_protocol::model::{Icon, IconTheme};
///
/// let icon = Icon::new("https://example.com/logo.png")
///     .with_mime_type("image/png")
///     .with_sizes(["48x48", "96x96"])
///     .with_theme(IconTheme::Dark);
/// assert_eq!(
///     serde_json::to_value(&icon).unwrap(),
///     serde_json::json!({"src": "https://example.com/logo.png", "mimeType": "image/png",
///                        "sizes": ["48x48", "96x96"], "theme": "dark"})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// An `http(s)` URL or a `data:` URI of the image.
    pub src: String,
    /// The MIME type, when the source's is missing or generic (`image/png`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it may be shown at (`"48x48"`, `"any"`); empty: any size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The background it is designed for; absent: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
    /// Fields this library does not know, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Icon {
    /// An icon with its source.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
            extra: Map::new(),
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the sizes (`"48x48"`, `"any"`).
    pub fn with_sizes<S: Into<String>>(mut self, sizes: impl IntoIterator<Item = S>) -> Self {
        self.sizes = sizes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the theme.
    pub fn with_theme(mut self, theme: IconTheme) -> Self {
        self.theme = Some(theme);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_src_is_required() {
        let icon = Icon::new("data:image/png;base64,AA==");
        assert_eq!(
            serde_json::to_value(&icon).unwrap(),
            json!({"src": "data:image/png;base64,AA=="})
        );
        let read: Icon = serde_json::from_value(json!({"src": "x"})).unwrap();
        assert_eq!(read, Icon::new("x"));
        assert!(serde_json::from_value::<Icon>(json!({"mimeType": "image/png"})).is_err());
    }

    #[test]
    fn unknown_fields_are_kept() {
        let wire = json!({"src": "x", "theme": "light", "x-future": {"a": 1}});
        let icon: Icon = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(icon.theme, Some(IconTheme::Light));
        assert_eq!(icon.extra["x-future"], json!({"a": 1}));
        assert_eq!(serde_json::to_value(&icon).unwrap(), wire);
    }
}
