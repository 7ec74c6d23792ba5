//! Matching URIs against RFC 6570 templates, to route `resources/read` to the
//! template that yields the URI.
//!
//! URI-template crates expand templates; routing needs the reverse (which
//! template produced this URI, with which variables), which none of them
//! offers, so this small matcher is written here. It supports the forms a
//! resource template uses: simple `{var}` (a value without `/`, `?`, `#`),
//! reserved `{+var}` (any characters), and literal text between them.
//! Matched values are percent-decoded.

use serde_json::{Map, Value};

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var { name: String, reserved: bool },
}

/// The template is not one this matcher can route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct TemplateError {
    template: String,
    reason: &'static str,
}

impl UriTemplate {
    /// Parses a template.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |reason| TemplateError {
            template: template.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or_else(|| err("unclosed '{'"))?;
                    let expr = &rest[1..end];
                    let (reserved, name) = match expr.strip_prefix('+') {
                        Some(n) => (true, n),
                        None => (false, expr),
                    };
                    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
                        return Err(err("unsupported expression (only {var} and {+var})"));
                    }
                    if matches!(parts.last(), Some(Part::Var { .. })) {
                        return Err(err("two variables without literal text between them"));
                    }
                    parts.push(Part::Var {
                        name: name.to_owned(),
                        reserved,
                    });
                    rest = &rest[end + 1..];
                }
                Some(i) => {
                    if rest[..i].contains('}') {
                        return Err(err("unmatched '}'"));
                    }
                    parts.push(Part::Literal(rest[..i].to_owned()));
                    rest = &rest[i..];
                }
                None => {
                    if rest.contains('}') {
                        return Err(err("unmatched '}'"));
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Ok(UriTemplate { parts })
    }

    /// Whether the template has a variable named `name`.
    pub fn has_variable(&self, name: &str) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Var { name: n, .. } if n == name))
    }

    /// The variables of a URI the template yields, or `None`.
    pub fn matches(&self, uri: &str) -> Option<Map<String, Value>> {
        let mut vars = Map::new();
        let mut rest = uri;
        for (i, part) in self.parts.iter().enumerate() {
            match part {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var { name, reserved } => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || (!reserved && value.contains(['/', '?', '#'])) {
                        return None;
                    }
                    vars.insert(name.clone(), Value::String(percent_decode(value)?));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            // Exactly two hex digits (`from_str_radix` alone would take a sign: `%+1`).
            let hex = s
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn match_table() {
        let table: [(&str, &str, Option<Value>); 10] = [
            (
                "test://template/{id}/data",
                "test://template/123/data",
                Some(json!({"id": "123"})),
            ),
            ("test://template/{id}/data", "test://template/1/2/data", None),
            ("test://template/{id}/data", "test://template//data", None),
            ("test://template/{id}/data", "test://template/1/datax", None),
            (
                "file:///{+path}",
                "file:///a/b/c.txt",
                Some(json!({"path": "a/b/c.txt"})),
            ),
            (
                "users://{user}/posts/{post}",
                "users://ann/posts/7",
                Some(json!({"user": "ann", "post": "7"})),
            ),
            ("x://{name}", "x://hello%20world", Some(json!({"name": "hello world"}))),
            ("x://{name}", "x://bad%zz", None),
            ("x://{name}", "x://%+1", None),
            ("x://static", "x://static", Some(json!({}))),
        ];
        for (t, uri, want) in table {
            let got = UriTemplate::parse(t).unwrap().matches(uri).map(Value::Object);
            assert_eq!(got, want, "{t} ~ {uri}");
        }
    }

    #[test]
    fn rejects_unsupported_templates() {
        for t in ["x://{", "x://{a}{b}", "x://{?q}", "x://}", "x://{}", "x}{a}"] {
            assert!(UriTemplate::parse(t).is_err(), "{t}");
        }
    }
}
