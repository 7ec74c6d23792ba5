//! # mcp-events
//!
//! The Events extension (`io.modelcontextprotocol/events`) for servers built on
//! `mcp-runtime`: a server declares event types in code ([`EventType`]: name, description,
//! delivery modes, the JSON Schemas of a subscription's arguments and of the payload, derived
//! from Rust types) and emits their occurrences from anywhere ([`Events::emit`]); clients
//! receive them
//!
//! - by **poll** (`events/poll`): a long poll answered as soon as an occurrence exists, and
//!   never later than `timeoutMs`, with `maxEvents`, `maxAgeMs`, `truncated`, `hasMore` and
//!   `nextPollMs`;
//! - by **push** (`events/stream`): a long-lived request whose stream carries
//!   `notifications/events/active`, `event`, `heartbeat` (at most 30 s of silence), `error`
//!   and `terminated`, each naming the request in `_meta`, with the empty result when the
//!   server ends it; exempt from the in-flight request bound (a transport holds it with its
//!   stream budget);
//! - by **webhook** (`events/subscribe`, `events/unsubscribe`, see [`webhook`]): signed POSTs
//!   (Standard Webhooks) to an `https` callback the endpoint consented to, retried with backoff,
//!   under a subscription keyed by (principal, URL, type, arguments) and refreshed before its
//!   grant ends; SSRF guards on every exchange.
//!
//! `events/list` pages the types served; [`Events::add_type`] and [`Events::remove_type`]
//! change them at run time, announced on the open push streams
//! (`notifications/events/list_changed`). Cursors are opaque positions of an occurrence log
//! ([`log::OccurrenceLog`], kept in memory by [`log::MemoryLog`], or shared by every instance
//! of a server through a store: `mcp-store-redis` implements it and the
//! [`webhook::store::SubscriptionStore`], whose leases make one instance at a time deliver a
//! webhook subscription, in the stored form of `stored.rs`); a cursor the log no longer
//! covers is answered from now with `truncated: true`, never with an error. Unknown types are
//! -32011, a mode a type does not offer -32014, arguments that do not follow the type's schema
//! -32602 (see `mcp_protocol::events`, where every wire rule of the extension lives).
//!
//! It uses the runtime's public API only: an
//! [`Extension`](mcp_runtime::extension::Extension) whose methods are
//! [`CustomMethod`](mcp_runtime::extension::CustomMethod)s, `events/stream` marked
//! [`long_lived`](mcp_runtime::extension::CustomMethod::long_lived). With `mcp-server`,
//! `McpServerBuilder::events` registers it.

mod error;
mod event_type;
mod events;
mod extension;
pub mod log;
mod methods;
pub mod slots;
mod stored;
mod time;
pub mod webhook;

pub use error::EventsError;
pub use event_type::{EventType, Filter};
pub use events::{Emitted, Events, EventsBuilder};
pub use mcp_protocol::events::wire::DeliveryMode;
pub use webhook::WebhookSettings;
