//! [`Params`]: a request's or notification's `params` object, kept as the JSON text it arrived
//! as.
//!
//! # Design
//!
//! Decoding a message used to build its params as a `serde_json::Value` tree: one allocation
//! per object, key and string, most of them for members nobody reads (a modern request's
//! `_meta` names its client twice over). Here the decoder copies the params text once and
//! indexes its top-level members (where each key and value lies in the text). A reader takes
//! what it needs from the text: a string member borrowed ([`Params::str`]), a typed member
//! deserialized straight from its text ([`Params::parse`]), the `_meta` members through the
//! same kind of index ([`Params::meta`], built once, on first use). The whole object as a map
//! ([`Params::object`]) is built only when something asks for it, once.
//!
//! The rules of the map hold for the index too: the first occurrence of a duplicated key wins,
//! and nothing here reads past the depth limit the decoder checked.
//!
//! `Params` is cheap to clone (it is shared, not copied, with a handler's context).

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock, OnceLock};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use index::Members;

mod index;

/// The params object of a request or notification.
#[derive(Clone)]
pub struct Params(Arc<Inner>);

struct Inner {
    /// The object's JSON text.
    text: Box<RawValue>,
    /// Its top-level members.
    members: Members,
    /// The members of its `_meta` object, indexed on first use (`None`: no `_meta` object).
    meta: OnceLock<Option<Members>>,
    /// The whole object, built on first use.
    object: OnceLock<Map<String, Value>>,
}

/// A view of one indexed object: its text and members.
#[derive(Clone, Copy)]
pub struct Object<'a> {
    text: &'a str,
    members: &'a Members,
}

impl<'a> Object<'a> {
    /// The JSON text of member `key`, if present.
    pub fn raw(&self, key: &str) -> Option<&'a str> {
        self.members.find(self.text, key).map(|r| &self.text[r])
    }

    /// Whether member `key` is present (whatever its value, `null` included).
    pub fn contains(&self, key: &str) -> bool {
        self.members.find(self.text, key).is_some()
    }

    /// Member `key` when it is a string (borrowed unless it had escapes).
    pub fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        let raw = self.raw(key)?;
        if !raw.starts_with('"') {
            return None;
        }
        if !raw.contains('\\') {
            return Some(Cow::Borrowed(&raw[1..raw.len() - 1]));
        }
        serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
    }

    /// Member `key` deserialized from its text (`None` when absent).
    pub fn parse<T: Deserialize<'a>>(&self, key: &str) -> Option<Result<T, serde_json::Error>> {
        self.raw(key).map(serde_json::from_str)
    }

    /// Member `key` as a value (`None` when absent; duplicated keys inside keep their first
    /// occurrence).
    pub fn value(&self, key: &str) -> Option<Value> {
        self.raw(key).map(parse_value)
    }

    /// Whether member `key` is present and not `null`.
    pub fn has(&self, key: &str) -> bool {
        self.raw(key).is_some_and(|r| r != "null")
    }
}

/// Parses text the decoder already checked (valid JSON, within its depth limit).
fn parse_value(text: &str) -> Value {
    crate::json::first_occurrence(text)
}

/// Why params text could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamsError {
    /// The params are not an object.
    #[error("params must be an object")]
    NotAnObject,
    /// The text is not JSON.
    #[error("{0}")]
    Parse(String),
}

impl Params {
    /// Params from their JSON text (an object, already within the decoder's depth limit).
    pub fn from_raw(text: Box<RawValue>) -> Result<Params, ParamsError> {
        let s = text.get();
        if !s.starts_with('{') {
            return Err(ParamsError::NotAnObject);
        }
        let members = Members::index(s, 0..s.len()).map_err(|e| ParamsError::Parse(e.to_string()))?;
        Ok(Params(Arc::new(Inner {
            text,
            members,
            meta: OnceLock::new(),
            object: OnceLock::new(),
        })))
    }

    /// Params from an object.
    pub fn from_object(object: Map<String, Value>) -> Params {
        let text = serde_json::value::to_raw_value(&object).unwrap_or_else(|_| empty_object());
        let s = text.get();
        let members = Members::index(s, 0..s.len()).unwrap_or_default();
        Params(Arc::new(Inner {
            text,
            members,
            meta: OnceLock::new(),
            object: OnceLock::from(object),
        }))
    }

    /// Params from a value: `None` when it is not an object.
    pub fn from_value(value: Value) -> Option<Params> {
        match value {
            Value::Object(o) => Some(Params::from_object(o)),
            _ => None,
        }
    }

    /// The params' JSON text.
    pub fn text(&self) -> &str {
        self.0.text.get()
    }

    /// The params' top-level members.
    pub fn members(&self) -> Object<'_> {
        Object {
            text: self.text(),
            members: &self.0.members,
        }
    }

    /// The JSON text of member `key`, if present.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.members().raw(key)
    }

    /// Whether member `key` is present (whatever its value).
    pub fn contains(&self, key: &str) -> bool {
        self.members().contains(key)
    }

    /// Whether member `key` is present and not `null`.
    pub fn has(&self, key: &str) -> bool {
        self.members().has(key)
    }

    /// Member `key` when it is a string.
    pub fn str(&self, key: &str) -> Option<Cow<'_, str>> {
        self.members().str(key)
    }

    /// Member `key` deserialized from its text (`None` when absent).
    pub fn parse<'a, T: Deserialize<'a>>(&'a self, key: &str) -> Option<Result<T, serde_json::Error>> {
        self.members().parse(key)
    }

    /// Member `key` as a value (`None` when absent).
    pub fn value(&self, key: &str) -> Option<Value> {
        self.members().value(key)
    }

    /// The members of the `_meta` object (`None` when there is none, or it is not an object),
    /// indexed once.
    pub fn meta(&self) -> Option<Object<'_>> {
        let text = self.text();
        let members = self
            .0
            .meta
            .get_or_init(|| {
                let range = self.0.members.find(text, "_meta")?;
                if !text[range.clone()].starts_with('{') {
                    return None;
                }
                Members::index(text, range).ok()
            })
            .as_ref()?;
        Some(Object { text, members })
    }

    /// The whole object, built on first use.
    pub fn object(&self) -> &Map<String, Value> {
        self.0.object.get_or_init(|| match parse_value(self.text()) {
            Value::Object(o) => o,
            _ => Map::new(),
        })
    }

    /// The whole object, owned.
    pub fn into_object(self) -> Map<String, Value> {
        match Arc::try_unwrap(self.0) {
            Ok(inner) => match inner.object.into_inner() {
                Some(o) => o,
                None => match parse_value(inner.text.get()) {
                    Value::Object(o) => o,
                    _ => Map::new(),
                },
            },
            Err(shared) => Params(shared).object().clone(),
        }
    }
}

fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| unreachable!("`{{}}` is JSON"))
}

/// Empty params (`{}`), shared: cloning them allocates nothing.
impl Default for Params {
    fn default() -> Self {
        static EMPTY: LazyLock<Params> = LazyLock::new(|| Params::from_object(Map::new()));
        EMPTY.clone()
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Params").field(&self.text()).finish()
    }
}

/// Params are equal when their objects are.
impl PartialEq for Params {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text() || self.object() == other.object()
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.text.serialize(s)
    }
}

impl From<Map<String, Value>> for Params {
    fn from(object: Map<String, Value>) -> Self {
        Params::from_object(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(text: &str) -> Params {
        Params::from_raw(RawValue::from_string(text.to_owned()).unwrap()).unwrap()
    }

    #[test]
    fn members_are_read_from_the_text() {
        let p = params(r#"{"name":"echo","arguments":{"text":"hi"},"n":3,"z":null}"#);
        assert_eq!(p.str("name").as_deref(), Some("echo"));
        assert_eq!(p.raw("arguments"), Some(r#"{"text":"hi"}"#));
        assert_eq!(p.parse::<u32>("n").unwrap().unwrap(), 3);
        assert!(p.contains("z") && !p.has("z"));
        assert!(p.str("n").is_none(), "not a string");
        assert!(p.raw("missing").is_none());
        assert_eq!(
            p.object(),
            json!({"name":"echo","arguments":{"text":"hi"},"n":3,"z":null})
                .as_object()
                .unwrap()
        );
    }

    #[test]
    fn the_first_of_a_duplicated_key_wins_as_in_the_map() {
        let p = params(r#"{"a":1,"a":2,"m":{"b":1,"b":2}}"#);
        assert_eq!(p.raw("a"), Some("1"));
        assert_eq!(p.object()["a"], 1);
        assert_eq!(p.value("m"), Some(json!({"b": 1})));
    }

    #[test]
    fn escaped_keys_and_strings_are_unescaped() {
        let p = params(r#"{"na\u006de":"a\"b","\u005fmeta":{"k\\":"v"}}"#);
        assert_eq!(p.str("name").as_deref(), Some("a\"b"));
        assert_eq!(p.meta().unwrap().str("k\\").as_deref(), Some("v"));
    }

    #[test]
    fn meta_is_indexed_like_the_params() {
        let p = params(r#"{"_meta":{"progressToken":7,"x":"y"},"a":1}"#);
        let meta = p.meta().unwrap();
        assert_eq!(meta.raw("progressToken"), Some("7"));
        assert_eq!(meta.str("x").as_deref(), Some("y"));
        assert!(params(r#"{"_meta":3}"#).meta().is_none());
        assert!(params("{}").meta().is_none());
    }

    #[test]
    fn an_object_round_trips() {
        let object = json!({"b": [1, {"c": "d"}], "a": "x"}).as_object().unwrap().clone();
        let p = Params::from_object(object.clone());
        assert_eq!(p.str("a").as_deref(), Some("x"));
        assert_eq!(serde_json::to_value(&p).unwrap(), Value::Object(object.clone()));
        assert_eq!(p.into_object(), object);
        assert_eq!(
            Params::from_raw(RawValue::from_string("[1]".into()).unwrap()),
            Err(ParamsError::NotAnObject)
        );
    }
}
