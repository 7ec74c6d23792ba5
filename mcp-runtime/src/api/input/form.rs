//! The elicitation form of a type: its schemars schema as the flat object of primitives that
//! `elicitation/create` allows.

use std::any::type_name;

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

/// Why a type cannot be an elicitation form (see [`form_schema`]).
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::form_schema;
///
/// let e = form_schema::<Vec<u8>>().unwrap_err();
/// assert!(e.to_string().starts_with("alloc::vec::Vec<u8> cannot be an elicitation form"));
/// assert!(e.reason().contains("struct"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{type_name} cannot be an elicitation form: {reason}")]
pub struct FormSchemaError {
    type_name: &'static str,
    reason: String,
}

impl FormSchemaError {
    /// Why the type's schema is not a flat form.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// The `requestedSchema` of a form elicitation of `T`: the schema `schemars` derives, in the
/// restricted form the specification allows. `T` must be a struct (an object schema) whose
/// fields are primitives: strings (with `format` `email`, `uri`, `date` or `date-time`,
/// `minLength`, `maxLength`), numbers and integers (`minimum`, `maximum`), booleans, enums of
/// strings (unit variants; with variant doc comments they become titled options), or
/// `Vec`s of such an enum (multi-select). `Option` fields are optional. Titles, descriptions
/// and defaults are kept; `$schema`, definitions and every other keyword are left out.
///
/// A nested struct, a map, a `Vec` of anything but an enum, or a non-struct `T` is refused:
/// call it in a unit test to check a form type.
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::form_schema;
/// use schemars::JsonSchema;
/// use serde_json::json;
///
/// #[derive(JsonSchema)]
/// struct Signup {
///     /// Your name
///     name: String,
///     age: Option<u8>,
/// }
///
/// let schema = form_schema::<Signup>().unwrap();
/// assert_eq!(schema["properties"]["name"], json!({"type": "string", "description": "Your name"}));
/// assert_eq!(schema["properties"]["age"]["type"], "integer");
/// assert_eq!(schema["required"], json!(["name"]));
///
/// #[derive(JsonSchema)]
/// struct Nested {
///     inner: Signup,
/// }
/// assert!(form_schema::<Nested>().is_err());
/// ```
pub fn form_schema<T: JsonSchema>() -> Result<Value, FormSchemaError> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    flat_form(&schema).map_err(|reason| FormSchemaError {
        type_name: type_name::<T>(),
        reason,
    })
}

/// The restricted object schema of a derived one.
fn flat_form(schema: &Value) -> Result<Value, String> {
    let obj = schema.as_object().ok_or("its schema is not an object")?;
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form must be a struct (an object schema with properties)".into());
    }
    let mut properties = Map::new();
    if let Some(props) = obj.get("properties") {
        let props = props.as_object().ok_or("its properties are not an object")?;
        for (name, prop) in props {
            let flat = primitive(prop).map_err(|why| format!("field {name:?}: {why}"))?;
            properties.insert(name.clone(), flat);
        }
    }
    let required: Vec<Value> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter(|k| k.is_string()).cloned().collect())
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Ok(Value::Object(out))
}

/// The string formats a form field may have.
const FORMATS: [&str; 4] = ["date", "date-time", "email", "uri"];

/// One field's schema, restricted to a primitive schema definition.
fn primitive(schema: &Value) -> Result<Value, String> {
    let mut s = schema.as_object().ok_or("its schema is not an object")?.clone();
    unwrap_nullable(&mut s);
    if s.contains_key("$ref") {
        return Err("a reference (a recursive type?) is not a primitive".into());
    }
    let mut out = Map::new();
    copy(&mut out, &s, &["title", "description"]);
    if let Some(options) = enum_options(&s) {
        out.insert("type".into(), json!("string"));
        match options {
            Options::Plain(values) => {
                out.insert("enum".into(), Value::Array(values));
            }
            Options::Titled(one_of) => {
                out.insert("oneOf".into(), Value::Array(one_of));
            }
        }
        copy(&mut out, &s, &["default"]);
        return Ok(Value::Object(out));
    }
    let ty = s.get("type").and_then(Value::as_str).unwrap_or_default();
    match ty {
        "string" => {
            out.insert("type".into(), json!("string"));
            copy(&mut out, &s, &["minLength", "maxLength", "default"]);
            if let Some(f) = s.get("format").and_then(Value::as_str).filter(|f| FORMATS.contains(f)) {
                out.insert("format".into(), json!(f));
            }
        }
        "number" | "integer" => {
            out.insert("type".into(), json!(ty));
            copy(&mut out, &s, &["minimum", "maximum", "default"]);
        }
        "boolean" => {
            out.insert("type".into(), json!("boolean"));
            copy(&mut out, &s, &["default"]);
        }
        "array" => {
            let items = s.get("items").and_then(Value::as_object);
            let items = items
                .and_then(|i| {
                    let mut i = i.clone();
                    unwrap_nullable(&mut i);
                    enum_options(&i)
                })
                .ok_or("a list must be of an enum of strings (a multi-select)")?;
            out.insert("type".into(), json!("array"));
            let items = match items {
                Options::Plain(values) => json!({"type": "string", "enum": values}),
                Options::Titled(one_of) => json!({"anyOf": one_of}),
            };
            out.insert("items".into(), items);
            copy(&mut out, &s, &["minItems", "maxItems", "default"]);
        }
        "object" => return Err("a nested object is not a primitive (forms are flat)".into()),
        "" => return Err("its schema names no primitive type".into()),
        other => return Err(format!("type {other:?} is not a primitive")),
    }
    Ok(Value::Object(out))
}

/// Copies the `keys` that `from` has into `out` (but not a `null`, such as the default of an
/// `Option` field: no primitive schema allows it).
fn copy(out: &mut Map<String, Value>, from: &Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = from.get(*k).filter(|v| !v.is_null()) {
            out.insert((*k).into(), v.clone());
        }
    }
}

/// The options of an enum of strings.
enum Options {
    /// `enum: [...]`.
    Plain(Vec<Value>),
    /// `[{const, title}]`.
    Titled(Vec<Value>),
}

/// The options of an enum-of-strings schema: `enum` (every value a string), or a
/// `oneOf`/`anyOf` of string `const`s (their title, else description, else the value names
/// each).
fn enum_options(s: &Map<String, Value>) -> Option<Options> {
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .all(Value::is_string)
            .then(|| Options::Plain(values.clone()));
    }
    if let Some(c) = s.get("const").filter(|c| c.is_string()) {
        return Some(Options::Plain(vec![c.clone()]));
    }
    let branches = s.get("oneOf").or_else(|| s.get("anyOf"))?.as_array()?;
    let mut titled = Vec::new();
    for b in branches {
        let b = b.as_object()?;
        let mut add = |value: &Value, b: &Map<String, Value>| {
            let title = b
                .get("title")
                .or_else(|| b.get("description"))
                .filter(|t| t.is_string())
                .unwrap_or(value)
                .clone();
            titled.push(json!({"const": value, "title": title}));
        };
        match (b.get("const"), b.get("enum").and_then(Value::as_array)) {
            (Some(c), _) if c.is_string() => add(c, b),
            (None, Some(values)) if values.iter().all(Value::is_string) => {
                for v in values {
                    add(v, &Map::new());
                }
            }
            _ => return None,
        }
    }
    (!titled.is_empty()).then_some(Options::Titled(titled))
}

/// Turns the schema of an `Option<X>` into the schema of `X`: `type: [X, "null"]`, or an
/// `anyOf`/`oneOf` with a `{"type": "null"}` branch (the other branch is merged in, the outer
/// title, description and default win).
fn unwrap_nullable(s: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = s.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() == 1 {
            s.insert("type".into(), rest[0].clone());
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = s.get(key) else {
            continue;
        };
        let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
        if branches.len() == 2 && branches.iter().any(is_null) {
            let Some(Value::Object(inner)) = branches.iter().find(|b| !is_null(b)).cloned() else {
                continue;
            };
            s.remove(key);
            for (k, v) in inner {
                s.entry(k).or_insert(v);
            }
            unwrap_nullable(s);
            return;
        }
    }
    if s.get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.contains(&Value::Null))
        && let Some(Value::Array(values)) = s.get_mut("enum")
    {
        values.retain(|v| !v.is_null());
    }
}
