//! The verbs of the Streamable endpoint, once Origin and Host have passed: POST ([`post`]) and
//! the answers it may turn into (a call, a batch, a subscription stream), and the session verbs
//! GET and DELETE ([`session`]).

mod batch;
mod call;
mod listen;
pub(crate) mod post;
pub(crate) mod session;
