//! Per-era decoration of results: written once, applied as the last step.
//!
//! In the modern era every result carries `resultType` (defaulted to
//! `complete`, never overwritten: `input_required` and `task` stay), the
//! server's `Implementation` in `result._meta` (behaviour invariant 24: inside
//! the result, never beside it), and, on the cacheable methods, `ttlMs` and
//! `cacheScope` (never on `input_required` results or on MRTR retries). Legacy
//! results are left as they are.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::SERVER_INFO;
use crate::method::Method;
use crate::revision::Era;

/// Who may reuse a cached result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No user-specific data: shareable across authorization contexts.
    Public,
    /// Reusable only within the same authorization context (the default:
    /// catalogs may be filtered per principal).
    #[default]
    Private,
}

/// A cache hint (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// Freshness lifetime in milliseconds.
    pub ttl_ms: u64,
    /// Who may reuse it.
    pub scope: CacheScope,
}

impl CacheHint {
    /// A hint.
    pub const fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        CacheHint { ttl_ms, scope }
    }
}

/// Whether request params make the request an MRTR retry (never cached).
pub fn is_retry(params: Option<&Map<String, Value>>) -> bool {
    params.is_some_and(|p| p.contains_key("inputResponses") || p.contains_key("requestState"))
}

/// The cache hint a result gets, if any: cacheable method, not a retry.
pub fn cache_hint_for(method: &Method, params: Option<&Map<String, Value>>, hint: CacheHint) -> Option<CacheHint> {
    (method.is_cacheable() && !is_retry(params)).then_some(hint)
}

/// Decorates a result for its era (see the module doc).
pub fn finalize(era: Era, result: &mut Value, server_info: Option<&Value>, cache: Option<CacheHint>) {
    if era != Era::Modern {
        return;
    }
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    let complete = match obj.get("resultType") {
        None => {
            obj.insert("resultType".into(), Value::String("complete".into()));
            true
        }
        Some(t) => t == "complete",
    };
    if complete && let Some(hint) = cache {
        obj.entry("ttlMs").or_insert(Value::from(hint.ttl_ms));
        obj.entry("cacheScope")
            .or_insert(serde_json::to_value(hint.scope).unwrap_or(Value::Null));
    }
    if let Some(info) = server_info {
        let meta = obj.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry(SERVER_INFO).or_insert_with(|| info.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HINT: CacheHint = CacheHint::new(60_000, CacheScope::Private);

    #[test]
    fn legacy_untouched() {
        let mut v = json!({});
        finalize(Era::Legacy, &mut v, Some(&json!({"name": "s"})), Some(HINT));
        assert_eq!(v, json!({}));
    }

    #[test]
    fn modern_decoration() {
        let info = json!({"name": "s", "version": "1"});
        let mut v = json!({"tools": []});
        finalize(Era::Modern, &mut v, Some(&info), Some(HINT));
        assert_eq!(
            v,
            json!({"tools": [], "resultType": "complete", "ttlMs": 60000, "cacheScope": "private",
                   "_meta": {"io.modelcontextprotocol/serverInfo": info}})
        );
    }

    #[test]
    fn result_type_never_overwritten_and_no_hints_off_complete() {
        for t in ["input_required", "task"] {
            let mut v = json!({"resultType": t});
            finalize(Era::Modern, &mut v, None, Some(HINT));
            assert_eq!(v, json!({"resultType": t}));
        }
    }

    #[test]
    fn hint_applicability() {
        let retry = json!({"requestState": "x"}).as_object().cloned();
        let table = [
            ("tools/list", None, true),
            ("server/discover", None, true),
            ("resources/read", None, true),
            ("resources/read", retry.clone(), false),
            ("tools/call", None, false),
            ("prompts/get", None, false),
            ("completion/complete", None, false),
        ];
        for (m, p, want) in table {
            assert_eq!(
                cache_hint_for(&Method::parse(m), p.as_ref(), HINT).is_some(),
                want,
                "{m}"
            );
        }
    }

    #[test]
    fn keeps_existing_meta() {
        let mut v = json!({"_meta": {"k": 1}});
        finalize(Era::Modern, &mut v, Some(&json!({"name": "s"})), None);
        assert_eq!(v["_meta"]["k"], 1);
        assert_eq!(v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "s");
    }
}
