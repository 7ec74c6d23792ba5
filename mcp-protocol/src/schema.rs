//! JSON Schema compilation and validation with bounded cost.
//!
//! Tool `inputSchema`/`outputSchema` and similar schemas are compiled once
//! through the `jsonschema` crate (the runtime does it at registration, or at a derived
//! schema's first use) and then validate many instances. The rules:
//!
//! - **Dialect.** A schema without `$schema` is JSON Schema 2020-12 (the MCP
//!   default). A declared `$schema` must name a draft the validator
//!   implements (2020-12, 2019-09, draft-07, draft-06, draft-04; `http` or
//!   `https`, with or without the trailing `#`); anything else is
//!   [`SchemaError::UnsupportedDialect`].
//! - **No retrieval.** `$ref`s resolve only inside the schema itself (plus
//!   the built-in meta-schemas): a reference to anything else is
//!   [`SchemaError::ExternalRef`], never a network or file access.
//! - **Bounded cost, checked before compiling.** At most [`MAX_DEPTH`] levels
//!   of nesting and [`MAX_SUBSCHEMAS`] objects, else
//!   [`SchemaError::TooComplex`]. Instances are bounded by the JSON decoder.
//! - **Verbatim.** The schema value is only read, never rewritten: clients
//!   receive exactly what was registered.
//!
//! Validation reports at most [`MAX_VIOLATIONS`] readable messages such as
//! `at /a/b: 3 is not of type "string"`.
//!
//! # Without the `schema-validation` feature
//!
//! The `jsonschema` crate (and its forty-odd dependencies) is behind the `schema-validation`
//! feature, on by default. Without it [`validator`] still refuses schemas over the bounds, and
//! answers `Ok(None)`: no instance is checked against a schema, so a typed tool's arguments are
//! checked only by its own deserialization, and an untyped tool gets them as sent. There is no
//! [`compile`], and [`CompiledSchema`] is an empty enum (no value of it can exist).

use std::fmt;
#[cfg(feature = "schema-validation")]
use std::sync::Arc;

#[cfg(feature = "schema-validation")]
use jsonschema::error::ValidationErrorKind;
#[cfg(feature = "schema-validation")]
use jsonschema::{Draft, ReferencingError, Retrieve, Uri, Validator};
use serde_json::Value;

use crate::error::RpcError;

mod structural;

pub use structural::is_structural;

/// The deepest accepted nesting of a schema (objects and arrays; the root is level 1).
pub const MAX_DEPTH: usize = 64;
/// The most JSON objects (subschemas and keyword maps) a schema may contain.
pub const MAX_SUBSCHEMAS: usize = 10_000;
/// The most violation messages kept by [`CompiledSchema::validate`].
pub const MAX_VIOLATIONS: usize = 5;
/// Longest violation message, in characters, before it is cut.
#[cfg(feature = "schema-validation")]
const MAX_MESSAGE_CHARS: usize = 200;

/// Why a schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Nesting deeper than [`MAX_DEPTH`] or more than [`MAX_SUBSCHEMAS`] objects.
    #[error("schema is too complex: {0}")]
    TooComplex(String),
    /// `$schema` names a dialect this library does not implement.
    #[error("unsupported JSON Schema dialect: {0}")]
    UnsupportedDialect(String),
    /// A `$ref` points outside the schema; nothing is ever fetched.
    #[error("schema references an external resource, which is never retrieved: {0}")]
    ExternalRef(String),
    /// The schema is not a valid schema of its dialect (or a local `$ref`
    /// does not resolve).
    #[error("invalid schema: {0}")]
    Invalid(String),
}

/// The JSON Schema dialect a schema was compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// Draft 4.
    Draft4,
    /// Draft 6.
    Draft6,
    /// Draft 7.
    Draft7,
    /// 2019-09.
    Draft201909,
    /// 2020-12 (the default).
    Draft202012,
}

#[cfg(feature = "schema-validation")]
impl Dialect {
    fn draft(self) -> Draft {
        match self {
            Dialect::Draft4 => Draft::Draft4,
            Dialect::Draft6 => Draft::Draft6,
            Dialect::Draft7 => Draft::Draft7,
            Dialect::Draft201909 => Draft::Draft201909,
            Dialect::Draft202012 => Draft::Draft202012,
        }
    }

    /// The dialect a `$schema` URI names, if it is one of ours.
    fn from_uri(uri: &str) -> Option<Dialect> {
        match Draft::from_schema_uri(uri) {
            Draft::Draft4 => Some(Dialect::Draft4),
            Draft::Draft6 => Some(Dialect::Draft6),
            Draft::Draft7 => Some(Dialect::Draft7),
            Draft::Draft201909 => Some(Dialect::Draft201909),
            Draft::Draft202012 => Some(Dialect::Draft202012),
            _ => None,
        }
    }
}

/// A compiled schema: cheap to clone, shareable across threads.
#[cfg(feature = "schema-validation")]
#[derive(Clone)]
pub struct CompiledSchema {
    validator: Arc<Validator>,
    dialect: Dialect,
}

/// A compiled schema; without the `schema-validation` feature none can exist.
#[cfg(not(feature = "schema-validation"))]
#[derive(Clone, Debug)]
pub enum CompiledSchema {}

#[cfg(not(feature = "schema-validation"))]
impl CompiledSchema {
    /// The dialect the schema was compiled with.
    pub fn dialect(&self) -> Dialect {
        match *self {}
    }

    /// Validates an instance, reporting up to [`MAX_VIOLATIONS`] violations.
    pub fn validate(&self, _: &Value) -> Result<(), SchemaViolations> {
        match *self {}
    }

    /// As [`CompiledSchema::validate`], messages naming no value.
    pub fn validate_redacted(&self, _: &Value) -> Result<(), SchemaViolations> {
        match *self {}
    }

    /// Whether an instance is valid (no messages are built).
    pub fn is_valid(&self, _: &Value) -> bool {
        match *self {}
    }
}

/// The validator of a schema, after checking its size (and, with the `schema-validation`
/// feature, its dialect): `Ok(None)` when this build does not validate instances (the feature
/// is off; see the module's documentation).
pub fn validator(schema: &Value) -> Result<Option<CompiledSchema>, SchemaError> {
    #[cfg(feature = "schema-validation")]
    return compile(schema).map(Some);
    #[cfg(not(feature = "schema-validation"))]
    check_bounds(schema).map(|()| None)
}

#[cfg(feature = "schema-validation")]
impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

/// The violations of one instance: up to [`MAX_VIOLATIONS`] messages, shown
/// joined with `"; "`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolations {
    /// Readable messages, e.g. `at /a/b: 3 is not of type "string"`.
    pub messages: Vec<String>,
    /// Whether more violations were found than are listed.
    pub truncated: bool,
}

impl fmt::Display for SchemaViolations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.messages.join("; "))?;
        if self.truncated {
            f.write_str("; …")?;
        }
        Ok(())
    }
}

impl std::error::Error for SchemaViolations {}

impl SchemaViolations {
    /// A -32602 for protocol values that fail their schema (tool input
    /// failures are `isError` results instead, built by the caller).
    pub fn to_rpc_error(&self) -> RpcError {
        RpcError::invalid_params(format!("Invalid params: {self}"))
    }
}

/// A retriever that refuses everything: references resolve locally or fail.
#[cfg(feature = "schema-validation")]
struct NoRetrieval;

#[cfg(feature = "schema-validation")]
impl Retrieve for NoRetrieval {
    fn retrieve(&self, uri: &Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("retrieval of {uri} is disabled").into())
    }
}

/// Compiles a schema after checking its size and dialect.
#[cfg(feature = "schema-validation")]
#[cfg_attr(docsrs, doc(cfg(feature = "schema-validation")))]
pub fn compile(schema: &Value) -> Result<CompiledSchema, SchemaError> {
    check_bounds(schema)?;
    let dialect = match schema.as_object().and_then(|o| o.get("$schema")) {
        None => Dialect::Draft202012,
        Some(Value::String(uri)) => {
            Dialect::from_uri(uri).ok_or_else(|| SchemaError::UnsupportedDialect(uri.clone()))?
        }
        Some(other) => return Err(SchemaError::UnsupportedDialect(other.to_string())),
    };
    let validator = jsonschema::options()
        .with_draft(dialect.draft())
        .with_retriever(NoRetrieval)
        .build(schema)
        .map_err(|e| match e.kind() {
            ValidationErrorKind::Referencing(ReferencingError::Unretrievable { uri, .. }) => {
                SchemaError::ExternalRef(uri.clone())
            }
            ValidationErrorKind::Referencing(ReferencingError::UnknownSpecification { specification }) => {
                SchemaError::UnsupportedDialect(specification.clone())
            }
            _ => SchemaError::Invalid(cut(e.to_string())),
        })?;
    Ok(CompiledSchema {
        validator: Arc::new(validator),
        dialect,
    })
}

/// Refuses schemas nested deeper than [`MAX_DEPTH`] or holding more than
/// [`MAX_SUBSCHEMAS`] objects, without recursion.
fn check_bounds(schema: &Value) -> Result<(), SchemaError> {
    let mut stack = vec![(schema, 1usize)];
    let mut objects = 0usize;
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Object(map) => {
                objects += 1;
                if objects > MAX_SUBSCHEMAS {
                    return Err(SchemaError::TooComplex(format!(
                        "more than {MAX_SUBSCHEMAS} subschemas"
                    )));
                }
                Box::new(map.values())
            }
            Value::Array(items) => Box::new(items.iter()),
            _ => continue,
        };
        if depth > MAX_DEPTH {
            return Err(SchemaError::TooComplex(format!(
                "nested deeper than {MAX_DEPTH} levels"
            )));
        }
        stack.extend(
            children
                .filter(|c| c.is_object() || c.is_array())
                .map(|c| (c, depth + 1)),
        );
    }
    Ok(())
}

#[cfg(feature = "schema-validation")]
impl CompiledSchema {
    /// The dialect the schema was compiled with.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Validates an instance, reporting up to [`MAX_VIOLATIONS`] violations.
    pub fn validate(&self, instance: &Value) -> Result<(), SchemaViolations> {
        self.violations(instance, |path, e| format!("at {path}: {e}"))
    }

    /// As [`CompiledSchema::validate`], with messages that name where the instance fails and
    /// the schema's keyword it fails (a missing required member by its name), never a value of
    /// the instance: for values that must not be echoed (secure parameters).
    pub fn validate_redacted(&self, instance: &Value) -> Result<(), SchemaViolations> {
        self.violations(instance, |path, e| match e.kind() {
            ValidationErrorKind::Required { property } => format!("at {path}: missing required {property}"),
            kind => format!("at {path}: fails {:?}", kind.keyword()),
        })
    }

    /// The violations of `instance`, each told by `describe` (given the instance path, `/` for
    /// the root, and the error).
    fn violations(
        &self,
        instance: &Value,
        describe: impl Fn(&str, &jsonschema::ValidationError<'_>) -> String,
    ) -> Result<(), SchemaViolations> {
        // The common case first: a valid instance is checked without building errors (the
        // error iterator allocates before it yields anything).
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut errors = self.validator.iter_errors(instance);
        let messages: Vec<String> = errors
            .by_ref()
            .take(MAX_VIOLATIONS)
            .map(|e| {
                let path = e.instance_path().as_str();
                cut(describe(if path.is_empty() { "/" } else { path }, &e))
            })
            .collect();
        if messages.is_empty() {
            return Ok(());
        }
        let truncated = errors.next().is_some();
        Err(SchemaViolations { messages, truncated })
    }

    /// Whether an instance is valid (no messages are built).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }
}

#[cfg(feature = "schema-validation")]
fn cut(mut s: String) -> String {
    if let Some((at, _)) = s.char_indices().nth(MAX_MESSAGE_CHARS) {
        s.truncate(at);
        s.push('…');
    }
    s
}

#[cfg(all(test, feature = "schema-validation"))]
mod tests {
    use serde_json::json;

    use super::*;

    fn ok(schema: Value) -> CompiledSchema {
        compile(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"))
    }

    #[test]
    fn send_sync_clone() {
        fn assert_traits<T: Send + Sync + Clone + fmt::Debug>() {}
        assert_traits::<CompiledSchema>();
        let c = ok(json!({"type": "object"}));
        assert_eq!(format!("{c:?}"), "CompiledSchema { dialect: Draft202012, .. }");
    }

    #[test]
    fn redacted_violations_name_no_value() {
        let c = ok(json!({
            "type": "object",
            "properties": {"port": {"type": "integer"}, "token": {"type": "string", "minLength": 12}},
            "required": ["instance"]
        }));
        let v = c
            .validate_redacted(&json!({"port": "sekrit-1", "token": "sekrit-2"}))
            .unwrap_err();
        let text = v.to_string();
        assert!(!text.contains("sekrit"), "{text}");
        assert!(text.contains("missing required \"instance\""), "{text}");
        assert!(text.contains("at /port: fails \"type\""), "{text}");
        assert!(text.contains("at /token: fails \"minLength\""), "{text}");
        assert_eq!(c.validate_redacted(&json!({"instance": "x", "port": 1})), Ok(()));
    }

    #[test]
    fn instances() {
        let person = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "home": {"$ref": "#/$defs/address"},
                "work": {"$ref": "#office"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}
            },
            "required": ["name"],
            "unevaluatedProperties": false,
            "$defs": {
                "address": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]},
                "office": {"$anchor": "office", "type": "object",
                           "properties": {"floor": {"type": "integer"}}}
            }
        });
        let s = ok(person);
        assert_eq!(s.dialect(), Dialect::Draft202012);
        #[rustfmt::skip]
        let table: Vec<(Value, Result<(), &str>)> = vec![
            (json!({"name": "a"}), Ok(())),
            (json!({"name": "a", "home": {"city": "x"}, "work": {"floor": 3}}), Ok(())),
            (json!({}), Err(r#"at /: "name" is a required property"#)),
            (json!({"name": 3}), Err(r#"at /name: 3 is not of type "string""#)),
            (json!({"name": "a", "home": {}}), Err(r#"at /home: "city" is a required property"#)),
            (json!({"name": "a", "work": {"floor": "3"}}), Err(r#"at /work/floor: "3" is not of type "integer""#)),
            (json!({"name": "a", "extra": 1}), Err("at /: Unevaluated properties are not allowed ('extra' was unexpected)")),
            (json!({"name": "a", "tags": ["x", 2]}), Err(r#"at /tags/1: 2 is not of type "string""#)),
        ];
        for (instance, want) in table {
            let got = s.validate(&instance).map_err(|v| v.to_string());
            assert_eq!(
                got.as_ref().map_err(|e| e.as_str()),
                want.as_ref().map_err(|e| *e),
                "{instance}"
            );
            assert_eq!(s.is_valid(&instance), want.is_ok());
        }
    }

    #[test]
    fn many_violations_are_capped() {
        let s = ok(json!({"type": "array", "items": {"type": "string"}}));
        let v = s.validate(&json!([1, 2, 3, 4, 5, 6, 7])).unwrap_err();
        assert_eq!(v.messages.len(), MAX_VIOLATIONS);
        assert!(v.truncated);
        assert!(v.to_string().ends_with("; …"), "{v}");
        assert_eq!(v.to_rpc_error().code, -32602);
        let v = s.validate(&json!([1, 2])).unwrap_err();
        assert_eq!(
            v.to_string(),
            r#"at /0: 1 is not of type "string"; at /1: 2 is not of type "string""#
        );
        let long = s.validate(&json!([{"k": "x".repeat(1000)}])).unwrap_err();
        assert!(long.messages[0].chars().count() <= MAX_MESSAGE_CHARS + 1, "{long}");
    }

    #[test]
    fn dialects() {
        let d7 = "http://json-schema.org/draft-07/schema#";
        #[rustfmt::skip]
        let table: Vec<(Value, Result<Dialect, SchemaError>)> = vec![
            (json!({"type": "string"}), Ok(Dialect::Draft202012)),
            (json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}), Ok(Dialect::Draft202012)),
            (json!({"$schema": d7, "type": "string"}), Ok(Dialect::Draft7)),
            (json!({"$schema": "https://json-schema.org/draft-07/schema", "type": "string"}), Ok(Dialect::Draft7)),
            (json!({"$schema": "https://json-schema.org/draft/2019-09/schema"}), Ok(Dialect::Draft201909)),
            (json!({"$schema": "https://example.com/my-dialect"}),
                Err(SchemaError::UnsupportedDialect("https://example.com/my-dialect".into()))),
            (json!({"$schema": "https://json-schema.org/draft/2030-01/schema"}),
                Err(SchemaError::UnsupportedDialect("https://json-schema.org/draft/2030-01/schema".into()))),
            (json!({"$schema": 7}), Err(SchemaError::UnsupportedDialect("7".into()))),
        ];
        for (schema, want) in table {
            assert_eq!(compile(&schema).map(|c| c.dialect()), want, "{schema}");
        }
        // Draft-07 semantics apply when declared: `definitions` + sibling-less `$ref`.
        let s = ok(json!({"$schema": d7, "definitions": {"n": {"type": "integer"}},
                          "properties": {"a": {"$ref": "#/definitions/n"}}}));
        assert!(s.validate(&json!({"a": 1})).is_ok());
        assert!(s.validate(&json!({"a": "x"})).is_err());
    }

    #[test]
    fn no_retrieval() {
        let table = [
            json!({"$ref": "https://example.com/schema.json"}),
            json!({"properties": {"a": {"$ref": "http://127.0.0.1:1/x.json#/a"}}}),
            json!({"$ref": "file:///etc/passwd"}),
            json!({"$id": "https://example.com/root.json", "$ref": "other.json"}),
        ];
        for schema in table {
            match compile(&schema) {
                Err(SchemaError::ExternalRef(uri)) => assert!(!uri.is_empty()),
                other => panic!("{schema}: {other:?}"),
            }
        }
        // References to resources embedded in the schema are local.
        let embedded = json!({
            "$id": "https://example.com/root.json",
            "$ref": "item.json",
            "$defs": {"item": {"$id": "item.json", "type": "integer"}}
        });
        let s = ok(embedded);
        assert!(s.is_valid(&json!(3)) && !s.is_valid(&json!("x")));
        // The built-in meta-schemas are not "retrieved".
        let meta = ok(json!({"$ref": "https://json-schema.org/draft/2020-12/schema"}));
        assert!(meta.is_valid(&json!({"type": "string"})));
        assert!(!meta.is_valid(&json!({"type": 12})));
    }

    #[test]
    fn invalid_schemas() {
        let table = [
            json!({"type": "strng"}),
            json!({"minimum": "zero"}),
            json!({"$ref": "#/$defs/missing"}),
            json!({"$ref": "#nosuchanchor"}),
            json!(42),
        ];
        for schema in table {
            assert!(matches!(compile(&schema), Err(SchemaError::Invalid(_))), "{schema}");
        }
    }

    #[test]
    fn bounds() {
        let mut deep = json!({"type": "string"});
        for _ in 0..(MAX_DEPTH - 1) {
            deep = json!({"not": deep});
        }
        assert!(compile(&deep).is_ok(), "exactly {MAX_DEPTH} levels");
        let deeper = json!({"not": deep});
        assert!(matches!(compile(&deeper), Err(SchemaError::TooComplex(m)) if m.contains("deeper")));
        let mut arrays = json!(1);
        for _ in 0..MAX_DEPTH {
            arrays = json!([arrays]);
        }
        assert!(matches!(
            compile(&json!({"enum": arrays})),
            Err(SchemaError::TooComplex(_))
        ));

        let wide = |n: usize| {
            let props: serde_json::Map<String, Value> =
                (0..n).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
            json!({"type": "object", "properties": props})
        };
        // Root + properties map + members.
        assert!(compile(&wide(MAX_SUBSCHEMAS - 2)).is_ok());
        assert!(
            matches!(compile(&wide(MAX_SUBSCHEMAS - 1)), Err(SchemaError::TooComplex(m)) if m.contains("subschemas"))
        );
    }

    #[test]
    fn dynamic_ref() {
        let s = ok(json!({"$dynamicRef": "#t", "$defs": {"t": {"$dynamicAnchor": "t", "type": "string"}}}));
        assert!(s.is_valid(&json!("x")) && !s.is_valid(&json!(1)));
    }

    #[test]
    fn schema_is_not_modified() {
        let schema = json!({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a", "x-vendor": [1]});
        let copy = schema.clone();
        let s = ok(schema.clone());
        assert!(s.is_valid(&json!("x")));
        assert_eq!(schema, copy);
    }
}
