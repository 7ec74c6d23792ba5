//! Classification of inbound requests: the era (decided once, body first) and
//! the batch rules. The method catalogue is [`crate::method`].

use crate::error::RpcError;
use crate::jsonrpc::{Message, Request};
use crate::meta;
use crate::method::Method;
use crate::params::Params;
use crate::revision::{Era, Revision};

/// Decides the era of a request (behaviour invariant 1).
///
/// Modern iff the params' `_meta` names a protocol version, or the transport
/// declared a modern revision (the HTTP `MCP-Protocol-Version` header). Every
/// other request, `initialize` included, is legacy.
pub fn era_of(params: Option<&Params>, transport_revision: Option<Revision>) -> Era {
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

/// Whether a request's reply may travel on a stream (behaviour invariant 16), where the
/// transport can stream at all: a legacy reply whenever the handler emits something first; a
/// modern one only when the request asked for what it emits (a progress token, or a `_meta`
/// log level), so that its early errors keep their HTTP status.
pub fn may_stream(era: Era, params: Option<&Params>, log_level_set: bool) -> bool {
    match era {
        Era::Legacy => true,
        Era::Modern => meta::progress_token(params).is_some() || log_level_set,
    }
}

/// Whether a client that goes away (closes the request's stream or connection) cancels the
/// request (behaviour invariant 14): in the modern era it does; a legacy call keeps running, and
/// a legacy client cancels with `notifications/cancelled`.
pub fn disconnect_cancels(era: Era) -> bool {
    era == Era::Modern
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
            Message::Request(r) if r.method == Method::Initialize => {
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
    use serde_json::{Value, json};

    fn req(method: &str, params: Value) -> Request {
        Request {
            id: RequestId::Number(1),
            method: method.into(),
            params: Params::from_value(params),
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
    fn streaming_and_disconnect() {
        let token = json!({"_meta": {"progressToken": 1}});
        assert!(may_stream(Era::Legacy, None, false));
        assert!(!may_stream(Era::Modern, None, false));
        assert!(may_stream(Era::Modern, Params::from_value(token).as_ref(), false));
        assert!(may_stream(Era::Modern, None, true));
        assert!(disconnect_cancels(Era::Modern));
        assert!(!disconnect_cancels(Era::Legacy));
    }

    #[test]
    fn batch_rules() {
        use Revision::*;
        let call = Message::Request(req("tools/list", json!({})));
        let init = Message::Request(req("initialize", json!({})));
        let modern = Message::Notification(Notification {
            method: "notifications/cancelled".into(),
            params: Params::from_value(json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})),
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
}
