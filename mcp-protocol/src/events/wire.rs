//! The wire types of the Events extension: event descriptors and occurrences, the params and
//! results of its methods, and the params of its notifications.
//!
//! Params are read leniently where the design is lenient (an absent `cursor` is `null`, an
//! absent `arguments` is `{}`, unknown members are ignored) and strictly where it is strict (a
//! member of the wrong JSON type is -32602, naming it).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::RpcError;
use crate::jsonrpc::RequestId;

use super::SUBSCRIPTION_ID_META;

/// A way occurrences reach a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryMode {
    /// `events/poll`.
    Poll,
    /// `events/stream`.
    Push,
    /// `events/subscribe` and signed POSTs to a callback.
    Webhook,
}

impl DeliveryMode {
    /// Every mode, in the design's order.
    pub const ALL: [DeliveryMode; 3] = [DeliveryMode::Poll, DeliveryMode::Push, DeliveryMode::Webhook];

    /// The mode's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::Poll => "poll",
            DeliveryMode::Push => "push",
            DeliveryMode::Webhook => "webhook",
        }
    }
}

/// One entry of `events/list`: an event type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDescriptor {
    /// The type's name (`build.finished`).
    pub name: String,
    /// What an occurrence means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The modes it is offered in: a non-empty set, without repetition.
    pub delivery: Vec<DeliveryMode>,
    /// The JSON Schema of a subscription's `arguments`.
    pub input_schema: Value,
    /// The JSON Schema of an occurrence's `data`.
    pub payload_schema: Value,
    /// Metadata, as on a tool.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// The result of `events/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListEventsResult {
    /// This page's event types.
    pub events: Vec<EventDescriptor>,
    /// The cursor of the next page, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One occurrence of an event type: an entry of a poll result, the params of
/// `notifications/events/event` (with the stream's `_meta`) and the body of a webhook delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventOccurrence {
    /// Stable identifier, for the client's deduplication.
    pub event_id: String,
    /// The event type's name.
    pub name: String,
    /// When it occurred (ISO 8601, UTC).
    pub timestamp: String,
    /// The payload, following the type's `payloadSchema`.
    pub data: Map<String, Value>,
    /// The position after this occurrence (push and webhook; a poll result carries its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Metadata (not governed by `payloadSchema`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// What every subscribing request names: the type, the arguments and where to start. The
/// params of `events/stream`; flattened into those of `events/poll` and `events/subscribe`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (`{}` when absent).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Where to resume; `None` (absent or `null`) starts from now.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Replay nothing older than this many milliseconds.
    #[serde(default)]
    pub max_age_ms: Option<u64>,
}

/// The params of `events/poll`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollParams {
    /// The type, arguments and cursor.
    #[serde(flatten)]
    pub subscription: SubscriptionParams,
    /// At most this many occurrences.
    #[serde(default)]
    pub max_events: Option<u64>,
    /// Hold the request at most this long waiting for an occurrence.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// The result of `events/poll`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PollResult {
    /// The occurrences, oldest first (empty when nothing happened).
    pub events: Vec<EventOccurrence>,
    /// Where the next poll resumes (`null` for a type without replay).
    pub cursor: Option<String>,
    /// Occurrences were skipped between the cursor given and this result's.
    pub truncated: bool,
    /// More occurrences wait: poll again at once.
    pub has_more: bool,
    /// How long to wait before the next poll.
    pub next_poll_ms: u64,
}

/// Where a webhook subscription delivers.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WebhookDelivery {
    /// `"webhook"` when given.
    #[serde(default)]
    pub mode: Option<String>,
    /// The callback URL.
    pub url: String,
    /// The `whsec_` signing secret (required on subscribe, absent on unsubscribe).
    #[serde(default)]
    pub secret: Option<String>,
}

/// The lifetime a subscribe suggests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TtlRequest {
    /// `ttlMs` absent: the server's default.
    #[default]
    Default,
    /// `ttlMs: null`: no expiry.
    NoExpiry,
    /// A suggestion in milliseconds.
    Millis(u64),
}

impl<'de> Deserialize<'de> for TtlRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Option::<u64>::deserialize(d)? {
            None => TtlRequest::NoExpiry,
            Some(ms) => TtlRequest::Millis(ms),
        })
    }
}

/// The params of `events/subscribe`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeParams {
    /// The type, arguments and cursor.
    #[serde(flatten)]
    pub subscription: SubscriptionParams,
    /// Where to deliver.
    pub delivery: WebhookDelivery,
    /// The suggested lifetime.
    #[serde(default)]
    pub ttl_ms: TtlRequest,
}

/// Why deliveries to a callback fail, as a category: never the endpoint's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LastError {
    /// The connection was refused or could not be made (DNS included).
    ConnectionRefused,
    /// No answer in time.
    Timeout,
    /// The TLS handshake failed.
    TlsError,
    /// A 4xx answer (a redirect counts here: it is never followed).
    Http4xx,
    /// A 5xx answer.
    Http5xx,
    /// The endpoint did not echo the verification challenge.
    ChallengeFailed,
}

impl LastError {
    /// The category's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LastError::ConnectionRefused => "connection_refused",
            LastError::Timeout => "timeout",
            LastError::TlsError => "tls_error",
            LastError::Http4xx => "http_4xx",
            LastError::Http5xx => "http_5xx",
            LastError::ChallengeFailed => "challenge_failed",
        }
    }
}

/// How a webhook subscription's deliveries are going.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryStatus {
    /// Whether the server delivers (false: suspended after sustained failure).
    pub active: bool,
    /// The last successful delivery.
    pub last_delivery_at: Option<String>,
    /// The category of the last failure, if the last attempt failed.
    pub last_error: Option<LastError>,
    /// Since when deliveries have been failing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_since: Option<String>,
}

/// The result of `events/subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeResult {
    /// The derived subscription id (a routing handle, never an input).
    pub id: String,
    /// When the grant ends (`null`: no expiry, only when asked for).
    pub refresh_before: Option<String>,
    /// The safe-to-persist watermark.
    pub cursor: Option<String>,
    /// Delivery started later than the cursor given.
    pub truncated: bool,
    /// How deliveries are going (on a refresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_status: Option<DeliveryStatus>,
}

/// The params of `events/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnsubscribeParams {
    /// The event type.
    pub name: String,
    /// The subscription's arguments (`{}` when absent).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Where it delivers (`url`; a `secret` is ignored).
    pub delivery: WebhookDelivery,
}

/// Reads a method's params (without `_meta`) into `T`: a missing member or one of the wrong
/// JSON type is -32602 naming it.
pub fn parse_params<T: DeserializeOwned>(method: &str, params: Map<String, Value>) -> Result<T, RpcError> {
    serde_json::from_value(Value::Object(params))
        .map_err(|e| RpcError::invalid_params(format!("Invalid {method} params: {e}")))
}

/// The params of a notification on the push stream of request `subscription`: `body` with
/// `_meta["io.modelcontextprotocol/subscriptionId"]` set to the request's id.
pub fn stream_params(subscription: &RequestId, mut body: Map<String, Value>) -> Value {
    let mut meta = Map::new();
    meta.insert(SUBSCRIPTION_ID_META.into(), subscription.to_value());
    body.insert("_meta".into(), Value::Object(meta));
    Value::Object(body)
}

/// The params of `notifications/events/active`.
pub fn active(subscription: &RequestId, cursor: Option<&str>, truncated: bool) -> Value {
    let mut body = Map::new();
    body.insert("cursor".into(), cursor.map_or(Value::Null, |c| Value::String(c.into())));
    body.insert("truncated".into(), Value::Bool(truncated));
    stream_params(subscription, body)
}

/// The params of `notifications/events/list_changed` on a push stream.
pub fn list_changed(subscription: &RequestId) -> Value {
    stream_params(subscription, Map::new())
}

/// The params of `notifications/events/heartbeat`.
pub fn heartbeat(subscription: &RequestId, cursor: Option<&str>) -> Value {
    let mut body = Map::new();
    body.insert("cursor".into(), cursor.map_or(Value::Null, |c| Value::String(c.into())));
    stream_params(subscription, body)
}

/// The params of `notifications/events/event`.
pub fn event(subscription: &RequestId, occurrence: &EventOccurrence) -> Value {
    let body = match serde_json::to_value(occurrence) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    stream_params(subscription, body)
}

/// The params of `notifications/events/error` (recoverable) or `notifications/events/terminated`
/// (the end): `{error}`.
pub fn failure(subscription: &RequestId, error: &RpcError) -> Value {
    let mut body = Map::new();
    body.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
    stream_params(subscription, body)
}

/// The result that ends a push stream the server closes: `{"_meta": {}}`.
pub fn stream_result() -> Value {
    let mut result = Map::new();
    result.insert("_meta".into(), Value::Object(Map::new()));
    Value::Object(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn poll_params_absent_means_null_and_empty() {
        let p: PollParams = parse_params("events/poll", obj(json!({"name": "a"}))).unwrap();
        assert_eq!(p.subscription.cursor, None);
        assert!(p.subscription.arguments.is_empty());
        let p: PollParams =
            parse_params("events/poll", obj(json!({"name": "a", "cursor": null, "maxEvents": 2}))).unwrap();
        assert_eq!((p.subscription.cursor, p.max_events), (None, Some(2)));
    }

    #[test]
    fn wrong_types_are_invalid_params() {
        for bad in [
            json!({}),
            json!({"name": 3}),
            json!({"name": "a", "cursor": 3}),
            json!({"name": "a", "arguments": []}),
            json!({"name": "a", "maxEvents": -1}),
        ] {
            let e = parse_params::<PollParams>("events/poll", obj(bad)).unwrap_err();
            assert_eq!(e.code, -32602);
        }
    }

    #[test]
    fn ttl_is_three_way() {
        let base = json!({"name": "a", "delivery": {"url": "https://x.example/h", "secret": "s"}});
        let mut p = obj(base.clone());
        let s: SubscribeParams = parse_params("events/subscribe", p.clone()).unwrap();
        assert_eq!(s.ttl_ms, TtlRequest::Default);
        p.insert("ttlMs".into(), Value::Null);
        let s: SubscribeParams = parse_params("events/subscribe", p.clone()).unwrap();
        assert_eq!(s.ttl_ms, TtlRequest::NoExpiry);
        p.insert("ttlMs".into(), json!(1000));
        let s: SubscribeParams = parse_params("events/subscribe", p).unwrap();
        assert_eq!(s.ttl_ms, TtlRequest::Millis(1000));
    }

    #[test]
    fn stream_notifications_carry_the_subscription_id() {
        let id = RequestId::Number(7);
        let active = active(&id, Some("c1"), false);
        assert_eq!(active["_meta"][SUBSCRIPTION_ID_META], json!(7));
        assert_eq!(active["cursor"], json!("c1"));
        let beat = heartbeat(&RequestId::String("s".into()), None);
        assert_eq!(beat["cursor"], Value::Null);
        assert_eq!(beat["_meta"][SUBSCRIPTION_ID_META], json!("s"));
        let failure = failure(&id, &RpcError::new(-32603, "upstream"));
        assert_eq!(failure["error"]["code"], json!(-32603));
        assert_eq!(stream_result(), json!({"_meta": {}}));
    }

    #[test]
    fn descriptors_and_occurrences_round_trip() {
        let d = EventDescriptor {
            name: "build.finished".into(),
            description: Some("A build ended".into()),
            delivery: vec![DeliveryMode::Poll, DeliveryMode::Push],
            input_schema: json!({"type": "object"}),
            payload_schema: json!({"type": "object"}),
            meta: None,
        };
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["delivery"], json!(["poll", "push"]));
        assert!(v.get("_meta").is_none());
        let o = EventOccurrence {
            event_id: "e1".into(),
            name: "build.finished".into(),
            timestamp: "2026-12-07T00:00:00.000Z".into(),
            data: Map::new(),
            cursor: None,
            meta: None,
        };
        let v = serde_json::to_value(&o).unwrap();
        assert_eq!(
            v,
            json!({"eventId": "e1", "name": "build.finished", "timestamp": "2026-12-07T00:00:00.000Z", "data": {}})
        );
    }
}
