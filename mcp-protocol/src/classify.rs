//! Classification of inbound requests: the era (decided once, body first), the
//! method catalogue of each era, and the batch rules.

use serde_json::{Map, Value};

use crate::error::RpcError;
use crate::jsonrpc::{Message, Request};
use crate::meta;
use crate::revision::{Era, Feature, Revision};

/// Decides the era of a request (behaviour invariant 1).
///
/// Modern iff the params' `_meta` names a protocol version, or the transport
/// declared a modern revision (the HTTP `MCP-Protocol-Version` header). Every
/// other request, `initialize` included, is legacy.
pub fn era_of(params: Option<&Map<String, Value>>, transport_revision: Option<Revision>) -> Era {
    if meta::claims_modern(params) || transport_revision.is_some_and(|r| r.era() == Era::Modern) {
        Era::Modern
    } else {
        Era::Legacy
    }
}

/// The era of a request.
pub fn request_era(req: &Request, transport_revision: Option<Revision>) -> Era {
    era_of(req.params.as_ref(), transport_revision)
}

/// Which eras (and legacy revisions) serve a client-to-server method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Served {
    /// Legacy revisions only.
    Legacy,
    /// The modern era only.
    Modern,
    /// Both eras.
    Both,
    /// Legacy revisions with core tasks, and the modern era (extension).
    TasksBoth,
    /// Legacy revisions with core tasks only.
    TasksLegacy,
    /// The modern era's tasks extension only.
    TasksModern,
}

/// The catalogue of client-to-server requests.
const REQUESTS: &[(&str, Served)] = &[
    ("initialize", Served::Legacy),
    ("ping", Served::Legacy),
    ("server/discover", Served::Both),
    ("tools/list", Served::Both),
    ("tools/call", Served::Both),
    ("resources/list", Served::Both),
    ("resources/templates/list", Served::Both),
    ("resources/read", Served::Both),
    ("resources/subscribe", Served::Legacy),
    ("resources/unsubscribe", Served::Legacy),
    ("prompts/list", Served::Both),
    ("prompts/get", Served::Both),
    ("completion/complete", Served::Both),
    ("logging/setLevel", Served::Legacy),
    ("subscriptions/listen", Served::Modern),
    ("tasks/get", Served::TasksBoth),
    ("tasks/cancel", Served::TasksBoth),
    ("tasks/result", Served::TasksLegacy),
    ("tasks/list", Served::TasksLegacy),
    ("tasks/update", Served::TasksModern),
];

/// The catalogue of client-to-server notifications.
const NOTIFICATIONS: &[(&str, Served)] = &[
    ("notifications/initialized", Served::Legacy),
    ("initialized", Served::Legacy),
    ("notifications/cancelled", Served::Both),
    ("notifications/progress", Served::Legacy),
    ("notifications/roots/list_changed", Served::Legacy),
];

fn served_in(served: Served, era: Era, revision: Option<Revision>) -> bool {
    let core_tasks = || revision.is_none_or(|r| r.has(Feature::CoreTasks));
    match (served, era) {
        (Served::Both, _) => true,
        (Served::Legacy, Era::Legacy) | (Served::Modern, Era::Modern) => true,
        (Served::TasksBoth, Era::Modern) | (Served::TasksModern, Era::Modern) => true,
        (Served::TasksBoth, Era::Legacy) | (Served::TasksLegacy, Era::Legacy) => core_tasks(),
        _ => false,
    }
}

/// Whether a request method is served in an era. For the legacy era,
/// `revision` is the negotiated one (`None` before negotiation: no gating).
/// Methods removed in 2026-07-28 answer -32601 there.
pub fn serves_request(method: &str, era: Era, revision: Option<Revision>) -> bool {
    REQUESTS
        .iter()
        .any(|(m, s)| *m == method && served_in(*s, era, revision))
}

/// Whether a notification method is understood in an era.
pub fn serves_notification(method: &str, era: Era) -> bool {
    NOTIFICATIONS
        .iter()
        .any(|(m, s)| *m == method && served_in(*s, era, None))
}

/// Checks a request method against the era's catalogue (-32601 otherwise).
pub fn check_method(method: &str, era: Era, revision: Option<Revision>) -> Result<(), RpcError> {
    if serves_request(method, era, revision) {
        Ok(())
    } else {
        Err(RpcError::method_not_found(method))
    }
}

/// Whether a method may answer `input_required` (MRTR).
pub fn allows_input_required(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// Checks whether a batch may be served (behaviour invariant 2).
///
/// Batches are accepted for 2025-03-26 and, for compatibility, 2024-11-05 (and
/// before negotiation, when `revision` is `None`); refused from 2025-06-18 and
/// in the modern era. `initialize` is never allowed inside a batch, and no
/// element of a legacy batch may claim the modern era.
pub fn check_batch(revision: Option<Revision>, items: &[Message]) -> Result<(), RpcError> {
    if revision.is_some_and(|r| !r.batch_support().accepted()) {
        return Err(RpcError::invalid_request(
            "JSON-RPC batches are not supported by this protocol revision",
        ));
    }
    for item in items {
        match item {
            Message::Request(r) if r.method == "initialize" => {
                return Err(RpcError::invalid_request("initialize must not be part of a batch"));
            }
            Message::Request(Request { params, .. }) if meta::claims_modern(params.as_ref()) => {
                return Err(RpcError::invalid_request(
                    "JSON-RPC batches are not supported by this protocol revision",
                ));
            }
            Message::Notification(n) if meta::claims_modern(n.params.as_ref()) => {
                return Err(RpcError::invalid_request(
                    "JSON-RPC batches are not supported by this protocol revision",
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{Notification, RequestId};
    use serde_json::json;

    fn req(method: &str, params: Value) -> Request {
        Request {
            id: RequestId::Number(1),
            method: method.into(),
            params: params.as_object().cloned(),
        }
    }

    #[test]
    fn era_decision() {
        let modern = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let table = [
            (req("tools/list", json!({})), None, Era::Legacy),
            (req("tools/list", modern.clone()), None, Era::Modern),
            (
                req("initialize", json!({"protocolVersion": "2025-11-25"})),
                None,
                Era::Legacy,
            ),
            (req("initialize", modern.clone()), None, Era::Modern),
            (req("tools/list", json!({})), Some(Revision::V2026_07_28), Era::Modern),
            (req("tools/list", json!({})), Some(Revision::V2025_06_18), Era::Legacy),
            (req("initialize", json!({})), Some(Revision::V2026_07_28), Era::Modern),
        ];
        for (r, transport, want) in table {
            assert_eq!(request_era(&r, transport), want, "{} {transport:?}", r.method);
        }
    }

    #[test]
    fn method_catalogue() {
        use Revision::*;
        // (method, legacy at 2025-06-18, legacy at 2025-11-25, modern)
        let table = [
            ("initialize", true, true, false),
            ("ping", true, true, false),
            ("server/discover", true, true, true),
            ("tools/list", true, true, true),
            ("tools/call", true, true, true),
            ("resources/list", true, true, true),
            ("resources/templates/list", true, true, true),
            ("resources/read", true, true, true),
            ("resources/subscribe", true, true, false),
            ("resources/unsubscribe", true, true, false),
            ("prompts/list", true, true, true),
            ("prompts/get", true, true, true),
            ("completion/complete", true, true, true),
            ("logging/setLevel", true, true, false),
            ("subscriptions/listen", false, false, true),
            ("tasks/get", false, true, true),
            ("tasks/cancel", false, true, true),
            ("tasks/result", false, true, false),
            ("tasks/list", false, true, false),
            ("tasks/update", false, false, true),
            ("sampling/createMessage", false, false, false),
            ("nonsense", false, false, false),
        ];
        for (m, l18, l25, modern) in table {
            assert_eq!(serves_request(m, Era::Legacy, Some(V2025_06_18)), l18, "{m} 2025-06-18");
            assert_eq!(serves_request(m, Era::Legacy, Some(V2025_11_25)), l25, "{m} 2025-11-25");
            assert_eq!(serves_request(m, Era::Modern, Some(V2026_07_28)), modern, "{m} modern");
        }
        assert_eq!(check_method("ping", Era::Modern, None).unwrap_err().code, -32601);
    }

    #[test]
    fn notification_catalogue() {
        assert!(serves_notification("notifications/initialized", Era::Legacy));
        assert!(!serves_notification("notifications/initialized", Era::Modern));
        assert!(serves_notification("notifications/cancelled", Era::Modern));
        assert!(!serves_notification("notifications/roots/list_changed", Era::Modern));
    }

    #[test]
    fn batch_rules() {
        use Revision::*;
        let call = Message::Request(req("tools/list", json!({})));
        let init = Message::Request(req("initialize", json!({})));
        let modern = Message::Notification(Notification {
            method: "notifications/cancelled".into(),
            params: json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
                .as_object()
                .cloned(),
        });
        let table = [
            (None, vec![call.clone()], true),
            (Some(V2024_11_05), vec![call.clone()], true),
            (Some(V2025_03_26), vec![call.clone(), call.clone()], true),
            (Some(V2025_06_18), vec![call.clone()], false),
            (Some(V2025_11_25), vec![call.clone()], false),
            (Some(V2026_07_28), vec![call.clone()], false),
            (Some(V2025_03_26), vec![call.clone(), init], false),
            (Some(V2025_03_26), vec![modern], false),
        ];
        for (rev, items, ok) in table {
            let got = check_batch(rev, &items);
            assert_eq!(got.is_ok(), ok, "{rev:?} {items:?}");
            if let Err(e) = got {
                assert_eq!(e.code, -32600);
            }
        }
    }

    #[test]
    fn mrtr_methods() {
        for (m, ok) in [
            ("tools/call", true),
            ("prompts/get", true),
            ("resources/read", true),
            ("tools/list", false),
        ] {
            assert_eq!(allows_input_required(m), ok, "{m}");
        }
    }
}
