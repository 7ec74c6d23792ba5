//! The header this crate names beyond those of `http` and `mcp_protocol::headers`: the legacy
//! session's `Mcp-Session-Id`, read on every verb and written when `initialize` mints a session.

use http::header::HeaderName;

/// The lowercase name of the session header.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
