//! `x-mcp-header`: tool arguments mirrored into `Mcp-Param-{Name}` headers.
//!
//! A tool's `inputSchema` may annotate a property with
//! `"x-mcp-header": "{Name}"`; a modern HTTP client then sends the argument's
//! value in the header `Mcp-Param-{Name}` as well as in the body.
//!
//! - At registration ([`parse_param_headers`], behaviour invariant 26) every
//!   annotation must be a non-empty RFC 9110 token, case-insensitively unique,
//!   on a property of type `string`, `integer` or `boolean`, reachable from the
//!   root of `inputSchema` through `properties` keys only (never under
//!   `items`, `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `$defs`,
//!   `additionalProperties`, …). The whole schema is scanned for the keyword,
//!   so a misplaced annotation is an error rather than silently ignored.
//! - On each `tools/call` ([`check_param_headers`]) a present, non-null
//!   argument requires its header, equal after decoding; a header for an absent
//!   value is tolerated; an undecodable recognised header is -32020.

use serde_json::{Map, Value};

use super::{
    PARAM_HEADER_PREFIX, X_MCP_HEADER, as_number, decode_header_value, invalid, mismatch, missing, parse_number,
};
use crate::error::RpcError;

/// How deep [`parse_param_headers`] walks a schema.
const MAX_WALK_DEPTH: usize = 128;

/// The JSON type of an `x-mcp-header` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `"type": "string"`.
    String,
    /// `"type": "integer"`.
    Integer,
    /// `"type": "boolean"`.
    Boolean,
}

/// One validated `x-mcp-header` annotation of a tool's `inputSchema`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The name as annotated, e.g. `Region` (the header is `Mcp-Param-Region`).
    pub name: String,
    /// The property path from the root of `inputSchema`, e.g. `["location", "region"]`.
    pub path: Vec<String>,
    /// The property's declared type.
    pub kind: ParamKind,
}

impl ParamHeader {
    /// The lowercase header name, e.g. `mcp-param-region`.
    pub fn header_name(&self) -> String {
        format!("{PARAM_HEADER_PREFIX}{}", self.name.to_ascii_lowercase())
    }
}

/// Why an `x-mcp-header` annotation is invalid (the tool's registration fails).
///
/// `location` is a JSON-pointer fragment into `inputSchema`, e.g. `#/properties/region`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum XMcpHeaderError {
    /// The annotation is not on a property reached from the root through
    /// `properties` keys only (it sits under `items`, `oneOf`, `$defs`, …).
    #[error(
        "x-mcp-header at {location} is not on a property reachable from the root of inputSchema through `properties` only"
    )]
    NotStaticallyReachable {
        /// Where the annotation is.
        location: String,
    },
    /// The annotation's value is not a string.
    #[error("x-mcp-header at {location} must be a string")]
    NotAString {
        /// Where the annotation is.
        location: String,
    },
    /// The annotation's value is the empty string.
    #[error("x-mcp-header at {location} must not be empty")]
    Empty {
        /// Where the annotation is.
        location: String,
    },
    /// The name is not an RFC 9110 token (letters, digits and ``!#$%&'*+-.^_`|~``).
    #[error("x-mcp-header {name:?} at {location} is not an RFC 9110 token")]
    InvalidName {
        /// Where the annotation is.
        location: String,
        /// The annotated name.
        name: String,
    },
    /// The property's `type` is not exactly `"string"`, `"integer"` or `"boolean"`.
    #[error(
        "x-mcp-header {name:?} at {location} is on a property of type {found}; only \"string\", \"integer\" and \"boolean\" are allowed"
    )]
    UnsupportedType {
        /// Where the annotation is.
        location: String,
        /// The annotated name.
        name: String,
        /// The `type` found, as JSON, or `(missing)`.
        found: String,
    },
    /// Two annotations name the same header (compared case-insensitively).
    #[error("x-mcp-header {name:?} at {location} duplicates {first:?} (names are case-insensitive)")]
    Duplicate {
        /// Where the second annotation is.
        location: String,
        /// The second name.
        name: String,
        /// The name it collides with.
        first: String,
    },
    /// The schema nests too deeply to be checked.
    #[error("inputSchema nests deeper than {MAX_WALK_DEPTH} levels")]
    TooDeep,
}

/// Keywords whose values are instances, not schemas: never scanned.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];
/// Keywords whose values map names to schemas (the names are not keywords).
const NAME_MAPS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// An `x-mcp-header` found while scanning: its location, its property path
/// when statically reachable, and the schema object that carries it.
struct Found<'a> {
    location: String,
    path: Option<Vec<String>>,
    schema: &'a Map<String, Value>,
}

/// Finds and validates the `x-mcp-header` annotations of an `inputSchema`,
/// in document order.
///
/// The whole schema is scanned for the keyword; every occurrence must sit on
/// a property reachable from the root through `properties` keys only.
pub fn parse_param_headers(input_schema: &Value) -> Result<Vec<ParamHeader>, XMcpHeaderError> {
    let mut found = Vec::new();
    scan(input_schema, "#".to_owned(), Some(Vec::new()), 0, &mut found)?;
    let mut out: Vec<ParamHeader> = Vec::with_capacity(found.len());
    for Found { location, path, schema } in found {
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return Err(XMcpHeaderError::NotStaticallyReachable { location });
        };
        let Some(Value::String(name)) = schema.get(X_MCP_HEADER) else {
            return Err(XMcpHeaderError::NotAString { location });
        };
        if name.is_empty() {
            return Err(XMcpHeaderError::Empty { location });
        }
        if !name.bytes().all(is_tchar) {
            return Err(XMcpHeaderError::InvalidName {
                location,
                name: name.clone(),
            });
        }
        let kind = match schema.get("type") {
            Some(Value::String(t)) if t == "string" => ParamKind::String,
            Some(Value::String(t)) if t == "integer" => ParamKind::Integer,
            Some(Value::String(t)) if t == "boolean" => ParamKind::Boolean,
            other => {
                let found = other.map_or_else(|| "(missing)".to_owned(), Value::to_string);
                return Err(XMcpHeaderError::UnsupportedType {
                    location,
                    name: name.clone(),
                    found,
                });
            }
        };
        if let Some(first) = out.iter().find(|p| p.name.eq_ignore_ascii_case(name)) {
            let first = first.name.clone();
            return Err(XMcpHeaderError::Duplicate {
                location,
                name: name.clone(),
                first,
            });
        }
        out.push(ParamHeader {
            name: name.clone(),
            path,
            kind,
        });
    }
    Ok(out)
}

/// Walks `v` (a schema, or any value under an unknown keyword), recording
/// every object that carries `x-mcp-header`. `path` is the property path
/// while the walk is still on a `properties` chain from the root.
fn scan<'a>(
    v: &'a Value,
    location: String,
    path: Option<Vec<String>>,
    depth: usize,
    found: &mut Vec<Found<'a>>,
) -> Result<(), XMcpHeaderError> {
    if depth > MAX_WALK_DEPTH {
        return Err(XMcpHeaderError::TooDeep);
    }
    match v {
        Value::Object(map) => {
            for (k, sub) in map {
                if k == X_MCP_HEADER || DATA_KEYWORDS.contains(&k.as_str()) {
                    continue;
                }
                let here = format!("{location}/{}", escape(k));
                match sub {
                    Value::Object(members) if NAME_MAPS.contains(&k.as_str()) => {
                        for (name, member) in members {
                            let member_path = match (&path, k.as_str()) {
                                (Some(p), "properties") => Some(p.iter().cloned().chain([name.clone()]).collect()),
                                _ => None,
                            };
                            let at = format!("{here}/{}", escape(name));
                            scan(member, at, member_path, depth + 1, found)?;
                        }
                    }
                    _ => scan(sub, here, None, depth + 1, found)?,
                }
            }
            if map.contains_key(X_MCP_HEADER) {
                found.push(Found {
                    location,
                    path,
                    schema: map,
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                scan(item, format!("{location}/{i}"), None, depth + 1, found)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// RFC 9110 `tchar`.
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// Checks the `Mcp-Param-*` headers of a `tools/call` against its arguments.
///
/// For each annotated parameter: a header that is present must decode
/// (-32020 otherwise, whatever the body holds); when the body value is
/// present and non-null the header is required and must equal it (strings
/// exactly, booleans as `true`/`false`, numbers numerically, so `"42"`
/// equals `42` and `42.0`). A header for an absent or null value is
/// tolerated. An object or array in the body has no header form: it is left
/// to input validation.
pub fn check_param_headers<'h>(
    params: &[ParamHeader],
    arguments: Option<&Map<String, Value>>,
    get: &dyn Fn(&str) -> Option<&'h [u8]>,
) -> Result<(), RpcError> {
    for p in params {
        let display = format!("Mcp-Param-{}", p.name);
        let header = match get(&p.header_name()) {
            Some(raw) => Some(decode_header_value(raw).map_err(|e| invalid(&display, &e))?),
            None => None,
        };
        let body = match arguments.and_then(|args| value_at(args, &p.path)) {
            None | Some(Value::Null | Value::Array(_) | Value::Object(_)) => continue,
            Some(body) => body,
        };
        let header = header.ok_or_else(|| missing(&display))?;
        let agrees = match body {
            Value::String(s) => header == *s,
            Value::Bool(b) => header == if *b { "true" } else { "false" },
            Value::Number(n) => parse_number(&header).is_some_and(|h| h.equals(as_number(n))),
            Value::Null | Value::Array(_) | Value::Object(_) => true,
        };
        if !agrees {
            let body_text = match body {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            return Err(mismatch(&display, &header, &body_text));
        }
    }
    Ok(())
}

/// The lowercase `mcp-param-…` header names of the annotated parameters
/// (for the CORS allow-list, which has no prefix form).
pub fn param_header_names(params: &[ParamHeader]) -> impl Iterator<Item = String> + '_ {
    params.iter().map(ParamHeader::header_name)
}

fn value_at<'a>(args: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(args.get(first)?, |v, seg| v.as_object()?.get(seg))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    fn schema_with(region: Value) -> Value {
        json!({"type": "object", "properties": {"region": region, "q": {"type": "string"}}})
    }

    #[test]
    fn parse_valid_annotations() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "loc": {"type": "object", "properties": {
                    "zone": {"type": "integer", "x-mcp-header": "Zone-Id"},
                    "x-mcp-header": {"type": "boolean", "x-mcp-header": "Flag_1"}
                }},
                "list": {"type": "array", "items": {"type": "string"}},
                "note": {"type": "string", "default": {"x-mcp-header": "data, not a keyword"},
                         "examples": [{"x-mcp-header": 1}], "const": {"x-mcp-header": ""}}
            }
        });
        let got = parse_param_headers(&schema).unwrap();
        let want = [
            ("Region", vec!["region"], ParamKind::String),
            ("Zone-Id", vec!["loc", "zone"], ParamKind::Integer),
            ("Flag_1", vec!["loc", "x-mcp-header"], ParamKind::Boolean),
        ];
        let want: Vec<ParamHeader> = want
            .into_iter()
            .map(|(n, p, kind)| ParamHeader {
                name: n.into(),
                path: p.into_iter().map(String::from).collect(),
                kind,
            })
            .collect();
        assert_eq!(got, want);
        let names: Vec<String> = param_header_names(&got).collect();
        assert_eq!(names, ["mcp-param-region", "mcp-param-zone-id", "mcp-param-flag_1"]);
        assert_eq!(parse_param_headers(&json!({"type": "object"})).unwrap(), vec![]);
        assert_eq!(parse_param_headers(&json!(true)).unwrap(), vec![]);
    }

    #[test]
    fn parse_invalid_annotations() {
        let s = |t: &str| json!({"type": t, "x-mcp-header": "R"});
        let under = |k: &str, v: Value| json!({"type": "object", k: v});
        let x = json!({"type": "string", "x-mcp-header": "R"});
        #[rustfmt::skip]
        let table: Vec<(Value, &str)> = vec![
            (schema_with(json!({"type": "string", "x-mcp-header": ""})), "must not be empty"),
            (schema_with(json!({"type": "string", "x-mcp-header": 5})), "must be a string"),
            (schema_with(json!({"type": "string", "x-mcp-header": "Has Space"})), "RFC 9110 token"),
            (schema_with(json!({"type": "string", "x-mcp-header": "a:b"})), "RFC 9110 token"),
            (schema_with(json!({"type": "string", "x-mcp-header": "a\r\nb"})), "RFC 9110 token"),
            (schema_with(json!({"type": "string", "x-mcp-header": "é"})), "RFC 9110 token"),
            (schema_with(s("number")), "of type \"number\""),
            (schema_with(s("object")), "of type \"object\""),
            (schema_with(json!({"type": ["string", "null"], "x-mcp-header": "R"})), "of type [\"string\",\"null\"]"),
            (schema_with(json!({"x-mcp-header": "R"})), "of type (missing)"),
            (json!({"type": "object", "properties": {"a": s("string"), "b": {"type": "boolean", "x-mcp-header": "r"}}}),
                "duplicates \"R\""),
            (json!({"type": "object", "x-mcp-header": "Root"}), "at # is not on a property"),
            (under("items", x.clone()), "at #/items is not"),
            (under("properties", json!({"a": {"type": "array", "items": x.clone()}})), "at #/properties/a/items is not"),
            (under("oneOf", json!([x.clone()])), "at #/oneOf/0 is not"),
            (under("anyOf", json!([x.clone()])), "at #/anyOf/0 is not"),
            (under("allOf", json!([{"properties": {"a": x.clone()}}])), "at #/allOf/0/properties/a is not"),
            (under("not", x.clone()), "at #/not is not"),
            (under("if", x.clone()), "at #/if is not"),
            (under("then", json!({"properties": {"a": x.clone()}})), "at #/then/properties/a is not"),
            (under("else", x.clone()), "at #/else is not"),
            (under("$defs", json!({"d": x.clone()})), "at #/$defs/d is not"),
            (under("definitions", json!({"d/e": x.clone()})), "at #/definitions/d~1e is not"),
            (under("additionalProperties", x.clone()), "at #/additionalProperties is not"),
            (under("patternProperties", json!({"^a": x.clone()})), "at #/patternProperties/^a is not"),
            (under("dependentSchemas", json!({"a": {"properties": {"b": x.clone()}}})), "#/dependentSchemas/a/properties/b"),
            (under("x-vendor", json!({"deep": [x.clone()]})), "at #/x-vendor/deep/0 is not"),
        ];
        for (schema, want) in table {
            let e = parse_param_headers(&schema).unwrap_err().to_string();
            assert!(e.contains(want), "{schema}: {e}");
        }
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"not": deep});
        }
        assert_eq!(parse_param_headers(&deep), Err(XMcpHeaderError::TooDeep));
    }

    fn params() -> Vec<ParamHeader> {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "loc": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}}
        }});
        parse_param_headers(&schema).unwrap()
    }

    #[test]
    fn param_headers() {
        let full: &[(&str, &[u8])] = &[
            ("mcp-param-region", b"eu-west"),
            ("mcp-param-count", b"42"),
            ("mcp-param-dry", b"x"), // not ours: ignored
            ("mcp-param-dry-run", b"true"),
            ("mcp-param-zone", b"=?base64?w6l0w6k=?="),
        ];
        let args = json!({"region": "eu-west", "count": 42, "dry": true, "loc": {"zone": "été"}});
        let replace = |name: &'static str, v: Option<&'static [u8]>| {
            let mut h: Vec<(&str, &[u8])> = full.iter().filter(|(n, _)| *n != name).cloned().collect();
            h.extend(v.map(|v| (name, v)));
            h
        };
        let with_args = |k: &str, v: Value| {
            let mut a = args.clone();
            a[k] = v;
            a
        };
        type Case<'a> = (&'a str, Vec<(&'a str, &'a [u8])>, Value, Result<(), &'a str>);
        #[rustfmt::skip]
        let table: Vec<Case> = vec![
            ("all agree", full.to_vec(), args.clone(), Ok(())),
            ("count as float body", full.to_vec(), with_args("count", json!(42.0)), Ok(())),
            ("count header 42.0", replace("mcp-param-count", Some(b"42.0")), args.clone(), Ok(())),
            ("count header 4.2e1", replace("mcp-param-count", Some(b"4.2e1")), args.clone(), Ok(())),
            ("count ows", replace("mcp-param-count", Some(b" 42 ")), args.clone(), Ok(())),
            ("absent value, no header", replace("mcp-param-region", None), json!({"count": 42, "dry": true, "loc": {"zone": "été"}}), Ok(())),
            ("null value, header tolerated", full.to_vec(), with_args("region", json!(null)), Ok(())),
            ("parent absent", replace("mcp-param-zone", None), with_args("loc", json!(null)), Ok(())),
            ("missing header", replace("mcp-param-region", None), args.clone(), Err("Missing required header: Mcp-Param-Region")),
            ("string differs", replace("mcp-param-region", Some(b"us-east")), args.clone(),
                Err("Header mismatch: Mcp-Param-Region header value 'us-east' does not match body value 'eu-west'")),
            ("count differs", replace("mcp-param-count", Some(b"43")), args.clone(),
                Err("Header mismatch: Mcp-Param-Count header value '43' does not match body value '42'")),
            ("count not a number", replace("mcp-param-count", Some(b"forty-two")), args.clone(),
                Err("Header mismatch: Mcp-Param-Count header value 'forty-two' does not match body value '42'")),
            ("count hex", replace("mcp-param-count", Some(b"0x2a")), args.clone(), Err("does not match")),
            ("count +42", replace("mcp-param-count", Some(b"+42")), args.clone(), Err("does not match")),
            ("bool case", replace("mcp-param-dry-run", Some(b"True")), args.clone(), Err("does not match body value 'true'")),
            ("bool as 1", replace("mcp-param-dry-run", Some(b"1")), args.clone(), Err("does not match")),
            ("nested differs", replace("mcp-param-zone", Some(b"ete")), args.clone(), Err("Mcp-Param-Zone header value 'ete'")),
            ("invalid chars", replace("mcp-param-region", Some(b"eu\nwest")), args.clone(),
                Err("Invalid header value: Mcp-Param-Region contains characters")),
            ("invalid chars, absent value", replace("mcp-param-region", Some(b"\x00")), with_args("region", json!(null)),
                Err("Invalid header value: Mcp-Param-Region")),
        ];
        let ps = params();
        for (what, headers, args, want) in table {
            let h: HashMap<&str, &[u8]> = headers.into_iter().collect();
            let get = |n: &str| h.get(n).copied();
            match (check_param_headers(&ps, args.as_object(), &get), want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(msg)) => {
                    assert_eq!(e.code, -32020, "{what}");
                    assert!(e.message.contains(msg), "{what}: {}", e.message);
                }
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
        let none = |_: &str| None;
        assert_eq!(check_param_headers(&ps, None, &none), Ok(()));
    }
}
