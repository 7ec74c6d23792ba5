//! Prompts: definitions and `prompts/get` results.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::Content;
use super::icon::Icon;
use super::shown::Shown;
use crate::revision::{Feature, Revision};

/// An argument a prompt accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptArgument {
    /// Name.
    pub name: String,
    /// Title (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether it must be given.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

impl PromptArgument {
    /// An argument.
    pub fn new(name: impl Into<String>, description: impl Into<String>, required: bool) -> Self {
        PromptArgument {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            required,
        }
    }
}

/// A prompt definition as listed by `prompts/list`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PromptDef {
    /// Unique name.
    pub name: String,
    /// Title (2025-06-18+).
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Arguments.
    pub arguments: Vec<PromptArgument>,
    /// Icons (listed from 2025-11-25 on; empty: none).
    pub icons: Vec<Icon>,
    /// Extra metadata.
    pub meta: Option<Value>,
}

impl PromptDef {
    /// A prompt with a name.
    pub fn new(name: impl Into<String>) -> Self {
        PromptDef {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            icons: Vec::new(),
            meta: None,
        }
    }

    setters! {
        /// Sets the title.
        with_title(title: text);
        /// Sets the description.
        with_description(description: text);
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

    /// Adds an argument.
    pub fn with_argument(mut self, v: PromptArgument) -> Self {
        self.arguments.push(v);
        self
    }

    /// Renders for a revision.
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let has = |f: Feature| revision.is_none_or(|r| r.has(f));
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        let shown = Shown {
            title: self.title.as_ref(),
            description: self.description.as_ref(),
            icons: &self.icons,
            meta: self.meta.as_ref(),
            ..Shown::default()
        };
        shown.render(&mut m, revision);
        if !self.arguments.is_empty() {
            let args = self
                .arguments
                .iter()
                .map(|a| {
                    let mut v = serde_json::to_value(a).unwrap_or_default();
                    if !has(Feature::Titles)
                        && let Some(o) = v.as_object_mut()
                    {
                        o.remove("title");
                    }
                    v
                })
                .collect();
            m.insert("arguments".into(), Value::Array(args));
        }
        Value::Object(m)
    }
}

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// The speaker.
    pub role: Role,
    /// The content block.
    pub content: Content,
}

impl PromptMessage {
    /// A user message.
    pub fn user(content: Content) -> Self {
        PromptMessage {
            role: Role::User,
            content,
        }
    }

    /// An assistant message.
    pub fn assistant(content: Content) -> Self {
        PromptMessage {
            role: Role::Assistant,
            content,
        }
    }

    /// A user message of text.
    pub fn user_text(text: impl Into<String>) -> Self {
        PromptMessage::user(Content::text(text))
    }

    /// An assistant message of text.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        PromptMessage::assistant(Content::text(text))
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GetPromptResult {
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl GetPromptResult {
    /// A result with messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        GetPromptResult {
            description: None,
            messages,
            meta: None,
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Appends a message.
    pub fn with_message(mut self, message: PromptMessage) -> Self {
        self.messages.push(message);
        self
    }

    /// Appends a user message of text.
    pub fn user(self, text: impl Into<String>) -> Self {
        self.with_message(PromptMessage::user_text(text))
    }

    /// Appends an assistant message of text.
    pub fn assistant(self, text: impl Into<String>) -> Self {
        self.with_message(PromptMessage::assistant_text(text))
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders() {
        let p = PromptDef {
            description: Some("d".into()),
            arguments: vec![PromptArgument::new("a", "the a", true)],
            ..PromptDef::new("p")
        };
        assert_eq!(
            p.render(None),
            json!({"name": "p", "description": "d", "arguments": [{"name": "a", "description": "the a", "required": true}]})
        );
        let r = GetPromptResult::new(vec![PromptMessage::user(Content::text("x"))]);
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]})
        );
    }

    #[test]
    fn icons_from_2025_11_25() {
        let p = PromptDef::new("p").with_icon(Icon::new("https://x/i.png").with_sizes(["16x16", "32x32"]));
        assert!(p.render(Some(Revision::V2025_06_18)).get("icons").is_none());
        assert_eq!(
            p.render(Some(Revision::V2025_11_25))["icons"],
            json!([{"src": "https://x/i.png", "sizes": ["16x16", "32x32"]}])
        );
        assert!(PromptDef::new("p").render(None).get("icons").is_none());
    }
}
