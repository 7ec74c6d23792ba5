//! JSON text read into a [`Value`] the way the decoder reads it: a duplicated member keeps its
//! first occurrence (the value a client's JSON-RPC message means is the same whether the
//! decoder or a later reader of its kept text reads it), and arrays and objects nest at most a
//! given depth. The decoder (`jsonrpc`) reads messages with it, and [`Params`](crate::Params)
//! reads the members it kept as text.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The error message of a value nested deeper than its limit.
pub(crate) const TOO_DEEP: &str = "mcp: nesting limit exceeded";

/// Whether arrays and objects nest deeper than `limit` in `text` (valid JSON: `{}` is one
/// level). Every level opens with a bracket, so a text with no more brackets than `limit`
/// (counted in strings too, a pass the compiler vectorizes) is not deeper; only a text with
/// more is walked, strings skipped.
pub(crate) fn deeper_than(text: &str, limit: usize) -> bool {
    let brackets = text.bytes().filter(|b| matches!(b, b'{' | b'[')).count();
    brackets > limit && nesting(text) > limit
}

/// The deepest nesting of arrays and objects in `text` (valid JSON): `{}` is 1.
fn nesting(text: &str) -> usize {
    let b = text.as_bytes();
    match b.iter().position(|c| !c.is_ascii_whitespace()) {
        Some(at) if matches!(b[at], b'{' | b'[') => container(b, at).1,
        _ => 0,
    }
}

/// The string whose opening quote is at `at` in `b` (valid JSON): where it ends (just past its
/// closing quote, `None` when it does not close) and whether it has escapes. Strings are
/// skipped with `memchr`.
pub(crate) fn string_end(b: &[u8], at: usize) -> (Option<usize>, bool) {
    let mut i = at + 1;
    let mut escaped = false;
    while let Some(found) = b.get(i..).and_then(|rest| memchr::memchr2(b'"', b'\\', rest)) {
        i += found + 1;
        if b[i - 1] == b'"' {
            return (Some(i), escaped);
        }
        // A backslash: the character it escapes is skipped.
        escaped = true;
        i += 1;
    }
    (None, escaped)
}

/// The array or object whose opening bracket is at `at` in `b` (valid JSON): where it ends (just
/// past its closing bracket, `None` when it does not close) and the deepest nesting in it (itself
/// counts 1). Brackets are counted between strings; each string is skipped whole.
pub(crate) fn container(b: &[u8], at: usize) -> (Option<usize>, usize) {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = at;
    loop {
        let quote = memchr::memchr(b'"', &b[i..]).map_or(b.len(), |q| i + q);
        while i < quote {
            match b[i] {
                b'{' | b'[' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return (Some(i + 1), deepest);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if quote == b.len() {
            return (None, deepest);
        }
        match string_end(b, quote) {
            (Some(end), _) => i = end,
            (None, _) => return (None, deepest),
        }
    }
}

/// Parses text the decoder already checked (valid JSON within its depth limit): `null` for
/// text that is not (which the decoder never hands on).
pub(crate) fn first_occurrence(text: &str) -> Value {
    let mut de = serde_json::Deserializer::from_str(text);
    match ValueSeed::nested(usize::MAX).deserialize(&mut de) {
        Ok(value) if de.end().is_ok() => value,
        _ => Value::Null,
    }
}

/// Reads one JSON value, arrays and objects nested at most `depth_left` deep (deeper is an
/// error carrying [`TOO_DEEP`]), a duplicated member's first occurrence kept.
pub(crate) struct ValueSeed {
    depth_left: usize,
}

impl ValueSeed {
    /// A value nested at most `depth_left` deep.
    pub(crate) fn nested(depth_left: usize) -> Self {
        ValueSeed { depth_left }
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Some(depth_left) = self.depth_left.checked_sub(1) else {
            return Err(de::Error::custom(TOO_DEEP));
        };
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueSeed::nested(depth_left))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Some(depth_left) = self.depth_left.checked_sub(1) else {
            return Err(de::Error::custom(TOO_DEEP));
        };
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed::nested(depth_left))?;
            out.entry(key).or_insert(value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_containers_outside_strings() {
        assert_eq!(nesting("{}"), 1);
        assert_eq!(nesting(r#"{"a":[{"b":"{[{["}]}"#), 3);
        assert_eq!(nesting(r#"{"a":"\"{"}"#), 1);
    }

    #[test]
    fn deeper_than_walks_only_texts_with_more_brackets_than_the_limit() {
        assert!(!deeper_than("{}", 1));
        assert!(deeper_than("[[]]", 1));
        // Brackets in strings count for the first pass, not for the walk.
        assert!(!deeper_than(r#"{"a":"[[[[[["}"#, 2));
        assert!(deeper_than(r#"{"a":[{"b":"{[{["}]}"#, 2));
        assert!(!deeper_than(r#"{"a":[{"b":"{[{["}]}"#, 3));
    }
}
