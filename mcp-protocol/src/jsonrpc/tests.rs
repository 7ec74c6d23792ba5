//! The decoder's and encoder's tests.

use super::*;
use serde_json::json;

#[test]
fn a_raw_result_encodes_as_its_value_would() {
    let result = json!({"tools": [{"name": "a"}], "nextCursor": "x\"y", "resultType": "complete"});
    let raw = serde_json::value::to_raw_value(&result).unwrap();
    for id in [
        RequestId::from(7),
        RequestId::from("a\"b"),
        RequestId::from("plain"),
        RequestId::from(-1),
        RequestId::from(0),
        RequestId::from(i64::MIN),
        RequestId::from(1_000_000),
    ] {
        let encoded = encode_raw_result(&id, raw.get());
        assert_eq!(encoded, encode_result(&id, &result), "{id}");
        assert_eq!(encoded, encode_result(&id, &*raw), "{id}");
        if !id.to_string().contains('"') {
            assert_eq!(encoded.len(), encoded.capacity(), "{id}: sized exactly");
        }
    }
}

fn dec(s: &str) -> Result<Inbound, DecodeError> {
    decode(s.as_bytes(), &DecodeLimits::default())
}

fn single(s: &str) -> Message {
    match dec(s).unwrap() {
        Inbound::Single(m) => m,
        other => panic!("not single: {other:?}"),
    }
}

#[test]
fn decodes_each_kind() {
    let table = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "request"),
        (r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{}}"#, "request"),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "notification",
        ),
        (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "response"),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#,
            "response",
        ),
    ];
    for (s, kind) in table {
        let got = match single(s) {
            Message::Request(_) => "request",
            Message::Notification(_) => "notification",
            Message::Response(_) => "response",
        };
        assert_eq!(got, kind, "{s}");
    }
}

#[test]
fn rejects_bad_shapes() {
    // (input, expected code, id echoed, wants reply)
    let table: [(&str, i32, Option<RequestId>, bool); 11] = [
        (r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, -32600, None, true),
        (r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#, -32600, None, true),
        (r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#, -32600, None, true),
        (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600, Some(1.into()), true),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
            -32600,
            Some(1.into()),
            true,
        ),
        (r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#, -32600, Some(1.into()), true),
        (r#"{"jsonrpc":"2.0","method":"x","params":3}"#, -32600, None, false),
        (r#"{"jsonrpc":"2.0"}"#, -32600, None, true),
        (r#"{"jsonrpc":"2.0","id":1}"#, -32600, Some(1.into()), true),
        (r#"42"#, -32600, None, true),
        (r#"{"jsonrpc":"2.0","id":1,"method":"x"} x"#, -32700, None, true),
    ];
    for (s, code, id, reply) in table {
        let e = dec(s).unwrap_err();
        assert_eq!(e.to_rpc_error().code, code, "{s}");
        assert_eq!(e.id(), id.as_ref(), "{s}");
        assert_eq!(e.wants_reply(), reply, "{s}");
    }
}

#[test]
fn parse_errors() {
    for s in ["", "{", "{\"a\":}", "nul", "\u{1}"] {
        assert_eq!(dec(s).unwrap_err().to_rpc_error().code, -32700, "{s:?}");
    }
}

#[test]
fn depth_limit_inside_decoder() {
    let limits = DecodeLimits::new(1 << 20, 4);
    let ok = r#"{"a":{"b":{"c":[1]}}}"#;
    assert!(parse_value(ok.as_bytes(), limits.max_depth).is_ok());
    let deep = r#"{"a":{"b":{"c":[[1]]}}}"#;
    assert_eq!(
        parse_value(deep.as_bytes(), limits.max_depth),
        Err(DecodeError::TooDeep { limit: 4 })
    );
    // Far deeper than any parser's stack: a batch's elements are kept as text (skipped without
    // recursion) and their depth counted before anything is built from them.
    let very_deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert!(matches!(
        decode(very_deep.as_bytes(), &DecodeLimits::default()),
        Err(DecodeError::TooDeep { limit: 64 })
    ));
}

#[test]
fn size_limit() {
    let limits = DecodeLimits::new(10, 64);
    let e = decode(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, &limits).unwrap_err();
    assert_eq!(e, DecodeError::TooLarge { limit: 10 });
    assert_eq!(e.to_rpc_error().code, -32600);
}

#[test]
fn duplicate_keys_keep_first() {
    let v = parse_value(br#"{"a":1,"a":2}"#, 64).unwrap();
    assert_eq!(v, json!({"a": 1}));
    // In the envelope too, whether read from bytes or from a value.
    let s = r#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b","id":2,"params":{"x":1},"params":3}"#;
    let from_value = message_from_value(parse_value(s.as_bytes(), 64).unwrap()).unwrap();
    for m in [single(s), from_value] {
        let Message::Request(r) = m else { panic!("{m:?}") };
        assert_eq!((r.id, r.method.as_str()), (RequestId::from(1), "a"));
        assert_eq!(
            r.params.map(Params::into_object),
            Some(json!({"x": 1}).as_object().unwrap().clone())
        );
    }
}

#[test]
fn other_members_are_ignored_but_bounded() {
    let s = r#"{"extra":{"deep":[1]},"jsonrpc":"2.0","id":"q","method":"ping","\u0069d":5}"#;
    let Message::Request(r) = single(s) else { panic!() };
    assert_eq!(r.id, RequestId::from("q"), "an escaped name is matched as its text");
    let limits = DecodeLimits::new(1 << 20, 3);
    let deep = r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"a":{"b":{}}}}"#;
    assert_eq!(
        decode(deep.as_bytes(), &limits).unwrap_err(),
        DecodeError::TooDeep { limit: 3 }
    );
    let ok = r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":{"a":{"b":1}}}"#;
    assert!(decode(ok.as_bytes(), &limits).is_ok());
}

#[test]
fn batches() {
    assert_eq!(dec("[]").unwrap_err(), DecodeError::EmptyBatch);
    let mixed = r#"[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","id":2,"result":{}}]"#;
    assert_eq!(dec(mixed).unwrap_err(), DecodeError::MixedBatch);
    let ok = r#"[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","method":"y"},5]"#;
    let Inbound::Batch(items) = dec(ok).unwrap() else {
        panic!()
    };
    assert_eq!(items.len(), 3);
    assert!(items[2].is_err());
}

#[test]
fn batch_length_is_capped_while_parsing() {
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let batch = |n: usize| format!("[{}]", vec![ping; n].join(","));
    let limits = DecodeLimits::default().with_max_batch(3);
    assert!(matches!(decode(batch(3).as_bytes(), &limits), Ok(Inbound::Batch(b)) if b.len() == 3));
    let e = decode(batch(4).as_bytes(), &limits).unwrap_err();
    assert_eq!(e, DecodeError::BatchTooLarge { limit: 3 });
    let rpc = e.to_rpc_error();
    assert_eq!((rpc.code, rpc.message.as_str()), (-32600, "Batch exceeds 3 messages"));
    // Nested arrays are not batches.
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"a":{}}}}}"#,
        batch(10)
    );
    assert!(decode(nested.as_bytes(), &limits).is_ok());
    // Without the early stop, a large batch is refused before it is decoded whole.
    assert!(decode(batch(100_000).as_bytes(), &DecodeLimits::default()).is_err());
}

#[test]
fn batch_helpers() {
    assert_eq!(encode_batch(&[b"1".to_vec()]), b"[1]");
    assert_eq!(encode_batch(&[b"1".to_vec(), b"{}".to_vec()]), b"[1,{}]");
    let Inbound::Batch(items) =
        dec(r#"[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","method":"y","params":3},7]"#).unwrap()
    else {
        panic!()
    };
    let (messages, answers) = split_batch(items);
    assert_eq!(messages.len(), 1, "the malformed notification is dropped");
    assert_eq!(answers.len(), 1, "the non-object element is answered");
    let answer: Value = serde_json::from_slice(&answers[0]).unwrap();
    assert_eq!(answer["error"]["code"], -32600);
}

#[test]
fn encodes() {
    let id = RequestId::from("x");
    let out = encode_result(&id, &json!({}));
    assert_eq!(out, br#"{"jsonrpc":"2.0","id":"x","result":{}}"#);
    let out = encode_error(None, &RpcError::parse_error("bad"));
    assert_eq!(
        serde_json::from_slice::<Value>(&out).unwrap(),
        json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}})
    );
    let out = encode_notification("n", None);
    assert_eq!(out, br#"{"jsonrpc":"2.0","method":"n"}"#);
}

fn body(depth: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{}{}}}"#,
        "{\"a\":".repeat(depth - 1) + "{",
        "}".repeat(depth)
    )
}

#[test]
fn params_text_is_held_to_the_depth_limit() {
    let limits = DecodeLimits::new(1 << 20, 8);
    // The message object is 1, the params 7 more: within.
    assert!(decode(body(7).as_bytes(), &limits).is_ok());
    assert_eq!(
        decode(body(8).as_bytes(), &limits),
        Err(DecodeError::TooDeep { limit: 8 })
    );
    // Far deeper than any parser's stack: refused the same way.
    let limits = DecodeLimits::new(1 << 24, 64);
    assert_eq!(
        decode(body(100_000).as_bytes(), &limits),
        Err(DecodeError::TooDeep { limit: 64 })
    );
}
