use std::collections::BTreeMap;

use mcp_protocol::schema::compile;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::*;

#[derive(Deserialize, Serialize, JsonSchema)]
struct Point {
    x: f64,
    y: f64,
}

/// A shape.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Shape {
    /// Where it starts.
    from: Point,
    /// Optional end.
    to: Option<Point>,
    kind: Kind,
    tags: Vec<Tag>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Line,
    Arrow,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Tag {
    name: String,
}

/// A tree: recursive.
#[derive(Deserialize, Serialize, JsonSchema)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[derive(Deserialize, JsonSchema)]
struct Forest {
    trees: Vec<Tree>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Op {
    Add { a: i64, b: i64 },
    Neg { a: i64 },
}

/// A JSON-like value: recursive and not an object.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
enum Json {
    Num(f64),
    List(Vec<Json>),
}

/// Every `$ref` of a schema.
fn refs(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(schema, &mut out);
    out
}

#[test]
fn nested_types_are_inlined() {
    let schema = schema_of::<Shape>();
    assert!(refs(&schema).is_empty(), "{schema:#}");
    assert!(schema.get("$defs").is_none(), "{schema:#}");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["title"], "Shape");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["description"], "A shape.");
    assert_eq!(schema["properties"]["from"]["properties"]["x"]["type"], "number");
    assert_eq!(schema["properties"]["from"]["description"], "Where it starts.");
    // An Option field: nullable, not required.
    assert_eq!(schema["properties"]["to"]["type"], json!(["object", "null"]));
    assert_eq!(schema["required"], json!(["from", "kind", "tags"]));
    // An enum of unit variants: its values inline.
    assert_eq!(schema["properties"]["kind"]["enum"], json!(["line", "arrow"]));
    assert_eq!(
        schema["properties"]["tags"]["items"]["properties"]["name"]["type"],
        "string"
    );
    let compiled = compile(&schema).expect("compiles");
    let ok = json!({"from": {"x": 0, "y": 0}, "to": null, "kind": "line", "tags": [{"name": "a"}]});
    assert!(compiled.validate(&ok).is_ok());
    assert!(
        compiled
            .validate(&json!({"from": {"x": "0", "y": 0}, "kind": "line", "tags": []}))
            .is_err()
    );
}

#[test]
fn verbatim_keeps_what_schemars_generates() {
    let schema = input_schema::<Shape>(SchemaStyle::Verbatim);
    assert_eq!(schema, serde_json::to_value(schemars::schema_for!(Shape)).unwrap());
    assert_eq!(schema["properties"]["from"]["$ref"], "#/$defs/Point");
    assert!(schema["$defs"]["Point"].is_object());
}

#[test]
fn a_recursive_type_keeps_defs_for_its_recursion_only() {
    for schema in [schema_of::<Tree>(), schema_of::<Forest>()] {
        let r = refs(&schema);
        assert!(!r.is_empty() && r.iter().all(|r| r == "#/$defs/Tree"), "{schema:#}");
        assert_eq!(schema["$defs"].as_object().unwrap().len(), 1, "{schema:#}");
        assert_eq!(schema["type"], "object");
        compile(&schema).expect("compiles");
    }
    let forest = schema_of::<Forest>();
    // The first level is inlined.
    assert_eq!(
        forest["properties"]["trees"]["items"]["properties"]["label"]["type"],
        "string"
    );
    let compiled = compile(&forest).unwrap();
    let deep = json!({"trees": [{"label": "a", "children": [{"label": "b", "children": []}]}]});
    assert!(compiled.validate(&deep).is_ok());
    let read: Forest = serde_json::from_value(deep).unwrap();
    assert_eq!(read.trees[0].children[0].label, "b");
    let bad = json!({"trees": [{"label": "a", "children": [{"label": 1, "children": []}]}]});
    assert!(compiled.validate(&bad).is_err());
}

#[test]
fn a_tagged_enum_input_gets_an_object_root() {
    let schema = schema_of::<Op>();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["oneOf"].as_array().map(Vec::len), Some(2));
    assert!(refs(&schema).is_empty());
    let compiled = compile(&schema).unwrap();
    assert!(compiled.validate(&json!({"op": "add", "a": 1, "b": 2})).is_ok());
    assert!(compiled.validate(&json!({"op": "mul", "a": 1})).is_err());
    // Verbatim: the root as generated, without `type`.
    assert!(input_schema::<Op>(SchemaStyle::Verbatim).get("type").is_none());
}

#[test]
fn an_optional_input_is_an_object_and_a_map_is_kept() {
    let schema = schema_of::<Option<Point>>();
    assert_eq!(schema["type"], "object");
    let map = schema_of::<BTreeMap<String, i64>>();
    assert_eq!(map["type"], "object");
    assert_eq!(map["additionalProperties"]["type"], "integer");
    // A type that is never an object keeps its type (its registration is refused).
    assert_eq!(schema_of::<Vec<i64>>()["type"], "array");
    // Any JSON: an object at the root.
    assert_eq!(schema_of::<Value>()["type"], "object");
}

#[test]
fn which_outputs_are_objects() {
    let object = |s: Value| describes_object(&s);
    assert!(object(output_schema::<Point>(SchemaStyle::Inline)));
    assert!(object(output_schema::<Tree>(SchemaStyle::Inline)));
    assert!(object(output_schema::<BTreeMap<String, i64>>(SchemaStyle::Inline)));
    assert!(object(output_schema::<Op>(SchemaStyle::Inline)));
    assert_eq!(output_schema::<Op>(SchemaStyle::Inline)["type"], "object");
    assert!(!object(output_schema::<Vec<Point>>(SchemaStyle::Inline)));
    assert!(!object(output_schema::<Option<Point>>(SchemaStyle::Inline)));
    assert!(!object(output_schema::<Kind>(SchemaStyle::Inline)));
    assert!(!object(output_schema::<String>(SchemaStyle::Inline)));
    assert!(!object(output_schema::<Value>(SchemaStyle::Inline)));
    assert!(!object(output_schema::<Json>(SchemaStyle::Inline)));
    // Verbatim roots describe the same: a `$ref` branch is followed into `$defs`.
    assert!(object(
        json!({"oneOf": [{"$ref": "#/$defs/P"}], "$defs": {"P": {"type": "object"}}})
    ));
    assert!(!object(
        json!({"oneOf": [{"$ref": "#/$defs/P"}], "$defs": {"P": {"type": "string"}}})
    ));
    assert!(!object(json!({"oneOf": []})));
    assert!(object(json!({"allOf": [{"type": "object"}, {"required": ["a"]}]})));
    // A `$ref` cycle ends.
    assert!(!object(
        json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}})
    ));
}

#[test]
fn the_output_schema_uses_the_serialize_contract() {
    #[derive(Serialize, JsonSchema)]
    struct Out {
        #[serde(skip_serializing_if = "Option::is_none")]
        maybe: Option<u8>,
        always: Option<u8>,
    }
    assert_eq!(output_schema::<Out>(SchemaStyle::Inline)["required"], json!(["always"]));
}

#[test]
fn a_non_object_output_is_wrapped() {
    let wrapped = wrap(output_schema::<Vec<Point>>(SchemaStyle::Inline)).unwrap();
    assert_eq!(wrapped["type"], "object");
    assert_eq!(wrapped["required"], json!(["result"]));
    assert_eq!(wrapped["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(wrapped["properties"]["result"]["type"], "array");
    assert!(wrapped["properties"]["result"].get("$schema").is_none());
    assert!(refs(&wrapped).is_empty());
    let compiled = compile(&wrapped).unwrap();
    assert!(compiled.validate(&json!({"result": [{"x": 1, "y": 2}]})).is_ok());
    assert!(compiled.validate(&json!([{"x": 1, "y": 2}])).is_err());
    // `null` is a valid `Option` output once wrapped.
    let optional = compile(&wrap(output_schema::<Option<Point>>(SchemaStyle::Inline)).unwrap()).unwrap();
    assert!(optional.validate(&json!({"result": null})).is_ok());
}

#[test]
fn a_recursive_non_object_output_is_wrapped_with_its_defs_at_the_root() {
    let inline = output_schema::<Json>(SchemaStyle::Inline);
    let wrapped = wrap(inline).unwrap();
    assert!(wrapped["$defs"]["Json"].is_object(), "{wrapped:#}");
    assert!(wrapped["properties"]["result"].get("$defs").is_none());
    let compiled = compile(&wrapped).unwrap();
    let value = Json::List(vec![
        Json::Num(1.0),
        Json::List(vec![Json::Num(2.0), Json::List(vec![])]),
    ]);
    assert!(compiled.validate(&json!({"result": value})).is_ok());
    assert!(compiled.validate(&json!({"result": [1, [2, [3]]]})).is_ok());
    assert!(compiled.validate(&json!({"result": [1, ["x"]]})).is_err());
}

#[test]
fn a_schema_pointing_at_its_root_cannot_be_wrapped() {
    // schemars' own root schema of a recursive type refers to itself as `#`.
    let verbatim = output_schema::<Json>(SchemaStyle::Verbatim);
    assert!(refs(&verbatim).iter().any(|r| r == "#"), "{verbatim:#}");
    assert_eq!(wrap(verbatim), Err(WrapError::RefOutsideDefs("#".into())));
    assert_eq!(
        wrap(json!({"type": "array", "items": {"$ref": "#/definitions/a"}})),
        Err(WrapError::RefOutsideDefs("#/definitions/a".into()))
    );
    // A `$ref` inside data (`const`, `examples`) is not a reference.
    assert!(wrap(json!({"type": "array", "examples": [{"$ref": "#"}]})).is_ok());
}
