//! Extensions (SEP-2133) and the methods outside the core catalogue: the rules an extension's
//! identifier, its settings and a custom method's name follow, how a server declares the
//! extensions it offers, and the error a request gets when it needs an extension its client
//! did not declare.
//!
//! - **Identifiers** are `{prefix}/{name}`, following the `_meta` key grammar with a mandatory
//!   prefix: the prefix is dot-separated labels (each starts with a letter, ends with a letter
//!   or digit, hyphens inside), the name is non-empty, alphanumeric at both ends, with `-`, `_`
//!   and `.` inside. A prefix whose second label is `modelcontextprotocol` or `mcp` is reserved
//!   for the specification's own extensions: those a server declares by hand ([`OFFICIAL`]), and
//!   those the runtime declares from what the server registers ([`BUILTIN`]: tasks, MCP Apps).
//! - **Declaration**: the server's `capabilities.extensions` maps each identifier to its
//!   settings object (`{}` for none), in `server/discover` (2026-07-28) and, for an extension
//!   defined for them, in the legacy `initialize` result (SEP-2133's examples, MCP Apps).
//! - **Custom methods**: any name but the core catalogue's (of every revision), JSON-RPC's
//!   reserved `rpc.` prefix, and the `notifications/` convention for notifications.
//! - **Undeclared**: a request of an extension's method from a client that did not declare the
//!   extension is -32021 with `requiredCapabilities: {"extensions": {id: {}}}` (HTTP 400,
//!   `RpcError::undeclared_extension`), the rule the specification gives for every capability
//!   the client did not declare.

use serde_json::{Map, Value};

use crate::method::Method;
use crate::revision::{Era, Revision};
use crate::task_mode::TASKS_EXTENSION;

/// The extensions of the specification itself a server declares by hand: the only identifiers
/// under a reserved prefix the extension registry accepts ([`BUILTIN`] ones are declared by the
/// runtime, never by hand).
pub const OFFICIAL: &[&str] = &[
    "io.modelcontextprotocol/skills",
    crate::events::EXTENSION,
    "io.modelcontextprotocol/oauth-client-credentials",
    "io.modelcontextprotocol/enterprise-managed-authorization",
];

/// The identifier of MCP Apps (`io.modelcontextprotocol/ui`): here, with the table of built-in
/// extensions that names it, rather than in [`crate::apps`], which builds on this module
/// (`apps::EXTENSION_ID` is this constant).
pub const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The extensions of the specification the runtime declares itself, from what the server
/// registers: `io.modelcontextprotocol/tasks` from the tools that support tasks (2026-07-28),
/// `io.modelcontextprotocol/ui` (MCP Apps, both eras) from the `ui://` resources and the tools
/// linked to them ([`crate::apps`]), `io.modelcontextprotocol/secure-params` (both eras) from
/// the tools with a secure schema ([`crate::secure_params`]).
pub const BUILTIN: &[&str] = &[TASKS_EXTENSION, APPS_EXTENSION, crate::secure_params::EXTENSION];

/// Why an extension identifier, its settings or a custom method name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// The identifier does not follow `{prefix}/{name}`.
    #[error(
        "extension identifier {0:?} must be a prefix of dot-separated labels, a slash and a name (e.g. com.example/search)"
    )]
    InvalidId(String),
    /// The identifier's prefix is reserved for the specification's extensions.
    #[error("extension identifier {0:?} uses a prefix reserved for the MCP specification")]
    Reserved(String),
    /// The extension is declared by the runtime itself ([`BUILTIN`]).
    #[error(
        "extension {0:?} is declared by the runtime, from what the server registers (tools that support tasks; MCP Apps ui:// resources and tools)"
    )]
    Builtin(String),
    /// The settings are not a JSON object.
    #[error("the settings of extension {0:?} must be a JSON object")]
    SettingsNotObject(String),
    /// The settings hold a value the 2026-07-28 schema does not allow in them (`null`, a number
    /// that is not an integer), and the extension is declared in that era.
    #[error(
        "the settings of extension {0:?} hold a null or a non-integer number, which 2026-07-28 clients cannot be sent (declare it for the legacy era only)"
    )]
    SettingsNotModern(String),
    /// The method name is empty, reserved, or a core method.
    #[error("method {0:?} cannot be registered: {1}")]
    InvalidMethod(String, &'static str),
    /// The extension is registered twice.
    #[error("extension {0:?} is registered twice")]
    DuplicateExtension(String),
    /// The method is registered twice.
    #[error("method {0:?} is registered twice")]
    DuplicateMethod(String),
}

/// Checks an extension identifier (see the [module docs](self)).
pub fn check_id(id: &str) -> Result<(), ExtensionError> {
    let invalid = || ExtensionError::InvalidId(id.to_owned());
    let (prefix, name) = id.split_once('/').ok_or_else(invalid)?;
    let labels: Vec<&str> = prefix.split('.').collect();
    if !labels.iter().all(|l| valid_label(l)) || !valid_name(name) {
        return Err(invalid());
    }
    if BUILTIN.contains(&id) {
        return Err(ExtensionError::Builtin(id.to_owned()));
    }
    let reserved = labels
        .get(1)
        .is_some_and(|l| matches!(*l, "modelcontextprotocol" | "mcp"));
    if reserved && !OFFICIAL.contains(&id) {
        return Err(ExtensionError::Reserved(id.to_owned()));
    }
    Ok(())
}

/// A prefix label: starts with a letter, ends with a letter or digit, hyphens inside.
fn valid_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

/// A name: non-empty, alphanumeric at both ends, `-`, `_` and `.` inside.
fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Checks a custom request method's name: not empty, no whitespace or control characters, not
/// JSON-RPC's `rpc.` prefix, not the `notifications/` convention, not a core method of any
/// revision.
pub fn check_method(name: &str) -> Result<(), ExtensionError> {
    let refuse = |why| Err(ExtensionError::InvalidMethod(name.to_owned(), why));
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("it must be a non-empty name without whitespace");
    }
    if name.starts_with("rpc.") {
        return refuse("the rpc. prefix is reserved by JSON-RPC");
    }
    if name.starts_with("notifications/") {
        return refuse("notifications/ names notifications, not requests");
    }
    if !matches!(Method::parse(name), Method::Unknown(_)) {
        return refuse("it is a method of the core protocol");
    }
    Ok(())
}

/// Checks that an extension's settings can be declared to a 2026-07-28 client: its schema's
/// `JSONObject` holds strings, integers, booleans, arrays and objects of them, never `null` nor
/// a fractional number (the legacy revisions' capabilities are free-form).
pub fn check_modern_settings(id: &str, settings: &Map<String, Value>) -> Result<(), ExtensionError> {
    fn allowed(v: &Value) -> bool {
        match v {
            Value::Null => false,
            Value::Number(n) => n.is_i64() || n.is_u64(),
            Value::Array(items) => items.iter().all(allowed),
            Value::Object(m) => m.values().all(allowed),
            Value::Bool(_) | Value::String(_) => true,
        }
    }
    match settings.values().all(allowed) {
        true => Ok(()),
        false => Err(ExtensionError::SettingsNotModern(id.to_owned())),
    }
}

/// Checks an extension's settings: a JSON object (`{}` when it has none).
pub fn check_settings(id: &str, settings: Value) -> Result<Map<String, Value>, ExtensionError> {
    match settings {
        Value::Object(m) => Ok(m),
        _ => Err(ExtensionError::SettingsNotObject(id.to_owned())),
    }
}

/// An extension a server offers, as its capabilities declare it.
#[derive(Debug, Clone, PartialEq)]
pub struct Declared {
    /// The identifier.
    pub id: String,
    /// The settings object.
    pub settings: Map<String, Value>,
    /// Whether the legacy `initialize` result declares it.
    pub legacy: bool,
    /// Whether `server/discover` (2026-07-28) declares it.
    pub modern: bool,
}

/// Adds the declared extensions a revision carries to `capabilities.extensions` (created when
/// needed, keeping what is there).
pub fn declare(capabilities: &mut Map<String, Value>, declared: &[Declared], revision: Option<Revision>) {
    let era = revision.map_or(Era::Legacy, Revision::era);
    let shown: Vec<&Declared> = declared
        .iter()
        .filter(|d| match era {
            Era::Modern => d.modern,
            Era::Legacy => d.legacy,
        })
        .collect();
    if shown.is_empty() {
        return;
    }
    let entry = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(map) = entry {
        for d in shown {
            map.insert(d.id.clone(), Value::Object(d.settings.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::RpcError;
    use serde_json::json;

    #[test]
    fn modern_settings_hold_no_null_and_no_fraction() {
        let ok = json!({"nested": {"enabled": true, "limit": 3}, "values": ["b", 4, [1, {"x": "y"}]]});
        assert_eq!(check_modern_settings("a/b", ok.as_object().unwrap()), Ok(()));
        for bad in [
            json!({"values": [null, "b", 4]}),
            json!({"ratio": 0.5}),
            json!({"x": {"y": null}}),
        ] {
            assert_eq!(
                check_modern_settings("a/b", bad.as_object().unwrap()),
                Err(ExtensionError::SettingsNotModern("a/b".into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn identifiers() {
        for ok in [
            "com.example/search",
            "io.github.acme/notes-v2",
            "a/b",
            "com.example.mcp/x",
            "io.modelcontextprotocol/skills",
        ] {
            assert_eq!(check_id(ok), Ok(()), "{ok}");
        }
        for bad in [
            "search",
            "/x",
            "com.example/",
            "1com/x",
            "com-/x",
            "com.example/-x",
            "com..x/y",
            "com.ex ample/x",
        ] {
            assert!(matches!(check_id(bad), Err(ExtensionError::InvalidId(_))), "{bad}");
        }
        for reserved in [
            "io.modelcontextprotocol/mine",
            "dev.mcp/x",
            "org.modelcontextprotocol.api/x",
        ] {
            assert!(
                matches!(check_id(reserved), Err(ExtensionError::Reserved(_))),
                "{reserved}"
            );
        }
        for builtin in ["io.modelcontextprotocol/tasks", "io.modelcontextprotocol/ui"] {
            assert!(
                matches!(check_id(builtin), Err(ExtensionError::Builtin(_))),
                "{builtin}"
            );
        }
    }

    #[test]
    fn method_names() {
        assert_eq!(check_method("com.example/search"), Ok(()));
        assert_eq!(check_method("acme/notes.list"), Ok(()));
        for bad in [
            "",
            "tools/call",
            "initialize",
            "tasks/update",
            "rpc.discover",
            "notifications/x",
            "a b",
        ] {
            assert!(check_method(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn declaration_per_era() {
        let declared = [
            Declared {
                id: "com.example/a".into(),
                settings: Map::new(),
                legacy: true,
                modern: true,
            },
            Declared {
                id: "com.example/b".into(),
                settings: json!({"level": 2}).as_object().cloned().unwrap_or_default(),
                legacy: false,
                modern: true,
            },
            Declared {
                id: "com.example/c".into(),
                settings: json!({"values": [null]}).as_object().cloned().unwrap_or_default(),
                legacy: true,
                modern: false,
            },
        ];
        let mut modern = Map::new();
        declare(&mut modern, &declared, Some(Revision::V2026_07_28));
        assert_eq!(
            Value::Object(modern),
            json!({"extensions": {"com.example/a": {}, "com.example/b": {"level": 2}}})
        );
        let mut legacy = json!({"extensions": {"x/y": {}}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        declare(&mut legacy, &declared, Some(Revision::V2025_11_25));
        assert_eq!(
            Value::Object(legacy),
            json!({"extensions": {"x/y": {}, "com.example/a": {}, "com.example/c": {"values": [null]}}})
        );
        let mut none = Map::new();
        declare(&mut none, &declared[1..2], None);
        assert!(none.is_empty());
    }

    #[test]
    fn undeclared_names_the_extension() {
        let e = RpcError::undeclared_extension("com.example/a");
        assert_eq!(e.code, -32021);
        assert_eq!(
            e.message,
            "Server requires the com.example/a extension for this request"
        );
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"extensions": {"com.example/a": {}}}}))
        );
    }
}
