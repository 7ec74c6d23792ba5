//! Webhook subscription keys: (principal, callback URL, event name, arguments), the arguments
//! compared by canonical JSON, and the subscription id derived from the key.
//!
//! The id is deterministic over the key (the same key gives the same id across refreshes and
//! restarts, on every instance), a routing handle and never an input: knowing it authorizes
//! nothing.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The canonical JSON text of `value`: object members sorted by key (recursively), no
/// whitespace, strings and numbers as `serde_json` writes them.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A webhook subscription's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubscriptionKey {
    /// The authenticated principal owning it.
    pub principal: String,
    /// The callback URL, as the client gave it.
    pub url: String,
    /// The event type.
    pub name: String,
    /// The arguments' canonical JSON.
    pub arguments: String,
}

impl SubscriptionKey {
    /// The key of a subscribe or unsubscribe call.
    pub fn new(principal: &str, url: &str, name: &str, arguments: &Map<String, Value>) -> Self {
        SubscriptionKey {
            principal: principal.to_owned(),
            url: url.to_owned(),
            name: name.to_owned(),
            arguments: canonical_json(&Value::Object(arguments.clone())),
        }
    }

    /// The derived id: `sub_` and 32 hexadecimal digits of SHA-256 over the key's four parts,
    /// each length-prefixed (so no two keys share a serialization).
    pub fn id(&self) -> String {
        let mut hash = Sha256::new();
        for part in [&self.principal, &self.url, &self.name, &self.arguments] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part.as_bytes());
        }
        let digest = hash.finalize();
        let mut id = String::with_capacity(4 + 32);
        id.push_str("sub_");
        for b in &digest[..16] {
            id.push_str(&format!("{b:02x}"));
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn canonical_json_sorts_members_at_every_depth() {
        let a = json!({"b": 1, "a": {"d": [1, {"y": 2, "x": 1}], "c": "é"}});
        assert_eq!(canonical_json(&a), r#"{"a":{"c":"é","d":[1,{"x":1,"y":2}]},"b":1}"#);
    }

    #[test]
    fn ids_follow_the_key_and_nothing_else() {
        let one = SubscriptionKey::new("alice", "https://h.example/a", "t", &args(json!({"x": 1, "y": 2})));
        let same = SubscriptionKey::new("alice", "https://h.example/a", "t", &args(json!({"y": 2, "x": 1})));
        assert_eq!(one.id(), same.id());
        assert!(one.id().starts_with("sub_") && one.id().len() == 36);
        for other in [
            SubscriptionKey::new("bob", "https://h.example/a", "t", &args(json!({"x": 1, "y": 2}))),
            SubscriptionKey::new("alice", "https://h.example/b", "t", &args(json!({"x": 1, "y": 2}))),
            SubscriptionKey::new("alice", "https://h.example/a", "u", &args(json!({"x": 1, "y": 2}))),
            SubscriptionKey::new("alice", "https://h.example/a", "t", &args(json!({"x": 1}))),
        ] {
            assert_ne!(one.id(), other.id());
        }
        // Length prefixes: moving a character between parts changes the id.
        let a = SubscriptionKey::new("ab", "c", "t", &Map::new());
        let b = SubscriptionKey::new("a", "bc", "t", &Map::new());
        assert_ne!(a.id(), b.id());
    }
}
