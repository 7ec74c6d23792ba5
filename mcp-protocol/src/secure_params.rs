//! Secure Parameters (SEP-3221, the extension `io.modelcontextprotocol/secure-params`): values
//! the host application supplies to a tool (a tenant, a database instance, a session token) in
//! `secureArguments`, described by the tool's `secureInputSchema`, never shown to the model nor
//! taken from the arguments it writes (the "confused deputy" a prompt injection would make of a
//! server with broad credentials).
//!
//! - **Declaration**: `{}` in both eras ([`declaration`]), by a server with a tool that has a
//!   secure schema; a client declares it per request (2026-07-28) or at `initialize`.
//! - **A tool's schemas** ([`check_schemas`]): `secureInputSchema` is an object schema
//!   (`"type": "object"` at its root) whose properties share no name with `inputSchema`'s.
//! - **Listing** ([`Listed`]): a client that declared the extension gets every tool, each with
//!   its `secureInputSchema`; another gets no `secureInputSchema`, and no tool that requires a
//!   secure parameter (it could not call it).
//! - **Calling** (section 5 and 7 of the SEP), before anything runs and before a task is created:
//!   a call of a tool that requires secure parameters from a client that did not declare the
//!   extension is -32021 naming it ([`undeclared`]); a secure parameter's name among
//!   `arguments` is -32602 ([`smuggled`]), never read from there; `secureArguments` that are not
//!   an object, that a tool without a secure schema is sent, that miss a required parameter, or
//!   that fail the schema are -32602 ([`admit`], [`invalid`]). These are protocol errors rather
//!   than tool errors (`isError`), since the model never sees the secure schema, and their
//!   messages name parameters and the schema's keywords, never a value.
//! - **Elsewhere**: a retry after `input_required` carries `secureArguments` again (the sealed
//!   request state binds their digest, never their values); a task consumes them when it is
//!   created and no task result, log or span carries them.

use serde_json::{Map, Value};

use crate::error::RpcError;
use crate::extension::Declared;

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/secure-params";

/// The tool definition's field with the secure parameters' schema.
pub const SCHEMA_FIELD: &str = "secureInputSchema";

/// The `tools/call` params' field with the secure parameters.
pub const ARGUMENTS_FIELD: &str = "secureArguments";

/// The server's declaration of the extension, in both eras: no settings (`{}`).
pub fn declaration() -> Declared {
    Declared {
        id: EXTENSION.to_owned(),
        settings: Map::new(),
        legacy: true,
        modern: true,
    }
}

/// Why a tool's `secureInputSchema` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecureSchemaError {
    /// The schema is not an object schema.
    #[error("secureInputSchema must be a JSON object with \"type\": \"object\"")]
    NotObject,
    /// Properties named in both schemas.
    #[error("secureInputSchema and inputSchema both name {0:?}: a parameter is secure or not")]
    Overlap(Vec<String>),
}

/// The properties a schema names (none when it has no `properties` object).
fn properties(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.keys().map(String::as_str))
}

/// The names a schema's `required` lists.
fn required_names(schema: &Value) -> impl Iterator<Item = &str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Checks a tool's secure schema against its input schema (SEP-3221 section 3): an object
/// schema whose properties the input schema does not name.
pub fn check_schemas(input: &Value, secure: &Value) -> Result<(), SecureSchemaError> {
    if secure.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SecureSchemaError::NotObject);
    }
    let inputs: Vec<&str> = properties(input).collect();
    let both: Vec<String> = properties(secure)
        .filter(|name| inputs.contains(name))
        .map(str::to_owned)
        .collect();
    match both.is_empty() {
        true => Ok(()),
        false => Err(SecureSchemaError::Overlap(both)),
    }
}

/// Whether a secure schema requires a parameter: a tool with one is listed only to clients that
/// declared the extension (SEP-3221, "graceful fallback").
pub fn requires_any(secure: &Value) -> bool {
    required_names(secure).next().is_some()
}

/// How a tool is listed to one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// Listed with its `secureInputSchema` (the client declared the extension).
    WithSecureSchema,
    /// Listed without it (the client did not declare the extension; nothing secure is required).
    Plain,
    /// Left out (the client did not declare the extension, and the tool requires a secure
    /// parameter).
    Hidden,
}

impl Listed {
    /// How a tool with `secure` (its secure schema, if any) is listed to a client that
    /// `declared` the extension or not.
    pub fn of(secure: Option<&Value>, declared: bool) -> Listed {
        match secure {
            Some(_) if declared => Listed::WithSecureSchema,
            Some(s) if requires_any(s) => Listed::Hidden,
            _ => Listed::Plain,
        }
    }
}

/// -32021 for a call of a tool that requires secure parameters from a client that did not
/// declare the extension (`requiredCapabilities: {"extensions": {EXTENSION: {}}}`, HTTP 400).
pub fn undeclared() -> RpcError {
    let mut e = RpcError::undeclared_extension(EXTENSION);
    e.message = format!("Missing required client capability: {EXTENSION}");
    e
}

/// -32602 when `arguments` (the model's) names a parameter of the secure schema: it is never
/// taken from there (SEP-3221 section 5).
pub fn smuggled(arguments: &Map<String, Value>, secure: &Value) -> Result<(), RpcError> {
    match properties(secure).find(|name| arguments.contains_key(*name)) {
        Some(name) => Err(RpcError::invalid_params(format!(
            "Invalid params: secure parameter {name:?} must be sent in {ARGUMENTS_FIELD}, not in arguments"
        ))),
        None => Ok(()),
    }
}

/// -32602 for `secureArguments` that fail the tool's secure schema, with what was found
/// (parameter paths and the schema's keywords, never a value).
pub fn invalid(found: impl std::fmt::Display) -> RpcError {
    RpcError::invalid_params(format!("Invalid {ARGUMENTS_FIELD}: {found}"))
}

/// Reads a call's `secureArguments` for a tool with `secure` (its secure schema, if any):
/// absent or `null` is `{}`; not an object, or any secure argument for a tool without a secure
/// schema, or a required parameter missing is -32602. The schema itself is checked by the
/// caller's validator (with [`invalid`] for its findings).
pub fn admit(given: Option<Value>, secure: Option<&Value>, tool: &str) -> Result<Map<String, Value>, RpcError> {
    let given = match given {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: `{ARGUMENTS_FIELD}` must be an object"
            )));
        }
    };
    let Some(secure) = secure else {
        return match given.is_empty() {
            true => Ok(given),
            false => Err(RpcError::invalid_params(format!(
                "Invalid params: tool {tool:?} takes no {ARGUMENTS_FIELD}"
            ))),
        };
    };
    let missing: Vec<&str> = required_names(secure)
        .filter(|name| !given.contains_key(*name))
        .collect();
    match missing.is_empty() {
        true => Ok(given),
        false => Err(invalid(format!("missing required {missing:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secure() -> Value {
        json!({
            "type": "object",
            "properties": {"instance": {"type": "string"}, "token": {"type": "string"}},
            "required": ["instance"]
        })
    }

    #[test]
    fn schemas_are_objects_that_share_no_name() {
        let input = json!({"type": "object", "properties": {"query": {"type": "string"}}});
        assert_eq!(check_schemas(&input, &secure()), Ok(()));
        assert_eq!(
            check_schemas(&input, &json!({"type": "string"})),
            Err(SecureSchemaError::NotObject)
        );
        let overlapping = json!({"type": "object", "properties": {"instance": {}, "query": {}}});
        assert_eq!(
            check_schemas(&overlapping, &secure()),
            Err(SecureSchemaError::Overlap(vec!["instance".into()]))
        );
    }

    #[test]
    fn a_tool_that_requires_a_secure_parameter_is_listed_to_declaring_clients_only() {
        let optional = json!({"type": "object", "properties": {"region": {"type": "string"}}});
        assert_eq!(Listed::of(Some(&secure()), true), Listed::WithSecureSchema);
        assert_eq!(Listed::of(Some(&secure()), false), Listed::Hidden);
        assert_eq!(Listed::of(Some(&optional), false), Listed::Plain);
        assert_eq!(Listed::of(None, false), Listed::Plain);
        assert_eq!(Listed::of(None, true), Listed::Plain);
    }

    #[test]
    fn the_missing_capability_names_the_extension() {
        let e = undeclared();
        assert_eq!(e.code, -32021);
        assert_eq!(
            e.message,
            "Missing required client capability: io.modelcontextprotocol/secure-params"
        );
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}}))
        );
    }

    #[test]
    fn a_secure_name_among_the_arguments_is_refused_without_its_value() {
        let args = json!({"query": "SELECT 1", "instance": "db-payroll"});
        let e = smuggled(args.as_object().unwrap(), &secure()).unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("\"instance\""), "{}", e.message);
        assert!(!e.message.contains("db-payroll"), "{}", e.message);
        assert!(smuggled(json!({"query": "x"}).as_object().unwrap(), &secure()).is_ok());
    }

    #[test]
    fn secure_arguments_are_an_object_with_every_required_parameter() {
        let s = secure();
        assert_eq!(admit(None, Some(&s), "t").unwrap_err().code, -32602);
        let e = admit(Some(json!({"token": "sekrit"})), Some(&s), "t").unwrap_err();
        assert!(
            e.message.contains("\"instance\"") && !e.message.contains("sekrit"),
            "{}",
            e.message
        );
        assert_eq!(admit(Some(json!([1])), Some(&s), "t").unwrap_err().code, -32602);
        let ok = admit(Some(json!({"instance": "a"})), Some(&s), "t").unwrap();
        assert_eq!(ok["instance"], "a");
        // A tool without a secure schema takes none, but `{}` and `null` are nothing.
        assert!(admit(Some(json!({})), None, "t").unwrap().is_empty());
        assert!(admit(Some(Value::Null), None, "t").unwrap().is_empty());
        assert_eq!(admit(Some(json!({"a": 1})), None, "t").unwrap_err().code, -32602);
    }
}
