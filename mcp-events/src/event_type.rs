//! [`EventType`]: an event type a server declares, its schemas, delivery modes, filter and
//! limits.

use std::sync::Arc;

use mcp_protocol::events::wire::{DeliveryMode, EventDescriptor};
use mcp_protocol::schema::{CompiledSchema, validator};
use mcp_runtime::extension::schema_of;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use crate::error::EventsError;

/// Decides whether an occurrence reaches a subscription: `(arguments, data) -> bool`.
pub type Filter = Arc<dyn Fn(&Map<String, Value>, &Map<String, Value>) -> bool + Send + Sync>;

/// An event type: what `events/list` describes, and how its subscriptions are served.
///
/// ```
/// use mcp_events::EventType;
/// use mcp_protocol::events::wire::DeliveryMode;
///
/// #[derive(schemars::JsonSchema)]
/// struct Filter { branch: Option<String> }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Finished { branch: String, ok: bool }
///
/// let builds = EventType::new("build.finished", "A CI build finished")
///     .arguments::<Filter>()
///     .and_then(|t| t.payload::<Finished>())
///     .and_then(|t| t.delivery(&[DeliveryMode::Poll, DeliveryMode::Push]))
///     .expect("valid schemas")
///     .filter(|args, data| args.get("branch").is_none_or(|b| data.get("branch") == Some(b)));
/// assert_eq!(builds.name(), "build.finished");
/// ```
#[derive(Clone)]
pub struct EventType {
    pub(crate) descriptor: EventDescriptor,
    pub(crate) arguments: Option<Arc<CompiledSchema>>,
    pub(crate) payload: Option<Arc<CompiledSchema>>,
    pub(crate) filter: Option<Filter>,
    pub(crate) max_streams: Option<usize>,
}

impl std::fmt::Debug for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventType")
            .field("name", &self.descriptor.name)
            .field("delivery", &self.descriptor.delivery)
            .finish_non_exhaustive()
    }
}

impl EventType {
    /// A type offered by poll and push, with any arguments (`{"type":"object"}`) and any
    /// payload object, every occurrence reaching every subscription.
    pub fn new(name: &str, description: &str) -> Self {
        EventType {
            descriptor: EventDescriptor {
                name: name.to_owned(),
                description: Some(description.to_owned()),
                delivery: vec![DeliveryMode::Poll, DeliveryMode::Push],
                input_schema: json!({"type": "object"}),
                payload_schema: json!({"type": "object"}),
                meta: None,
            },
            arguments: None,
            payload: None,
            filter: None,
            max_streams: None,
        }
    }

    /// The subscription arguments' schema, derived from `A`.
    pub fn arguments<A: JsonSchema>(self) -> Result<Self, EventsError> {
        self.arguments_schema(schema_of::<A>())
    }

    /// The subscription arguments' schema (an object schema); arguments that do not follow
    /// it are -32602.
    pub fn arguments_schema(mut self, schema: Value) -> Result<Self, EventsError> {
        self.arguments = compile(&self.descriptor.name, &schema)?;
        self.descriptor.input_schema = schema;
        Ok(self)
    }

    /// The payload's schema, derived from `P`.
    pub fn payload<P: JsonSchema>(self) -> Result<Self, EventsError> {
        self.payload_schema(schema_of::<P>())
    }

    /// The payload's schema (an object schema); an emitted payload that does not follow it is
    /// refused ([`EventsError::Payload`]).
    pub fn payload_schema(mut self, schema: Value) -> Result<Self, EventsError> {
        self.payload = compile(&self.descriptor.name, &schema)?;
        self.descriptor.payload_schema = schema;
        Ok(self)
    }

    /// The delivery modes it is offered in (a non-empty set; repeats are dropped).
    pub fn delivery(mut self, modes: &[DeliveryMode]) -> Result<Self, EventsError> {
        let mut modes = modes.to_vec();
        modes.sort();
        modes.dedup();
        if modes.is_empty() {
            return Err(EventsError::NoDelivery(self.descriptor.name));
        }
        self.descriptor.delivery = modes;
        Ok(self)
    }

    /// Which occurrences reach a subscription with given arguments (all, by default).
    pub fn filter(
        mut self,
        filter: impl Fn(&Map<String, Value>, &Map<String, Value>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// At most this many push streams of this type at once (-32013 with `data.limit`
    /// `"streams"` past it), counted where [`EventsBuilder::stream_slots`](crate::EventsBuilder::stream_slots)
    /// says: on each instance by default, across every instance with shared slots. Unbounded by
    /// default: the transport's stream budget still holds them.
    pub fn max_streams(mut self, max: usize) -> Self {
        self.max_streams = Some(max);
        self
    }

    /// `_meta` of its descriptor.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.descriptor.meta = Some(meta);
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.descriptor.name
    }

    /// Its descriptor, as `events/list` gives it.
    pub fn descriptor(&self) -> &EventDescriptor {
        &self.descriptor
    }

    /// Whether it is offered in `mode`.
    pub fn offers(&self, mode: DeliveryMode) -> bool {
        self.descriptor.delivery.contains(&mode)
    }

    /// Whether an occurrence with `data` reaches a subscription with `arguments`.
    pub(crate) fn admits(&self, arguments: &Map<String, Value>, data: &Map<String, Value>) -> bool {
        self.filter.as_ref().is_none_or(|f| f(arguments, data))
    }
}

fn compile(name: &str, schema: &Value) -> Result<Option<Arc<CompiledSchema>>, EventsError> {
    if !schema.is_object() {
        return Err(EventsError::Schema(name.to_owned()));
    }
    validator(schema)
        .map(|v| v.map(Arc::new))
        .map_err(|_| EventsError::Schema(name.to_owned()))
}
