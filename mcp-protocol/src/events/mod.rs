//! The Events extension (`io.modelcontextprotocol/events`): its identifier, methods and
//! notifications, the wire types of descriptors, occurrences and results, its error codes,
//! cursors, webhook subscription keys, the Standard Webhooks signature and the rules a
//! callback URL follows. Pure rules: the registry, logs, streams and the webhook sender live
//! in `mcp-events`.
//!
//! A server declares event types (`events/list`); a client receives their occurrences in one
//! of three modes, each type offering a non-empty subset:
//!
//! - **poll** (`events/poll`): a long poll answered as soon as an occurrence exists, never
//!   later than `timeoutMs`, with a cursor the client brings back;
//! - **push** (`events/stream`): a long-lived request whose stream carries
//!   `notifications/events/*`, each naming the request's id in
//!   `_meta["io.modelcontextprotocol/subscriptionId"]` ([`SUBSCRIPTION_ID_META`]);
//! - **webhook** (`events/subscribe`, `events/unsubscribe`): signed POSTs to an `https`
//!   callback, under a subscription keyed by (principal, url, name, arguments) ([`key`]).
//!
//! What is here:
//!
//! - [`wire`]: the params and results of every method, descriptors and occurrences.
//! - [`errors`]: -32011 NotFound … -32015 CallbackEndpointError with their typed `data`.
//! - [`cursor`]: the opaque position of an event log a cursor carries.
//! - [`key`]: canonical JSON and the derived subscription id.
//! - [`webhook`]: `whsec_` secrets, signatures, control envelopes and the `lastError`
//!   categories.
//! - [`callback`]: callback URLs (`https` only) and which addresses are globally routable
//!   (the IANA special-purpose registries), for the SSRF guards.
//!
//! Sources: the design sketch of `modelcontextprotocol/experimental-ext-triggers-events`
//! (`docs/design-sketch-proposal.md`) and the conformance suite's `events-*` scenarios.

pub mod callback;
pub mod cursor;
pub mod errors;
pub mod key;
pub mod webhook;
pub mod wire;

/// The extension's identifier, the key of its declaration in `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/events";
/// The settings key a server sets to `true` when it sends [`LIST_CHANGED`].
pub const LIST_CHANGED_SETTING: &str = "listChanged";

/// Lists the event types (paginated).
pub const LIST: &str = "events/list";
/// A long poll for one subscription's occurrences.
pub const POLL: &str = "events/poll";
/// A long-lived request whose stream carries one subscription's notifications.
pub const STREAM: &str = "events/stream";
/// Creates or refreshes a webhook subscription.
pub const SUBSCRIBE: &str = "events/subscribe";
/// Removes a webhook subscription.
pub const UNSUBSCRIBE: &str = "events/unsubscribe";
/// Every method of the extension.
pub const METHODS: [&str; 5] = [LIST, POLL, STREAM, SUBSCRIBE, UNSUBSCRIBE];

/// The set of event types changed.
pub const LIST_CHANGED: &str = "notifications/events/list_changed";
/// An occurrence, on a push stream.
pub const EVENT: &str = "notifications/events/event";
/// A push subscription is active (first, and again after a gap with `truncated: true`).
pub const ACTIVE: &str = "notifications/events/active";
/// A push stream is alive; carries the position checked up to.
pub const HEARTBEAT: &str = "notifications/events/heartbeat";
/// A recoverable failure; the subscription stays active.
pub const ERROR: &str = "notifications/events/error";
/// The subscription ended; the stream closes after it.
pub const TERMINATED: &str = "notifications/events/terminated";

/// The `_meta` key naming the `events/stream` request a notification belongs to.
pub const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";

/// A push stream sends a heartbeat at least this often (the design's SHOULD: 30 s).
pub const MAX_HEARTBEAT_MS: u64 = 30_000;
