//! Server-Sent Event streams: the framing ([`sse`]), the one pump that writes every long-lived
//! stream ([`pump`]), the legacy GET stream with its per-session event rings ([`hub`]),
//! resumable POST streams ([`resume`]), and the streams of a session shared by several
//! instances ([`shared_stream`]).

pub(crate) mod hub;
pub(crate) mod pump;
pub(crate) mod resume;
pub(crate) mod shared_stream;
pub(crate) mod sse;
pub(crate) mod wakes;
