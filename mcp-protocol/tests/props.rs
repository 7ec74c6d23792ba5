//! Property tests of the codecs whose output a client echoes back: pagination cursors, the
//! `=?base64?…?=` header-value sentinel (and header agreement built on it), and sealed MRTR
//! `requestState` tokens.
//!
//! Each property states what must hold for every input, not only for the examples of the unit
//! tests next to the code: a round trip gives back what went in, and anything altered or
//! presented by another caller is refused.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcp_protocol::Method;
use mcp_protocol::cursor::{decode_cursor, encode_cursor};
use mcp_protocol::headers::{
    HeaderError, check_param_headers, check_standard_headers, decode_header_value, encode_header_value,
    parse_param_headers,
};
use mcp_protocol::request_state::{StateError, StateKey, open, seal};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const NOW: u64 = 1_700_000_000_000;
const TTL: u64 = 300_000;

/// Any string, biased towards the characters the codecs treat specially.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        proptest::collection::vec(
            prop_oneof![
                Just('='),
                Just('?'),
                Just(' '),
                Just('\t'),
                Just('a'),
                Just('B'),
                Just('é'),
                Just('\u{0}'),
                Just('\u{7f}'),
                Just('😀'),
            ],
            0..24,
        )
        .prop_map(|cs| cs.into_iter().collect()),
        "[ -~]{0,32}".prop_map(|s| s),
        "=\\?(base64|BASE64|Base64)\\?[A-Za-z0-9+/=]{0,12}\\?=".prop_map(|s| s),
    ]
}

/// A JSON value that survives a print/parse round trip exactly (floats are multiples of 1/8).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1_000_000i64..1_000_000).prop_map(|n| Value::from(n as f64 / 8.0)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((text(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// A params object (sometimes absent).
fn params() -> impl Strategy<Value = Option<Map<String, Value>>> {
    proptest::option::of(
        proptest::collection::vec(("[a-z_]{1,8}", json_value()), 0..5).prop_map(|e| e.into_iter().collect()),
    )
}

/// Raw header bytes: anything, header-safe text, and sentinels holding valid or broken base64.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..48),
        "[ -~\t]{0,32}".prop_map(String::into_bytes),
        ("[ \t]{0,2}", text(), "[ \t]{0,2}").prop_map(|(l, s, r)| {
            let sentinel = encode_header_value(&Value::String(s)).expect("a string's header form");
            format!("{l}{sentinel}{r}").into_bytes()
        }),
        "[ \t]{0,2}=\\?base64\\?[A-Za-z0-9+/=!]{0,12}\\?=[ \t]{0,2}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..12).prop_map(|b| {
            // Not UTF-8 once decoded, most of the time.
            let mut v = b"=?base64?".to_vec();
            v.extend(STANDARD.encode(&b).into_bytes());
            v.extend(b"?=");
            v
        }),
    ]
}

fn key() -> StateKey {
    StateKey::new(&[0x5a; 32]).expect("32 bytes")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn cursor_round_trips(k in text()) {
        prop_assert_eq!(decode_cursor(&encode_cursor(&k)).ok(), Some(k));
    }

    #[test]
    fn a_decodable_cursor_is_one_we_made(c in "[A-Za-z0-9_=+/-]{0,24}") {
        // base64url without padding is canonical: what decodes re-encodes to the same text.
        if let Ok(k) = decode_cursor(&c) {
            prop_assert_eq!(encode_cursor(&k), c);
        }
    }

    #[test]
    fn header_strings_round_trip(s in text()) {
        let encoded = encode_header_value(&Value::String(s.clone())).expect("every string has a header form");
        prop_assert!(encoded.bytes().all(|b| matches!(b, 0x21..=0x7e | b' ' | b'\t')), "{encoded:?}");
        prop_assert!(!encoded.starts_with([' ', '\t']) && !encoded.ends_with([' ', '\t']));
        prop_assert_eq!(decode_header_value(encoded.as_bytes()).map(String::from), Ok(s.clone()));
        // Optional whitespace around a field value is not part of it.
        let padded = format!(" \t{encoded}\t ");
        prop_assert_eq!(decode_header_value(padded.as_bytes()).map(String::from), Ok(s));
    }

    #[test]
    fn any_header_decodes_to_its_value_or_a_typed_refusal(raw in header_bytes()) {
        let header_byte = |b: &u8| matches!(b, 0x21..=0x7e | b' ' | b'\t');
        let trimmed = String::from_utf8_lossy(&raw).trim_matches([' ', '\t']).to_owned();
        let sentinel = trimmed.len() >= 11 && trimmed.starts_with("=?base64?") && trimmed.ends_with("?=");
        match decode_header_value(&raw) {
            Err(HeaderError::InvalidCharacters) => prop_assert!(!raw.iter().all(header_byte), "{raw:?}"),
            // Only a sentinel's inside can be bad base64 or bad UTF-8.
            Err(HeaderError::InvalidBase64 | HeaderError::InvalidUtf8) => {
                prop_assert!(raw.iter().all(header_byte) && sentinel, "{raw:?}");
            }
            Err(other) => prop_assert!(false, "{raw:?}: an error no input should give: {other:?}"),
            Ok(value) => {
                prop_assert!(raw.iter().all(header_byte), "{raw:?}: accepted, bytes outside the header set");
                if sentinel {
                    // A sentinel's value is exactly what its base64 holds.
                    prop_assert_eq!(STANDARD.encode(value.as_bytes()), &trimmed[9..trimmed.len() - 2]);
                } else {
                    // A plain value is the header without its optional whitespace.
                    prop_assert_eq!(&*value, trimmed.as_str());
                }
                // What was decoded travels back as itself.
                let again = encode_header_value(&Value::String(value.to_string())).expect("a string's header form");
                prop_assert_eq!(decode_header_value(again.as_bytes()).map(String::from), Ok(value.to_string()));
            }
        }
    }

    #[test]
    fn param_headers_agree_with_their_own_encoding(
        s in text(),
        n in any::<i64>(),
        b in any::<bool>(),
        f in (-1_000_000i64..1_000_000),
    ) {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "f": {"type": "integer", "x-mcp-header": "F"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
        }});
        let params = parse_param_headers(&schema).expect("valid annotations");
        let args = json!({"s": s, "n": n, "f": f as f64, "b": b});
        let args = args.as_object().expect("an object");
        let headers: Vec<(String, String)> = params
            .iter()
            .map(|p| {
                let v = &args[p.path[0].as_str()];
                (p.header_name(), encode_header_value(v).expect("a header form"))
            })
            .collect();
        let get = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_bytes());
        prop_assert_eq!(check_param_headers(&params, Some(args), &get), Ok(()));
    }

    #[test]
    fn standard_headers_agree_with_their_own_encoding(name in text(), version in text()) {
        let method = Method::parse("tools/call");
        let params = mcp_protocol::Params::from_value(json!({"name": name}));
        let params = params.as_ref();
        let headers = [
            ("mcp-protocol-version", encode_header_value(&Value::String(version.clone()))),
            ("mcp-method", encode_header_value(&json!("tools/call"))),
            ("mcp-name", encode_header_value(&Value::String(name))),
        ];
        let get = |n: &str| headers.iter().find(|(h, _)| *h == n).and_then(|(_, v)| v.as_deref()).map(str::as_bytes);
        prop_assert_eq!(check_standard_headers(&method, params, &version, &get), Ok(()));
    }

    #[test]
    fn request_state_round_trips(
        principal in text(),
        method in "[a-z/]{1,16}",
        params in params(),
        state in json_value(),
    ) {
        let token = seal(&key(), &principal, &method, params.as_ref(), &state, NOW, TTL).expect("small state");
        prop_assert_eq!(open(&key(), &token, &principal, &method, params.as_ref(), NOW + TTL - 1), Ok(state));
        prop_assert_eq!(
            open(&key(), &token, &principal, &method, params.as_ref(), NOW + TTL),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn a_tampered_request_state_is_refused(
        state in json_value(),
        at in any::<prop::sample::Index>(),
        replacement in any::<u8>(),
        decoded_side in any::<bool>(),
    ) {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = seal(&key(), "alice", "tools/call", None, &state, NOW, TTL).expect("small state");
        let tampered = if decoded_side {
            // One byte of the sealed payload (or of its MAC) changed, re-encoded correctly.
            let mut raw = URL_SAFE_NO_PAD.decode(&token).expect("our own token");
            let i = at.index(raw.len());
            raw[i] = if replacement == raw[i] { !raw[i] } else { replacement };
            URL_SAFE_NO_PAD.encode(raw)
        } else {
            // One character of the token changed, whatever it becomes.
            let mut chars = token.clone().into_bytes();
            let i = at.index(chars.len());
            chars[i] = if replacement == chars[i] { chars[i] ^ 1 } else { replacement };
            String::from_utf8_lossy(&chars).into_owned()
        };
        prop_assert_ne!(&tampered, &token);
        prop_assert!(open(&key(), &tampered, "alice", "tools/call", None, NOW).is_err());
    }

    #[test]
    fn another_principal_or_request_is_refused(
        principal in text(),
        other in text(),
        params in params(),
        extra in json_value(),
        state in json_value(),
    ) {
        let token = seal(&key(), &principal, "tools/call", params.as_ref(), &state, NOW, TTL).expect("small state");
        if other != principal {
            prop_assert_eq!(
                open(&key(), &token, &other, "tools/call", params.as_ref(), NOW),
                Err(StateError::WrongPrincipal)
            );
        }
        prop_assert_eq!(
            open(&key(), &token, &principal, "prompts/get", params.as_ref(), NOW),
            Err(StateError::WrongRequest)
        );
        // Any bound param added or changed is another request; `_meta`, `inputResponses` and
        // `requestState` may change between rounds.
        let mut changed = params.clone().unwrap_or_default();
        let before = changed.get("zz_extra").cloned();
        changed.insert("zz_extra".to_owned(), extra.clone());
        if before.as_ref() != Some(&extra) {
            prop_assert_eq!(
                open(&key(), &token, &principal, "tools/call", Some(&changed), NOW),
                Err(StateError::WrongRequest)
            );
        }
        let mut rounds = params.clone().unwrap_or_default();
        rounds.insert("_meta".to_owned(), extra.clone());
        rounds.insert("inputResponses".to_owned(), extra);
        prop_assert_eq!(
            open(&key(), &token, &principal, "tools/call", Some(&rounds), NOW),
            Ok(state.clone())
        );
        let other_key = StateKey::new(&[0xa5; 32]).expect("32 bytes");
        prop_assert_eq!(
            open(&other_key, &token, &principal, "tools/call", params.as_ref(), NOW),
            Err(StateError::BadSignature)
        );
    }
}
