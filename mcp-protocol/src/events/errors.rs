//! The Events extension's error codes, general-purpose codes in the JSON-RPC server range
//! (-32099…-32000), each with a typed `data` naming its case (the design's *Error Codes*).

use serde_json::json;

use crate::error::RpcError;

/// A referenced entity does not exist: an unknown event type, or no subscription under a key.
pub const NOT_FOUND: i32 = -32011;
/// The principal may not do this (a webhook call without a principal included).
pub const FORBIDDEN: i32 = -32012;
/// A server limit was reached; `data.limit` names it, `data.max` gives it.
pub const RESOURCE_EXHAUSTED: i32 = -32013;
/// A well-formed request for something not offered (a delivery mode a type lacks).
pub const UNSUPPORTED: i32 = -32014;
/// A callback endpoint failed verification or could not be reached; `data.reason` is a
/// `lastError` category.
pub const CALLBACK_ENDPOINT_ERROR: i32 = -32015;

/// What kind of entity a [`NOT_FOUND`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// An event type.
    Event,
    /// A webhook subscription.
    Subscription,
}

/// -32011: `name` is no event type here, or (for [`Missing::Subscription`]) no subscription
/// has this key.
pub fn not_found(missing: Missing, name: &str) -> RpcError {
    match missing {
        Missing::Event => {
            RpcError::new(NOT_FOUND, format!("Unknown event type: {name}")).with_data(json!({"kind": "event"}))
        }
        Missing::Subscription => RpcError::new(NOT_FOUND, format!("No subscription to {name} with this key"))
            .with_data(json!({"kind": "subscription"})),
    }
}

/// -32012 with a reason.
pub fn forbidden(reason: &str) -> RpcError {
    RpcError::new(FORBIDDEN, "Forbidden").with_data(json!({"reason": reason}))
}

/// -32013: the limit `limit` (e.g. `"subscriptions"`) of `max` was reached.
pub fn resource_exhausted(limit: &str, max: u64) -> RpcError {
    RpcError::new(RESOURCE_EXHAUSTED, format!("Limit reached: {limit} (at most {max})"))
        .with_data(json!({"limit": limit, "max": max}))
}

/// -32013: the rate `limit` (e.g. `"verifications"`) allows `max` a minute, and the next is
/// allowed after `retry_after`.
pub fn rate_exhausted(limit: &str, max: u64, retry_after: std::time::Duration) -> RpcError {
    let retry_ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX).max(1);
    RpcError::new(
        RESOURCE_EXHAUSTED,
        format!("Limit reached: {limit} (at most {max} a minute; again in {retry_ms} ms)"),
    )
    .with_data(json!({"limit": limit, "max": max, "retryAfterMs": retry_ms}))
}

/// -32014: `feature` does not support `value` here (e.g. `deliveryMode`, `push`).
pub fn unsupported(feature: &str, value: &str) -> RpcError {
    RpcError::new(UNSUPPORTED, format!("Unsupported {feature}: {value}"))
        .with_data(json!({"feature": feature, "value": value}))
}

/// -32015 with the failure's category (never the endpoint's own words).
pub fn callback_endpoint(reason: super::wire::LastError) -> RpcError {
    RpcError::new(
        CALLBACK_ENDPOINT_ERROR,
        format!("The callback endpoint failed: {}", reason.as_str()),
    )
    .with_data(json!({"reason": reason.as_str()}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::wire::{DeliveryMode, LastError};

    #[test]
    fn every_code_is_in_the_server_range_with_its_data() {
        let all = [
            not_found(Missing::Event, "x"),
            not_found(Missing::Subscription, "x"),
            forbidden("no principal"),
            resource_exhausted("subscriptions", 3),
            unsupported("deliveryMode", DeliveryMode::Push.as_str()),
            callback_endpoint(LastError::ChallengeFailed),
        ];
        for e in &all {
            assert!((-32099..=-32000).contains(&e.code), "{e:?}");
            assert!(e.data.is_some());
        }
        assert_eq!(all[0].data, Some(json!({"kind": "event"})));
        assert_eq!(all[3].data, Some(json!({"limit": "subscriptions", "max": 3})));
        assert_eq!(all[5].data, Some(json!({"reason": "challenge_failed"})));
    }
}
