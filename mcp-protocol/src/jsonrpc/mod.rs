//! JSON-RPC 2.0 envelopes: decoding within limits, and encoding.
//!
//! Decoding is strict and bounded: the nesting depth is limited inside the
//! decoder (the `params` text, kept as text, by a scan of it as it is read),
//! duplicate keys keep their first occurrence, trailing bytes are a parse error,
//! `id` is a string or an integer (never `null`), `method` is a string and
//! `params` an object ([`Params`], indexed rather than built).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::RpcError;
use crate::json::{TOO_DEEP, ValueSeed, deeper_than};
use crate::method::{Method, NotificationMethod};
pub use crate::params::Params;
use crate::params::ParamsError;

mod encode;
pub use encode::{
    encode_error, encode_notification, encode_raw_result, encode_request, encode_response, encode_result,
};

/// The default cap on JSON nesting.
pub const DEFAULT_MAX_DEPTH: usize = 64;
/// The default cap on one message (16 MiB).
pub const DEFAULT_MAX_BYTES: usize = 16 * 1024 * 1024;
/// The default cap on the messages of one batch.
pub const DEFAULT_MAX_BATCH: usize = 128;

/// Limits applied while decoding one inbound body or frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeLimits {
    /// Largest accepted body in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of arrays and objects.
    pub max_depth: usize,
    /// Most messages in one batch: decoding stops at the first one past it, so a body of tiny
    /// elements cannot be multiplied into that many requests.
    pub max_batch: usize,
}

impl DecodeLimits {
    /// Limits of `max_bytes` and `max_depth`, with the default batch cap.
    pub fn new(max_bytes: usize, max_depth: usize) -> Self {
        DecodeLimits {
            max_bytes,
            max_depth,
            max_batch: DEFAULT_MAX_BATCH,
        }
    }

    /// The same limits with another batch cap.
    pub fn with_max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch;
        self
    }
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits::new(DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH)
    }
}

/// A JSON-RPC request id: a string or an integer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl RequestId {
    fn from_value(v: &Value) -> Option<RequestId> {
        match v {
            Value::String(s) => Some(RequestId::String(Arc::from(s.as_str()))),
            Value::Number(n) => n.as_i64().map(RequestId::Number),
            _ => None,
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Number(n) => Value::from(*n),
            RequestId::String(s) => Value::from(s.as_ref()),
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(Arc::from(s))
    }
}

/// A request: it has an id and expects a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id.
    pub id: RequestId,
    /// The method, parsed from its name.
    pub method: Method,
    /// The params object, if any.
    pub params: Option<Params>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method, parsed from its name.
    pub method: NotificationMethod,
    /// The params object, if any.
    pub params: Option<Params>,
}

/// A response to one of our own requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered.
    pub id: RequestId,
    /// The result, or the error.
    pub outcome: Result<Value, RpcError>,
}

/// One decoded JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response (or error response).
    Response(Response),
}

impl Message {
    /// The method, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(r.method.as_str()),
            Message::Notification(n) => Some(n.method.as_str()),
            Message::Response(_) => None,
        }
    }
}

/// A decoded body: one message or a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// One message.
    Single(Message),
    /// A batch array; each element decoded on its own.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// Why a body or a message could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The body is larger than the limit.
    #[error("message exceeds {limit} bytes")]
    TooLarge {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// The body is not valid JSON (or has trailing bytes).
    #[error("parse error: {0}")]
    Parse(String),
    /// The JSON nests deeper than the limit.
    #[error("JSON nesting exceeds {limit} levels")]
    TooDeep {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// Valid JSON but not a valid JSON-RPC message.
    #[error("invalid request: {message}")]
    Invalid {
        /// The id, when one could be read.
        id: Option<RequestId>,
        /// What is wrong.
        message: String,
        /// The message looked like a notification: it gets no reply.
        notification: bool,
    },
    /// An empty batch array.
    #[error("empty batch")]
    EmptyBatch,
    /// A batch mixing requests or notifications with responses.
    #[error("batch mixes requests and responses")]
    MixedBatch,
    /// A batch with more messages than the limit.
    #[error("batch exceeds {limit} messages")]
    BatchTooLarge {
        /// The limit that was exceeded.
        limit: usize,
    },
}

impl DecodeError {
    /// The JSON-RPC error to answer with.
    pub fn to_rpc_error(&self) -> RpcError {
        match self {
            DecodeError::Parse(_) | DecodeError::TooDeep { .. } => RpcError::parse_error(self.to_string()),
            DecodeError::Invalid { message, .. } => RpcError::invalid_request(message.clone()),
            DecodeError::TooLarge { .. }
            | DecodeError::EmptyBatch
            | DecodeError::MixedBatch
            | DecodeError::BatchTooLarge { .. } => RpcError::invalid_request(capitalize(&self.to_string())),
        }
    }

    /// The request id to answer with, when one was readable.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            DecodeError::Invalid { id, .. } => id.as_ref(),
            _ => None,
        }
    }

    /// Whether an answer is due (malformed notifications are dropped).
    pub fn wants_reply(&self) -> bool {
        !matches!(self, DecodeError::Invalid { notification: true, .. })
    }

    /// The encoded error response, or `None` when no answer is due.
    pub fn answer(&self) -> Option<Vec<u8>> {
        self.wants_reply()
            .then(|| encode_error(self.id(), &self.to_rpc_error()))
    }
}

/// Splits a decoded batch into its messages and the encoded answers of the
/// elements that could not be decoded (malformed notifications get none).
pub fn split_batch(items: Vec<Result<Message, DecodeError>>) -> (Vec<Message>, Vec<Vec<u8>>) {
    let mut messages = Vec::with_capacity(items.len());
    let mut answers = Vec::new();
    for item in items {
        match item {
            Ok(m) => messages.push(m),
            Err(e) => answers.extend(e.answer()),
        }
    }
    (messages, answers)
}

/// Encodes already-encoded responses as one batch array.
pub fn encode_batch(responses: &[Vec<u8>]) -> Vec<u8> {
    let len = responses.iter().map(|r| r.len() + 1).sum::<usize>() + 1;
    let mut out = Vec::with_capacity(len);
    out.push(b'[');
    for (i, r) in responses.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(r);
    }
    out.push(b']');
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

const TOO_MANY: &str = "mcp: batch limit exceeded";
/// How `serde_json` reports its own nesting limit (128).
const PARSER_TOO_DEEP: &str = "recursion limit exceeded";

/// Decodes one body or frame within `limits`.
///
/// A single message is read straight into its envelope: only its members are
/// built as values (`params`, `id`…), not the object around them, and member
/// names are matched without being copied.
pub fn decode(bytes: &[u8], limits: &DecodeLimits) -> Result<Inbound, DecodeError> {
    if bytes.len() > limits.max_bytes {
        return Err(DecodeError::TooLarge {
            limit: limits.max_bytes,
        });
    }
    let seed = RootSeed {
        depth_left: limits.max_depth,
        max_items: limits.max_batch,
    };
    let root = parse_with(bytes, limits.max_depth, seed).map_err(|e| match e {
        DecodeError::Parse(m) if m.contains(TOO_MANY) => DecodeError::BatchTooLarge {
            limit: limits.max_batch,
        },
        other => other,
    })?;
    match root {
        Root::Message(envelope) => envelope.into_message().map(Inbound::Single),
        Root::Batch(items) => {
            if items.is_empty() {
                return Err(DecodeError::EmptyBatch);
            }
            // Each element is decoded like a message on its own, from its text.
            let depth_left = limits.max_depth.saturating_sub(1);
            let decoded: Vec<Result<Message, DecodeError>> = items
                .iter()
                .map(|item| message_from_text(item.get(), depth_left))
                .collect();
            drop(items);
            let responses = decoded.iter().filter(|m| matches!(m, Ok(Message::Response(_)))).count();
            let calls = decoded
                .iter()
                .filter(|m| matches!(m, Ok(Message::Request(_) | Message::Notification(_))))
                .count();
            if responses > 0 && calls > 0 {
                return Err(DecodeError::MixedBatch);
            }
            Ok(Inbound::Batch(decoded))
        }
        Root::Other => Err(not_an_object()),
    }
}

/// Parses JSON with a nesting limit; duplicate keys keep the first occurrence.
pub fn parse_value(bytes: &[u8], max_depth: usize) -> Result<Value, DecodeError> {
    parse_with(bytes, max_depth, ValueSeed::nested(max_depth))
}

/// Runs `seed` over the whole of `bytes` (trailing bytes are a parse error), the nesting limit
/// reported as [`DecodeError::TooDeep`]: ours, and the parser's own (deeper than any limit ours
/// may be, it is met first only inside text kept raw, which is then too deep for ours as well).
fn parse_with<'de, S: DeserializeSeed<'de>>(
    bytes: &'de [u8],
    max_depth: usize,
    seed: S,
) -> Result<S::Value, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = seed.deserialize(&mut de).map_err(|e| {
        let message = e.to_string();
        if message.contains(TOO_DEEP) || message.starts_with(PARSER_TOO_DEEP) {
            DecodeError::TooDeep { limit: max_depth }
        } else {
            DecodeError::Parse(e.to_string())
        }
    })?;
    de.end().map_err(|e| DecodeError::Parse(e.to_string()))?;
    Ok(value)
}

/// Decodes one element of a batch (valid JSON within `depth_left`, checked as the batch was
/// read) as a message.
fn message_from_text(text: &str, depth_left: usize) -> Result<Message, DecodeError> {
    let seed = RootSeed {
        depth_left,
        max_items: 0,
    };
    match parse_with(text.as_bytes(), depth_left, seed)? {
        Root::Message(envelope) => envelope.into_message(),
        Root::Batch(_) | Root::Other => Err(not_an_object()),
    }
}

/// Interprets one JSON value as a JSON-RPC message.
pub fn message_from_value(value: Value) -> Result<Message, DecodeError> {
    let Value::Object(obj) = value else {
        return Err(not_an_object());
    };
    Envelope::from_object(obj).into_message()
}

fn not_an_object() -> DecodeError {
    invalid(None, "Message must be a JSON object", false)
}

/// The members of a message object that JSON-RPC gives a meaning to (the first occurrence of
/// each); any other member is ignored.
#[derive(Debug, Default)]
struct Envelope<'de> {
    jsonrpc: Option<Text<'de>>,
    id: Option<Value>,
    method: Option<Text<'de>>,
    params: Option<ParamsIn>,
    result: Option<Value>,
    error: Option<Value>,
}

/// The params member as it was read: its text (a message decoded on its own), or a value (an
/// element of a batch).
#[derive(Debug)]
enum ParamsIn {
    Text(Box<RawValue>),
    Value(Value),
}

impl Envelope<'_> {
    fn from_object(mut obj: Map<String, Value>) -> Self {
        Envelope {
            jsonrpc: obj.remove("jsonrpc").map(Text::from),
            id: obj.remove("id"),
            method: obj.remove("method").map(Text::from),
            params: obj.remove("params").map(ParamsIn::Value),
            result: obj.remove("result"),
            error: obj.remove("error"),
        }
    }

    /// Where the value of member `field` goes (`None`: a member without meaning).
    fn slot(&mut self, field: Field) -> Option<&mut Option<Value>> {
        match field {
            Field::Id => Some(&mut self.id),
            // Read as text (see `RootSeed::visit_map`).
            Field::Jsonrpc | Field::Method | Field::Params => None,
            Field::Result => Some(&mut self.result),
            Field::Error => Some(&mut self.error),
            Field::Other => None,
        }
    }

    fn into_message(self) -> Result<Message, DecodeError> {
        let has_id = self.id.is_some();
        let id = match &self.id {
            None => None,
            Some(v) => match RequestId::from_value(v) {
                Some(id) => Some(id),
                None => {
                    return Err(invalid(None, "id must be a string or an integer", false));
                }
            },
        };
        if self.jsonrpc.as_ref().and_then(Text::as_str) != Some("2.0") {
            return Err(invalid(id, "jsonrpc must be \"2.0\"", !has_id));
        }
        match self.method {
            Some(Text::Str(method)) => {
                let params = match self.params {
                    None => None,
                    Some(ParamsIn::Value(Value::Object(p))) => Some(Params::from_object(p)),
                    Some(ParamsIn::Text(text)) => match Params::from_raw(text) {
                        Ok(p) => Some(p),
                        Err(ParamsError::NotAnObject) => {
                            return Err(invalid(id, "params must be an object", !has_id));
                        }
                        Err(ParamsError::Parse(e)) => return Err(DecodeError::Parse(e)),
                    },
                    Some(ParamsIn::Value(_)) => return Err(invalid(id, "params must be an object", !has_id)),
                };
                Ok(match id {
                    Some(id) => Message::Request(Request {
                        id,
                        method: Method::parse(&method),
                        params,
                    }),
                    None => Message::Notification(Notification {
                        method: NotificationMethod::parse(&method),
                        params,
                    }),
                })
            }
            Some(_) => Err(invalid(id, "method must be a string", !has_id)),
            None => {
                let Some(id) = id else {
                    return Err(invalid(None, "message has neither method nor id", false));
                };
                let outcome = match (self.result, self.error) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => match serde_json::from_value::<RpcError>(error) {
                        Ok(e) => Err(e),
                        Err(_) => return Err(invalid(Some(id), "malformed error object", false)),
                    },
                    _ => {
                        return Err(invalid(
                            Some(id),
                            "response must carry exactly one of result and error",
                            false,
                        ));
                    }
                };
                Ok(Message::Response(Response { id, outcome }))
            }
        }
    }
}

/// A member name of a message object, matched without copying it.
#[derive(Debug, Clone, Copy)]
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> DeserializeSeed<'de> for Field {
    type Value = Field;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Field, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Field {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, v: &str) -> Result<Field, E> {
        Ok(match v {
            "jsonrpc" => Field::Jsonrpc,
            "id" => Field::Id,
            "method" => Field::Method,
            "params" => Field::Params,
            "result" => Field::Result,
            "error" => Field::Error,
            _ => Field::Other,
        })
    }
}

/// What a body or frame holds at its root.
#[expect(
    clippy::large_enum_variant,
    reason = "a temporary returned once per frame and taken apart at once: boxing would cost the allocation this saves"
)]
enum Root<'de> {
    /// One object: a message (or an invalid one).
    Message(Envelope<'de>),
    /// An array: a batch, each element's text (borrowed from the body) still to interpret.
    Batch(Vec<&'de RawValue>),
    /// Anything else: not a message.
    Other,
}

/// The root of a body or frame: an object is read as an [`Envelope`], an array as a batch of
/// at most `max_items` values.
struct RootSeed {
    depth_left: usize,
    max_items: usize,
}

impl<'de> DeserializeSeed<'de> for RootSeed {
    type Value = Root<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Root<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RootSeed {
    type Value = Root<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_unit<E>(self) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_none<E>(self) -> Result<Root<'de>, E> {
        Ok(Root::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Root<'de>, A::Error> {
        let Some(depth_left) = self.depth_left.checked_sub(1) else {
            return Err(de::Error::custom(TOO_DEEP));
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<&'de RawValue>()? {
            if items.len() >= self.max_items {
                return Err(de::Error::custom(TOO_MANY));
            }
            if deeper_than(item.get(), depth_left) {
                return Err(de::Error::custom(TOO_DEEP));
            }
            items.push(item);
        }
        Ok(Root::Batch(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Root<'de>, A::Error> {
        let Some(depth_left) = self.depth_left.checked_sub(1) else {
            return Err(de::Error::custom(TOO_DEEP));
        };
        let mut envelope = Envelope::default();
        while let Some(field) = map.next_key_seed(Field::Other)? {
            if let Field::Params = field {
                // Kept as text, its members indexed when the message is built: only what a
                // reader asks for is ever parsed (`Params`). Within the same depth limit.
                let text: Box<RawValue> = map.next_value()?;
                if deeper_than(text.get(), depth_left) {
                    return Err(de::Error::custom(TOO_DEEP));
                }
                if envelope.params.is_none() {
                    envelope.params = Some(ParamsIn::Text(text));
                }
                continue;
            }
            if let Field::Jsonrpc | Field::Method = field {
                // Strings, borrowed from the body when they have no escapes.
                let text = map.next_value_seed(TextSeed { depth_left })?;
                let slot = match field {
                    Field::Jsonrpc => &mut envelope.jsonrpc,
                    _ => &mut envelope.method,
                };
                if slot.is_none() {
                    *slot = Some(text);
                }
                continue;
            }
            // Every member is parsed within the depth limit, meaningful or not.
            let value = map.next_value_seed(ValueSeed::nested(depth_left))?;
            if let Some(slot) = envelope.slot(field)
                && slot.is_none()
            {
                *slot = Some(value);
            }
        }
        Ok(Root::Message(envelope))
    }
}

/// A member that should be a string (`jsonrpc`, `method`): the string, or that it was not one.
#[derive(Debug)]
enum Text<'de> {
    Str(Cow<'de, str>),
    Other,
}

impl Text<'_> {
    fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(s) => Some(s),
            Text::Other => None,
        }
    }
}

impl From<Value> for Text<'_> {
    fn from(v: Value) -> Self {
        match v {
            Value::String(s) => Text::Str(Cow::Owned(s)),
            _ => Text::Other,
        }
    }
}

/// Reads a [`Text`]: a string as it is (borrowed when it can be), anything else parsed within
/// the depth limit like any member, then set aside.
struct TextSeed {
    depth_left: usize,
}

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Text<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Text<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text::Str(Cow::Owned(v)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Text<'de>, E> {
        Ok(Text::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Text<'de>, E> {
        Ok(Text::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Text<'de>, E> {
        Ok(Text::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Text<'de>, E> {
        Ok(Text::Other)
    }

    fn visit_unit<E>(self) -> Result<Text<'de>, E> {
        Ok(Text::Other)
    }

    fn visit_none<E>(self) -> Result<Text<'de>, E> {
        Ok(Text::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text<'de>, A::Error> {
        ValueSeed::nested(self.depth_left).visit_seq(seq).map(|_| Text::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text<'de>, A::Error> {
        ValueSeed::nested(self.depth_left).visit_map(map).map(|_| Text::Other)
    }
}

fn invalid(id: Option<RequestId>, message: &str, notification: bool) -> DecodeError {
    DecodeError::Invalid {
        id,
        message: message.to_owned(),
        notification,
    }
}

#[cfg(test)]
mod tests;
