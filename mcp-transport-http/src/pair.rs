//! The 2024-11-05 HTTP+SSE transport, served beside the Streamable endpoint when
//! [`HttpConfig::sse_pair`](crate::HttpConfig::sse_pair) names its two paths.
//!
//! A GET on the SSE path authenticates, mints a session id (CSPRNG) bound to the principal, opens
//! the stream and sends `event: endpoint` with `data: <message path>?sessionId=<id>`. The client
//! POSTs every message there: the POST is answered `202` (or `400`/`413`/`408` when the body is
//! unusable) and the reply travels on the stream as `event: message`. A POST without `sessionId` is
//! `400`; an unknown id and another principal's are the same `404`.
//!
//! The session is the stream, as in the reference implementation: the pair exists from the GET, the
//! runtime's [`Session`](mcp_runtime::Session) is created by `runtime.initialize` when the client's
//! `initialize` arrives on the message path (requests before it run without a session, like on a
//! sessionless endpoint), and everything ends with the stream, however it ends (the client leaves,
//! a write fails, the server shuts down): the pair is removed, the session closed (its calls
//! cancelled, its pending server-to-client requests failed), and calls made before `initialize`
//! cancelled. The session is not in the engine's session store: no `Mcp-Session-Id` reaches it.
//!
//! Every message goes to the engine with no transport revision (`MCP-Protocol-Version` is
//! not part of this transport and is ignored), the pair's [`SessionSlot`](mcp_runtime::SessionSlot)
//! and "legacy only": a request carrying the modern `_meta` envelope is -32600, everything else is
//! answered as on any other transport (`server/discover` included, by the one method table).
//! `initialize` negotiates the session's revision as on the Streamable endpoint. The session
//! receives list-changed and subscribed resource-updated notifications on its stream.
//!
//! **Across instances.** With a shared store (`Storage::Shared`), the POSTs of a pair may reach any
//! instance: no sticky routing is needed. Each pair is a mailbox of the engine's addressed delivery
//! ([`mcp_runtime::mailbox`]), whose id is the pair's. The instance answering the GET holds it
//! ([`Engine::hold_mailbox`](mcp_runtime::Engine::hold_mailbox)): the mailbox's record (id,
//! principal, holder) is written before the `endpoint` event, refreshed while the stream is open
//! and deleted when it ends. A POST reaching another instance is checked there as here (media type,
//! authentication, `sessionId`, the record
//! ([`Engine::find_mailbox`](mcp_runtime::Engine::find_mailbox)): an unknown pair and another
//! principal's are the same `404`; then the body: `413`, `408`, `400`), forwarded to the holder as
//! mail ([`Engine::forward_mail`](mcp_runtime::Engine::forward_mail)), and answered as the holder
//! says: `202` once the holder handed it to its engine, exactly as for a POST it received itself
//! (same principal check, same session slot; [`relay`] feeds the pair's forwarded messages to
//! [`message::handle`] one by one, in the order the bus brought them, and writes the holder's
//! answer, which the engine carries back without reading it). So a message posted after the
//! previous POST was answered is handled after it, whichever instances they reached. A holder whose
//! stream ended answers `404`; one that died is `503` until its heartbeat lapsed, then `404` (the
//! record is removed).
//!
//! The GET on the SSE path is [`stream`], the POSTs on the message path [`message`], the messages
//! forwarded from other instances [`relay`]; the table of open pairs is part of the endpoint's
//! state ([`Pairs`](crate::state::Pairs)).

pub(crate) mod message;
mod relay;
pub(crate) mod stream;
