//! # mcp-protocol
//!
//! The sans-IO core of the MCP server library. Everything here is a pure
//! function of its inputs: no sockets, no async runtime, no clocks, no global
//! state. Time, keys and randomness come in as arguments, so that every
//! protocol rule is written once and pinned by a unit test, and so that a
//! custom transport can reuse the rules without the rest of the library.
//!
//! What lives here:
//!
//! - [`auth`]: the authenticated identity ([`auth::AuthInfo`]) that owns state.
//! - [`jsonrpc`]: JSON-RPC 2.0 envelopes, decoded within limits (size, depth,
//!   id and shape rules) and encoded.
//! - [`params`]: a message's `params`, kept as text and indexed: members are
//!   read from the text when asked for, the whole object built only on demand.
//! - [`revision`]: the enumerated set of protocol revisions, their eras and the
//!   feature table (never a string comparison).
//! - [`classify`]: the era of an inbound request (decided once, body first)
//!   and the batch rules per revision.
//! - [`client`]: the client's side: the modern envelope it stamps on each request, the MRTR
//!   retry, the legacy handshake and era detection.
//! - [`method`]: the [`Method`] a client sends, parsed once, with the
//!   catalogue of which eras serve it and what it needs.
//! - [`notifications`]: the notifications the server emits on its own (list
//!   changes, resource updates, replay truncation), one frame for every stream.
//! - [`meta`]: the modern per-request `_meta` envelope and its validation.
//! - [`headers`]: the `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
//!   `Mcp-Param-*` agreement rules, the `=?base64?…?=` codec, and validation of
//!   `x-mcp-header` annotations.
//! - [`task_mode`]: the one decision of how a tool call runs (inline, refused,
//!   task first, or escalated after an inline window).
//! - [`error`]: error codes and each era's HTTP status mapping.
//! - [`cursor`]: opaque pagination cursors.
//! - [`event_id`]: SSE event ids and the `Last-Event-ID` a client resumes with.
//! - [`bounds`]: what one request may make the server hold (subscriptions, URI lengths).
//! - [`mrtr`]: the shape and capability rules of MRTR input requests and responses.
//! - [`request_state`]: sealing and opening the MRTR `requestState`.
//! - [`schema`]: JSON Schema 2020-12 compilation and validation with bounded cost.
//! - [`model`]: the wire types of every method, and their per-era rendering.
//! - [`skills`]: the Skills extension (SEP-2640): naming rules, `skill://` URIs, digests,
//!   limits and the wire types of its entries and results.
//! - [`discovery`]: Server Cards and the MCP Catalog (SEP-2127): their locations, media type
//!   and schema, and how a catalog names a server.
//! - [`events`]: the Events extension (`io.modelcontextprotocol/events`): methods, wire types,
//!   error codes, cursors, subscription keys, webhook signatures and the SSRF rules.
//! - [`apps`]: MCP Apps (`io.modelcontextprotocol/ui`): the `_meta.ui` of UI resources and
//!   of the tools linked to them, and the rules they follow.
//!
//! The runtime (`mcp-runtime`) executes handlers on top of these rules; its
//! engine and the transports ask this crate whenever they need a protocol
//! decision. This crate is the bottom layer of the workspace: see
//! `docs/ARCHITECTURE.md` (§1, §4: where each rule lives) and the invariants
//! the code cites in `docs/INVARIANTS.md`.

pub mod apps;
pub mod auth;
pub mod bounds;
pub mod classify;
pub mod client;
pub mod cursor;
pub mod discovery;
pub mod error;
pub mod event_id;
pub mod events;
pub mod extension;
pub mod headers;
mod json;
pub mod jsonrpc;
pub mod meta;
pub mod method;
pub mod model;
pub mod mrtr;
pub mod notifications;
pub mod params;
pub mod request_state;
pub mod revision;
pub mod schema;
pub mod secure_params;
pub mod skills;
pub mod task_mode;

pub use error::{RpcError, codes};
pub use jsonrpc::{Message, Notification, Request, RequestId, Response};
pub use method::{Capability, Method, NotificationMethod};
pub use params::Params;
pub use revision::{Era, Feature, Revision, TransportRevision};
