//! What a handler sees: the per-request [`Ctx`], the handler traits, the one error type
//! ([`HandlerError`]) and its friends, typed client input, and the server's shared state.
//!
//! Nothing here knows how a request reached the handler: the context reaches sessions, tasks and
//! URL elicitations through what it was given ([`Session`](crate::session::Session), the
//! [`TaskLink`](task_link::TaskLink) port, the elicitation records), never through the runtime.

mod client;
pub(crate) mod ctx;
pub(crate) mod error;
pub mod handler;
pub mod input;
pub(crate) mod input_required;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod state;
pub(crate) mod task_link;

pub use client::UrlElicitation;
pub use ctx::Ctx;
pub use error::{BoxError, ClientRequestError, HandlerError};
pub use input_required::InputRequired;
pub use state::States;
