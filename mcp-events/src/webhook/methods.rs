//! `events/subscribe` and `events/unsubscribe`.

use bytes::Bytes;
use mcp_protocol::RpcError;
use mcp_protocol::auth::ANONYMOUS;
use mcp_protocol::events::cursor::Cursor;
use mcp_protocol::events::errors::{self, Missing};
use mcp_protocol::events::key::SubscriptionKey;
use mcp_protocol::events::webhook::{self, Envelope, Secret};
use mcp_protocol::events::wire::{
    DeliveryMode, DeliveryStatus, LastError, SubscribeParams, SubscribeResult, TtlRequest, UnsubscribeParams,
    parse_params,
};
use mcp_protocol::events::{SUBSCRIBE, UNSUBSCRIBE};
use mcp_protocol::model::task::format_timestamp;
use mcp_runtime::Ctx;
use mcp_runtime::extension::MethodResult;
use serde_json::{Map, Value};

use super::Webhooks;
use super::client::Callback;
use super::store::Subscription;
use crate::error::EventsError;
use crate::events::Events;
use crate::log::Start;

fn hooks(events: &Events) -> Result<&Webhooks, RpcError> {
    events
        .inner
        .webhooks
        .as_ref()
        .ok_or_else(|| errors::unsupported("deliveryMode", DeliveryMode::Webhook.as_str()))
}

/// The caller's principal; a webhook subscription needs one.
fn principal(ctx: &Ctx) -> Result<&str, RpcError> {
    match ctx.principal() {
        ANONYMOUS => Err(errors::forbidden(
            "webhook subscriptions need an authenticated principal",
        )),
        p => Ok(p),
    }
}

fn store_failed(e: impl std::fmt::Display) -> RpcError {
    tracing::warn!(error = %e, "the webhook subscription store failed");
    RpcError::store_unavailable()
}

impl Events {
    /// What `events/subscribe` with `params` does for `principal`, a principal the server names
    /// (an operator's tooling, a test's control) rather than the caller's: the same checks,
    /// consent and result. Its subscriptions are that principal's, as if it had called.
    pub async fn subscribe_as(
        &self,
        principal: &str,
        params: Map<String, Value>,
    ) -> Result<Value, mcp_runtime::HandlerError> {
        subscribe_for(self, principal.to_owned(), params).await
    }

    /// Whether `principal` has a live webhook subscription to `name` with `arguments` at `url`
    /// (its key: another principal's at the same URL is not its own).
    pub async fn subscription_exists(
        &self,
        principal: &str,
        name: &str,
        arguments: &Map<String, Value>,
        url: &str,
    ) -> Result<bool, EventsError> {
        let id = mcp_protocol::events::key::SubscriptionKey::new(principal, url, name, arguments).id();
        match self.subscription(&id).await {
            Ok(_) => Ok(true),
            Err(EventsError::Unknown(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// `events/subscribe`: creates or refreshes the caller's subscription under its key.
pub(crate) async fn subscribe(events: Events, params: Map<String, Value>, ctx: Ctx) -> MethodResult {
    let principal = principal(&ctx)?.to_owned();
    subscribe_for(&events, principal, params).await
}

/// What `events/subscribe` does for `principal`: creates or refreshes its subscription under
/// its key.
pub(crate) async fn subscribe_for(events: &Events, principal: String, params: Map<String, Value>) -> MethodResult {
    let p: SubscribeParams = parse_params(SUBSCRIBE, params)?;
    let hooks = hooks(events)?;
    let sub = &p.subscription;
    let event = crate::methods::check(events, &sub.name, DeliveryMode::Webhook, &sub.arguments)?;
    if let Some(mode) = p.delivery.mode.as_deref()
        && mode != DeliveryMode::Webhook.as_str()
    {
        return Err(errors::unsupported("deliveryMode", mode).into());
    }
    let secret = Secret::parse(p.delivery.secret.as_deref()).map_err(RpcError::from)?;
    let callback = Callback::parse(&p.delivery.url, |o| hooks.permits(o)).map_err(RpcError::from)?;
    let key = SubscriptionKey::new(&principal, &p.delivery.url, event.name(), &sub.arguments);
    let id = key.id();
    let existing = hooks.store.get(&id).await.map_err(store_failed)?;
    let now = crate::time::now_ms();
    let existing = existing.filter(|s| now < s.expires_ms);
    if existing.is_none() {
        let owned = hooks.store.count_of(&principal).await.map_err(store_failed)?;
        let max = hooks.settings.max_per_principal;
        if owned >= max {
            return Err(errors::resource_exhausted("subscriptions", max as u64).into());
        }
    }
    // Consent before any delivery: a trusted origin, an earlier handshake, or one now.
    let open = hooks.permits(&callback.origin);
    // A live subscription of this key proves the endpoint consented for this principal and URL,
    // whichever instance (or process before a restart) verified it.
    if existing.is_none() && !hooks.trusts(&callback.origin) && !hooks.is_verified(&principal, &p.delivery.url) {
        let host = callback.uri.host().unwrap_or_default();
        if let Err((per_minute, retry_after)) = hooks.verification_toward(host) {
            tracing::info!(
                host,
                "verification handshakes toward this host are over their rate: refused"
            );
            return Err(errors::rate_exhausted("verifications", per_minute, retry_after).into());
        }
        verify(events, &id, &callback, open, &secret).await?;
        hooks.mark_verified(&principal, &p.delivery.url);
    }
    // Where delivery starts: a live subscription keeps its own watermark; otherwise the
    // client's cursor (or now).
    let log = &events.inner.log;
    let start = match (&existing, sub.cursor.as_deref().map(Cursor::decode)) {
        (Some(s), _) => Start::Cursor(s.next),
        (None, None) => Start::Now,
        (None, Some(Some(c))) => Start::Cursor(c),
        (None, Some(None)) => Start::Stale,
    };
    let slice = log.read(event.name(), start, 0).await.map_err(store_failed)?;
    let next = match start {
        Start::Cursor(c) if !slice.gap => c,
        _ => Cursor {
            epoch: slice.epoch,
            position: slice.head,
        },
    };
    let settings = hooks.settings;
    let grant = |ttl: std::time::Duration| now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX));
    let expires_ms = match p.ttl_ms {
        TtlRequest::Default => grant(settings.default_ttl),
        TtlRequest::NoExpiry if settings.no_expiry.is_some() => Subscription::NEVER,
        TtlRequest::NoExpiry => grant(settings.max_ttl),
        TtlRequest::Millis(ms) => grant(std::time::Duration::from_millis(ms).clamp(settings.min_ttl, settings.max_ttl)),
    };
    let text = secret.to_text();
    let record = match existing.clone() {
        Some(mut s) => {
            if s.secrets.first() != Some(&text) {
                s.secrets.truncate(1);
                s.secrets.insert(0, text);
                s.rotation_ends_ms = now + u64::try_from(settings.rotation_grace.as_millis()).unwrap_or(0);
            }
            s.expires_ms = expires_ms;
            s.active = true;
            s.window = (0, 0, now);
            s
        }
        None => Subscription {
            id: id.clone(),
            principal,
            url: p.delivery.url.clone(),
            name: event.name().to_owned(),
            arguments: sub.arguments.clone(),
            secrets: vec![text],
            rotation_ends_ms: 0,
            expires_ms,
            next,
            signals_after: slice.head,
            active: true,
            last_delivery_ms: None,
            last_error: None,
            failed_since_ms: None,
            window: (0, 0, now),
        },
    };
    let status = existing.as_ref().map(|s| DeliveryStatus {
        active: true,
        last_delivery_at: s.last_delivery_ms.map(format_timestamp),
        last_error: s.last_error,
        failed_since: s.failed_since_ms.map(format_timestamp),
    });
    let watermark = record.next.encode();
    hooks.store.put(record).await.map_err(store_failed)?;
    super::deliver::ensure_worker(events, &id);
    let result = SubscribeResult {
        id,
        refresh_before: (expires_ms != Subscription::NEVER).then(|| format_timestamp(expires_ms)),
        cursor: Some(watermark),
        truncated: existing.is_none() && slice.gap,
        delivery_status: status,
    };
    Ok(serde_json::to_value(result)?)
}

/// The verification handshake: a `verification` envelope whose challenge the endpoint echoes.
async fn verify(events: &Events, id: &str, callback: &Callback, open: bool, secret: &Secret) -> Result<(), RpcError> {
    let random: [u8; 16] = std::array::from_fn(|i| (crate::time::random_u64() >> (8 * (i % 8))) as u8);
    let challenge: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let body = Bytes::from(webhook::verification_body(&challenge).to_string());
    let probe = Subscription {
        id: id.to_owned(),
        principal: String::new(),
        url: callback.uri.to_string(),
        name: String::new(),
        arguments: Map::new(),
        secrets: vec![secret.to_text()],
        rotation_ends_ms: 0,
        expires_ms: 0,
        next: Cursor {
            epoch: 0,
            position: Default::default(),
        },
        signals_after: Default::default(),
        active: true,
        last_delivery_ms: None,
        last_error: None,
        failed_since_ms: None,
        window: (0, 0, 0),
    };
    let message_id = Envelope::Verification.message_id(&crate::time::random_u64().to_be_bytes());
    let answer = super::deliver::send(events, &probe, callback, open, &message_id, body).await;
    let failure = match answer {
        Ok((status, body)) if (200..300).contains(&status) => {
            if webhook::echoes(&body, &challenge) {
                return Ok(());
            }
            LastError::ChallengeFailed
        }
        Ok((status, _)) if status >= 500 => LastError::Http5xx,
        Ok(_) => LastError::Http4xx,
        Err(e) => e,
    };
    Err(errors::callback_endpoint(failure))
}

/// `events/unsubscribe`: removes the caller's subscription under its key.
pub(crate) async fn unsubscribe(events: Events, params: Map<String, Value>, ctx: Ctx) -> MethodResult {
    let p: UnsubscribeParams = parse_params(UNSUBSCRIBE, params)?;
    let principal = principal(&ctx)?;
    let hooks = hooks(&events)?;
    let key = SubscriptionKey::new(principal, &p.delivery.url, &p.name, &p.arguments);
    if !hooks.store.remove(&key.id()).await.map_err(store_failed)? {
        return Err(errors::not_found(Missing::Subscription, &p.name).into());
    }
    Ok(Value::Object(Map::new()))
}
