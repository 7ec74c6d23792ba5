//! The extension's methods: `events/list`, `events/poll` (a long poll) and `events/stream` (a
//! long-lived request whose stream carries the subscription's notifications).

use std::sync::Arc;
use std::time::Duration;

use mcp_protocol::RpcError;
use mcp_protocol::events::cursor::{Cursor, Position};
use mcp_protocol::events::errors::{self, Missing};
use mcp_protocol::events::wire::{
    self, DeliveryMode, EventOccurrence, ListEventsResult, PollParams, PollResult, SubscriptionParams, parse_params,
};
use mcp_protocol::events::{ACTIVE, ERROR, EVENT, HEARTBEAT, LIST_CHANGED, POLL, STREAM, TERMINATED};
use mcp_runtime::extension::MethodResult;
use mcp_runtime::{Ctx, HandlerError};
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::event_type::EventType;
use crate::events::Events;
use crate::log::{Entry, Occurrence, Record, Signal, Slice, Start};

/// At most this many log entries are read at once.
const SCAN: usize = 256;

/// `events/list`: one page of the declared types, by name.
pub(crate) async fn list(events: Events, params: Map<String, Value>) -> MethodResult {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => return Err(RpcError::invalid_params("cursor must be a string").into()),
    };
    let catalog = events.catalog();
    let (page, next) =
        mcp_protocol::cursor::paginate(&catalog.listed, |t| t.name(), cursor, events.inner.settings.page_size)?;
    let result = ListEventsResult {
        events: page.iter().map(|t| t.descriptor().clone()).collect(),
        next_cursor: next,
    };
    Ok(serde_json::to_value(result)?)
}

/// The type a request names, offered in `mode`, with arguments that follow its schema.
pub(crate) fn check(
    events: &Events,
    name: &str,
    mode: DeliveryMode,
    arguments: &Map<String, Value>,
) -> Result<Arc<EventType>, RpcError> {
    let event = events
        .get(name)
        .ok_or_else(|| errors::not_found(Missing::Event, name))?;
    if !event.offers(mode) {
        return Err(errors::unsupported("deliveryMode", mode.as_str()));
    }
    if let Some(schema) = &event.arguments {
        schema
            .validate(&Value::Object(arguments.clone()))
            .map_err(|v| v.to_rpc_error())?;
    }
    Ok(event)
}

/// Where a client's cursor starts a read.
fn from(cursor: Option<&str>) -> Start {
    match cursor.map(Cursor::decode) {
        None => Start::Now,
        Some(Some(c)) => Start::Cursor(c),
        Some(None) => Start::Stale,
    }
}

/// The position a read starts after: the cursor's when the log covers it, else the head.
fn base(from: Start, read: &Slice) -> Position {
    match from {
        Start::Cursor(c) if !read.gap => c.position,
        _ => read.head,
    }
}

/// An occurrence on the wire.
fn occurrence(name: &str, o: &Occurrence, cursor: Option<String>) -> EventOccurrence {
    EventOccurrence {
        event_id: o.event_id.clone(),
        name: name.to_owned(),
        timestamp: mcp_protocol::model::task::format_timestamp(o.at_ms),
        data: o.data.clone(),
        cursor,
        meta: None,
    }
}

fn store_failed(e: impl std::fmt::Display) -> HandlerError {
    tracing::warn!(error = %e, "the occurrence log failed");
    HandlerError::Rpc(RpcError::store_unavailable())
}

/// `events/poll`: the occurrences after the cursor, at once when there are some, else as soon
/// as one comes, else empty once `timeoutMs` (bounded by the server) ran out.
pub(crate) async fn poll(events: Events, params: Map<String, Value>, ctx: Ctx) -> MethodResult {
    let PollParams {
        subscription: p,
        max_events,
        timeout_ms,
    } = parse_params(POLL, params)?;
    let event = check(&events, &p.name, DeliveryMode::Poll, &p.arguments)?;
    let settings = events.inner.settings;
    let max = max_events
        .map_or(settings.default_max_events, |m| {
            usize::try_from(m).unwrap_or(usize::MAX)
        })
        .clamp(1, settings.max_events);
    let wait = Duration::from_millis(timeout_ms.unwrap_or(0)).min(settings.max_poll_wait);
    let deadline = Instant::now() + wait;
    let floor = p.max_age_ms.map(|age| crate::time::now_ms().saturating_sub(age));
    let log = &events.inner.log;
    let mut watch = log.watch(&p.name);
    let mut from = from(p.cursor.as_deref());
    let mut truncated = false;
    loop {
        watch.borrow_and_update();
        let read = log.read(&p.name, from, SCAN).await.map_err(store_failed)?;
        truncated |= read.gap;
        let mut position = base(from, &read);
        let mut found = Vec::new();
        let mut has_more = read.entries.len() == SCAN;
        for entry in &read.entries {
            if found.len() == max {
                has_more = true;
                break;
            }
            position = entry.position;
            if let Record::Occurrence(o) = &entry.record {
                if floor.is_some_and(|f| o.at_ms < f) {
                    truncated = true;
                } else if event.admits(&p.arguments, &o.data) {
                    found.push(occurrence(&p.name, o, None));
                }
            }
        }
        from = Start::Cursor(Cursor {
            epoch: read.epoch,
            position,
        });
        let done = !found.is_empty() || has_more || truncated || Instant::now() >= deadline;
        if done {
            let result = PollResult {
                events: found,
                cursor: Some(read.cursor(position)),
                truncated,
                has_more,
                next_poll_ms: u64::try_from(settings.next_poll.as_millis()).unwrap_or(u64::MAX),
            };
            return Ok(serde_json::to_value(result)?);
        }
        tokio::select! {
            biased;
            () = ctx.cancellation().cancelled() => return Err(RpcError::internal_with("Cancelled").into()),
            _ = watch.changed() => {}
            () = tokio::time::sleep_until(deadline) => {}
        }
    }
}

/// `events/stream`: `active`, the replay after the cursor, then occurrences as they come,
/// heartbeats, errors and gaps, until the client cancels or the server terminates the type.
pub(crate) async fn stream(events: Events, params: Map<String, Value>, ctx: Ctx) -> MethodResult {
    let p: SubscriptionParams = parse_params(STREAM, params)?;
    let event = check(&events, &p.name, DeliveryMode::Push, &p.arguments)?;
    let slot = events.open_stream(&event).await?;
    let id = ctx.request_id().clone();
    let log = &events.inner.log;
    let mut watch = log.watch(&p.name);
    watch.borrow_and_update();
    let start = from(p.cursor.as_deref());
    let read = log.read(&p.name, start, SCAN).await.map_err(store_failed)?;
    let mut epoch = read.epoch;
    let mut position = base(start, &read);
    // Signals appended before the stream opened are history: only later ones are acted on.
    let opened = read.head;
    let cursor = |epoch: u64, position: Position| Cursor { epoch, position }.encode();
    ctx.notify(ACTIVE, wire::active(&id, Some(&cursor(epoch, position)), read.gap))
        .await;
    let floor = p.max_age_ms.map(|age| crate::time::now_ms().saturating_sub(age));
    let mut pending = read.entries;
    let mut full = pending.len() == SCAN;
    let mut beat = tokio::time::interval_at(
        Instant::now() + events.inner.settings.heartbeat,
        events.inner.settings.heartbeat,
    );
    let mut catalog = events.catalog_changes();
    catalog.borrow_and_update();
    loop {
        for Entry { position: at, record } in pending.drain(..) {
            position = at;
            match record {
                Record::Occurrence(o) => {
                    let replayed = at <= opened;
                    if (replayed && floor.is_some_and(|f| o.at_ms < f)) || !event.admits(&p.arguments, &o.data) {
                        continue;
                    }
                    let o = occurrence(&p.name, &o, Some(cursor(epoch, at)));
                    ctx.notify(EVENT, wire::event(&id, &o)).await;
                }
                Record::Signal(_) if at <= opened => {}
                Record::Signal(Signal::Error(e)) => ctx.notify(ERROR, wire::failure(&id, &e)).await,
                Record::Signal(Signal::Gap) => {
                    ctx.notify(ACTIVE, wire::active(&id, Some(&cursor(epoch, at)), true))
                        .await;
                }
                Record::Signal(Signal::Terminate(e)) => {
                    ctx.notify(TERMINATED, wire::failure(&id, &e)).await;
                    return Ok(wire::stream_result());
                }
            }
        }
        if !full {
            tokio::select! {
                biased;
                () = ctx.cancellation().cancelled() => return Ok(wire::stream_result()),
                changed = watch.changed() => {
                    if changed.is_err() {
                        return Ok(wire::stream_result());
                    }
                }
                _ = beat.tick() => {
                    ctx.notify(HEARTBEAT, wire::heartbeat(&id, Some(&cursor(epoch, position)))).await;
                    if let Some(slot) = &slot {
                        slot.renew().await;
                    }
                    continue;
                }
                Ok(()) = catalog.changed() => {
                    ctx.notify(LIST_CHANGED, wire::list_changed(&id)).await;
                    continue;
                }
            }
        }
        watch.borrow_and_update();
        let from = Start::Cursor(Cursor { epoch, position });
        match log.read(&p.name, from, SCAN).await {
            Ok(read) => {
                if read.gap {
                    // The log moved on without this stream (a restart, the retention): from now.
                    epoch = read.epoch;
                    position = read.head;
                    ctx.notify(ACTIVE, wire::active(&id, Some(&cursor(epoch, position)), true))
                        .await;
                }
                full = read.entries.len() == SCAN;
                pending = read.entries;
            }
            Err(e) => {
                let _ = store_failed(&e);
                let error = RpcError::internal_with("The occurrence log is unavailable; retrying");
                ctx.notify(ERROR, wire::failure(&id, &error)).await;
                full = false;
                tokio::select! {
                    () = ctx.cancellation().cancelled() => return Ok(wire::stream_result()),
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        }
    }
}
