//! Health, readiness and shutdown signals: the `/livez` and `/readyz` probes of `serve` and of
//! the router, and the library's helpers draining on `SIGTERM` as on Ctrl-C.
//!
//! `health/drain.rs`: readiness falls (503 `draining`) as soon as a shutdown begins, while
//! liveness stays 200, the server keeps serving for the readiness delay and the call in flight
//! completes; the router's handle does the same. `health/store.rs`: a server on a Redis the
//! test owns answers 503 `store unreachable` once that Redis is killed, and 200 again once it
//! is back. `health/guard.rs`: the probes answer without credentials, whatever the `Host`, and
//! past the MCP rate limits, while `/mcp` still refuses. `health/signals.rs`: `serve_http` and
//! `serve_stdio` (in the `drain-server` binary), and the `everything` fixture, answer a call in
//! flight after `SIGTERM`, then exit 0. `health/support.rs`: the servers and a raw HTTP/1.1 client.

#[path = "health/drain.rs"]
mod drain;
#[path = "health/guard.rs"]
mod guard;
#[path = "health/signals.rs"]
mod signals;
#[path = "health/store.rs"]
mod store;
#[path = "health/support.rs"]
mod support;
