//! [`EventsError`]: why a declaration or an emit was refused.

/// Why a declaration or an emit was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EventsError {
    /// A schema is not an object, or does not compile.
    #[error("event type {0:?}: a schema is not a valid JSON Schema object")]
    Schema(String),
    /// A type offered in no delivery mode.
    #[error("event type {0:?} is offered in no delivery mode")]
    NoDelivery(String),
    /// Two types share a name.
    #[error("event type {0:?} is declared twice")]
    Duplicate(String),
    /// No type has this name.
    #[error("no event type is named {0:?}")]
    Unknown(String),
    /// The payload is not an object, or does not follow the type's payload schema.
    #[error("event type {0:?}: the payload does not follow its schema: {1}")]
    Payload(String, String),
    /// A type offering webhook delivery added to a server built without webhooks.
    #[error("event type {0:?} offers webhook delivery, which this server was built without")]
    WebhooksOff(String),
    /// The log could not take the occurrence.
    #[error("the occurrence log failed: {0}")]
    Log(String),
}
