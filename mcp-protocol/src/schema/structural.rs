//! Schemas that say nothing beyond a type's shape.
//!
//! A schema derived from a Rust type (`schemars`) describes what the type's deserialization
//! accepts. When it uses only the keywords that describe shape (types, properties, required
//! members, items, enumerated values, alternatives) and annotations, every instance the
//! deserialization accepts satisfies it: validating against it first would refuse nothing
//! more. A keyword that constrains beyond shape (bounds, lengths, patterns, `oneOf`'s
//! exclusivity, references, …) is what a validator is for; a schema holding one anywhere is
//! not structural.

use serde_json::Value;

/// Keywords whose value is one subschema.
const SUBSCHEMA: [&str; 2] = ["items", "additionalProperties"];
/// Keywords whose value is an object of subschemas.
const SUBSCHEMA_MAP: [&str; 1] = ["properties"];
/// Keywords whose value is an array of subschemas.
const SUBSCHEMA_LIST: [&str; 1] = ["anyOf"];
/// Keywords that constrain nothing beyond what the keywords above describe, or only annotate
/// (`format` is an annotation in 2020-12 unless format assertion is asked for, and it is not).
const PLAIN: [&str; 11] = [
    "type",
    "required",
    "enum",
    "description",
    "title",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
];
/// Keywords allowed at the root only.
const ROOT: [&str; 2] = ["$schema", "$id"];

/// Whether `schema` uses only keywords of shape (`type`, `properties`, `required`, `items`,
/// `additionalProperties`, `enum`, `anyOf`) and annotations (`description`, `title`,
/// `default`, `examples`, `format`, …), a root `$schema` or `$id` aside. A schema derived from
/// a Rust type that is structural says nothing its type's deserialization does not enforce:
/// every instance the deserialization accepts satisfies it. Any other keyword anywhere (bounds,
/// lengths, patterns, `oneOf`, `$ref`, `const`, …) makes it not structural.
pub fn is_structural(schema: &Value) -> bool {
    structural(schema, true)
}

fn structural(schema: &Value, root: bool) -> bool {
    let map = match schema {
        Value::Bool(_) => return true,
        Value::Object(map) => map,
        _ => return false,
    };
    map.iter().all(|(key, value)| {
        let key = key.as_str();
        if PLAIN.contains(&key) || (root && ROOT.contains(&key)) {
            true
        } else if SUBSCHEMA.contains(&key) {
            structural(value, false)
        } else if SUBSCHEMA_MAP.contains(&key) {
            value
                .as_object()
                .is_some_and(|m| m.values().all(|s| structural(s, false)))
        } else if SUBSCHEMA_LIST.contains(&key) {
            value.as_array().is_some_and(|l| l.iter().all(|s| structural(s, false)))
        } else {
            false
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shape_and_annotations_are_structural() {
        assert!(is_structural(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "description": "An echo",
            "properties": {
                "text": {"type": "string", "description": "The text"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["a", "b"]},
                "when": {"type": ["string", "null"], "format": "date-time"},
                "point": {"anyOf": [{"type": "object", "properties": {"x": {"type": "number"}}}, {"type": "null"}]},
                "extra": {"type": "object", "additionalProperties": {"type": "integer"}}
            },
            "required": ["text"],
            "additionalProperties": false
        })));
        assert!(is_structural(&json!(true)));
    }

    #[test]
    fn a_constraint_anywhere_is_not() {
        for constrained in [
            json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}),
            json!({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3}}}),
            json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}}),
            json!({"type": "object", "properties": {"l": {"type": "array", "items": {"minItems": 1}}}}),
            json!({"type": "object", "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}),
            json!({"type": "object", "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {}}}),
            json!({"type": "object", "properties": {"c": {"const": 1}}}),
            json!({"type": "object", "properties": {"x": 5}}),
            json!({"type": "object", "properties": {"x": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}}),
        ] {
            assert!(!is_structural(&constrained), "{constrained}");
        }
    }
}
