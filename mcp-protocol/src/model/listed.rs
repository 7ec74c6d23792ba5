//! What the `*/list` methods return, as a client reads them: each entry decoded for the fields
//! a client acts on, with its JSON kept in `raw` for everything else.

use crate::model::{Icon, ToolAnnotations};
use serde::Deserialize;
use serde_json::Value;

/// A tool of `tools/list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInfo {
    /// The name.
    pub name: String,
    /// The title.
    #[serde(default)]
    pub title: Option<String>,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// The input schema.
    #[serde(default)]
    pub input_schema: Value,
    /// The output schema, if any.
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// The behaviour hints, if listed.
    #[serde(default)]
    pub annotations: Option<ToolAnnotations>,
    /// The icons (empty when none are listed).
    #[serde(default)]
    pub icons: Vec<Icon>,
    /// The entry as listed.
    #[serde(skip)]
    pub raw: Value,
}

/// A resource of `resources/list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceInfo {
    /// The URI.
    pub uri: String,
    /// The name.
    pub name: String,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// The MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// The entry as listed.
    #[serde(skip)]
    pub raw: Value,
}

/// A template of `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TemplateInfo {
    /// The URI template.
    pub uri_template: String,
    /// The name.
    pub name: String,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// The MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// The entry as listed.
    #[serde(skip)]
    pub raw: Value,
}

/// A prompt of `prompts/list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptInfo {
    /// The name.
    pub name: String,
    /// The title.
    #[serde(default)]
    pub title: Option<String>,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
    /// The declared arguments (each `{name, description?, required?}`).
    #[serde(default)]
    pub arguments: Vec<Value>,
    /// The entry as listed.
    #[serde(skip)]
    pub raw: Value,
}

/// An entry of a `*/list` result that keeps its JSON.
pub trait Listed: serde::de::DeserializeOwned {
    /// The key of the list in the result (`tools`, `resources`, …).
    const KEY: &'static str;
    /// Keeps the raw entry.
    fn set_raw(&mut self, raw: Value);
}

macro_rules! listed {
    ($t:ty, $key:literal) => {
        impl Listed for $t {
            const KEY: &'static str = $key;
            fn set_raw(&mut self, raw: Value) {
                self.raw = raw;
            }
        }
    };
}

listed!(ToolInfo, "tools");
listed!(ResourceInfo, "resources");
listed!(TemplateInfo, "resourceTemplates");
listed!(PromptInfo, "prompts");
