//! The guides (`docs/guides/` in the repository, `guides/` in this crate: a link to it, so that
//! the published crate carries them), one module each, so that their code is
//! compiled and run as doc tests.
//!
//! - [`getting_started`]: a first server on stdio and on HTTP, the `Cargo.toml` lines, graceful
//!   shutdown on Ctrl-C and `SIGTERM` (stdio and HTTP), the health probes;
//! - [`tools`]: typed, structured and raw tools, derived schemas, annotations and icons, errors,
//!   shared state, timeouts;
//! - [`resources`]: resources, templates, subscriptions, cache hints;
//! - [`prompts`]: prompts, typed arguments, completions;
//! - [`progress_logging_cancellation`]: progress, log messages, cancellation;
//! - [`elicitation_sampling`]: asking the user or the client's model, in both eras (MRTR);
//! - [`tasks`]: long-running tools as tasks, in both eras;
//! - [`authentication`]: the providers of [`crate::auth`], the caller in handlers, visibility;
//! - [`axum`]: the endpoint inside an axum app, layers, health, graceful shutdown;
//! - [`testing`]: tests of your server with `mcp_server::testing::TestClient` (feature `testing`);
//! - [`extensions`]: declaring extensions, custom and vendor methods, in both eras;
//! - [`middleware`]: layers every request and notification goes through;
//! - `events`: the Events extension (event types, emitting, poll and push; feature `events`);
//! - `skills`: Agent Skills (SEP-2640) from a directory tree or code, in both eras (feature
//!   `skills`);
//! - [`apps`]: MCP Apps, interactive views hosts render for tools, in both eras;
//! - [`rate_limits`]: the built-in rate limits, per caller, shared across instances;
//! - [`publishing`]: the crate's metadata, a `server.json` for the MCP registry;
//! - [`observability`]: the spans and metrics of OpenTelemetry's MCP conventions, to logs,
//!   Prometheus or an OTLP collector;
//! - [`migrating_from_rmcp`]: the concepts of `rmcp` and their counterparts here;
//! - `mounting`: other MCP servers mounted into this one, and the gateway (feature `mount`).
//!
//! [`getting_started`]: crate::guides::getting_started
//! [`tools`]: crate::guides::tools
//! [`resources`]: crate::guides::resources
//! [`prompts`]: crate::guides::prompts
//! [`progress_logging_cancellation`]: crate::guides::progress_logging_cancellation
//! [`elicitation_sampling`]: crate::guides::elicitation_sampling
//! [`tasks`]: crate::guides::tasks
//! [`authentication`]: crate::guides::authentication
//! [`axum`]: crate::guides::axum
//! [`testing`]: crate::guides::testing
//! [`extensions`]: crate::guides::extensions
//! [`middleware`]: crate::guides::middleware
//! [`apps`]: crate::guides::apps
//! [`rate_limits`]: crate::guides::rate_limits
//! [`publishing`]: crate::guides::publishing
//! [`observability`]: crate::guides::observability
//! [`migrating_from_rmcp`]: crate::guides::migrating_from_rmcp
//!
//! The modules are empty: only their documentation matters.

#[doc = include_str!("../guides/getting-started.md")]
pub mod getting_started {}

#[doc = include_str!("../guides/tools.md")]
pub mod tools {}

#[doc = include_str!("../guides/resources.md")]
pub mod resources {}

#[doc = include_str!("../guides/prompts.md")]
pub mod prompts {}

#[doc = include_str!("../guides/progress-logging-cancellation.md")]
pub mod progress_logging_cancellation {}

#[doc = include_str!("../guides/elicitation-sampling.md")]
pub mod elicitation_sampling {}

#[doc = include_str!("../guides/tasks.md")]
pub mod tasks {}

#[doc = include_str!("../guides/authentication.md")]
pub mod authentication {}

#[doc = include_str!("../guides/axum.md")]
pub mod axum {}

#[doc = include_str!("../guides/testing.md")]
pub mod testing {}

#[doc = include_str!("../guides/extensions.md")]
pub mod extensions {}

#[doc = include_str!("../guides/middleware.md")]
pub mod middleware {}

#[doc = include_str!("../guides/apps.md")]
pub mod apps {}
#[doc = include_str!("../guides/rate-limits.md")]
pub mod rate_limits {}

#[doc = include_str!("../guides/publishing.md")]
pub mod publishing {}

#[doc = include_str!("../guides/observability.md")]
pub mod observability {}

#[doc = include_str!("../guides/migrating-from-rmcp.md")]
pub mod migrating_from_rmcp {}

#[cfg(feature = "skills")]
#[doc = include_str!("../guides/skills.md")]
pub mod skills {}

#[cfg(feature = "events")]
#[doc = include_str!("../guides/events.md")]
pub mod events {}

#[cfg(feature = "mount")]
#[doc = include_str!("../guides/mounting.md")]
pub mod mounting {}
