//! The modern header/body agreement: `mcp_protocol::headers::check_standard_headers` and
//! `check_param_headers`, headers x body.
//!
//! Input: header lines `name:value` (raw bytes, any value), an empty line, then a JSON-RPC
//! request body whose `params` are checked; a top-level `inputSchema` in the body, when it
//! has valid `x-mcp-header` annotations, replaces the fixed schema the `Mcp-Param-*` headers
//! are read against. Checks that neither check panics, that an accepted header set really
//! agrees with the body after decoding, that every refusal is -32020, and that the headers a
//! client derives from the body with `encode_header_value` are always accepted.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_protocol::Method;
use mcp_protocol::headers::{
    METHOD_HEADER, NAME_HEADER, PROTOCOL_VERSION_HEADER, ParamHeader, check_param_headers, check_standard_headers,
    decode_header_value, encode_header_value, parse_param_headers,
};
use mcp_protocol::jsonrpc::parse_value;
use serde_json::{Map, Value, json};

const HEADER_MISMATCH: i32 = -32020;

fuzz_target!(|data: &[u8]| {
    let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&data[..i], &data[i + 2..]),
        None => (data, &[][..]),
    };
    let headers: Vec<(String, &[u8])> = head
        .split(|&b| b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            let name = String::from_utf8_lossy(&line[..colon]).trim().to_ascii_lowercase();
            Some((name, &line[colon + 1..]))
        })
        .collect();
    let get = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| *v);

    let Ok(Value::Object(body)) = parse_value(body, 64) else {
        return;
    };
    let method = Method::parse(body.get("method").and_then(Value::as_str).unwrap_or("tools/call"));
    let params = body.get("params").and_then(Value::as_object);
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
        .and_then(Value::as_str)
        .unwrap_or("2026-07-28");

    // The standard headers, as sent.
    let raw = params.cloned().map(mcp_protocol::Params::from_object);
    match check_standard_headers(&method, raw.as_ref(), version, &get) {
        Ok(()) => {
            assert_eq!(decoded(&get, PROTOCOL_VERSION_HEADER).as_deref(), Some(version));
            assert_eq!(decoded(&get, METHOD_HEADER).as_deref(), Some(method.as_str()));
            if let Some(name) = name_of(&method, params) {
                assert_eq!(decoded(&get, NAME_HEADER).as_deref(), Some(name));
            }
        }
        Err(e) => assert_eq!(e.code, HEADER_MISMATCH, "{e:?}"),
    }
    // The standard headers, as a client derives them from the body.
    let derived = standard_headers(&method, params, version);
    let get_derived = |name: &str| derived.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_bytes());
    assert_eq!(check_standard_headers(&method, raw.as_ref(), version, &get_derived), Ok(()));

    // The `Mcp-Param-*` headers of a tool's arguments.
    let schema = body.get("inputSchema").cloned().unwrap_or_else(|| {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "location": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        }})
    });
    let Ok(annotated) = parse_param_headers(&schema) else {
        return;
    };
    let arguments = params.and_then(|p| p.get("arguments")).and_then(Value::as_object);
    match check_param_headers(&annotated, arguments, &get) {
        Ok(()) => {
            for p in &annotated {
                match value_at(arguments, &p.path) {
                    Some(Value::String(s)) => assert_eq!(decoded(&get, &p.header_name()).as_ref(), Some(s)),
                    Some(Value::Bool(b)) => {
                        assert_eq!(decoded(&get, &p.header_name()), Some(b.to_string()));
                    }
                    Some(Value::Number(_)) => assert!(decoded(&get, &p.header_name()).is_some()),
                    _ => {}
                }
            }
        }
        Err(e) => assert_eq!(e.code, HEADER_MISMATCH, "{e:?}"),
    }
    // As a client derives them: accepted whenever every value has a header form.
    if let Some(derived) = param_headers(&annotated, arguments) {
        let get_derived = |name: &str| derived.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_bytes());
        assert_eq!(check_param_headers(&annotated, arguments, &get_derived), Ok(()));
    }
});

fn decoded<'h>(get: &dyn Fn(&str) -> Option<&'h [u8]>, name: &str) -> Option<String> {
    decode_header_value(get(name)?).ok().map(std::borrow::Cow::into_owned)
}

fn name_of<'p>(method: &Method, params: Option<&'p Map<String, Value>>) -> Option<&'p str> {
    params?.get(method.name_field()?)?.as_str()
}

fn standard_headers(method: &Method, params: Option<&Map<String, Value>>, version: &str) -> Vec<(String, String)> {
    let mut out = vec![
        (PROTOCOL_VERSION_HEADER.to_owned(), encode(version)),
        (METHOD_HEADER.to_owned(), encode(method.as_str())),
    ];
    if let Some(name) = name_of(method, params) {
        out.push((NAME_HEADER.to_owned(), encode(name)));
    }
    out
}

fn encode(s: &str) -> String {
    encode_header_value(&Value::String(s.to_owned())).expect("every string has a header form")
}

/// The `Mcp-Param-*` headers of `arguments`; `None` when a present value has no header form.
fn param_headers(annotated: &[ParamHeader], arguments: Option<&Map<String, Value>>) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for p in annotated {
        match value_at(arguments, &p.path) {
            None | Some(Value::Null | Value::Array(_) | Value::Object(_)) => {}
            Some(v) => out.push((p.header_name(), encode_header_value(v)?)),
        }
    }
    Some(out)
}

fn value_at<'a>(args: Option<&'a Map<String, Value>>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(args?.get(first)?, |v, seg| v.as_object()?.get(seg))
}
