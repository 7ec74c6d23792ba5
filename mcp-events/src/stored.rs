//! How the log's records and the webhook subscriptions are written to a store that instances
//! share: one JSON form, whatever the backend ([`Record::to_stored`],
//! [`Subscription::to_stored`] and their inverses). A stored form that does not read back (a
//! record of another version, a tampered one) is `None`: the reader skips it rather than fail.

use mcp_protocol::RpcError;
use mcp_protocol::events::cursor::{Cursor, Position};
use mcp_protocol::events::wire::LastError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::log::{Occurrence, Record, Signal};
use crate::webhook::store::Subscription;

/// A record as stored.
#[derive(Serialize, Deserialize)]
#[serde(tag = "k", rename_all = "snake_case")]
enum StoredRecord {
    Occurrence {
        id: String,
        at: u64,
        data: Map<String, Value>,
    },
    Error {
        error: RpcError,
    },
    Gap,
    Terminate {
        error: RpcError,
    },
}

impl Record {
    /// The record as a store keeps it.
    pub fn to_stored(&self) -> String {
        let stored = match self {
            Record::Occurrence(o) => StoredRecord::Occurrence {
                id: o.event_id.clone(),
                at: o.at_ms,
                data: o.data.clone(),
            },
            Record::Signal(Signal::Error(e)) => StoredRecord::Error { error: e.clone() },
            Record::Signal(Signal::Gap) => StoredRecord::Gap,
            Record::Signal(Signal::Terminate(e)) => StoredRecord::Terminate { error: e.clone() },
        };
        serde_json::to_string(&stored).unwrap_or_default()
    }

    /// A record a store kept (`None`: not one).
    pub fn from_stored(text: &str) -> Option<Record> {
        Some(match serde_json::from_str(text).ok()? {
            StoredRecord::Occurrence { id, at, data } => Record::Occurrence(Occurrence {
                event_id: id,
                at_ms: at,
                data,
            }),
            StoredRecord::Error { error } => Record::Signal(Signal::Error(error)),
            StoredRecord::Gap => Record::Signal(Signal::Gap),
            StoredRecord::Terminate { error } => Record::Signal(Signal::Terminate(error)),
        })
    }
}

/// A subscription as stored (the cursor in its wire form, positions as `[hi, lo]`).
#[derive(Serialize, Deserialize)]
struct StoredSubscription {
    id: String,
    principal: String,
    url: String,
    name: String,
    arguments: Map<String, Value>,
    secrets: Vec<String>,
    rotation_ends_ms: u64,
    expires_ms: u64,
    next: String,
    signals_after: [u64; 2],
    active: bool,
    last_delivery_ms: Option<u64>,
    last_error: Option<LastError>,
    failed_since_ms: Option<u64>,
    window: (u32, u32, u64),
}

impl Subscription {
    /// The subscription as a store keeps it.
    pub fn to_stored(&self) -> String {
        let stored = StoredSubscription {
            id: self.id.clone(),
            principal: self.principal.clone(),
            url: self.url.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            secrets: self.secrets.clone(),
            rotation_ends_ms: self.rotation_ends_ms,
            expires_ms: self.expires_ms,
            next: self.next.encode(),
            signals_after: [self.signals_after.hi, self.signals_after.lo],
            active: self.active,
            last_delivery_ms: self.last_delivery_ms,
            last_error: self.last_error,
            failed_since_ms: self.failed_since_ms,
            window: self.window,
        };
        serde_json::to_string(&stored).unwrap_or_default()
    }

    /// A subscription a store kept (`None`: not one).
    pub fn from_stored(text: &str) -> Option<Subscription> {
        let s: StoredSubscription = serde_json::from_str(text).ok()?;
        Some(Subscription {
            id: s.id,
            principal: s.principal,
            url: s.url,
            name: s.name,
            arguments: s.arguments,
            secrets: s.secrets,
            rotation_ends_ms: s.rotation_ends_ms,
            expires_ms: s.expires_ms,
            next: Cursor::decode(&s.next)?,
            signals_after: Position::new(s.signals_after[0], s.signals_after[1]),
            active: s.active,
            last_delivery_ms: s.last_delivery_ms,
            last_error: s.last_error,
            failed_since_ms: s.failed_since_ms,
            window: s.window,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn records_read_back() {
        let records = [
            Record::Occurrence(Occurrence {
                event_id: "e1".into(),
                at_ms: 7,
                data: json!({"branch": "main"}).as_object().cloned().unwrap_or_default(),
            }),
            Record::Signal(Signal::Error(RpcError::internal())),
            Record::Signal(Signal::Gap),
            Record::Signal(Signal::Terminate(RpcError::invalid_params("gone"))),
        ];
        for r in records {
            assert_eq!(Record::from_stored(&r.to_stored()), Some(r));
        }
        assert_eq!(Record::from_stored("{\"k\":\"nope\"}"), None);
    }

    #[test]
    fn subscriptions_read_back() {
        let sub = Subscription {
            id: "sub_x".into(),
            principal: "alice".into(),
            url: "https://hooks.example/x".into(),
            name: "build.finished".into(),
            arguments: Map::new(),
            secrets: vec!["whsec_a".into()],
            rotation_ends_ms: 1,
            expires_ms: 2,
            next: Cursor {
                epoch: 9,
                position: Position::new(0, 4),
            },
            signals_after: Position::new(0, 3),
            active: true,
            last_delivery_ms: Some(5),
            last_error: Some(LastError::Timeout),
            failed_since_ms: None,
            window: (1, 0, 6),
        };
        assert_eq!(Subscription::from_stored(&sub.to_stored()), Some(sub.clone()));
        let never = Subscription {
            expires_ms: Subscription::NEVER,
            ..sub
        };
        assert!(!never.expires());
        assert_eq!(Subscription::from_stored(&never.to_stored()), Some(never));
        assert_eq!(Subscription::from_stored("{}"), None);
    }
}
