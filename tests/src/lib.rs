//! Integration suites of the MCP server library, grouped by feature under
//! `tests/`: the dispatcher of both eras, the stdio transport, and (as they
//! land) HTTP, sessions, MRTR, subscriptions, tasks and auth. Each suite is
//! its own test binary; the library holds what they and the scale-out harness
//! share: [`proxy`], the round-robin HTTP proxy behind the `rr-proxy` binary, [`drive`],
//! one request through an engine, [`engine`], an engine started with its driver spawned, and
//! [`catalog`], items the suites register.

pub mod catalog;
pub mod drive;
pub mod engine;
pub mod fixture;
pub mod pipe;
pub mod proxy;
