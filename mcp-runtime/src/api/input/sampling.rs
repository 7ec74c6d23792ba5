//! Typed sampling (`sampling/createMessage`) and roots (`roots/list`): the requests and the
//! replies.

use mcp_protocol::Revision;
use mcp_protocol::model::{ClientCapabilities, Content, IncludeContext, Role};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

// --------------------------------------------------------------------- sampling

/// A `sampling/createMessage` request to send with [`Ctx::sample`](crate::Ctx::sample): the conversation, the
/// system prompt, the token budget (1024 unless set), and optional model preferences.
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::Sampling;
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
    pub(super) messages: Vec<Value>,
    system: Option<String>,
    max_tokens: u32,
    temperature: Option<f64>,
    stop_sequences: Vec<String>,
    hints: Vec<String>,
    priorities: Map<String, Value>,
    metadata: Option<Value>,
    include_context: Option<IncludeContext>,
    pub(super) key: Option<String>,
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
            include_context: None,
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

    /// Asks the client to attach the context of this server or of every server it is connected
    /// to (`includeContext`; the client may ignore it). A 2025-11-25 or later client that does
    /// not declare `sampling.context` is sent `none` instead of the deprecated values.
    pub fn include_context(mut self, context: IncludeContext) -> Self {
        self.include_context = Some(context);
        self
    }

    /// Names the input request `key` instead of the counted `sample-N`.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// The request's `params` (`CreateMessageRequestParams`) for a client of `revision` with
    /// `capabilities` (they decide what `includeContext` may say).
    pub fn params_for(&self, revision: Option<Revision>, capabilities: &ClientCapabilities) -> Value {
        let mut p = self.params();
        if let (Some(c), Value::Object(map)) = (self.include_context, &mut p) {
            let sent = c.for_client(revision, capabilities);
            map.insert(
                "includeContext".into(),
                serde_json::to_value(sent).unwrap_or(Value::Null),
            );
        }
        p
    }

    /// The request's `params` (`CreateMessageRequestParams`), `includeContext` left out.
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

/// The client's answer to [`Ctx::sample`](crate::Ctx::sample) (`CreateMessageResult`).
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::SamplingReply;
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

/// One of the client's roots ([`Ctx::roots`](crate::Ctx::roots)).
///
/// ```
/// # use mcp_runtime as mcp_server;
/// use mcp_server::input::Root;
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
pub(super) struct RootsReply {
    pub(super) roots: Vec<Root>,
}
