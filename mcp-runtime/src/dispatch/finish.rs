//! The last step of a result: its era's decoration (behaviour invariant 24). A modern result is
//! decorated while it is serialized (`resultType`, the server's `Implementation` written from
//! its encoded form, the cache hint), so it leaves as [`Reply::Encoded`]; a legacy one is left as
//! it is.

use mcp_protocol::model::render::{cache_hint_for, finalize_encoded, is_retry};
use mcp_protocol::model::{CacheHint, CacheScope};
use mcp_protocol::{Era, Method, Params, RpcError};

use super::parts::Parts;
use crate::reply::{EncodedResult, Reply};

/// Decorates a reply for its era.
pub(crate) fn finish(parts: &Parts<'_>, method: &Method, params: &Params, era: Era, reply: Reply) -> Reply {
    finish_as(parts, method, params, era, reply, false)
}

/// Decorates a reply for its era; `cacheable` marks a custom method whose results carry the
/// cache hint as the core cacheable methods' do (`CustomMethod::cacheable`).
pub(crate) fn finish_as(
    parts: &Parts<'_>,
    method: &Method,
    params: &Params,
    era: Era,
    reply: Reply,
    cacheable: bool,
) -> Reply {
    match reply {
        Reply::Result(v) if era == Era::Modern => {
            let own = cache_hint(parts, method, params);
            let hint = if cacheable {
                (!is_retry(Some(params))).then_some(own)
            } else {
                cache_hint_for(method, Some(params), own)
            };
            match finalize_encoded(era, &v, parts.server_info, hint) {
                Ok(raw) => Reply::Encoded(EncodedResult::owned(raw)),
                Err(e) => {
                    tracing::error!(error = %e, "a result could not be serialized");
                    Reply::Error(RpcError::internal())
                }
            }
        }
        other => other,
    }
}

/// The cache hint of a cacheable result: `server/discover`'s own; for `resources/read`, the
/// resource's (or its template's) when it has one; else the server's. A server with a
/// visibility hook, or lists in scope, answers each caller with its own catalog, and a resource
/// that needs scopes is for their holders only: never for a shared cache (behaviour invariant
/// 31).
fn cache_hint(parts: &Parts<'_>, method: &Method, params: &Params) -> CacheHint {
    let config = parts.config;
    if *method == Method::Discover {
        return config.discover_cache;
    }
    let mut hint = config.cache;
    if *method == Method::ResourcesRead
        && let Some(uri) = params.str("uri")
    {
        let catalog = &parts.catalog;
        let (own, scoped) = match catalog.resource(&uri) {
            Some(r) => (r.cache, !r.scopes.is_empty()),
            None => catalog
                .match_template(&uri)
                .map_or((None, false), |(t, _)| (t.cache, !t.scopes.is_empty())),
        };
        hint = own.unwrap_or(hint);
        if scoped || !config.method_scopes.of(method.as_str()).is_empty() {
            hint.scope = CacheScope::Private;
        }
    }
    if parts.per_caller_lists() {
        hint.scope = CacheScope::Private;
    }
    hint
}
