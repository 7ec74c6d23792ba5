//! [`Members`]: where the members of one JSON object lie in a text.
//!
//! # Design
//!
//! The text is JSON already checked: the decoder parsed it (a `RawValue` is valid by
//! construction). Finding the members again with `serde_json` validated every byte a second
//! time through its visitor machinery, and a request's params are indexed twice (the object,
//! then its `_meta`). Here a walk over the bytes only finds boundaries: a key's quotes, the
//! colon, where a value ends (a string's closing quote, the bracket that closes a container,
//! the delimiter after a scalar): `json::string_end` and `json::container`, the walkers the
//! decoder's depth check uses too. A key with escapes is unescaped with `serde_json`. Text that
//! is not a JSON object (which no caller hands over) is an error, never a panic.
//!
//! The first occurrence of a duplicated key wins, as in the decoder.

use std::collections::HashSet;
use std::ops::Range;

use crate::json;

/// Where the members of one JSON object lie in a text (first occurrence of each key).
#[derive(Debug, Default)]
pub(super) struct Members(Vec<Member>);

#[derive(Debug)]
struct Member {
    key: Key,
    value: Range<usize>,
}

/// A member's key: where it lies in the text, or its unescaped form when it had escapes.
#[derive(Debug)]
enum Key {
    At(Range<usize>),
    Unescaped(Box<str>),
}

/// Why a text could not be indexed: it is not a JSON object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("params text is not a JSON object")]
pub(super) struct NotAnObject;

/// Members beyond which duplicates are found through a set rather than by a linear look back.
const LINEAR_DEDUP: usize = 16;

impl Members {
    /// Indexes the members of the object `text[within]` (valid JSON).
    pub(super) fn index(text: &str, within: Range<usize>) -> Result<Members, NotAnObject> {
        let mut walk = Walk {
            b: text.as_bytes(),
            i: within.start,
            end: within.end,
        };
        walk.blanks();
        walk.expect(b'{')?;
        let mut members: Vec<Member> = Vec::with_capacity(8);
        let mut seen: Option<HashSet<String>> = None;
        walk.blanks();
        if walk.peek() == Some(b'}') {
            walk.i += 1;
            return walk.finish(members);
        }
        loop {
            let (quoted, escaped) = walk.string()?;
            let key = if escaped {
                let unescaped: String = serde_json::from_str(&text[quoted.clone()]).map_err(|_| NotAnObject)?;
                Key::Unescaped(unescaped.into_boxed_str())
            } else {
                Key::At(quoted.start + 1..quoted.end - 1)
            };
            walk.blanks();
            walk.expect(b':')?;
            walk.blanks();
            let value = walk.value()?;
            let duplicate = {
                let name = name_of(text, &key);
                match &mut seen {
                    Some(set) => !set.insert(name.to_owned()),
                    None => {
                        let dup = members.iter().any(|m| name_of(text, &m.key) == name);
                        if members.len() >= LINEAR_DEDUP {
                            let names = members.iter().map(|m| name_of(text, &m.key)).chain([name]);
                            seen = Some(names.map(str::to_owned).collect());
                        }
                        dup
                    }
                }
            };
            if !duplicate {
                members.push(Member { key, value });
            }
            walk.blanks();
            match walk.next()? {
                b',' => walk.blanks(),
                b'}' => return walk.finish(members),
                _ => return Err(NotAnObject),
            }
        }
    }

    /// Where the value of member `key` lies, if present.
    pub(super) fn find(&self, text: &str, key: &str) -> Option<Range<usize>> {
        self.0
            .iter()
            .find_map(|m| (name_of(text, &m.key) == key).then(|| m.value.clone()))
    }
}

/// The name a key stands for.
fn name_of<'a>(text: &'a str, key: &'a Key) -> &'a str {
    match key {
        Key::At(r) => &text[r.clone()],
        Key::Unescaped(k) => k,
    }
}

/// A walk over valid JSON bytes, within `..end`.
struct Walk<'a> {
    b: &'a [u8],
    i: usize,
    end: usize,
}

impl Walk<'_> {
    fn peek(&self) -> Option<u8> {
        (self.i < self.end).then(|| self.b[self.i])
    }

    fn next(&mut self) -> Result<u8, NotAnObject> {
        let c = self.peek().ok_or(NotAnObject)?;
        self.i += 1;
        Ok(c)
    }

    fn expect(&mut self, c: u8) -> Result<(), NotAnObject> {
        if self.next()? == c { Ok(()) } else { Err(NotAnObject) }
    }

    /// Skips JSON whitespace.
    fn blanks(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// The string starting here, quotes included, and whether it has escapes.
    fn string(&mut self) -> Result<(Range<usize>, bool), NotAnObject> {
        let start = self.i;
        if self.peek() != Some(b'"') {
            return Err(NotAnObject);
        }
        let (end, escaped) = json::string_end(&self.b[..self.end], start);
        self.i = end.ok_or(NotAnObject)?;
        Ok((start..self.i, escaped))
    }

    /// The value starting here.
    fn value(&mut self) -> Result<Range<usize>, NotAnObject> {
        let start = self.i;
        match self.peek().ok_or(NotAnObject)? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                self.i = json::container(&self.b[..self.end], start).0.ok_or(NotAnObject)?;
            }
            _ => {
                // A number, `true`, `false` or `null`: up to the next delimiter.
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.i += 1;
                }
                if self.i == start {
                    return Err(NotAnObject);
                }
            }
        }
        Ok(start..self.i)
    }

    /// The members, once the object closed: nothing but blanks may follow it.
    fn finish(mut self, members: Vec<Member>) -> Result<Members, NotAnObject> {
        self.blanks();
        if self.i == self.end {
            Ok(Members(members))
        } else {
            Err(NotAnObject)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    /// The members as `serde_json` reads them (first occurrence wins), each value as text.
    fn reference(text: &str) -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = Vec::new();
        let raw: Vec<(String, Box<serde_json::value::RawValue>)> = {
            struct Pairs(Vec<(String, Box<serde_json::value::RawValue>)>);
            impl<'de> serde::Deserialize<'de> for Pairs {
                fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    struct V;
                    impl<'de> serde::de::Visitor<'de> for V {
                        type Value = Pairs;
                        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                            f.write_str("an object")
                        }
                        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Pairs, A::Error> {
                            let mut v = Vec::new();
                            while let Some(e) = m.next_entry()? {
                                v.push(e);
                            }
                            Ok(Pairs(v))
                        }
                    }
                    d.deserialize_map(V)
                }
            }
            serde_json::from_str::<Pairs>(text).unwrap().0
        };
        for (k, v) in raw {
            if out.iter().all(|(seen, _)| *seen != k) {
                out.push((k, serde_json::from_str(v.get()).unwrap()));
            }
        }
        out
    }

    fn indexed(text: &str) -> Vec<(String, Value)> {
        let members = Members::index(text, 0..text.len()).unwrap();
        members
            .0
            .iter()
            .map(|m| {
                (
                    name_of(text, &m.key).to_owned(),
                    serde_json::from_str(&text[m.value.clone()]).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn members_of_objects_as_written() {
        for text in [
            "{}",
            " { } ",
            r#"{"a":1}"#,
            "{ \"a\" :\t-1.5e3 ,\n\"b\": [1, {\"c\": \"}]\"}], \"d\":null,\"e\":true,\"f\":false}",
            r#"{"k\"ey":"v\\","a\u0062":{"x":"\""},"ab":2}"#,
            r#"{"a":1,"a":2,"b":{"a":3}}"#,
            r#"{"_meta":{"protocolVersion":"2026-07-28","clientInfo":{"name":"x"}},"name":"echo"}"#,
        ] {
            assert_eq!(indexed(text), reference(text), "{text}");
        }
    }

    #[test]
    fn text_that_is_not_an_object_is_refused() {
        for text in ["[]", "1", "\"a\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{} x", ""] {
            assert_eq!(Members::index(text, 0..text.len()).unwrap_err(), NotAnObject, "{text}");
        }
    }

    #[test]
    fn many_duplicates_keep_their_first_occurrence() {
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{}\":{i},", i % 40));
        }
        text.push_str("\"last\":0}");
        assert_eq!(indexed(&text), reference(&text));
        assert_eq!(indexed(&text).len(), 41);
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            "[a-z\"\\\\{}\\[\\],: \u{e9}\u{1F600}]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-c\"\\\\]{0,3}", inner), 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_index_agrees_with_serde_json(
            members in prop::collection::vec(("[a-c\"\\\\]{0,3}", json_value()), 0..8),
            pretty in any::<bool>(),
        ) {
            // Written member by member, so that duplicated keys stay in the text.
            let sep = if pretty { " ,\n " } else { "," };
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| {
                    let v = if pretty { serde_json::to_string_pretty(v).unwrap() } else { v.to_string() };
                    format!("{}{}{}", Value::from(k.as_str()), if pretty { " : " } else { ":" }, v)
                })
                .collect();
            let text = format!("{{{}}}", body.join(sep));
            prop_assert_eq!(indexed(&text), reference(&text));
        }
    }
}
