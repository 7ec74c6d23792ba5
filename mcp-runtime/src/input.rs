//! Typed client input on top of [`Ctx::input`]: form elicitation into a Rust type
//! ([`Ctx::elicit`]), sampling ([`Ctx::sample`]), roots ([`Ctx::roots`]), and typed state
//! kept across the rounds of a modern call ([`Ctx::round_state`], [`Ctx::keep_round_state`],
//! [`Ctx::once`]).
//!
//! Every method here goes through [`Ctx::input`], so it works in both eras:
//!
//! - **2026-07-28 (modern)**: the first time a handler asks, the call is answered
//!   `input_required` (the `?` on the method's result returns
//!   [`HandlerError::InputRequired`] from the handler). The client answers and retries the
//!   whole call; **the handler runs again from the top**, and this time the same ask returns
//!   the client's answer at once. Everything the handler did before the ask runs once per
//!   round: keep side effects after the asks, or keep their outcome with [`Ctx::once`].
//! - **Legacy eras**: the ask is a real server-to-client request on the call's stream; the
//!   method waits for the answer and the handler runs once.
//!
//! Either way the client must have declared the capability (`elicitation`, `sampling`,
//! `roots`), else the call fails with -32021 and `requiredCapabilities`.
//!
//! # Keys
//!
//! Each input request has a key, unique within the call. The methods here name theirs
//! `elicit-N`, `sample-N` and `roots-N`: `N` counts the asks of that kind this run of the
//! handler made (1 for the first elicitation, 2 for the second, …), so a re-run that asks
//! the same things in the same order finds its earlier answers under the same keys. That
//! holds as long as what the handler asks, and in which order, depends only on the call's
//! arguments and the answers so far (not on the clock, randomness, or data that may change
//! between rounds). When it does not, or to ask from concurrently spawned tasks, give the
//! ask a key of your own ([`Elicit::key`], [`Sampling::key`]); explicit keys do not advance
//! the counters. Do not use the `elicit-`, `sample-` and `roots-` prefixes for your own keys.
//!
//! # State across rounds
//!
//! A modern re-run starts with nothing but the call's arguments, the answers gathered so far
//! and the state the previous round kept. [`Ctx::keep_round_state`] keeps a value for the next
//! round (sealed into `requestState`, integrity-protected and bound to the caller and the
//! call); [`Ctx::round_state`] reads it back. [`Ctx::once`] does both for a value computed by
//! a side effect that must run once per call (a charge, a reservation, a generated id):
//!
//! ```no_run
//! use mcp_runtime::{Ctx, HandlerError};
//! use mcp_runtime::input::Elicitation;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Confirm {
//!     /// Go ahead?
//!     ok: bool,
//! }
//!
//! async fn reserve_seat() -> Result<String, HandlerError> {
//!     Ok("seat-12A".to_owned())
//! }
//!
//! async fn book(ctx: Ctx) -> Result<String, HandlerError> {
//!     // Runs in the first round only; later rounds get the kept value.
//!     let seat: String = ctx.once(reserve_seat).await?;
//!     match ctx.elicit::<Confirm>(format!("Book {seat}?")).await? {
//!         Elicitation::Accept(Confirm { ok: true }) => Ok(format!("booked {seat}")),
//!         _ => Ok("not booked".to_owned()),
//!     }
//! }
//! ```
//!
//! In the legacy eras the handler is not re-run, so [`Ctx::once`] simply runs its closure.

use std::any::type_name;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use mcp_protocol::model::{Content, Role};
use mcp_protocol::{Feature, RpcError};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ctx::Ctx;
use crate::handler::HandlerError;
use crate::mrtr::InputRequired;

// ------------------------------------------------------------------ elicitation

/// The user's answer to a form elicitation ([`Ctx::elicit`]), one variant per `action`.
///
/// ```
/// use mcp_runtime::input::Elicitation;
///
/// let answer: Elicitation<u32> = Elicitation::Accept(3);
/// assert_eq!(answer.accepted(), Some(3));
/// assert!(Elicitation::<u32>::Decline.accepted().is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// `accept`: the user submitted the form; its content, deserialized.
    Accept(T),
    /// `decline`: the user explicitly refused.
    Decline,
    /// `cancel`: the user dismissed the form without choosing.
    Cancel,
}

impl<T> Elicitation<T> {
    /// The submitted content, when the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicitation::Accept(t) => Some(t),
            _ => None,
        }
    }

    /// Whether the user accepted.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Elicitation::Accept(_))
    }
}

/// A form elicitation to send with [`Ctx::elicit_with`]: the message, and optionally the
/// input key (see the [module docs](self#keys)).
///
/// ```
/// use mcp_runtime::input::Elicit;
///
/// let ask = Elicit::new("Delete the file?").key("confirm-delete");
/// assert_eq!(ask.message(), "Delete the file?");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Elicit {
    message: String,
    key: Option<String>,
}

impl Elicit {
    /// An elicitation showing `message` to the user.
    pub fn new(message: impl Into<String>) -> Self {
        Elicit {
            message: message.into(),
            key: None,
        }
    }

    /// Names the input request `key` instead of the counted `elicit-N`; the same key on a
    /// re-run finds the same answer.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The message shown to the user.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Why a type cannot be an elicitation form (see [`form_schema`]).
///
/// ```
/// use mcp_runtime::input::form_schema;
///
/// let e = form_schema::<Vec<u8>>().unwrap_err();
/// assert!(e.to_string().starts_with("alloc::vec::Vec<u8> cannot be an elicitation form"));
/// assert!(e.reason().contains("struct"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{type_name} cannot be an elicitation form: {reason}")]
pub struct FormSchemaError {
    type_name: &'static str,
    reason: String,
}

impl FormSchemaError {
    /// Why the type's schema is not a flat form.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// The `requestedSchema` of a form elicitation of `T`: the schema `schemars` derives, in the
/// restricted form the specification allows. `T` must be a struct (an object schema) whose
/// fields are primitives: strings (with `format` `email`, `uri`, `date` or `date-time`,
/// `minLength`, `maxLength`), numbers and integers (`minimum`, `maximum`), booleans, enums of
/// strings (unit variants; with variant doc comments they become titled options), or
/// `Vec`s of such an enum (multi-select). `Option` fields are optional. Titles, descriptions
/// and defaults are kept; `$schema`, definitions and every other keyword are left out.
///
/// A nested struct, a map, a `Vec` of anything but an enum, or a non-struct `T` is refused:
/// call it in a unit test to check a form type.
///
/// ```
/// use mcp_runtime::input::form_schema;
/// use schemars::JsonSchema;
/// use serde_json::json;
///
/// #[derive(JsonSchema)]
/// struct Signup {
///     /// Your name
///     name: String,
///     age: Option<u8>,
/// }
///
/// let schema = form_schema::<Signup>().unwrap();
/// assert_eq!(schema["properties"]["name"], json!({"type": "string", "description": "Your name"}));
/// assert_eq!(schema["properties"]["age"]["type"], "integer");
/// assert_eq!(schema["required"], json!(["name"]));
///
/// #[derive(JsonSchema)]
/// struct Nested {
///     inner: Signup,
/// }
/// assert!(form_schema::<Nested>().is_err());
/// ```
pub fn form_schema<T: JsonSchema>() -> Result<Value, FormSchemaError> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    flat_form(&schema).map_err(|reason| FormSchemaError {
        type_name: type_name::<T>(),
        reason,
    })
}

/// The restricted object schema of a derived one.
fn flat_form(schema: &Value) -> Result<Value, String> {
    let obj = schema.as_object().ok_or("its schema is not an object")?;
    if obj.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form must be a struct (an object schema with properties)".into());
    }
    let mut properties = Map::new();
    if let Some(props) = obj.get("properties") {
        let props = props.as_object().ok_or("its properties are not an object")?;
        for (name, prop) in props {
            let flat = primitive(prop).map_err(|why| format!("field {name:?}: {why}"))?;
            properties.insert(name.clone(), flat);
        }
    }
    let required: Vec<Value> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter(|k| k.is_string()).cloned().collect())
        .unwrap_or_default();
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    Ok(Value::Object(out))
}

/// The string formats a form field may have.
const FORMATS: [&str; 4] = ["date", "date-time", "email", "uri"];

/// One field's schema, restricted to a primitive schema definition.
fn primitive(schema: &Value) -> Result<Value, String> {
    let mut s = schema.as_object().ok_or("its schema is not an object")?.clone();
    unwrap_nullable(&mut s);
    if s.contains_key("$ref") {
        return Err("a reference (a recursive type?) is not a primitive".into());
    }
    let mut out = Map::new();
    copy(&mut out, &s, &["title", "description"]);
    if let Some(options) = enum_options(&s) {
        out.insert("type".into(), json!("string"));
        match options {
            Options::Plain(values) => {
                out.insert("enum".into(), Value::Array(values));
            }
            Options::Titled(one_of) => {
                out.insert("oneOf".into(), Value::Array(one_of));
            }
        }
        copy(&mut out, &s, &["default"]);
        return Ok(Value::Object(out));
    }
    let ty = s.get("type").and_then(Value::as_str).unwrap_or_default();
    match ty {
        "string" => {
            out.insert("type".into(), json!("string"));
            copy(&mut out, &s, &["minLength", "maxLength", "default"]);
            if let Some(f) = s.get("format").and_then(Value::as_str).filter(|f| FORMATS.contains(f)) {
                out.insert("format".into(), json!(f));
            }
        }
        "number" | "integer" => {
            out.insert("type".into(), json!(ty));
            copy(&mut out, &s, &["minimum", "maximum", "default"]);
        }
        "boolean" => {
            out.insert("type".into(), json!("boolean"));
            copy(&mut out, &s, &["default"]);
        }
        "array" => {
            let items = s.get("items").and_then(Value::as_object);
            let items = items
                .and_then(|i| {
                    let mut i = i.clone();
                    unwrap_nullable(&mut i);
                    enum_options(&i)
                })
                .ok_or("a list must be of an enum of strings (a multi-select)")?;
            out.insert("type".into(), json!("array"));
            let items = match items {
                Options::Plain(values) => json!({"type": "string", "enum": values}),
                Options::Titled(one_of) => json!({"anyOf": one_of}),
            };
            out.insert("items".into(), items);
            copy(&mut out, &s, &["minItems", "maxItems", "default"]);
        }
        "object" => return Err("a nested object is not a primitive (forms are flat)".into()),
        "" => return Err("its schema names no primitive type".into()),
        other => return Err(format!("type {other:?} is not a primitive")),
    }
    Ok(Value::Object(out))
}

/// Copies the `keys` that `from` has into `out` (but not a `null`, such as the default of an
/// `Option` field: no primitive schema allows it).
fn copy(out: &mut Map<String, Value>, from: &Map<String, Value>, keys: &[&str]) {
    for k in keys {
        if let Some(v) = from.get(*k).filter(|v| !v.is_null()) {
            out.insert((*k).into(), v.clone());
        }
    }
}

/// The options of an enum of strings.
enum Options {
    /// `enum: [...]`.
    Plain(Vec<Value>),
    /// `[{const, title}]`.
    Titled(Vec<Value>),
}

/// The options of an enum-of-strings schema: `enum` (every value a string), or a
/// `oneOf`/`anyOf` of string `const`s (their title, else description, else the value names
/// each).
fn enum_options(s: &Map<String, Value>) -> Option<Options> {
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .all(Value::is_string)
            .then(|| Options::Plain(values.clone()));
    }
    if let Some(c) = s.get("const").filter(|c| c.is_string()) {
        return Some(Options::Plain(vec![c.clone()]));
    }
    let branches = s.get("oneOf").or_else(|| s.get("anyOf"))?.as_array()?;
    let mut titled = Vec::new();
    for b in branches {
        let b = b.as_object()?;
        let mut add = |value: &Value, b: &Map<String, Value>| {
            let title = b
                .get("title")
                .or_else(|| b.get("description"))
                .filter(|t| t.is_string())
                .unwrap_or(value)
                .clone();
            titled.push(json!({"const": value, "title": title}));
        };
        match (b.get("const"), b.get("enum").and_then(Value::as_array)) {
            (Some(c), _) if c.is_string() => add(c, b),
            (None, Some(values)) if values.iter().all(Value::is_string) => {
                for v in values {
                    add(v, &Map::new());
                }
            }
            _ => return None,
        }
    }
    (!titled.is_empty()).then_some(Options::Titled(titled))
}

/// Turns the schema of an `Option<X>` into the schema of `X`: `type: [X, "null"]`, or an
/// `anyOf`/`oneOf` with a `{"type": "null"}` branch (the other branch is merged in, the outer
/// title, description and default win).
fn unwrap_nullable(s: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = s.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        if rest.len() == 1 {
            s.insert("type".into(), rest[0].clone());
        }
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = s.get(key) else {
            continue;
        };
        let is_null = |b: &Value| b.get("type").and_then(Value::as_str) == Some("null");
        if branches.len() == 2 && branches.iter().any(is_null) {
            let Some(Value::Object(inner)) = branches.iter().find(|b| !is_null(b)).cloned() else {
                continue;
            };
            s.remove(key);
            for (k, v) in inner {
                s.entry(k).or_insert(v);
            }
            unwrap_nullable(s);
            return;
        }
    }
    if s.get("enum")
        .and_then(Value::as_array)
        .is_some_and(|e| e.contains(&Value::Null))
        && let Some(Value::Array(values)) = s.get_mut("enum")
    {
        values.retain(|v| !v.is_null());
    }
}

/// Reads an `ElicitResult` into its typed outcome.
fn read_elicitation<T: DeserializeOwned>(key: &str, answer: Value) -> Result<Elicitation<T>, HandlerError> {
    let action = answer.get("action").and_then(Value::as_str);
    match action {
        Some("accept") => {
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            serde_json::from_value(content).map(Elicitation::Accept).map_err(|e| {
                HandlerError::tool(format!(
                    "The user's answer to the form ({key}) does not fit what was asked: {e}"
                ))
            })
        }
        Some("decline") => Ok(Elicitation::Decline),
        Some("cancel") => Ok(Elicitation::Cancel),
        _ => Err(HandlerError::Rpc(RpcError::invalid_params(format!(
            "the answer to input request {key:?} is not an ElicitResult (action must be accept, decline or cancel)"
        )))),
    }
}

// --------------------------------------------------------------------- sampling

/// A `sampling/createMessage` request to send with [`Ctx::sample`]: the conversation, the
/// system prompt, the token budget (1024 unless set), and optional model preferences.
///
/// ```
/// use mcp_runtime::input::Sampling;
///
/// let ask = Sampling::new()
///     .system("You are terse.")
///     .user("Name a colour.")
///     .max_tokens(16)
///     .temperature(0.2)
///     .model_hint("claude");
/// let params = ask.params();
/// assert_eq!(params["messages"][0]["content"]["text"], "Name a colour.");
/// assert_eq!(params["maxTokens"], 16);
/// assert_eq!(params["systemPrompt"], "You are terse.");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    messages: Vec<Value>,
    system: Option<String>,
    max_tokens: u32,
    temperature: Option<f64>,
    stop_sequences: Vec<String>,
    hints: Vec<String>,
    priorities: Map<String, Value>,
    metadata: Option<Value>,
    key: Option<String>,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            messages: Vec::new(),
            system: None,
            max_tokens: 1024,
            temperature: None,
            stop_sequences: Vec::new(),
            hints: Vec::new(),
            priorities: Map::new(),
            metadata: None,
            key: None,
        }
    }
}

impl Sampling {
    /// An empty conversation with a budget of 1024 tokens.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a user message of text.
    pub fn user(self, text: impl Into<String>) -> Self {
        self.message(Role::User, Content::text(text))
    }

    /// Adds an assistant message of text.
    pub fn assistant(self, text: impl Into<String>) -> Self {
        self.message(Role::Assistant, Content::text(text))
    }

    /// Adds a message: text, image or audio content (sampling takes no other blocks).
    pub fn message(mut self, role: Role, content: Content) -> Self {
        let content = serde_json::to_value(&content).unwrap_or(Value::Null);
        self.messages.push(json!({"role": role, "content": content}));
        self
    }

    /// The system prompt (the client may change or leave it out).
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// The most tokens to sample (`maxTokens`).
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = n;
        self
    }

    /// The sampling temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Adds a stop sequence.
    pub fn stop_sequence(mut self, s: impl Into<String>) -> Self {
        self.stop_sequences.push(s.into());
        self
    }

    /// Adds a model hint (`modelPreferences.hints`, in order of preference).
    pub fn model_hint(mut self, name: impl Into<String>) -> Self {
        self.hints.push(name.into());
        self
    }

    /// The cost, speed and intelligence priorities of `modelPreferences` (each 0 to 1;
    /// `None` leaves one out).
    pub fn priorities(mut self, cost: Option<f64>, speed: Option<f64>, intelligence: Option<f64>) -> Self {
        for (k, v) in [
            ("costPriority", cost),
            ("speedPriority", speed),
            ("intelligencePriority", intelligence),
        ] {
            match v {
                Some(v) => self.priorities.insert(k.into(), json!(v)),
                None => self.priorities.remove(k),
            };
        }
        self
    }

    /// Provider-specific metadata passed through to the model.
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Names the input request `key` instead of the counted `sample-N`.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The request's `params` (`CreateMessageRequestParams`).
    pub fn params(&self) -> Value {
        let mut p = Map::new();
        p.insert("messages".into(), Value::Array(self.messages.clone()));
        if let Some(s) = &self.system {
            p.insert("systemPrompt".into(), json!(s));
        }
        p.insert("maxTokens".into(), json!(self.max_tokens));
        if let Some(t) = self.temperature {
            p.insert("temperature".into(), json!(t));
        }
        if !self.stop_sequences.is_empty() {
            p.insert("stopSequences".into(), json!(self.stop_sequences));
        }
        if !self.hints.is_empty() || !self.priorities.is_empty() {
            let mut prefs = self.priorities.clone();
            if !self.hints.is_empty() {
                let hints: Vec<Value> = self.hints.iter().map(|h| json!({"name": h})).collect();
                prefs.insert("hints".into(), Value::Array(hints));
            }
            p.insert("modelPreferences".into(), Value::Object(prefs));
        }
        if let Some(m) = &self.metadata {
            p.insert("metadata".into(), m.clone());
        }
        Value::Object(p)
    }
}

/// The client's answer to [`Ctx::sample`] (`CreateMessageResult`).
///
/// ```
/// use mcp_runtime::input::SamplingReply;
/// use serde_json::json;
///
/// let reply: SamplingReply = serde_json::from_value(json!({
///     "role": "assistant",
///     "content": {"type": "text", "text": "Teal."},
///     "model": "some-model",
///     "stopReason": "endTurn"
/// }))
/// .unwrap();
/// assert_eq!(reply.text(), "Teal.");
/// assert_eq!(reply.stop_reason.as_deref(), Some("endTurn"));
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct SamplingReply {
    /// Who speaks (normally the assistant).
    pub role: Role,
    /// The content blocks (one block on the wire is a list of one here).
    #[serde(deserialize_with = "one_or_many")]
    pub content: Vec<Content>,
    /// The model that generated the message.
    #[serde(default)]
    pub model: String,
    /// Why sampling stopped (`endTurn`, `stopSequence`, `maxTokens`, …), when known.
    #[serde(rename = "stopReason", default)]
    pub stop_reason: Option<String>,
}

impl SamplingReply {
    /// The text of every text block, joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Content>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<Content>),
        One(Box<Content>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::Many(v) => v,
        OneOrMany::One(c) => vec![*c],
    })
}

// ------------------------------------------------------------------------ roots

/// One of the client's roots ([`Ctx::roots`]).
///
/// ```
/// use mcp_runtime::input::Root;
/// use serde_json::json;
///
/// let root: Root = serde_json::from_value(json!({"uri": "file:///projects", "name": "projects"})).unwrap();
/// assert_eq!(root.uri, "file:///projects");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// The root's URI (`file://…`).
    pub uri: String,
    /// A name to show, if the client gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Deserialize)]
struct RootsReply {
    roots: Vec<Root>,
}

// ------------------------------------------------------------------ per-run state

/// What one run of a handler counts and keeps: the asks of each kind (their keys) and the
/// state to attach to the next input request. A fresh one per run (every [`Ctx`] the runtime
/// makes for a round); the handler's clones of its `Ctx` share it.
#[derive(Debug, Default)]
pub(crate) struct Run {
    elicit: AtomicUsize,
    sample: AtomicUsize,
    roots: AtomicUsize,
    kept: Mutex<Option<Value>>,
}

impl Run {
    /// The next counted key of a kind: `elicit-1`, `elicit-2`, …
    fn next_key(&self, kind: &str) -> String {
        let counter = match kind {
            "elicit" => &self.elicit,
            "sample" => &self.sample,
            _ => &self.roots,
        };
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{kind}-{n}")
    }

    /// The state [`Ctx::keep_round_state`] kept, if any.
    pub(crate) fn kept(&self) -> Option<Value> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn keep(&self, state: Value) {
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(state);
    }
}

// ------------------------------------------------------------------------- Ctx

impl Ctx {
    /// Asks the user to fill a form of `T` (`elicitation/create` in form mode, with
    /// `requestedSchema` derived from `T`, see [`form_schema`]) and returns the answer,
    /// typed. The input key is the counted `elicit-N` (see the [module docs](self#keys));
    /// use [`Ctx::elicit_with`] for a key of your own.
    ///
    /// Modern era: the first run answers `input_required` through `?` and **the handler
    /// runs again from the top** with the answer; legacy eras: a real request, awaited. A
    /// client without the `elicitation` capability fails the call with -32021.
    ///
    /// Errors: `T` is not a flat form: an internal error (logged with the reason); the
    /// accepted content does not deserialize into `T`: [`HandlerError::Tool`] with the
    /// reason (a tool call answers `isError: true`, which the model can read and act on);
    /// an answer that is not an `ElicitResult`: -32602.
    ///
    /// ```no_run
    /// use mcp_runtime::{Ctx, HandlerError};
    /// use mcp_runtime::input::Elicitation;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Contact {
    ///     name: String,
    ///     #[schemars(email)]
    ///     email: String,
    /// }
    ///
    /// async fn greet(ctx: Ctx) -> Result<String, HandlerError> {
    ///     Ok(match ctx.elicit::<Contact>("Who are you?").await? {
    ///         Elicitation::Accept(c) => format!("hello {} <{}>", c.name, c.email),
    ///         Elicitation::Decline => "you declined".into(),
    ///         Elicitation::Cancel => "you cancelled".into(),
    ///     })
    /// }
    /// ```
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, HandlerError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        self.elicit_with(Elicit::new(message)).await
    }

    /// [`Ctx::elicit`] with the options of an [`Elicit`]: a key of your own, for a handler
    /// whose asks are not always made in the same order.
    ///
    /// ```no_run
    /// use mcp_runtime::{Ctx, HandlerError};
    /// use mcp_runtime::input::{Elicit, Elicitation};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     ok: bool,
    /// }
    ///
    /// async fn delete(ctx: Ctx, file: &str) -> Result<bool, HandlerError> {
    ///     let ask = Elicit::new(format!("Delete {file}?")).key(format!("delete:{file}"));
    ///     Ok(matches!(ctx.elicit_with::<Confirm>(ask).await?, Elicitation::Accept(Confirm { ok: true })))
    /// }
    /// ```
    pub async fn elicit_with<T>(&self, ask: Elicit) -> Result<Elicitation<T>, HandlerError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let key = ask.key.unwrap_or_else(|| self.run().next_key("elicit"));
        let schema = form_schema::<T>().map_err(|e| {
            tracing::error!(error = %e, "elicitation form refused");
            HandlerError::internal(e)
        })?;
        if self.revision().is_some_and(|r| !r.has(Feature::Elicitation)) {
            return Err(HandlerError::Rpc(RpcError::missing_capability(
                json!({"elicitation": {}}),
            )));
        }
        let params = json!({"message": ask.message, "requestedSchema": schema});
        let answer = self.ask_one(&key, "elicitation/create", params).await?;
        read_elicitation(&key, answer)
    }

    /// Asks the client's model for a message (`sampling/createMessage`) and returns its
    /// reply. Keyed `sample-N` unless [`Sampling::key`] names it. Modern era: an MRTR round
    /// (the handler re-runs from the top); legacy eras: a real request. A client without the
    /// `sampling` capability fails the call with -32021; a reply that is not a
    /// `CreateMessageResult` of text, image or audio content is -32602.
    ///
    /// ```no_run
    /// use mcp_runtime::{Ctx, HandlerError};
    /// use mcp_runtime::input::Sampling;
    ///
    /// async fn haiku(ctx: Ctx) -> Result<String, HandlerError> {
    ///     let ask = Sampling::new().system("You write haiku.").user("The sea").max_tokens(60);
    ///     Ok(ctx.sample(ask).await?.text())
    /// }
    /// ```
    pub async fn sample(&self, ask: Sampling) -> Result<SamplingReply, HandlerError> {
        if ask.messages.is_empty() {
            return Err(HandlerError::internal("a sampling request needs at least one message"));
        }
        let key = ask.key.clone().unwrap_or_else(|| self.run().next_key("sample"));
        let answer = self.ask_one(&key, "sampling/createMessage", ask.params()).await?;
        serde_json::from_value(answer).map_err(|e| {
            HandlerError::Rpc(RpcError::invalid_params(format!(
                "the answer to input request {key:?} is not a CreateMessageResult: {e}"
            )))
        })
    }

    /// The client's roots (`roots/list`), keyed `roots-N`. Modern era: an MRTR round (the
    /// handler re-runs from the top); legacy eras: a real request. A client without the
    /// `roots` capability fails the call with -32021; a malformed answer is -32602.
    ///
    /// ```no_run
    /// use mcp_runtime::{Ctx, HandlerError};
    ///
    /// async fn where_am_i(ctx: Ctx) -> Result<Vec<String>, HandlerError> {
    ///     Ok(ctx.roots().await?.into_iter().map(|r| r.uri).collect())
    /// }
    /// ```
    pub async fn roots(&self) -> Result<Vec<Root>, HandlerError> {
        let key = self.run().next_key("roots");
        let answer = self.ask_one(&key, "roots/list", json!({})).await?;
        serde_json::from_value::<RootsReply>(answer)
            .map(|r| r.roots)
            .map_err(|e| {
                HandlerError::Rpc(RpcError::invalid_params(format!(
                    "the answer to input request {key:?} is not a ListRootsResult: {e}"
                )))
            })
    }

    /// The state the previous round of this call kept ([`Ctx::keep_round_state`],
    /// [`Ctx::once`], or [`InputRequired::with_state`]), as an `S`; `None` in the first
    /// round (and, the handler never re-running, in the legacy eras). A state that is not an
    /// `S` is an internal error.
    ///
    /// ```no_run
    /// use mcp_runtime::{Ctx, HandlerError};
    ///
    /// async fn step(ctx: Ctx) -> Result<u32, HandlerError> {
    ///     let round: u32 = ctx.round_state()?.unwrap_or(0) + 1;
    ///     ctx.keep_round_state(&round)?;
    ///     Ok(round)
    /// }
    /// ```
    pub fn round_state<S: DeserializeOwned>(&self) -> Result<Option<S>, HandlerError> {
        self.request_state()
            .map(|s| S::deserialize(s))
            .transpose()
            .map_err(|e| HandlerError::internal(format!("the round state is not a {}: {e}", type_name::<S>())))
    }

    /// Keeps `state` for the next round of this call: the next `input_required` this run
    /// answers (through [`Ctx::input`] and the methods built on it) carries it, sealed in
    /// `requestState`, and the re-run reads it with [`Ctx::round_state`]. State is kept one
    /// round at a time: a round that asks again and wants it still must keep it again (as
    /// [`Ctx::once`] does). The last value kept in a run wins; a request's own
    /// [`InputRequired::with_state`] wins over it; a handler that returns
    /// `Err(HandlerError::InputRequired(…))` itself must put the state there.
    ///
    /// The state travels through the client: it is integrity-protected and bound to the
    /// caller and the call, but it is not encrypted, so keep secrets out of it. See
    /// [`Ctx::round_state`] for an example.
    pub fn keep_round_state<S: Serialize>(&self, state: &S) -> Result<(), HandlerError> {
        let value = serde_json::to_value(state)
            .map_err(|e| HandlerError::internal(format!("the round state could not be serialized: {e}")))?;
        self.run().keep(value);
        Ok(())
    }

    /// The value of a side effect that must happen once per call: in the first round it
    /// runs `init`, later rounds get the value it produced (kept with
    /// [`Ctx::keep_round_state`], so it uses the call's one state slot: keep a struct for
    /// several values). In the legacy eras the handler runs once, so `init` just runs.
    ///
    /// ```no_run
    /// use mcp_runtime::{Ctx, HandlerError};
    /// use mcp_runtime::input::Elicitation;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Pay {
    ///     ok: bool,
    /// }
    ///
    /// async fn new_order() -> Result<String, HandlerError> {
    ///     Ok("order-17".to_owned()) // say, an INSERT: it must not run twice
    /// }
    ///
    /// async fn order(ctx: Ctx) -> Result<String, HandlerError> {
    ///     let order_id: String = ctx.once(new_order).await?;
    ///     match ctx.elicit::<Pay>(format!("Pay {order_id}?")).await? {
    ///         Elicitation::Accept(Pay { ok: true }) => Ok(format!("{order_id} paid")),
    ///         _ => Ok(format!("{order_id} left unpaid")),
    ///     }
    /// }
    /// ```
    pub async fn once<S, F, Fut>(&self, init: F) -> Result<S, HandlerError>
    where
        S: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<S, HandlerError>>,
    {
        let value = match self.round_state::<S>()? {
            Some(kept) => kept,
            None => init().await?,
        };
        self.keep_round_state(&value)?;
        Ok(value)
    }

    /// Asks one keyed input request through [`Ctx::input`] and returns its answer.
    async fn ask_one(&self, key: &str, method: &str, params: Value) -> Result<Value, HandlerError> {
        let mut answers = self.input(InputRequired::new().request(key, method, params)).await?;
        answers
            .remove(key)
            .ok_or_else(|| HandlerError::internal(format!("no answer to input request {key:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    enum Colour {
        Red,
        Green,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    enum Size {
        /// Small one
        Small,
        /// Large one
        Large,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Everything {
        /// The name
        name: String,
        #[schemars(email)]
        email: Option<String>,
        #[schemars(url)]
        site: Option<String>,
        #[schemars(length(min = 2, max = 5))]
        code: String,
        #[schemars(range(min = 1, max = 9))]
        count: u32,
        ratio: f64,
        ok: bool,
        colour: Colour,
        size: Option<Size>,
        tags: Vec<Colour>,
        #[serde(default = "five")]
        five: i64,
        #[serde(default)]
        maybe: Option<bool>,
    }

    fn five() -> i64 {
        5
    }

    #[test]
    fn flat_primitives_become_the_restricted_form() {
        let s = form_schema::<Everything>().expect("flat");
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none() && s.get("title").is_none() && s.get("$defs").is_none());
        let p = &s["properties"];
        assert_eq!(p["name"], json!({"type": "string", "description": "The name"}));
        assert_eq!(p["email"], json!({"type": "string", "format": "email"}));
        assert_eq!(p["site"], json!({"type": "string", "format": "uri"}));
        assert_eq!(p["code"], json!({"type": "string", "minLength": 2, "maxLength": 5}));
        assert_eq!(p["count"], json!({"type": "integer", "minimum": 1, "maximum": 9}));
        assert_eq!(p["ratio"], json!({"type": "number"}));
        assert_eq!(p["ok"], json!({"type": "boolean"}));
        assert_eq!(p["colour"], json!({"type": "string", "enum": ["Red", "Green"]}));
        assert_eq!(
            p["size"],
            json!({"type": "string", "oneOf": [
                {"const": "Small", "title": "Small one"},
                {"const": "Large", "title": "Large one"}
            ]})
        );
        assert_eq!(
            p["tags"],
            json!({"type": "array", "items": {"type": "string", "enum": ["Red", "Green"]}})
        );
        assert_eq!(p["five"]["default"], 5);
        assert_eq!(p["maybe"], json!({"type": "boolean"}));
        let required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(required, ["name", "code", "count", "ratio", "ok", "colour", "tags"]);
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Inner {
        a: u8,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Nested {
        inner: Inner,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct ListOfNumbers {
        numbers: Vec<u32>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema)]
    struct Map_ {
        m: std::collections::HashMap<String, String>,
    }

    #[test]
    fn anything_else_is_refused_with_the_field_named() {
        let e = form_schema::<Nested>().unwrap_err();
        assert!(e.reason().contains("\"inner\"") && e.reason().contains("nested"), "{e}");
        assert!(e.to_string().contains("Nested"), "{e}");
        let e = form_schema::<ListOfNumbers>().unwrap_err();
        assert!(e.reason().contains("\"numbers\""), "{e}");
        assert!(form_schema::<Map_>().is_err());
        assert!(form_schema::<u32>().is_err());
        assert!(form_schema::<Colour>().is_err());
    }

    #[test]
    fn elicit_results_are_read_by_action() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Name {
            name: String,
        }
        let ok = read_elicitation::<Name>("k", json!({"action": "accept", "content": {"name": "Ada"}}));
        assert_eq!(ok.ok(), Some(Elicitation::Accept(Name { name: "Ada".into() })));
        let d = read_elicitation::<Name>("k", json!({"action": "decline"}));
        assert_eq!(d.ok(), Some(Elicitation::Decline));
        let c = read_elicitation::<Name>("k", json!({"action": "cancel"}));
        assert_eq!(c.ok(), Some(Elicitation::Cancel));
        let bad = read_elicitation::<Name>("k", json!({"action": "accept", "content": {"name": 3}}));
        assert!(matches!(bad, Err(HandlerError::Tool(m)) if m.contains("(k)")));
        let weird = read_elicitation::<Name>("k", json!({"action": "maybe"}));
        assert!(matches!(weird, Err(HandlerError::Rpc(e)) if e.code == -32602));
    }

    #[test]
    fn counted_keys_per_kind() {
        let run = Run::default();
        assert_eq!(run.next_key("elicit"), "elicit-1");
        assert_eq!(run.next_key("sample"), "sample-1");
        assert_eq!(run.next_key("elicit"), "elicit-2");
        assert_eq!(run.next_key("roots"), "roots-1");
    }

    #[test]
    fn sampling_params_and_replies() {
        let p = Sampling::new()
            .user("hi")
            .assistant("hello")
            .message(Role::User, Content::image("AA==", "image/png"))
            .stop_sequence("END")
            .priorities(Some(0.5), None, Some(1.0))
            .model_hint("a")
            .metadata(json!({"x": 1}))
            .params();
        assert_eq!(p["maxTokens"], 1024);
        assert_eq!(
            p["messages"][1],
            json!({"role": "assistant", "content": {"type": "text", "text": "hello"}})
        );
        assert_eq!(
            p["messages"][2]["content"],
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
        );
        assert_eq!(
            p["modelPreferences"],
            json!({"costPriority": 0.5, "intelligencePriority": 1.0, "hints": [{"name": "a"}]})
        );
        assert_eq!(p["stopSequences"], json!(["END"]));
        assert!(p.get("systemPrompt").is_none() && p.get("temperature").is_none());
        let many: SamplingReply = serde_json::from_value(json!({
            "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "a"}, {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, {"type": "text", "text": "b"}]
        }))
        .unwrap();
        assert_eq!((many.text().as_str(), many.content.len()), ("ab", 3));
        assert!(serde_json::from_value::<SamplingReply>(json!({"role": "assistant"})).is_err());
    }
}
