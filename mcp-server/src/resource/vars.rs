//! The variables of a resource template, deserialized the way axum's `Path` deserializes path
//! segments: each variable arrives as a string and is parsed into what the field asks for (a
//! number, a `bool`, a `char`, an `Option`, a unit enum variant, a newtype), on demand.
//!
//! serde's derive asks the deserializer for the type of each field, so a `u64` field calls
//! `deserialize_u64` and the string is parsed then; a `String` field takes the string as it
//! is. A value that does not parse names its variable: `invalid value for template variable
//! "id": expected u64, got "abc"`.

use std::borrow::Cow;

use serde::de::value::{MapDeserializer, StrDeserializer};
use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

/// Why the variables did not fit the type asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum VarsError {
    /// One variable's value did not fit its field.
    #[error("invalid value for template variable {name:?}: {reason}")]
    Variable {
        /// The variable.
        name: String,
        /// What was wrong with its value.
        reason: String,
    },
    /// The variables as a whole did not fit (a field with no variable, say).
    #[error("invalid template variables: {0}")]
    Shape(String),
}

impl de::Error for VarsError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        VarsError::Shape(msg.to_string())
    }
}

impl VarsError {
    /// The error, said of the variable `name` unless it already names one.
    fn of(self, name: &str) -> Self {
        match self {
            VarsError::Shape(reason) => VarsError::Variable {
                name: name.to_owned(),
                reason,
            },
            named => named,
        }
    }
}

/// Deserializes a template's matched variables into `T` (a struct whose fields are named as
/// the variables, or a map).
pub(crate) fn from_vars<T: DeserializeOwned>(vars: &Map<String, Value>) -> Result<T, VarsError> {
    let entries = vars.iter().map(|(name, value)| {
        let text = match value {
            Value::String(s) => Cow::Borrowed(s.as_str()),
            // The matcher gives strings only; a map built by hand may hold other JSON, read
            // from its text.
            other => Cow::Owned(other.to_string()),
        };
        (name.as_str(), Var { name, text })
    });
    T::deserialize(MapDeserializer::new(entries))
}

/// One variable: its name (for errors) and its text.
struct Var<'a> {
    name: &'a str,
    text: Cow<'a, str>,
}

impl<'de, 'a> IntoDeserializer<'de, VarsError> for Var<'a> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl Var<'_> {
    /// The error of a value that does not parse as `expected`.
    fn expected(&self, expected: &str) -> VarsError {
        VarsError::Variable {
            name: self.name.to_owned(),
            reason: format!("expected {expected}, got {:?}", self.text),
        }
    }
}

/// A `deserialize_*` that parses the text with `FromStr` and hands the value to the visitor.
macro_rules! parse_as {
    ($($method:ident => $visit:ident($ty:ty),)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, VarsError> {
                let parsed: $ty = self.text.parse().map_err(|_| self.expected(stringify!($ty)))?;
                visitor.$visit::<VarsError>(parsed).map_err(|e| e.of(self.name))
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for Var<'_> {
    type Error = VarsError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, VarsError> {
        let name = self.name;
        match self.text {
            Cow::Borrowed(s) => visitor.visit_str::<VarsError>(s),
            Cow::Owned(s) => visitor.visit_string::<VarsError>(s),
        }
        .map_err(|e| e.of(name))
    }

    parse_as! {
        deserialize_bool => visit_bool(bool),
        deserialize_i8 => visit_i8(i8),
        deserialize_i16 => visit_i16(i16),
        deserialize_i32 => visit_i32(i32),
        deserialize_i64 => visit_i64(i64),
        deserialize_i128 => visit_i128(i128),
        deserialize_u8 => visit_u8(u8),
        deserialize_u16 => visit_u16(u16),
        deserialize_u32 => visit_u32(u32),
        deserialize_u64 => visit_u64(u64),
        deserialize_u128 => visit_u128(u128),
        deserialize_f32 => visit_f32(f32),
        deserialize_f64 => visit_f64(f64),
        deserialize_char => visit_char(char),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, VarsError> {
        // A variable that matched has a value: `Some` of it (a field with no variable is `None`).
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, VarsError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, VarsError> {
        // A unit variant named by the text.
        let name = self.name;
        let text: StrDeserializer<'_, VarsError> = self.text.as_ref().into_deserializer();
        visitor.visit_enum(text).map_err(|e| e.of(name))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, VarsError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    fn vars(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("the tests give objects"),
        }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Kind {
        Draft,
        Final,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Slug(String);

    #[derive(Debug, PartialEq, Deserialize)]
    struct Every {
        id: u64,
        offset: i32,
        ratio: f64,
        pinned: bool,
        initial: char,
        kind: Kind,
        slug: Slug,
        name: String,
        page: Option<u16>,
        missing: Option<u16>,
    }

    #[test]
    fn strings_parse_into_what_each_field_asks_for() {
        let got: Every = from_vars(&vars(json!({
            "id": "18446744073709551615", "offset": "-3", "ratio": "0.5", "pinned": "true",
            "initial": "é", "kind": "final", "slug": "a-b", "name": "42", "page": "7",
        })))
        .unwrap();
        assert_eq!(
            got,
            Every {
                id: u64::MAX,
                offset: -3,
                ratio: 0.5,
                pinned: true,
                initial: 'é',
                kind: Kind::Final,
                slug: Slug("a-b".into()),
                name: "42".into(),
                page: Some(7),
                missing: None,
            }
        );
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Note {
        id: u64,
    }

    fn error_of<T: DeserializeOwned + std::fmt::Debug>(v: Value) -> String {
        from_vars::<T>(&vars(v)).unwrap_err().to_string()
    }

    #[test]
    fn a_value_that_does_not_parse_names_its_variable() {
        assert_eq!(
            error_of::<Note>(json!({"id": "abc"})),
            r#"invalid value for template variable "id": expected u64, got "abc""#
        );
        assert_eq!(
            error_of::<Note>(json!({"id": "-1"})),
            r#"invalid value for template variable "id": expected u64, got "-1""#
        );
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Flag {
            on: bool,
        }
        assert_eq!(
            error_of::<Flag>(json!({"on": "yes"})),
            r#"invalid value for template variable "on": expected bool, got "yes""#
        );
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Pick {
            kind: Kind,
        }
        let e = error_of::<Pick>(json!({"kind": "other"}));
        assert!(
            e.starts_with(r#"invalid value for template variable "kind": unknown variant `other`"#),
            "{e}"
        );
    }

    #[test]
    fn a_field_without_its_variable_is_a_shape_error() {
        assert_eq!(
            error_of::<Note>(json!({"name": "x"})),
            "invalid template variables: missing field `id`"
        );
    }

    #[test]
    fn a_map_takes_every_variable_parsed_alike() {
        let got: BTreeMap<String, u8> = from_vars(&vars(json!({"a": "1", "b": "2"}))).unwrap();
        assert_eq!(got, BTreeMap::from([("a".into(), 1), ("b".into(), 2)]));
        let e = error_of::<BTreeMap<String, u8>>(json!({"a": "300"}));
        assert_eq!(e, r#"invalid value for template variable "a": expected u8, got "300""#);
    }

    #[test]
    fn values_that_are_not_strings_are_read_from_their_text() {
        let got: Note = from_vars(&vars(json!({"id": 5}))).unwrap();
        assert_eq!(got.id, 5);
    }
}
