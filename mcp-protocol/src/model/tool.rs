//! Tools: definitions rendered per revision, and `tools/call` results.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::content::Content;
use super::icon::Icon;
use super::shown::Shown;
use super::tool_annotations::ToolAnnotations;
use crate::error::RpcError;
use crate::params::Params;
use crate::revision::{Era, Feature, Revision};
use crate::secure_params::{Listed, SCHEMA_FIELD};
use crate::task_mode::TaskSupport;

/// A tool definition as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolDef {
    /// Unique name.
    pub name: String,
    /// Human-readable title (2025-06-18+).
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// JSON Schema of the arguments, returned verbatim.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent` (2025-06-18+), returned verbatim.
    pub output_schema: Option<Value>,
    /// Behaviour hints (listed from 2025-03-26 on, when any is set).
    pub annotations: Option<ToolAnnotations>,
    /// Icons (listed from 2025-11-25 on; empty: none).
    pub icons: Vec<Icon>,
    /// Extra metadata.
    pub meta: Option<Value>,
    /// Whether the tool may or must run as a task.
    pub task_support: TaskSupport,
    /// JSON Schema of the secure parameters the host application supplies in
    /// `secureArguments` (SEP-3221, [`crate::secure_params`]), returned verbatim to clients that
    /// declared the extension.
    pub secure_input_schema: Option<Value>,
}

impl ToolDef {
    /// A tool with a name and the default input schema `{"type":"object"}`.
    pub fn new(name: impl Into<String>) -> Self {
        ToolDef {
            name: name.into(),
            title: None,
            description: None,
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
            icons: Vec::new(),
            meta: None,
            task_support: TaskSupport::Forbidden,
            secure_input_schema: None,
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

    /// Sets the behaviour hints.
    pub fn with_annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Adds an icon.
    pub fn with_icon(mut self, icon: Icon) -> Self {
        self.icons.push(icon);
        self
    }

    /// Sets the icons.
    pub fn with_icons(mut self, icons: impl IntoIterator<Item = Icon>) -> Self {
        self.icons = icons.into_iter().collect();
        self
    }

    /// Sets the input schema (kept verbatim).
    pub fn with_input_schema(mut self, v: Value) -> Self {
        self.input_schema = v;
        self
    }

    /// Sets the output schema (kept verbatim).
    pub fn with_output_schema(mut self, v: Value) -> Self {
        self.output_schema = Some(v);
        self
    }

    /// Sets the task support.
    pub fn with_task_support(mut self, v: TaskSupport) -> Self {
        self.task_support = v;
        self
    }

    /// Sets the secure parameters' schema (kept verbatim; see [`crate::secure_params`]).
    pub fn with_secure_input_schema(mut self, v: Value) -> Self {
        self.secure_input_schema = Some(v);
        self
    }

    /// Renders the definition for a revision (`None`: before negotiation,
    /// every field). Fields the revision does not know are left out: `title`
    /// and `outputSchema` before 2025-06-18 (and an `outputSchema` whose root is not
    /// `type: "object"` before 2026-07-28, SEP-2106), `annotations` before 2025-03-26
    /// (and when no hint is set), `icons` before 2025-11-25. `secureInputSchema` is left out
    /// too: see [`ToolDef::render_listed`].
    pub fn render(&self, revision: Option<Revision>) -> Value {
        self.render_listed(revision, Listed::Plain)
    }

    /// As [`ToolDef::render`], with the secure parameters' schema when `listed` says so (for a
    /// client that declared the secure-parameters extension).
    pub fn render_listed(&self, revision: Option<Revision>, listed: Listed) -> Value {
        let has = |f: Feature| revision.is_none_or(|r| r.has(f));
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("inputSchema".into(), self.input_schema.clone());
        // Before 2026-07-28 an output schema is an object schema (`type: "object"` at the root):
        // a client of such a revision gets none for another root (nor the structured content).
        let any_root = has(Feature::AnyStructuredContent);
        if let (Some(secure), Listed::WithSecureSchema) = (&self.secure_input_schema, listed) {
            m.insert(SCHEMA_FIELD.into(), secure.clone());
        }
        if let Some(o) = self
            .output_schema
            .as_ref()
            .filter(|o| has(Feature::OutputSchema) && (any_root || o.get("type") == Some(&json!("object"))))
        {
            m.insert("outputSchema".into(), o.clone());
        }
        let shown = Shown {
            title: self.title.as_ref(),
            description: self.description.as_ref(),
            icons: &self.icons,
            meta: self.meta.as_ref(),
            ..Shown::default()
        };
        shown.render(&mut m, revision);
        if let Some(a) = self
            .annotations
            .as_ref()
            .filter(|a| !a.is_empty() && has(Feature::ToolAnnotations))
            && let Ok(v) = serde_json::to_value(a)
        {
            m.insert("annotations".into(), v);
        }
        let tasks = revision.is_some_and(|r| r.has(Feature::CoreTasks) || r.era() == Era::Modern);
        if tasks && self.task_support != TaskSupport::Forbidden {
            m.insert("execution".into(), json!({"taskSupport": self.task_support}));
        }
        Value::Object(m)
    }
}

/// `tools/call` params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CallToolParams {
    /// The tool name.
    pub name: String,
    /// The arguments (absent means none).
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
    /// 2025-11-25 task augmentation.
    #[serde(default)]
    pub task: Option<Value>,
    /// The secure parameters the host application supplies (SEP-3221; absent means none).
    #[serde(default, rename = "secureArguments")]
    pub secure_arguments: Option<Map<String, Value>>,
}

/// [`CallToolParams`] read in place from the params' text: nothing is parsed but the name, so
/// that a server reads the arguments once, where it validates them.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolParamsRef<'a> {
    /// The tool name.
    pub name: Cow<'a, str>,
    /// The JSON text of the arguments object (absent or `null`: none).
    pub arguments: Option<&'a str>,
    /// The JSON text of the 2025-11-25 task augmentation (absent or `null`: none).
    pub task: Option<&'a str>,
}

impl<'a> CallToolParamsRef<'a> {
    /// Reads `tools/call` params (-32602 when `name` is missing or not a string, or
    /// `arguments` is neither an object nor `null`). `secureArguments` are the route's to admit
    /// ([`crate::secure_params::admit`]).
    pub fn parse(params: &'a Params) -> Result<Self, RpcError> {
        let invalid = |what: &str| RpcError::invalid_params(format!("Invalid params: {what}"));
        let name = match params.raw("name") {
            Some(_) => params.str("name").ok_or_else(|| invalid("`name` must be a string"))?,
            None => return Err(invalid("missing field `name`")),
        };
        let arguments = match params.raw("arguments") {
            None | Some("null") => None,
            Some(args) if args.starts_with('{') => Some(args),
            Some(_) => return Err(invalid("`arguments` must be an object")),
        };
        let task = params.raw("task").filter(|t| *t != "null");
        Ok(CallToolParamsRef { name, arguments, task })
    }
}

/// The key under which structured output that is not a JSON object is sent
/// ([`CallToolResult::structured_wrapped`]): `{"result": value}`.
pub const STRUCTURED_RESULT_KEY: &str = "result";

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CallToolResult {
    /// Content blocks.
    pub content: Vec<Content>,
    /// Structured output (an object for legacy clients; any JSON in 2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed (a tool error, not a protocol error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl CallToolResult {
    /// A result with content blocks.
    pub fn new(content: Vec<Content>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(vec![Content::text(text)])
    }

    /// A tool error with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// Structured output, with its JSON serialisation as a text block too
    /// (as the specification recommends for clients without structured output).
    pub fn structured(value: Value) -> Self {
        let text = value.to_string();
        CallToolResult {
            structured_content: Some(value),
            ..Self::text(text)
        }
    }

    /// Structured output that is not a JSON object (an array, a string, `null`, …), sent as
    /// the object `{"result": value}` ([`STRUCTURED_RESULT_KEY`]), since `structuredContent`
    /// and the root of `outputSchema` are objects; the text block is the JSON of `value`
    /// itself. Every era gets the same object.
    pub fn structured_wrapped(value: Value) -> Self {
        let text = value.to_string();
        let mut wrapped = Map::new();
        wrapped.insert(STRUCTURED_RESULT_KEY.into(), value);
        CallToolResult {
            structured_content: Some(Value::Object(wrapped)),
            ..Self::text(text)
        }
    }

    /// Renders for a revision: a legacy client gets `structuredContent` only
    /// when its revision has structured output and the value is an object.
    pub fn render(&self, revision: Option<Revision>) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or_else(|_| json!({"content": []}));
        if !self.keeps_structured(revision)
            && let Some(obj) = v.as_object_mut()
        {
            obj.remove("structuredContent");
        }
        v
    }

    /// Whether `structuredContent` (if any) is sent to a client of `revision`: always in the
    /// modern era; to a legacy client whose revision has structured output, when it is an
    /// object.
    pub fn keeps_structured(&self, revision: Option<Revision>) -> bool {
        match (&self.structured_content, revision) {
            (None, _) => true,
            (Some(_), Some(r)) if r.has(Feature::AnyStructuredContent) => true,
            (Some(s), Some(r)) => r.has(Feature::OutputSchema) && s.is_object(),
            (Some(s), None) => s.is_object(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Revision::*;

    fn full() -> ToolDef {
        ToolDef {
            title: Some("T".into()),
            description: Some("d".into()),
            output_schema: Some(json!({"type": "object"})),
            icons: vec![Icon::new("https://x/i.png")],
            annotations: Some(ToolAnnotations::new().with_read_only(true)),
            task_support: TaskSupport::Optional,
            ..ToolDef::new("t")
        }
    }

    #[test]
    fn fields_gated_by_revision() {
        // (revision, title, outputSchema, icons, execution, annotations)
        let table = [
            (Some(V2024_11_05), false, false, false, false, false),
            (Some(V2025_03_26), false, false, false, false, true),
            (Some(V2025_06_18), true, true, false, false, true),
            (Some(V2025_11_25), true, true, true, true, true),
            (Some(V2026_07_28), true, true, true, true, true),
            (None, true, true, true, false, true),
        ];
        for (rev, title, output, icons, execution, annotations) in table {
            let v = full().render(rev);
            assert_eq!(v.get("title").is_some(), title, "{rev:?}");
            assert_eq!(v.get("outputSchema").is_some(), output, "{rev:?}");
            assert_eq!(v.get("icons").is_some(), icons, "{rev:?}");
            assert_eq!(v.get("execution").is_some(), execution, "{rev:?}");
            assert_eq!(v.get("annotations").is_some(), annotations, "{rev:?}");
            assert_eq!(v["inputSchema"], json!({"type": "object"}));
            if annotations {
                assert_eq!(v["annotations"], json!({"readOnlyHint": true}));
            }
            if icons {
                assert_eq!(v["icons"], json!([{"src": "https://x/i.png"}]));
            }
        }
        assert_eq!(
            full().render(Some(V2025_11_25))["execution"],
            json!({"taskSupport": "optional"})
        );
    }

    #[test]
    fn an_output_schema_of_another_root_is_modern_only() {
        for schema in [
            json!({"type": "array", "items": {"type": "number"}}),
            json!({"type": "number"}),
            json!({"oneOf": [{"type": "object"}, {"type": "string"}]}),
        ] {
            let t = ToolDef {
                output_schema: Some(schema.clone()),
                ..ToolDef::new("t")
            };
            assert_eq!(t.render(Some(V2026_07_28))["outputSchema"], schema);
            assert_eq!(
                t.render(None)["outputSchema"],
                schema,
                "before negotiation: every field"
            );
            for rev in [V2025_06_18, V2025_11_25] {
                assert!(t.render(Some(rev)).get("outputSchema").is_none(), "{rev:?} {schema}");
            }
        }
    }

    #[test]
    fn the_secure_schema_is_listed_only_when_asked() {
        let secure = json!({"type": "object", "properties": {"tenant": {"type": "string"}}});
        let t = ToolDef::new("t").with_secure_input_schema(secure.clone());
        for rev in [Some(V2025_11_25), Some(V2026_07_28), None] {
            assert_eq!(
                t.render_listed(rev, Listed::WithSecureSchema)["secureInputSchema"],
                secure
            );
            assert!(t.render_listed(rev, Listed::Plain).get("secureInputSchema").is_none());
            assert!(t.render(rev).get("secureInputSchema").is_none());
        }
    }

    #[test]
    fn schema_is_verbatim() {
        let schema = json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
            "$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"}},
            "additionalProperties": false});
        let t = ToolDef {
            input_schema: schema.clone(),
            ..ToolDef::new("t")
        };
        assert_eq!(t.render(Some(V2025_11_25))["inputSchema"], schema);
    }

    #[test]
    fn structured_content_per_revision() {
        let obj = CallToolResult::structured(json!({"a": 1}));
        let arr = CallToolResult::structured(json!([1, 2]));
        let table = [
            (&obj, Some(V2025_03_26), false),
            (&obj, Some(V2025_06_18), true),
            (&obj, Some(V2026_07_28), true),
            (&arr, Some(V2025_11_25), false),
            (&arr, Some(V2026_07_28), true),
            (&arr, None, false),
        ];
        for (r, rev, kept) in table {
            let v = r.render(rev);
            assert_eq!(v.get("structuredContent").is_some(), kept, "{rev:?} {r:?}");
            assert_eq!(v["content"][0]["type"], "text");
        }
    }

    #[test]
    fn empty_annotations_and_icons_are_not_listed() {
        let t = ToolDef::new("t")
            .with_annotations(ToolAnnotations::new())
            .with_icons([]);
        let v = t.render(Some(V2026_07_28));
        assert!(v.get("annotations").is_none() && v.get("icons").is_none(), "{v}");
    }

    #[test]
    fn wrapped_structured_output_is_an_object_in_every_era() {
        let r = CallToolResult::structured_wrapped(json!([1, 2]));
        for rev in [Some(V2025_06_18), Some(V2025_11_25), Some(V2026_07_28), None] {
            let v = r.render(rev);
            assert_eq!(v["structuredContent"], json!({"result": [1, 2]}), "{rev:?}");
            assert_eq!(v["content"][0]["text"], "[1,2]", "{rev:?}");
        }
        assert!(r.render(Some(V2025_03_26)).get("structuredContent").is_none());
        let null = CallToolResult::structured_wrapped(Value::Null);
        assert_eq!(null.structured_content, Some(json!({"result": null})));
        assert_eq!(null.content, vec![Content::text("null")]);
    }

    #[test]
    fn error_flag() {
        assert_eq!(CallToolResult::error("x").render(None)["isError"], true);
        assert!(CallToolResult::text("x").render(None).get("isError").is_none());
    }
}
