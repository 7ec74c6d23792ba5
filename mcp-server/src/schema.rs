//! Tool schemas derived from types with `schemars`, shaped so that every client accepts them.
//!
//! By default ([`SchemaStyle::Inline`]) a derived schema has its subschemas inlined, so that it
//! holds no `$ref` (several clients, Claude Code, Copilot CLI and Cursor among them, refuse a
//! tool whose schema has one), and its root is an object schema (`"type": "object"`), which
//! every revision requires of `inputSchema` and the legacy revisions of `outputSchema`. A
//! recursive type cannot be inlined: its schema keeps `$defs` and a `$ref` where the type
//! recurs (its first level is still inlined). [`SchemaStyle::Verbatim`] keeps the schema as
//! `schemars` generates it.
//!
//! A schema given as JSON (`Tool::input_schema`, `Tool::output_schema`) is never reshaped.

use schemars::JsonSchema;
use schemars::generate::{Contract, SchemaSettings};
use serde_json::{Map, Value, json};

use mcp_protocol::model::STRUCTURED_RESULT_KEY;

/// How a schema derived from a type is shaped (see [`Tool::schema_style`](crate::Tool::schema_style)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SchemaStyle {
    /// Subschemas inlined (no `$ref`, no `$defs`, except where a recursive type recurs),
    /// the root an object schema: a root without `type` (an enum of object variants, a
    /// `oneOf`) gets `"type": "object"`; the input of an `Option<T>` drops `null` from its
    /// `type` (arguments are always an object). The default.
    #[default]
    Inline,
    /// The schema as `schemars` generates it: `$defs` and `$ref` kept, the root untouched.
    Verbatim,
}

/// Why a schema cannot be wrapped in `{"result": …}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WrapError {
    /// A `$ref` points at the schema's root or somewhere outside `$defs`: once the schema is
    /// moved under `properties.result` it would point elsewhere.
    #[error("its `$ref` {0:?} points outside `$defs` (a verbatim recursive type: use SchemaStyle::Inline)")]
    RefOutsideDefs(String),
}

/// The JSON Schema of a type as a tool's `inputSchema`, in the default
/// [`SchemaStyle::Inline`]: no `$ref` but for recursion, `"type": "object"` at the root.
///
/// ```
/// use mcp_server::schema_of;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Point { x: f64, y: f64 }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Segment { from: Point, to: Point }
///
/// let schema = schema_of::<Segment>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["properties"]["from"]["properties"]["x"]["type"], "number");
/// assert!(schema.get("$defs").is_none());
/// ```
pub fn schema_of<T: JsonSchema>() -> Value {
    input_schema::<T>(SchemaStyle::Inline)
}

/// The input schema of `T` (the deserialize contract) in a style.
pub(crate) fn input_schema<T: JsonSchema>(style: SchemaStyle) -> Value {
    let mut schema = generate::<T>(style, Contract::Deserialize);
    if style == SchemaStyle::Inline
        && let Some(root) = schema.as_object_mut()
    {
        object_root(root);
    }
    schema
}

/// The output schema of `T` (the serialize contract) in a style, unwrapped. An inline schema
/// whose root has no `type` but describes objects only gets `"type": "object"`.
pub(crate) fn output_schema<T: JsonSchema>(style: SchemaStyle) -> Value {
    let mut schema = generate::<T>(style, Contract::Serialize);
    if style == SchemaStyle::Inline
        && describes_object(&schema)
        && let Some(root) = schema.as_object_mut()
    {
        root.entry("type").or_insert_with(|| json!("object"));
    }
    schema
}

/// Generates the root schema of `T`: `$schema` (2020-12) and `title` at the root, `$defs`
/// only for what was not inlined.
fn generate<T: JsonSchema>(style: SchemaStyle, contract: Contract) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.contract = contract;
        s.inline_subschemas = style == SchemaStyle::Inline;
    });
    if style == SchemaStyle::Verbatim {
        return settings.into_generator().into_root_schema_for::<T>().to_value();
    }
    // `subschema_for` rather than a root schema: a type recurring into itself is then
    // referenced as `#/$defs/Name`, never as `#` (which wrapping would break).
    let mut generator = settings.into_generator();
    let schema = generator.subschema_for::<T>().to_value();
    let defs = generator.take_definitions(true);
    let mut root = match schema {
        Value::Object(m) => m,
        Value::Bool(false) => Map::from_iter([("not".to_owned(), json!({}))]),
        _ => Map::new(),
    };
    root.entry("title")
        .or_insert_with(|| Value::String(T::schema_name().into_owned()));
    root.insert("$schema".into(), json!(schemars::consts::meta_schemas::DRAFT2020_12));
    if !defs.is_empty() {
        root.insert("$defs".into(), Value::Object(defs));
    }
    Value::Object(root)
}

/// Makes an input root an object schema where arguments (always an object) allow it: a root
/// without `type` gets `"type": "object"`, a `type` list naming `object` becomes `"object"`.
/// A root of another type is left alone (its registration is refused).
fn object_root(root: &mut Map<String, Value>) {
    let names_object = match root.get("type") {
        None => true,
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if names_object {
        root.insert("type".into(), json!("object"));
    }
}

/// Whether every instance the schema accepts is a JSON object: `"type": "object"`, or (no
/// `type`) a local `$ref`, a `oneOf`/`anyOf` whose every branch, or an `allOf` one of whose
/// members, describes objects.
pub(crate) fn describes_object(schema: &Value) -> bool {
    let defs = schema.get("$defs").and_then(Value::as_object);
    is_object(schema, defs, 0)
}

fn is_object(schema: &Value, defs: Option<&Map<String, Value>>, depth: usize) -> bool {
    const MAX_DEPTH: usize = 16;
    if depth > MAX_DEPTH {
        return false;
    }
    if let Some(t) = schema.get("type") {
        return t == "object";
    }
    let all = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(|branches| !branches.is_empty() && branches.iter().all(|b| is_object(b, defs, depth + 1)))
    };
    let local_ref = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs?.get(name));
    if let Some(target) = local_ref {
        return is_object(target, defs, depth + 1);
    }
    let all_of = schema
        .get("allOf")
        .and_then(Value::as_array)
        .is_some_and(|members| members.iter().any(|m| is_object(m, defs, depth + 1)));
    all("oneOf") || all("anyOf") || all_of
}

/// Wraps the schema of a value that is not an object into the schema of `{"result": value}`:
/// `$schema` and `$defs` move to the new root, so that `#/$defs/…` references still resolve.
pub(crate) fn wrap(schema: Value) -> Result<Value, WrapError> {
    let mut inner = match schema {
        Value::Object(m) => m,
        Value::Bool(false) => Map::from_iter([("not".to_owned(), json!({}))]),
        _ => Map::new(),
    };
    if let Some(r) = ref_outside_defs(&Value::Object(inner.clone())) {
        return Err(WrapError::RefOutsideDefs(r));
    }
    let mut root = Map::new();
    if let Some(meta) = inner.remove("$schema") {
        root.insert("$schema".into(), meta);
    }
    root.insert("type".into(), json!("object"));
    let mut properties = Map::new();
    let defs = inner.remove("$defs");
    properties.insert(STRUCTURED_RESULT_KEY.into(), Value::Object(inner));
    root.insert("properties".into(), Value::Object(properties));
    root.insert("required".into(), json!([STRUCTURED_RESULT_KEY]));
    if let Some(defs) = defs {
        root.insert("$defs".into(), defs);
    }
    Ok(Value::Object(root))
}

/// The first `$ref` that does not point into `#/$defs/`.
fn ref_outside_defs(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref")
                && !r.starts_with("#/$defs/")
            {
                return Some(r.clone());
            }
            // Instances (`const`, `enum`, `default`, `examples`) are data, not schemas.
            m.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "const" | "enum" | "default" | "examples"))
                .find_map(|(_, v)| ref_outside_defs(v))
        }
        Value::Array(items) => items.iter().find_map(ref_outside_defs),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
