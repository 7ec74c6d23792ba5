//! Lifecycle (issue #13): graceful shutdown ends every stream and drains the calls in flight
//! within a deadline (`serve_http_on`, the router under `axum::serve`, stdio), a cancelled
//! handler gets its grace to clean up, per-tool deadlines, and the answer to a cancelled POST.
//!
//! `lifecycle/fixture.rs` builds the server (its tools report through a [`fixture::Probe`]);
//! `lifecycle/shutdown.rs` the shutdown tests; `lifecycle/calls.rs` cancellation and
//! deadlines; `lifecycle/stdio.rs` a line client for the stdio tests. The HTTP client and SSE
//! reader are the HTTP suite's (`http/support.rs`). Bounds are generous (seconds, where the
//! old behaviour hung for 20 s or more), so a noisy machine does not make them flaky.

#[path = "lifecycle/calls.rs"]
mod calls;
#[path = "lifecycle/fixture.rs"]
mod fixture;
#[path = "lifecycle/shutdown.rs"]
mod shutdown;
#[path = "lifecycle/stdio.rs"]
mod stdio;
#[allow(dead_code)]
#[path = "http/support.rs"]
mod support;
