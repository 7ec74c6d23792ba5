//! `x-mcp-header` validation (`mcp_protocol::headers::parse_param_headers`) on an arbitrary
//! input schema.
//!
//! Checks that validation never panics (nor overflows the stack on deep schemas), and that every
//! annotation it accepts is a non-empty RFC 9110 token, case-insensitively unique, found at its
//! `properties` path from the root with the type it reports.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_protocol::headers::{ParamKind, param_header_names, parse_param_headers};
use mcp_protocol::jsonrpc::parse_value;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = parse_value(data, 200) else { return };
    let Ok(params) = parse_param_headers(&schema) else {
        return;
    };
    for (i, p) in params.iter().enumerate() {
        assert!(!p.name.is_empty());
        assert!(
            p.name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
        );
        assert!(
            params[..i].iter().all(|q| !q.name.eq_ignore_ascii_case(&p.name)),
            "{:?} twice",
            p.name
        );
        assert!(!p.path.is_empty());
        let property = p
            .path
            .iter()
            .try_fold(&schema, |s, seg| s.get("properties")?.get(seg))
            .unwrap_or_else(|| panic!("{:?} is not at {:?}", p.name, p.path));
        assert_eq!(
            property.get("x-mcp-header").and_then(Value::as_str),
            Some(p.name.as_str())
        );
        let kind = match p.kind {
            ParamKind::String => "string",
            ParamKind::Integer => "integer",
            ParamKind::Boolean => "boolean",
        };
        assert_eq!(property.get("type").and_then(Value::as_str), Some(kind));
        assert!(p.header_name().starts_with("mcp-param-"));
    }
    assert_eq!(param_header_names(&params).count(), params.len());
});
