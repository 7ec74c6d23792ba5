//! Content blocks (tool results, prompt messages) and resource contents.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The contents of a resource: text or base64 binary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// Text contents.
    Text {
        /// The resource URI.
        uri: String,
        /// MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// Binary contents, base64-encoded.
    Blob {
        /// The resource URI.
        uri: String,
        /// MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 data.
        blob: String,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            text: text.into(),
            meta: None,
        }
    }

    /// Binary contents (already base64-encoded).
    pub fn blob(uri: impl Into<String>, mime_type: impl Into<String>, base64: impl Into<String>) -> Self {
        ResourceContents::Blob {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            blob: base64.into(),
            meta: None,
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => uri,
        }
    }
}

/// A content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Annotations (audience, priority, lastModified).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// Audio, base64-encoded (2025-03-26+).
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// A link to a resource (2025-06-18+).
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// The resource name.
        name: String,
        /// Title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
    /// An embedded resource.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
        /// Extra metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Value>,
    },
}

impl Content {
    /// The text of the text blocks of `content`, joined (the other blocks left out).
    pub fn text_of(content: &[Content]) -> String {
        content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An image block from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An audio block from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
            meta: None,
        }
    }

    /// An embedded resource block.
    pub fn resource(contents: ResourceContents) -> Self {
        Content::Resource {
            resource: contents,
            annotations: None,
            meta: None,
        }
    }

    /// A resource link block.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            meta: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let table = [
            (Content::text("hi"), json!({"type": "text", "text": "hi"})),
            (
                Content::image("AA==", "image/png"),
                json!({"type": "image", "data": "AA==", "mimeType": "image/png"}),
            ),
            (
                Content::audio("AA==", "audio/wav"),
                json!({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}),
            ),
            (
                Content::resource(ResourceContents::text("a://b", "text/plain", "t")),
                json!({"type": "resource", "resource": {"uri": "a://b", "mimeType": "text/plain", "text": "t"}}),
            ),
            (
                Content::resource(ResourceContents::blob("a://b", "image/png", "AA==")),
                json!({"type": "resource", "resource": {"uri": "a://b", "mimeType": "image/png", "blob": "AA=="}}),
            ),
            (
                Content::resource_link("a://b", "b"),
                json!({"type": "resource_link", "uri": "a://b", "name": "b"}),
            ),
        ];
        for (c, want) in table {
            let v = serde_json::to_value(&c).unwrap();
            assert_eq!(v, want);
            assert_eq!(serde_json::from_value::<Content>(v).unwrap(), c);
        }
    }
}
