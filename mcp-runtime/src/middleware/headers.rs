//! [`Headers`]: the header fields middleware layers add to an answer, for a transport that
//! has headers (HTTP) to write.
//!
//! Plain text pairs, so that the runtime names no transport's types: whether a name and a value
//! are valid in a given transport is that transport's rule, checked where it writes them (the
//! HTTP transport leaves out, and logs, a field that is not valid HTTP). A transport without
//! headers (stdio) ignores them.

use std::borrow::Cow;

/// Header fields added to an answer (`Retry-After`, for one), in the order they were first set.
/// Names compare without regard to ASCII case, as header names do: setting a name again
/// replaces its value.
///
/// ```
/// use mcp_runtime::middleware::Headers;
///
/// let mut headers = Headers::new();
/// headers.insert("Retry-After", "1");
/// headers.insert("retry-after", "2");
/// assert_eq!(headers.get("RETRY-AFTER"), Some("2"));
/// assert_eq!(headers.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    fields: Vec<(Cow<'static, str>, String)>,
}

impl Headers {
    /// No fields (allocates nothing).
    pub const fn new() -> Self {
        Headers { fields: Vec::new() }
    }

    /// Sets `name` to `value`, replacing the value a field of that name (in any case) had.
    pub fn insert(&mut self, name: impl Into<Cow<'static, str>>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        match self.fields.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            Some(field) => *field = (name, value),
            None => self.fields.push((name, value)),
        }
    }

    /// The value of the field `name` (in any case), if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The fields, as `(name, value)`, in the order they were first set.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.fields.iter().map(|(n, v)| (&**n, v.as_str()))
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// How many fields are set.
    pub fn len(&self) -> usize {
        self.fields.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_set_again_replaces_its_value_in_place() {
        let mut h = Headers::new();
        assert!(h.is_empty());
        h.insert("retry-after", "1");
        h.insert(String::from("x-rate-remaining"), "9");
        h.insert("Retry-After", 2.to_string());
        assert_eq!(h.len(), 2);
        assert_eq!(h.get("retry-after"), Some("2"));
        assert_eq!(h.get("x-missing"), None);
        assert_eq!(
            h.iter().collect::<Vec<_>>(),
            [("Retry-After", "2"), ("x-rate-remaining", "9")]
        );
    }
}
