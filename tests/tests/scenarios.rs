//! The conformance suite's newer server scenarios (modelcontextprotocol/conformance,
//! `src/scenarios/server/`), followed check by check against the `everything` fixture, which
//! `cargo test` builds beside this suite and each test starts on a free port. Each file names the
//! scenario's source file and commit, and each assertion the check id it stands for.
//!
//! `scenarios/cancellation.rs`: `http-stream-cancellation`. `scenarios/loglevel.rs`:
//! `per-request-loglevel`. `scenarios/sep_2106.rs`: `sep-2106-json-schema-loosening` and
//! `sep-2106-structured-content`. `scenarios/extensions.rs`: `server-legacy-extensions`.
//! `scenarios/events_poll.rs`: `events-discovery` and `events-poll`.
//! `scenarios/events_push.rs`: `events-push`. `scenarios/events_stdio.rs`: `events/stream`
//! over stdio. `scenarios/events_webhook.rs`: `events-webhook` and `events-webhook-delivery`.
//! `scenarios/events_durability.rs`: the TTL rows `events-webhook` grades through the restart
//! and generation controls on the suite's `main`.
//! `scenarios/events_shared.rs`: two instances on one Redis (cursors, long polls and webhook
//! deliveries shared, a killed instance's deliveries taken over).
//! `scenarios/tasks_resumable.rs`: resumable tasks outlive a killed or drained instance, on Redis.
//! `scenarios/tasks_sealed.rs`: task records sealed at rest, watched with `MONITOR` on Redis.
//! `scenarios/support.rs`: the fixture process and a one-request HTTP/1.1 client.

#[path = "scenarios/cancellation.rs"]
mod cancellation;
#[path = "scenarios/events_durability.rs"]
mod events_durability;
#[path = "scenarios/events_poll.rs"]
mod events_poll;
#[path = "scenarios/events_push.rs"]
mod events_push;
#[path = "scenarios/events_shared.rs"]
mod events_shared;
#[path = "scenarios/events_stdio.rs"]
mod events_stdio;
#[path = "scenarios/events_webhook.rs"]
mod events_webhook;
#[path = "scenarios/extensions.rs"]
mod extensions;
#[path = "scenarios/loglevel.rs"]
mod loglevel;
#[path = "scenarios/sep_2106.rs"]
mod sep_2106;
#[path = "scenarios/support.rs"]
mod support;
#[path = "scenarios/tasks_resumable.rs"]
mod tasks_resumable;
#[path = "scenarios/tasks_sealed.rs"]
mod tasks_sealed;
