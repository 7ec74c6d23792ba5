//! The bounds on what one request can make a server hold for a client: resource subscriptions
//! (the legacy `resources/subscribe` of a session, the `resourceSubscriptions` and `taskIds` of
//! a `subscriptions/listen` filter) and the length of each URI they name.
//!
//! A request over a bound is refused whole with -32602 naming the bound, and nothing of it is
//! kept: a filter is checked before a subscription opens, a subscription before it is added.
//! The same numbers bound both eras, so a client gains nothing by choosing one. With the
//! defaults, one subscription holds at most 64 KiB of URIs, and its acknowledgement (which
//! names what was honoured) is no larger.

use serde_json::{Map, Value};

use crate::error::RpcError;

/// The bounds on subscriptions (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubscriptionBounds {
    /// Most URIs one legacy session subscribes to, and most entries of each list of a listen
    /// filter (default 256).
    pub max_entries: usize,
    /// Longest URI a subscription may name, in bytes (default 4096).
    pub max_uri_bytes: usize,
    /// Most bytes of URIs and task ids one listen filter names, all lists together (default
    /// 64 KiB).
    pub max_filter_bytes: usize,
}

impl Default for SubscriptionBounds {
    fn default() -> Self {
        SubscriptionBounds {
            max_entries: 256,
            max_uri_bytes: 4096,
            max_filter_bytes: 64 * 1024,
        }
    }
}

impl SubscriptionBounds {
    /// A URI a subscription may name: -32602 when it is longer than
    /// [`max_uri_bytes`](Self::max_uri_bytes).
    pub fn check_uri(&self, uri: &str) -> Result<(), RpcError> {
        if uri.len() > self.max_uri_bytes {
            return Err(RpcError::invalid_params(format!(
                "uri is longer than {} bytes",
                self.max_uri_bytes
            )));
        }
        Ok(())
    }

    /// One more legacy subscription on a session that holds `held`: -32602 at
    /// [`max_entries`](Self::max_entries).
    pub fn check_one_more(&self, held: usize) -> Result<(), RpcError> {
        if held >= self.max_entries {
            return Err(RpcError::invalid_params(format!(
                "too many resource subscriptions for this session (limit {})",
                self.max_entries
            )));
        }
        Ok(())
    }

    /// The lists of a listen filter (`notifications`): each list at most
    /// [`max_entries`](Self::max_entries) entries, each URI at most
    /// [`max_uri_bytes`](Self::max_uri_bytes), all strings together at most
    /// [`max_filter_bytes`](Self::max_filter_bytes).
    pub fn check_filter(&self, requested: &Map<String, Value>) -> Result<(), RpcError> {
        let mut bytes = 0usize;
        for key in ["resourceSubscriptions", "taskIds"] {
            let Some(list) = requested.get(key).and_then(Value::as_array) else {
                continue;
            };
            if list.len() > self.max_entries {
                return Err(RpcError::invalid_params(format!(
                    "notifications.{key} has more than {} entries",
                    self.max_entries
                )));
            }
            for s in list.iter().filter_map(Value::as_str) {
                if key == "resourceSubscriptions" {
                    self.check_uri(s)?;
                }
                bytes += s.len();
            }
        }
        if bytes > self.max_filter_bytes {
            return Err(RpcError::invalid_params(format!(
                "notifications names more than {} bytes of URIs and task ids",
                self.max_filter_bytes
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn small() -> SubscriptionBounds {
        SubscriptionBounds {
            max_entries: 2,
            max_uri_bytes: 8,
            max_filter_bytes: 12,
        }
    }

    fn filter(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn uris_over_the_length_are_refused_naming_it() {
        assert!(small().check_uri("test://a").is_ok());
        let e = small().check_uri("test://ab").unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("8 bytes"), "{}", e.message);
    }

    #[test]
    fn a_session_holds_at_most_max_entries() {
        assert!(small().check_one_more(1).is_ok());
        let e = small().check_one_more(2).unwrap_err();
        assert!(e.message.contains("limit 2"), "{}", e.message);
    }

    #[test]
    fn filters_are_bounded_by_entries_uri_length_and_bytes() {
        let b = small();
        assert!(
            b.check_filter(&filter(json!({"resourceSubscriptions": ["a://1", "a://2"]})))
                .is_ok()
        );
        let too_many = b
            .check_filter(&filter(json!({"taskIds": ["1", "2", "3"]})))
            .unwrap_err();
        assert!(
            too_many.message.contains("taskIds has more than 2"),
            "{}",
            too_many.message
        );
        let too_long = b
            .check_filter(&filter(json!({"resourceSubscriptions": ["a://123456"]})))
            .unwrap_err();
        assert!(too_long.message.contains("8 bytes"), "{}", too_long.message);
        let too_big = b
            .check_filter(&filter(
                json!({"resourceSubscriptions": ["a://1234"], "taskIds": ["123456"]}),
            ))
            .unwrap_err();
        assert!(too_big.message.contains("12 bytes"), "{}", too_big.message);
        // Lists of the wrong type are left to the filter's own parsing.
        assert!(b.check_filter(&filter(json!({"taskIds": "x"}))).is_ok());
    }
}
