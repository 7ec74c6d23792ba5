//! The SEP-2243 request headers of revision 2026-07-28 (Streamable HTTP only,
//! but the rules are pure and live here).
//!
//! A modern client mirrors parts of the body into headers so that
//! intermediaries can route without parsing JSON:
//!
//! | header | mirrors | required for |
//! | --- | --- | --- |
//! | `MCP-Protocol-Version` | `params._meta["io.modelcontextprotocol/protocolVersion"]` | every request |
//! | `Mcp-Method` | `method` | every request |
//! | `Mcp-Name` | `params.name` / `params.uri` / `params.taskId` (see [`Method::name_field`]) | those methods |
//! | `Mcp-Param-{Name}` | the tool argument annotated `x-mcp-header: "{Name}"` | `tools/call`, when the value is present and non-null |
//!
//! Values travel as-is when they are plain header-safe ASCII, and otherwise as
//! `=?base64?{base64 of the UTF-8}?=` ([`encode_header_value`],
//! [`decode_header_value`]). A server that reads the body MUST check that the
//! headers agree with it, after decoding, and answer -32020 (HTTP 400) when a
//! required header is missing, differs, or holds invalid characters
//! ([`check_standard_headers`], [`check_param_headers`]).
//!
//! `x-mcp-header` annotations are validated when a tool is registered
//! ([`parse_param_headers`], behaviour invariant 26): a non-empty RFC 9110
//! token, case-insensitively unique, on a `string`, `integer` or `boolean`
//! property that is reachable from the root of `inputSchema` through
//! `properties` keys only. An invalid annotation fails the registration.

use std::borrow::Cow;

use base64::Engine;
use base64::alphabet;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Number, Value};

use crate::error::RpcError;
use crate::method::Method;
use crate::params::Params;

mod param;

pub use param::{
    ParamHeader, ParamKind, XMcpHeaderError, check_param_headers, param_header_names, parse_param_headers,
};

/// The lowercase name of the `MCP-Protocol-Version` header.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The lowercase name of the `Mcp-Method` header.
pub const METHOD_HEADER: &str = "mcp-method";
/// The lowercase name of the `Mcp-Name` header.
pub const NAME_HEADER: &str = "mcp-name";
/// The lowercase prefix of the `Mcp-Param-{Name}` headers.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";
/// The JSON Schema annotation that mirrors a tool argument into a header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";
/// Standard alphabet; canonical padding required on input (it is always written).
const LENIENT_STANDARD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);
/// Values quoted in error messages are cut at this many characters.
const MAX_QUOTED_CHARS: usize = 100;

/// Why a header value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// A byte other than visible ASCII (0x21–0x7E), space or horizontal tab.
    #[error("contains characters other than visible ASCII, space and tab")]
    InvalidCharacters,
    /// The `=?base64?…?=` sentinel does not hold valid standard base64.
    #[error("holds invalid base64 inside its =?base64?…?= sentinel")]
    InvalidBase64,
    /// The base64 inside the sentinel does not decode to UTF-8.
    #[error("holds base64 that does not decode to UTF-8")]
    InvalidUtf8,
}

impl HeaderError {
    /// The wire error: -32020.
    pub fn to_rpc_error(&self) -> RpcError {
        RpcError::header_mismatch(format!("Invalid header value: {self}"))
    }
}

/// Encodes a JSON value for a header: a string as-is when it is plain
/// header-safe ASCII (and not itself sentinel-shaped), else
/// `=?base64?…?=`; an integer (or an integral float) in decimal; a boolean as
/// `true`/`false`. Other values have no header form (`None`).
///
/// The empty string is sent as the sentinel `=?base64??=`, since some HTTP
/// stacks drop empty header values.
pub fn encode_header_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if is_plain(s) && !is_sentinel_shaped(s) => Some(s.clone()),
        Value::String(s) => Some(format!("{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}", STANDARD.encode(s))),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => match as_number(n) {
            Num::Int(i) => Some(i.to_string()),
            Num::Float(f) if f.fract() == 0.0 && f.abs() < 2f64.powi(63) => Some((f as i64).to_string()),
            Num::Float(_) => None,
        },
        _ => None,
    }
}

/// Whether a string can travel in a header as-is: non-empty, visible ASCII
/// plus inner spaces and tabs, no surrounding whitespace.
fn is_plain(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|&c| is_header_byte(c))
        && !matches!(b[0], b' ' | b'\t')
        && !matches!(b[b.len() - 1], b' ' | b'\t')
}

/// Whether a (plain) string looks like a sentinel, case-insensitively: such
/// literals are encoded so that no decoder mistakes them for one.
fn is_sentinel_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len()
        && b[..SENTINEL_PREFIX.len()].eq_ignore_ascii_case(SENTINEL_PREFIX.as_bytes())
        && b.ends_with(SENTINEL_SUFFIX.as_bytes())
}

fn is_header_byte(c: u8) -> bool {
    matches!(c, 0x21..=0x7E | b' ' | b'\t')
}

/// Decodes a raw header value: refuses bytes other than visible ASCII, space
/// and tab; trims surrounding spaces and tabs (OWS); decodes a
/// `=?base64?…?=` sentinel (lowercase markers, case-sensitive) to UTF-8.
pub fn decode_header_value(raw: &[u8]) -> Result<Cow<'_, str>, HeaderError> {
    if !raw.iter().all(|&c| is_header_byte(c)) {
        return Err(HeaderError::InvalidCharacters);
    }
    let s = std::str::from_utf8(raw).map_err(|_| HeaderError::InvalidCharacters)?;
    let s = s.trim_matches([' ', '\t']);
    match s
        .strip_prefix(SENTINEL_PREFIX)
        .and_then(|r| r.strip_suffix(SENTINEL_SUFFIX))
    {
        Some(inner) => {
            let bytes = LENIENT_STANDARD.decode(inner).map_err(|_| HeaderError::InvalidBase64)?;
            String::from_utf8(bytes)
                .map(Cow::Owned)
                .map_err(|_| HeaderError::InvalidUtf8)
        }
        None => Ok(Cow::Borrowed(s)),
    }
}

/// Checks `MCP-Protocol-Version` (against `meta_version`, the body's
/// `_meta` version), `Mcp-Method` and, for the methods with a [`Method::name_field`],
/// `Mcp-Name`.
///
/// `get` looks a header up by its lowercase name and returns its raw value.
/// `Mcp-Name` is only checked when the body holds a string in the mirrored
/// field (a body without one is refused later, as invalid params). Any
/// missing, differing or undecodable header is -32020.
pub fn check_standard_headers<'h>(
    method: &Method,
    params: Option<&Params>,
    meta_version: &str,
    get: &dyn Fn(&str) -> Option<&'h [u8]>,
) -> Result<(), RpcError> {
    expect_equal(get, PROTOCOL_VERSION_HEADER, "MCP-Protocol-Version", meta_version)?;
    expect_equal(get, METHOD_HEADER, "Mcp-Method", method.as_str())?;
    let name = method.name_field().and_then(|field| params?.str(field));
    if let Some(body) = name {
        expect_equal(get, NAME_HEADER, "Mcp-Name", &body)?;
    }
    Ok(())
}

fn expect_equal<'h>(
    get: &dyn Fn(&str) -> Option<&'h [u8]>,
    lookup: &str,
    display: &str,
    body: &str,
) -> Result<(), RpcError> {
    let raw = get(lookup).ok_or_else(|| missing(display))?;
    let header = decode_header_value(raw).map_err(|e| invalid(display, &e))?;
    if header == body {
        Ok(())
    } else {
        Err(mismatch(display, &header, body))
    }
}

fn missing(display: &str) -> RpcError {
    RpcError::header_mismatch(format!("Missing required header: {display}"))
}

fn invalid(display: &str, e: &HeaderError) -> RpcError {
    RpcError::header_mismatch(format!("Invalid header value: {display} {e}"))
}

fn mismatch(display: &str, header: &str, body: &str) -> RpcError {
    RpcError::header_mismatch(format!(
        "Header mismatch: {display} header value '{}' does not match body value '{}'",
        quote(header),
        quote(body)
    ))
}

fn quote(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_owned(),
    }
}

/// A number read from JSON or from a header.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    fn equals(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (Num::Int(a), Num::Float(b)) | (Num::Float(b), Num::Int(a)) => a as f64 == b,
            (Num::Float(a), Num::Float(b)) => a == b,
        }
    }
}

fn as_number(n: &Number) -> Num {
    if let Some(i) = n.as_i64() {
        Num::Int(i.into())
    } else if let Some(u) = n.as_u64() {
        Num::Int(u.into())
    } else {
        Num::Float(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// Parses a JSON-style decimal number (`-?digits(.digits)?([eE][+-]?digits)?`).
fn parse_number(s: &str) -> Option<Num> {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    let unsigned = s.strip_prefix('-').unwrap_or(s);
    if digits(unsigned)
        && let Ok(i) = s.parse::<i128>()
    {
        return Some(Num::Int(i));
    }
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (unsigned, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => digits(int) && digits(frac),
        None => digits(mantissa),
    };
    if !mantissa_ok || exponent.is_some_and(|e| !digits(e)) {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite()).map(Num::Float)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;

    #[test]
    fn encode_table() {
        let table = [
            (json!("plain"), Some("plain")),
            (json!("with inner space\tand tab"), Some("with inner space\tand tab")),
            (json!("a,b;c=d\"e"), Some("a,b;c=d\"e")),
            (json!(" lead"), Some("=?base64?IGxlYWQ=?=")),
            (json!("trail\t"), Some("=?base64?dHJhaWwJ?=")),
            (json!("line\nbreak"), Some("=?base64?bGluZQpicmVhaw==?=")),
            (json!("日本"), Some("=?base64?5pel5pys?=")),
            (json!(""), Some("=?base64??=")),
            (json!("=?base64?abc?="), Some("=?base64?PT9iYXNlNjQ/YWJjPz0=?=")),
            (json!("=?BASE64?abc?="), Some("=?base64?PT9CQVNFNjQ/YWJjPz0=?=")),
            (json!("=?base64?"), Some("=?base64?")),
            (json!(42), Some("42")),
            (json!(-7), Some("-7")),
            (json!(u64::MAX), Some("18446744073709551615")),
            (json!(42.0), Some("42")),
            (json!(true), Some("true")),
            (json!(false), Some("false")),
            (json!(1.5), None),
            (json!(null), None),
            (json!([1]), None),
            (json!({"a": 1}), None),
        ];
        for (v, want) in table {
            assert_eq!(encode_header_value(&v).as_deref(), want, "{v}");
        }
    }

    #[test]
    fn decode_table() {
        let ok: [(&[u8], &str); 9] = [
            (b"plain", "plain"),
            (b"  padded\t ", "padded"),
            (b"in ner", "in ner"),
            (b"=?base64?5pel5pys?=", "日本"),
            (b"=?base64?5pel5pys?= ", "日本"),
            (b"=?base64?IGxlYWQ=?=", " lead"),
            (b"=?base64??=", ""),
            (b"=?BASE64?5pel5pys?=", "=?BASE64?5pel5pys?="), // markers are case-sensitive
            (b"", ""),
        ];
        for (raw, want) in ok {
            assert_eq!(decode_header_value(raw).unwrap(), want, "{raw:?}");
        }
        let bad: [(&[u8], HeaderError); 8] = [
            (b"a\nb", HeaderError::InvalidCharacters),
            (b"a\rb", HeaderError::InvalidCharacters),
            (b"nul\0", HeaderError::InvalidCharacters),
            (b"del\x7f", HeaderError::InvalidCharacters),
            ("é".as_bytes(), HeaderError::InvalidCharacters),
            (b"=?base64?!!!?=", HeaderError::InvalidBase64),
            (b"=?base64?SGVsbG8?=", HeaderError::InvalidBase64), // padding is required
            (b"=?base64?/w==?=", HeaderError::InvalidUtf8),
        ];
        for (raw, want) in bad {
            let e = decode_header_value(raw).unwrap_err();
            assert_eq!(e, want, "{raw:?}");
            assert_eq!(e.to_rpc_error().code, -32020);
        }
    }

    #[test]
    fn encode_decode_round_trip() {
        for s in [
            "x",
            " x ",
            "a\u{0}b",
            "=?base64?x?=",
            "tab\t",
            "émoji 🎉",
            "",
            "?=",
            "=?",
        ] {
            let enc = encode_header_value(&json!(s)).unwrap();
            assert!(
                enc.bytes()
                    .all(|c| (0x21..=0x7E).contains(&c) || c == b' ' || c == b'\t')
            );
            assert_eq!(decode_header_value(enc.as_bytes()).unwrap(), s, "{s:?}");
        }
    }

    #[test]
    fn name_fields() {
        let table = [
            ("tools/call", Some("name")),
            ("prompts/get", Some("name")),
            ("resources/read", Some("uri")),
            ("tasks/get", Some("taskId")),
            ("tasks/update", Some("taskId")),
            ("tasks/cancel", Some("taskId")),
            ("tools/list", None),
            ("tasks/result", None),
            ("server/discover", None),
        ];
        for (m, want) in table {
            assert_eq!(Method::parse(m).name_field(), want, "{m}");
        }
    }

    fn obj(v: Value) -> Params {
        Params::from_value(v).unwrap()
    }

    #[test]
    fn standard_headers() {
        let v = "2026-07-28";
        let call = obj(json!({"name": "bar", "arguments": {}}));
        let base: &[(&str, &[u8])] = &[("mcp-protocol-version", b"2026-07-28"), ("mcp-method", b"tools/call")];
        let with = |extra: &[(&'static str, &'static [u8])]| -> Vec<(&str, &[u8])> {
            base.iter().chain(extra).cloned().collect()
        };
        type Case<'a> = (&'a str, Vec<(&'a str, &'a [u8])>, Params, Result<(), &'a str>);
        #[rustfmt::skip]
        let table: Vec<Case> = vec![
            ("ok", with(&[("mcp-name", b"bar")]), call.clone(), Ok(())),
            ("ows", with(&[("mcp-name", b" bar\t")]), call.clone(), Ok(())),
            ("base64 name", with(&[("mcp-name", b"=?base64?YmFy?=")]), call.clone(), Ok(())),
            ("no version", vec![("mcp-method", b"tools/call"), ("mcp-name", b"bar")], call.clone(),
                Err("Missing required header: MCP-Protocol-Version")),
            ("other version", vec![("mcp-protocol-version", b"2025-11-25"), ("mcp-method", b"tools/call"),
                ("mcp-name", b"bar")], call.clone(),
                Err("Header mismatch: MCP-Protocol-Version header value '2025-11-25' does not match body value '2026-07-28'")),
            ("no method", vec![("mcp-protocol-version", b"2026-07-28"), ("mcp-name", b"bar")], call.clone(),
                Err("Missing required header: Mcp-Method")),
            ("method differs", vec![("mcp-protocol-version", b"2026-07-28"), ("mcp-method", b"tools/list"),
                ("mcp-name", b"bar")], call.clone(),
                Err("Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'")),
            ("no name", with(&[]), call.clone(), Err("Missing required header: Mcp-Name")),
            ("name differs", with(&[("mcp-name", b"foo")]), call.clone(),
                Err("Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'")),
            ("name case", with(&[("mcp-name", b"BAR")]), call.clone(),
                Err("Header mismatch: Mcp-Name header value 'BAR' does not match body value 'bar'")),
            ("name ctl", with(&[("mcp-name", b"b\x01ar")]), call.clone(),
                Err("Invalid header value: Mcp-Name contains characters other than visible ASCII, space and tab")),
            ("name b64", with(&[("mcp-name", b"=?base64?***?=")]), call.clone(),
                Err("Invalid header value: Mcp-Name holds invalid base64 inside its =?base64?…?= sentinel")),
            ("body has no name", with(&[]), obj(json!({})), Ok(())),
        ];
        for (what, headers, params, want) in table {
            let h: HashMap<&str, &[u8]> = headers.into_iter().collect();
            let get = |n: &str| h.get(n).copied();
            let got = check_standard_headers(&Method::ToolsCall, Some(&params), v, &get);
            match (got, want) {
                (Ok(()), Ok(())) => {}
                (Err(e), Err(msg)) => {
                    assert_eq!((e.code, e.message.as_str()), (-32020, msg), "{what}")
                }
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn standard_headers_per_method() {
        let table = [
            (
                "resources/read",
                json!({"uri": "file:///a b"}),
                Some(&b"file:///a b"[..]),
            ),
            (
                "resources/read",
                json!({"uri": "file:///ü"}),
                Some(b"=?base64?ZmlsZTovLy/DvA==?="),
            ),
            ("tasks/get", json!({"taskId": "t-1"}), Some(b"t-1")),
            ("prompts/get", json!({"name": "p"}), Some(b"p")),
            ("tools/list", json!({}), None),
        ];
        for (method, params, name) in table {
            let mut h: HashMap<&str, &[u8]> = [
                ("mcp-protocol-version", &b"2026-07-28"[..]),
                ("mcp-method", method.as_bytes()),
            ]
            .into();
            if let Some(n) = name {
                h.insert("mcp-name", n);
            }
            let get = |n: &str| h.get(n).copied();
            let p = obj(params);
            assert_eq!(
                check_standard_headers(&Method::parse(method), Some(&p), "2026-07-28", &get),
                Ok(()),
                "{method}"
            );
            if name.is_some() {
                h.remove("mcp-name");
                let get = |n: &str| h.get(n).copied();
                let e = check_standard_headers(&Method::parse(method), Some(&p), "2026-07-28", &get).unwrap_err();
                assert_eq!(e.message, "Missing required header: Mcp-Name", "{method}");
            }
        }
    }

    #[test]
    fn numbers() {
        let table = [
            ("42", json!(42), true),
            ("042", json!(42), true),
            ("-5", json!(-5), true),
            ("42", json!(42.0), true),
            ("42.0", json!(42), true),
            ("18446744073709551615", json!(u64::MAX), true),
            ("9007199254740993", json!(9007199254740993u64), true),
            ("9007199254740992", json!(9007199254740993u64), false),
            ("42", json!(42.5), false),
            ("", json!(0), false),
            ("-", json!(0), false),
            ("1.", json!(1), false),
            (".5", json!(0.5), false),
            ("inf", json!(1), false),
            ("NaN", json!(1), false),
            ("1e999", json!(1), false),
        ];
        for (h, body, want) in table {
            let Value::Number(n) = &body else { unreachable!() };
            assert_eq!(
                parse_number(h).is_some_and(|x| x.equals(as_number(n))),
                want,
                "{h} vs {body}"
            );
        }
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "x".repeat(500);
        let e = mismatch("Mcp-Name", &long, "y");
        assert!(e.message.len() < 250, "{}", e.message);
        assert!(e.message.contains("…"));
    }
}
