//! The delivery task of one webhook subscription: its type's occurrences from its watermark,
//! in order, each signed and retried; envelopes for gaps and the end.

use std::time::Duration;

use bytes::Bytes;
use mcp_protocol::RpcError;
use mcp_protocol::events::cursor::Cursor;
use mcp_protocol::events::errors::{self, Missing};
use mcp_protocol::events::webhook::{
    self, Envelope, ID_HEADER, MAX_BODY, Outcome, SIGNATURE_HEADER, SUBSCRIPTION_HEADER, Secret, TIMESTAMP_HEADER,
};
use mcp_protocol::events::wire::{EventOccurrence, LastError};
use serde_json::Value;

use super::client::Callback;
use super::store::Subscription;
use crate::events::Events;
use crate::log::{Record, Signal, Start};

/// At most this many log entries are read at once.
const SCAN: usize = 64;
/// Sustained failure: at least this many attempts in the window…
const SUSPEND_MIN_ATTEMPTS: u32 = 100;
/// …of which at least this share failed (per cent)…
const SUSPEND_FAILED_PERCENT: u32 = 95;
/// …over this window (ms).
const WINDOW_MS: u64 = 3_600_000;

/// How one delivery ended.
enum Delivery {
    /// Accepted by the endpoint.
    Delivered,
    /// Given up on (a final refusal, or the attempts spent).
    Abandoned,
    /// The subscription is gone (unsubscribed, expired) while it was tried.
    Gone,
}

/// Starts the delivery task of subscription `id` unless this instance runs it already.
pub(crate) fn ensure_worker(events: &Events, id: &str) {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return;
    };
    let mut workers = hooks.workers.lock().unwrap_or_else(|e| e.into_inner());
    workers.retain(|_, task| !task.is_finished());
    if workers.contains_key(id) {
        return;
    }
    let task = tokio::spawn(leased(events.clone(), id.to_owned()));
    workers.insert(id.to_owned(), task.abort_handle());
}

/// Runs subscription `id`'s deliveries while this instance holds its lease: nothing when
/// another instance holds it; stops as soon as the lease is lost, or could not be renewed
/// before it would have lapsed (the store unreachable), so that two instances never deliver
/// one subscription at once for longer than a renewal takes. A delivery cut short that way is
/// made again by the next holder, from the saved watermark, under the same message id.
async fn leased(events: Events, id: String) {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return;
    };
    let ttl = hooks.settings.lease;
    if !matches!(hooks.store.lease(&id, &hooks.holder, ttl).await, Ok(true)) {
        return;
    }
    let renew = async {
        let mut renewed = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(ttl / 3).await;
            match hooks.store.lease(&id, &hooks.holder, ttl).await {
                Ok(true) => renewed = tokio::time::Instant::now(),
                Ok(false) => {
                    tracing::debug!(%id, "another instance holds the webhook subscription's lease");
                    return;
                }
                Err(e) if renewed.elapsed() + ttl / 3 >= ttl => {
                    tracing::warn!(%id, error = %e, "the webhook subscription's lease could not be renewed; its deliveries stop here");
                    return;
                }
                Err(e) => {
                    tracing::debug!(%id, error = %e, "the webhook subscription's lease was not renewed; trying again")
                }
            }
        }
    };
    tokio::select! {
        () = run(events.clone(), id.clone()) => {}
        () = renew => {}
    }
}

/// Adopts every subscription nobody delivers: each lease period's third, every subscription
/// the store holds gets a delivery task here unless this instance runs it already (one whose
/// lease another instance holds ends at once). Started with the engine's driver, so that an
/// instance takes over the deliveries of one that stopped whether or not a request comes.
pub(crate) async fn sweep(events: Events) {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return;
    };
    let _stop = StopWorkers(events.clone());
    let mut tick = tokio::time::interval(hooks.settings.lease / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match hooks.store.all().await {
            Ok(ids) => ids.iter().for_each(|id| ensure_worker(&events, id)),
            Err(e) => tracing::warn!(error = %e, "the webhook subscriptions could not be listed"),
        }
    }
}

/// Stops this instance's delivery tasks when the sweep stops (the engine's driver ended), and
/// gives up their leases so that another instance takes them over at once.
struct StopWorkers(Events);

impl Drop for StopWorkers {
    fn drop(&mut self) {
        let Some(hooks) = self.0.inner.webhooks.as_ref() else {
            return;
        };
        let stopped: Vec<String> = {
            let mut workers = hooks.workers.lock().unwrap_or_else(|e| e.into_inner());
            workers
                .drain()
                .map(|(id, task)| {
                    task.abort();
                    id
                })
                .collect()
        };
        if stopped.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let events = self.0.clone();
        runtime.spawn(async move {
            let Some(hooks) = events.inner.webhooks.as_ref() else {
                return;
            };
            for id in stopped {
                if let Err(e) = hooks.store.release(&id, &hooks.holder).await {
                    tracing::debug!(%id, error = %e, "a webhook lease was not given up; it lapses");
                }
            }
        });
    }
}

/// Ends subscription `sub` if its grant ended, or if it was granted without expiry and its
/// deliveries failed for the whole window ([`WebhookSettings::no_expiry`](crate::WebhookSettings::no_expiry)):
/// true when it was removed.
async fn ended(events: &Events, sub: &Subscription, now: u64) -> bool {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return true;
    };
    if now >= sub.expires_ms {
        tracing::debug!(id = %sub.id, "webhook subscription expired");
    } else if hooks.settings.collects(sub, now) {
        tracing::info!(id = %sub.id, url = %sub.url, "webhook subscription without expiry dropped: its deliveries kept failing");
    } else {
        return false;
    }
    let _ = hooks.store.remove(&sub.id).await;
    true
}

/// Runs subscription `id`'s deliveries until it is removed or expires.
pub(crate) async fn run(events: Events, id: String) {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return;
    };
    let log = &events.inner.log;
    loop {
        let Ok(Some(mut sub)) = hooks.store.get(&id).await else {
            return;
        };
        if ended(&events, &sub, crate::time::now_ms()).await {
            return;
        }
        let mut watch = log.watch(&sub.name);
        watch.borrow_and_update();
        let slice = if sub.active {
            match log.read(&sub.name, Start::Cursor(sub.next), SCAN).await {
                Ok(slice) => Some(slice),
                Err(e) => {
                    tracing::warn!(error = %e, "the occurrence log failed; webhook delivery paused");
                    None
                }
            }
        } else {
            None
        };
        let Some(slice) = slice else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        if slice.gap {
            // The log moved on (a restart, the retention): from now, and the endpoint is told.
            sub.next = Cursor {
                epoch: slice.epoch,
                position: slice.head,
            };
            let body = webhook::gap_body(Some(&sub.next.encode()));
            if matches!(envelope(&events, &mut sub, Envelope::Gap, &body).await, Delivery::Gone)
                || !save(&events, &sub).await
            {
                return;
            }
            continue;
        }
        let Some(event) = events.get(&sub.name) else {
            // The type was withdrawn (before this task read its terminate signal): the
            // subscription ends as the signal would have ended it.
            let gone = errors::not_found(Missing::Event, &sub.name);
            terminate(&events, &mut sub, &gone).await;
            return;
        };
        let idle = slice.entries.is_empty();
        for entry in slice.entries {
            let ended = match entry.record {
                Record::Occurrence(o) if event.admits(&sub.arguments, &o.data) => {
                    let occurrence = EventOccurrence {
                        event_id: o.event_id.clone(),
                        name: sub.name.clone(),
                        timestamp: mcp_protocol::model::task::format_timestamp(o.at_ms),
                        data: o.data,
                        cursor: Some(
                            Cursor {
                                epoch: slice.epoch,
                                position: entry.position,
                            }
                            .encode(),
                        ),
                        meta: None,
                    };
                    let body = serde_json::to_vec(&occurrence).unwrap_or_default();
                    if body.len() > MAX_BODY {
                        tracing::warn!(id = %sub.id, size = body.len(), "occurrence too large for a webhook; abandoned");
                        false
                    } else {
                        matches!(
                            deliver(&events, &mut sub, &o.event_id, Bytes::from(body)).await,
                            Delivery::Gone
                        )
                    }
                }
                Record::Signal(Signal::Gap) if entry.position > sub.signals_after => {
                    let body = webhook::gap_body(Some(
                        &Cursor {
                            epoch: slice.epoch,
                            position: entry.position,
                        }
                        .encode(),
                    ));
                    matches!(envelope(&events, &mut sub, Envelope::Gap, &body).await, Delivery::Gone)
                }
                Record::Signal(Signal::Terminate(e)) if entry.position > sub.signals_after => {
                    terminate(&events, &mut sub, &e).await;
                    return;
                }
                _ => false,
            };
            if ended {
                return;
            }
            sub.next = Cursor {
                epoch: slice.epoch,
                position: entry.position,
            };
            if !save(&events, &sub).await {
                return;
            }
        }
        if idle {
            let until_expiry = Duration::from_millis(sub.expires_ms.saturating_sub(crate::time::now_ms()));
            tokio::select! {
                _ = watch.changed() => {}
                () = tokio::time::sleep(until_expiry.min(Duration::from_secs(1))) => {}
            }
        }
    }
}

/// Writes back what the task changed (watermark, delivery status), keeping what a refresh
/// changed meanwhile (secrets, grant, reactivation); false when the subscription is gone.
async fn save(events: &Events, sub: &Subscription) -> bool {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return false;
    };
    let Ok(Some(mut fresh)) = hooks.store.get(&sub.id).await else {
        return false;
    };
    fresh.next = sub.next;
    fresh.last_delivery_ms = sub.last_delivery_ms;
    fresh.last_error = sub.last_error;
    fresh.failed_since_ms = sub.failed_since_ms;
    // A refresh since the task read the record (a new grant) reactivated it and restarted its
    // window; otherwise the task's verdict stands.
    if fresh.expires_ms == sub.expires_ms {
        fresh.active = sub.active;
        fresh.window = sub.window;
    }
    hooks.store.put(fresh).await.is_ok()
}

/// Sends a control envelope (tried like an occurrence).
pub(crate) async fn send_envelope(events: &Events, sub: &mut Subscription, kind: Envelope, body: &Value) {
    let _ = envelope(events, sub, kind, body).await;
}

/// Sends a control envelope (tried like an occurrence).
async fn envelope(events: &Events, sub: &mut Subscription, kind: Envelope, body: &Value) -> Delivery {
    let random = crate::time::random_u64().to_be_bytes();
    let id = kind.message_id(&random);
    deliver(events, sub, &id, Bytes::from(body.to_string())).await
}

/// Sends the `terminated` envelope and removes the subscription.
pub(crate) async fn terminate(events: &Events, sub: &mut Subscription, error: &RpcError) {
    let body = webhook::terminated_body(error);
    let _ = envelope(events, sub, Envelope::Terminated, &body).await;
    if let Some(hooks) = events.inner.webhooks.as_ref() {
        let _ = hooks.store.remove(&sub.id).await;
    }
}

/// Tries one delivery until it is accepted, refused for good, or its attempts are spent.
async fn deliver(events: &Events, sub: &mut Subscription, delivery_id: &str, body: Bytes) -> Delivery {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return Delivery::Gone;
    };
    let mut attempt = 1;
    loop {
        let Ok(callback) = Callback::parse(&sub.url, |o| hooks.permits(o)) else {
            return Delivery::Abandoned;
        };
        let open = hooks.permits(&callback.origin);
        let answer = send(events, sub, &callback, open, delivery_id, body.clone()).await;
        let now = crate::time::now_ms();
        let outcome = match answer {
            Ok((status, _)) => webhook::outcome(status),
            Err(e) => Outcome::Retry(e),
        };
        record(sub, now, &outcome);
        match outcome {
            Outcome::Delivered => return Delivery::Delivered,
            Outcome::GiveUp(_) => return Delivery::Abandoned,
            Outcome::Retry(_) => {}
        }
        if !sub.active {
            return Delivery::Abandoned;
        }
        let Some(wait) = webhook::retry_after(attempt) else {
            return Delivery::Abandoned;
        };
        attempt += 1;
        // A subscription without expiry is looked at again when its failure window ends.
        let wait = match hooks.settings.drop_due(sub) {
            Some(due) => wait.min(Duration::from_millis(due.saturating_sub(now))),
            None => wait,
        };
        tokio::time::sleep(wait).await;
        // Still subscribed? (An unsubscribe, an expiry or the failure window ends the retries.)
        match hooks.store.get(&sub.id).await {
            Ok(Some(mut fresh)) => {
                fresh.failed_since_ms = sub.failed_since_ms;
                if ended(events, &fresh, crate::time::now_ms()).await {
                    return Delivery::Gone;
                }
                sub.secrets = fresh.secrets;
                sub.rotation_ends_ms = fresh.rotation_ends_ms;
                sub.expires_ms = fresh.expires_ms;
            }
            _ => return Delivery::Gone,
        }
    }
}

/// One signed POST.
pub(crate) async fn send(
    events: &Events,
    sub: &Subscription,
    callback: &Callback,
    open: bool,
    delivery_id: &str,
    body: Bytes,
) -> Result<(u16, Bytes), LastError> {
    let Some(hooks) = events.inner.webhooks.as_ref() else {
        return Err(LastError::ConnectionRefused);
    };
    let timestamp = crate::time::now_ms() / 1000;
    let now = crate::time::now_ms();
    let secrets: Vec<Secret> = sub
        .secrets
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || now < sub.rotation_ends_ms)
        .filter_map(|(_, s)| Secret::parse(Some(s)).ok())
        .collect();
    let refs: Vec<&Secret> = secrets.iter().collect();
    let headers = [
        (ID_HEADER, delivery_id.to_owned()),
        (TIMESTAMP_HEADER, timestamp.to_string()),
        (
            SIGNATURE_HEADER,
            webhook::signature_header(&refs, delivery_id, timestamp, &body),
        ),
        (SUBSCRIPTION_HEADER, sub.id.clone()),
    ];
    hooks.sender.post(callback, open, &headers, body).await
}

/// Counts an attempt; suspends the subscription on sustained failure.
fn record(sub: &mut Subscription, now: u64, outcome: &Outcome) {
    let (attempts, failures, start) = &mut sub.window;
    if now.saturating_sub(*start) > WINDOW_MS {
        (*attempts, *failures, *start) = (0, 0, now);
    }
    *attempts += 1;
    match outcome {
        Outcome::Delivered => {
            sub.last_delivery_ms = Some(now);
            sub.last_error = None;
            sub.failed_since_ms = None;
        }
        Outcome::Retry(e) | Outcome::GiveUp(e) => {
            *failures += 1;
            sub.last_error = Some(*e);
            sub.failed_since_ms.get_or_insert(now);
        }
    }
    if *attempts >= SUSPEND_MIN_ATTEMPTS && *failures * 100 >= *attempts * SUSPEND_FAILED_PERCENT {
        tracing::warn!(id = %sub.id, "webhook deliveries suspended after sustained failure");
        sub.active = false;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mcp_protocol::events::cursor::Position;
    use mcp_protocol::events::wire::DeliveryMode;
    use serde_json::Map;

    use super::*;
    use crate::EventType;
    use crate::webhook::store::{MemorySubscriptions, SubscriptionStore};

    fn subscription(id: &str) -> Subscription {
        Subscription {
            id: id.into(),
            principal: "alice".into(),
            url: "https://hooks.example/x".into(),
            name: "build.finished".into(),
            arguments: Map::new(),
            secrets: vec![format!("whsec_{}", "A".repeat(32))],
            rotation_ends_ms: 0,
            expires_ms: Subscription::NEVER,
            next: Cursor {
                epoch: 0,
                position: Position::new(0, 0),
            },
            signals_after: Position::new(0, 0),
            active: true,
            last_delivery_ms: None,
            last_error: None,
            failed_since_ms: None,
            window: (0, 0, 0),
        }
    }

    #[tokio::test]
    async fn a_stopped_sweep_stops_its_deliveries_and_gives_up_their_leases() {
        let store = Arc::new(MemorySubscriptions::default());
        let webhook = EventType::new("build.finished", "A build finished")
            .delivery(&[DeliveryMode::Webhook])
            .expect("a delivery");
        let events = Events::builder()
            .event(webhook)
            .subscriptions(store.clone())
            .build()
            .expect("events");
        store.put(subscription("sub_a")).await.expect("put");
        let lease = Duration::from_secs(15);
        let sweeping = tokio::spawn(sweep(events.clone()));
        // The sweep adopts the subscription at its first tick: a delivery task holds its lease.
        let hooks = events.inner.webhooks.as_ref().expect("webhooks");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !hooks.workers.lock().unwrap().contains_key("sub_a") {
            assert!(tokio::time::Instant::now() < deadline, "never adopted");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !store.lease("sub_a", "another", lease).await.unwrap(),
            "held by the task"
        );
        // The engine's driver ends: the sweep is dropped, its tasks with it, and their leases are
        // given up at once rather than lapsing.
        sweeping.abort();
        let _ = sweeping.await;
        assert!(hooks.workers.lock().unwrap().is_empty());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        while !store.lease("sub_a", "another", lease).await.unwrap() {
            assert!(tokio::time::Instant::now() < deadline, "the lease was not given up");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[test]
    fn only_a_grant_without_expiry_failing_for_the_window_is_collected() {
        let settings = crate::WebhookSettings::default().with_no_expiry(Duration::from_secs(2));
        let mut sub = subscription("sub_a");
        assert!(!settings.collects(&sub, 10_000), "not failing");
        sub.failed_since_ms = Some(10_000);
        assert!(!settings.collects(&sub, 11_999));
        assert!(settings.collects(&sub, 12_000));
        let finite = Subscription {
            expires_ms: 99_000,
            ..sub.clone()
        };
        assert!(!settings.collects(&finite, 50_000), "a finite grant waits for its end");
        assert!(
            !crate::WebhookSettings::default().collects(&sub, 50_000),
            "no grant without expiry unless the operator allows it"
        );
    }
}
