//! When a tool's schemas become validators.
//!
//! A schema given as JSON is compiled at registration, so that an invalid one is refused there,
//! before the server serves anything. A schema derived from a Rust type (`schemars`) is valid by
//! construction, and what it says the type's deserialization mostly checks already:
//!
//! - when it says nothing beyond the type's shape ([`mcp_protocol::schema::is_structural`]:
//!   types, properties, required members, items, enumerated values, alternatives, annotations),
//!   every instance the deserialization accepts satisfies it, so no validator is built at all;
//! - otherwise (bounds, lengths, patterns, …) it is compiled when an instance is first checked
//!   against it, so that a server's start and its idle memory pay nothing for the validators of
//!   tools nobody has called yet.
//!
//! Compiling a first schema loads the JSON Schema meta-schemas and the validator's code: some
//! 3 MiB of a server's resident size, which a server whose typed tools are all structural never
//! pays. A derived schema the validator refuses nonetheless (a bug between the deriving and the
//! validating crates) fails each call of its tool with an internal error, logged once, rather
//! than letting instances through unchecked.

use std::sync::OnceLock;

use mcp_protocol::schema::{CompiledSchema, SchemaError, is_structural, validator};
use serde_json::Value;

/// How a tool uses one of its schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaUse {
    /// Instances are checked against it (input arguments; structured output).
    pub validate: bool,
    /// It is derived from a Rust type, hence valid by construction: compiled at its first use
    /// rather than at registration, and not at all when it says nothing beyond the type's shape
    /// ([`mcp_protocol::schema::is_structural`]: the type's deserialization checks all of it).
    pub derived: bool,
}

impl SchemaUse {
    /// A schema given as JSON, checked at registration; instances checked when `validate`.
    pub fn given(validate: bool) -> Self {
        SchemaUse {
            validate,
            derived: false,
        }
    }

    /// A schema derived from a Rust type, compiled at its first use unless structural (the
    /// type's deserialization checks all it says); instances checked when `validate`.
    pub fn derived(validate: bool) -> Self {
        SchemaUse {
            validate,
            derived: true,
        }
    }
}

/// The validator of one schema of a tool, as its [`SchemaUse`] has it.
pub(crate) enum Validator {
    /// Instances are not checked (or this build validates nothing).
    Off,
    /// Compiled at registration.
    Ready(CompiledSchema),
    /// Compiled at the first check; `None` inside once compiling found nothing to check with.
    Deferred(OnceLock<Result<Option<CompiledSchema>, SchemaError>>),
}

/// A derived schema that did not compile: the call cannot be checked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Uncompiled;

impl Validator {
    /// The validator of `schema` used as `how`: compiled now unless derived (a schema given as
    /// JSON is refused here when invalid, whether or not instances are checked).
    pub(crate) fn prepare(schema: &Value, how: SchemaUse) -> Result<Self, SchemaError> {
        if how.derived {
            return Ok(match how.validate && !is_structural(schema) {
                true => Validator::Deferred(OnceLock::new()),
                false => Validator::Off,
            });
        }
        Ok(match validator(schema)? {
            Some(compiled) if how.validate => Validator::Ready(compiled),
            _ => Validator::Off,
        })
    }

    /// The compiled validator of `schema` (the schema this was prepared from), compiled now
    /// on a deferred validator's first use; `Ok(None)` when instances are not checked.
    pub(crate) fn get(&self, schema: &Value, tool: &str) -> Result<Option<&CompiledSchema>, Uncompiled> {
        match self {
            Validator::Off => Ok(None),
            Validator::Ready(compiled) => Ok(Some(compiled)),
            Validator::Deferred(cell) => {
                let compiled = cell.get_or_init(|| {
                    let compiled = validator(schema);
                    if let Err(e) = &compiled {
                        tracing::error!(tool, error = %e, "a schema derived from a type does not compile");
                    }
                    compiled
                });
                compiled.as_ref().map(Option::as_ref).map_err(|_| Uncompiled)
            }
        }
    }
}

#[cfg(all(test, feature = "schema-validation"))]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_given_schema_is_compiled_and_refused_at_registration() {
        let bad = json!({"type": "object", "properties": {"a": {"type": 5}}});
        assert!(Validator::prepare(&bad, SchemaUse::given(true)).is_err());
        assert!(Validator::prepare(&bad, SchemaUse::given(false)).is_err());
        let good = json!({"type": "object"});
        assert!(matches!(
            Validator::prepare(&good, SchemaUse::given(true)),
            Ok(Validator::Ready(_))
        ));
        assert!(matches!(
            Validator::prepare(&good, SchemaUse::given(false)),
            Ok(Validator::Off)
        ));
    }

    #[test]
    fn a_structural_derived_schema_gets_no_validator() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
        assert!(matches!(
            Validator::prepare(&schema, SchemaUse::derived(true)),
            Ok(Validator::Off)
        ));
    }

    #[test]
    fn a_derived_schema_is_compiled_at_its_first_use() {
        let schema = json!({"type": "object", "required": ["a"], "minProperties": 1});
        let v = Validator::prepare(&schema, SchemaUse::derived(true)).unwrap();
        let Validator::Deferred(cell) = &v else {
            panic!("not deferred");
        };
        assert!(cell.get().is_none(), "compiled before its first use");
        let compiled = v.get(&schema, "t").unwrap().expect("a validator");
        assert!(!compiled.is_valid(&json!({})));
        assert!(compiled.is_valid(&json!({"a": 1})));
        assert!(matches!(
            Validator::prepare(&schema, SchemaUse::derived(false)),
            Ok(Validator::Off)
        ));
    }

    #[test]
    fn a_derived_schema_that_does_not_compile_fails_every_use() {
        let bad = json!({"type": "object", "properties": {"a": {"type": "string", "minLength": "x"}}});
        let v = Validator::prepare(&bad, SchemaUse::derived(true)).unwrap();
        assert!(v.get(&bad, "t").is_err());
        assert!(v.get(&bad, "t").is_err());
    }
}
