//! Per-era decoration of results: written once, applied as the last step.
//!
//! In the modern era every result carries `resultType` (defaulted to
//! `complete`, never overwritten: `input_required` and `task` stay), the
//! server's `Implementation` in `result._meta` (behaviour invariant 24: inside
//! the result, never beside it), and, on the cacheable methods, `ttlMs` and
//! `cacheScope` (never on `input_required` results or on MRTR retries). Legacy
//! results are left as they are.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{CallToolResult, Content};
use crate::meta::SERVER_INFO;
use crate::method::Method;
use crate::params::Params;
use crate::revision::{Era, Revision};

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
pub fn is_retry(params: Option<&Params>) -> bool {
    params.is_some_and(|p| p.contains("inputResponses") || p.contains("requestState"))
}

/// The cache hint a result gets, if any: cacheable method, not a retry.
pub fn cache_hint_for(method: &Method, params: Option<&Params>, hint: CacheHint) -> Option<CacheHint> {
    (method.is_cacheable() && !is_retry(params)).then_some(hint)
}

/// What the era adds to one result object: decided once, by [`decorations`], for both
/// [`finalize`] (on a value) and [`finalize_encoded`] (while serializing).
#[derive(Debug, Clone, Copy, Default)]
struct Decorations {
    /// `resultType: "complete"` is added (there was none).
    result_type: bool,
    /// `ttlMs` is added.
    ttl_ms: Option<u64>,
    /// `cacheScope` is added.
    cache_scope: Option<CacheScope>,
    /// The server's `Implementation` goes into `_meta` (a new one when absent).
    server_info: bool,
}

/// The decorations of a modern result object (see the module doc): nothing that is already
/// there is overwritten.
fn decorations(obj: &Map<String, Value>, server_info: bool, cache: Option<CacheHint>) -> Decorations {
    let complete = obj.get("resultType").is_none_or(|t| t == "complete");
    let hint = cache.filter(|_| complete);
    let meta_takes_info = match obj.get("_meta") {
        None => true,
        Some(Value::Object(meta)) => !meta.contains_key(SERVER_INFO),
        Some(_) => false,
    };
    Decorations {
        result_type: !obj.contains_key("resultType"),
        ttl_ms: hint.filter(|_| !obj.contains_key("ttlMs")).map(|h| h.ttl_ms),
        cache_scope: hint.filter(|_| !obj.contains_key("cacheScope")).map(|h| h.scope),
        server_info: server_info && meta_takes_info,
    }
}

/// Decorates a result for its era (see the module doc).
pub fn finalize(era: Era, result: &mut Value, server_info: Option<&Value>, cache: Option<CacheHint>) {
    if era != Era::Modern {
        return;
    }
    let Some(obj) = result.as_object_mut() else {
        return;
    };
    let d = decorations(obj, server_info.is_some(), cache);
    if d.result_type {
        obj.insert("resultType".into(), Value::String("complete".into()));
    }
    if let Some(ttl) = d.ttl_ms {
        obj.insert("ttlMs".into(), Value::from(ttl));
    }
    if let Some(scope) = d.cache_scope {
        obj.insert("cacheScope".into(), serde_json::to_value(scope).unwrap_or(Value::Null));
    }
    if let (true, Some(info)) = (d.server_info, server_info)
        && let Some(meta) = obj
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
    {
        meta.insert(SERVER_INFO.into(), info.clone());
    }
}

/// [`finalize`] written straight to JSON: the modern decoration of `result` serialized, the
/// server's `Implementation` given already encoded, so that nothing is copied into the value.
/// The bytes are those `finalize` then serializing would give (member order included).
pub fn finalize_encoded(
    era: Era,
    result: &Value,
    server_info: Option<&RawValue>,
    cache: Option<CacheHint>,
) -> serde_json::Result<Box<RawValue>> {
    match (era, result) {
        (Era::Modern, Value::Object(obj)) => {
            let decorations = decorations(obj, server_info.is_some(), cache);
            serde_json::value::to_raw_value(&Decorated {
                obj,
                decorations,
                server_info,
            })
        }
        _ => serde_json::value::to_raw_value(result),
    }
}

/// A result object with its decorations, as [`finalize_encoded`] serializes it.
struct Decorated<'a> {
    obj: &'a Map<String, Value>,
    decorations: Decorations,
    server_info: Option<&'a RawValue>,
}

impl Serialize for Decorated<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.decorations;
        let info = self.server_info.filter(|_| d.server_info);
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.obj {
            match (k.as_str(), v, info) {
                ("_meta", Value::Object(meta), Some(info)) => map.serialize_entry(k, &WithInfo { meta, info })?,
                _ => map.serialize_entry(k, v)?,
            }
        }
        if d.result_type {
            map.serialize_entry("resultType", "complete")?;
        }
        if let Some(ttl) = d.ttl_ms {
            map.serialize_entry("ttlMs", &ttl)?;
        }
        if let Some(scope) = d.cache_scope {
            map.serialize_entry("cacheScope", &scope)?;
        }
        if let Some(info) = info
            && !self.obj.contains_key("_meta")
        {
            map.serialize_entry("_meta", &WithInfo::alone(info))?;
        }
        map.end()
    }
}

/// A tool's result rendered for its caller's revision ([`CallToolResult::render`]) and decorated
/// for the era ([`finalize`]) as it is serialized: no value is built on the way. The bytes are
/// those rendering, finalizing (a `tools/call` gets no cache hint) and serializing would give,
/// as JSON text, written into a buffer sized from the result (most results fit at once).
pub fn encode_call_result(
    result: &CallToolResult,
    era: Era,
    revision: Option<Revision>,
    server_info: Option<&RawValue>,
) -> serde_json::Result<String> {
    let out = CallResultOut {
        result,
        structured: result.keeps_structured(revision),
        modern: era == Era::Modern,
        info: server_info
            .filter(|_| era == Era::Modern)
            .filter(|_| result.meta.as_ref().is_none_or(|m| !m.contains_key(SERVER_INFO))),
    };
    let mut buf = Vec::with_capacity(size_hint(&out));
    serde_json::to_writer(&mut buf, &out)?;
    String::from_utf8(buf).map_err(serde::ser::Error::custom)
}

/// About the length of a result's JSON: its content's text and data with room for the members
/// around them (what cannot be known cheaply, structured content and `_meta`, gets a flat
/// allowance; a larger result grows the buffer).
fn size_hint(out: &CallResultOut<'_>) -> usize {
    let content: usize = out
        .result
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text, .. } => text.len() + 48,
            Content::Image { data, .. } | Content::Audio { data, .. } => data.len() + 96,
            _ => 256,
        })
        .sum();
    let extra = if out.structured && out.result.structured_content.is_some() {
        256
    } else {
        0
    } + if out.result.meta.is_some() { 128 } else { 0 }
        + out.info.map_or(0, |i| i.get().len() + 48);
    64 + content + extra
}

/// What [`encode_call_result`] serializes: the members in [`CallToolResult`]'s order, then the
/// modern decorations in [`Decorated`]'s.
struct CallResultOut<'a> {
    result: &'a CallToolResult,
    structured: bool,
    modern: bool,
    info: Option<&'a RawValue>,
}

impl Serialize for CallResultOut<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.result;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("content", &r.content)?;
        if let Some(structured) = r.structured_content.as_ref().filter(|_| self.structured) {
            map.serialize_entry("structuredContent", structured)?;
        }
        if r.is_error {
            map.serialize_entry("isError", &true)?;
        }
        match (&r.meta, self.info) {
            (Some(meta), Some(info)) => map.serialize_entry("_meta", &WithInfo { meta, info })?,
            (Some(meta), None) => map.serialize_entry("_meta", meta)?,
            (None, _) => {}
        }
        if self.modern {
            map.serialize_entry("resultType", "complete")?;
        }
        if let (None, Some(info)) = (&r.meta, self.info) {
            map.serialize_entry("_meta", &WithInfo::alone(info))?;
        }
        map.end()
    }
}

/// A `_meta` object with the server's `Implementation` added at its end.
struct WithInfo<'a> {
    meta: &'a Map<String, Value>,
    info: &'a RawValue,
}

impl<'a> WithInfo<'a> {
    /// A `_meta` of the server's `Implementation` alone (the result had none).
    fn alone(info: &'a RawValue) -> Self {
        static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
        WithInfo { meta: &EMPTY, info }
    }
}

impl Serialize for WithInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.meta.len() + 1))?;
        for (k, v) in self.meta {
            map.serialize_entry(k, v)?;
        }
        map.serialize_entry(SERVER_INFO, self.info)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HINT: CacheHint = CacheHint::new(60_000, CacheScope::Private);

    #[test]
    fn a_call_result_is_encoded_as_rendering_and_finalizing_would() {
        use crate::model::Content;
        let info = serde_json::value::to_raw_value(&json!({"name": "s", "version": "1"})).unwrap();
        let mut with_meta = CallToolResult::text("hi");
        with_meta.meta = Some(json!({"a": 1}).as_object().unwrap().clone());
        let mut with_info = CallToolResult::text("hi");
        with_info.meta = Some(json!({SERVER_INFO: {"name": "x"}}).as_object().unwrap().clone());
        let results = [
            CallToolResult::text("hi"),
            CallToolResult::error("no"),
            CallToolResult::structured(json!({"n": 1})),
            CallToolResult::structured(json!([1, 2])),
            CallToolResult::new(vec![Content::text("a"), Content::text("b")]),
            with_meta,
            with_info,
        ];
        let revisions = [
            None,
            Some(Revision::V2024_11_05),
            Some(Revision::V2025_06_18),
            Some(Revision::V2025_11_25),
            Some(Revision::V2026_07_28),
        ];
        for r in &results {
            for revision in revisions {
                for era in [Era::Legacy, Era::Modern] {
                    for server_info in [None, Some(&*info)] {
                        let mut v = r.render(revision);
                        let as_value = server_info.map(|i| serde_json::from_str::<Value>(i.get()).unwrap());
                        finalize(era, &mut v, as_value.as_ref(), None);
                        let got = encode_call_result(r, era, revision, server_info).unwrap();
                        assert_eq!(
                            got,
                            serde_json::to_string(&v).unwrap(),
                            "{r:?} {revision:?} {era:?} {server_info:?}"
                        );
                    }
                }
            }
        }
    }

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
        let retry = Params::from_value(json!({"requestState": "x"}));
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
    fn encoded_is_the_decorated_value_serialized() {
        let info = json!({"name": "s", "version": "1"});
        let raw_info = serde_json::value::to_raw_value(&info).unwrap();
        let results = [
            json!({"content": [{"type": "text", "text": "x"}], "isError": false}),
            json!({"tools": [], "nextCursor": "c"}),
            json!({"_meta": {"k": 1}, "resultType": "complete", "ttlMs": 5}),
            json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "other"}}}),
            json!({"_meta": 3}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"resultType": "task", "cacheScope": "public"}),
            json!([1]),
            json!({}),
        ];
        for era in [Era::Modern, Era::Legacy] {
            for result in &results {
                for (info, raw) in [(Some(&info), Some(&*raw_info)), (None, None)] {
                    for hint in [Some(HINT), None] {
                        let mut v = result.clone();
                        finalize(era, &mut v, info, hint);
                        let encoded = finalize_encoded(era, result, raw, hint).unwrap();
                        assert_eq!(
                            encoded.get(),
                            serde_json::to_string(&v).unwrap(),
                            "{era:?} {result} {hint:?}"
                        );
                    }
                }
            }
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
