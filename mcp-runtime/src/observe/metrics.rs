//! The two duration histograms of OpenTelemetry's MCP conventions, through the
//! [`metrics`](https://docs.rs/metrics) facade: [`OPERATION_DURATION`] per request and
//! [`SESSION_DURATION`] per legacy session (see the [module docs](super#metrics)).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, PoisonError, RwLock};

use mcp_protocol::Revision;

use super::Network;
use crate::fast_map::FastMap;

/// Histogram of request durations in seconds (`mcp.server.operation.duration`): from the
/// engine receiving a request until its answer is ready.
pub const OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// Histogram of legacy session durations in seconds (`mcp.server.session.duration`): from
/// `initialize` until the session ends.
pub const SESSION_DURATION: &str = "mcp.server.session.duration";
/// The bucket boundaries, in seconds, the conventions advise for both histograms (a recorder
/// is told them by the application: the facade carries no advice; see the module docs).
pub const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Why a request failed: its `error.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Failure {
    /// A tool result with `isError`.
    ToolError,
    /// A JSON-RPC error (also its `rpc.response.status_code`).
    Code(i32),
    /// Cancelled: nothing was answered.
    Cancelled,
    /// The transport gave the call up before it ended.
    Dropped,
}

impl Failure {
    /// The `error.type` value of a failure that has a fixed one.
    pub(super) fn fixed(self) -> Option<&'static str> {
        match self {
            Failure::ToolError => Some("tool_error"),
            Failure::Cancelled => Some("cancelled"),
            Failure::Dropped => Some("dropped"),
            Failure::Code(_) => None,
        }
    }
}

/// Which catalogue entry a request names (the label its name goes under).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum TargetKind {
    /// `gen_ai.tool.name`.
    Tool,
    /// `gen_ai.prompt.name`.
    Prompt,
}

impl TargetKind {
    /// The kind of entry `method` names (`None`: it names none).
    pub(super) fn of(method: &mcp_protocol::Method) -> Option<TargetKind> {
        match method {
            mcp_protocol::Method::ToolsCall => Some(TargetKind::Tool),
            mcp_protocol::Method::PromptsGet => Some(TargetKind::Prompt),
            _ => None,
        }
    }

    pub(super) fn attribute(self) -> &'static str {
        match self {
            TargetKind::Tool => "gen_ai.tool.name",
            TargetKind::Prompt => "gen_ai.prompt.name",
        }
    }
}

/// The labels of one request's duration, but the target's name. Every part is a closed set
/// (the method is a catalogue name or `unknown`, the codes are the server's), and the target
/// is a registered tool or prompt: a client cannot grow the label set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct Operation {
    pub(super) method: &'static str,
    pub(super) failure: Option<Failure>,
    pub(super) revision: Option<Revision>,
    pub(super) network: Option<Network>,
    pub(super) target: Option<TargetKind>,
}

/// The metadata of both histograms (what `metrics::histogram!` would give them here).
static METADATA: metrics::Metadata<'static> =
    metrics::Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// The metric keys built so far, by their labels, so that a request's duration costs a lookup
/// instead of a label vector and a key hash.
#[derive(Default)]
struct Keys {
    operations: FastMap<Operation, FastMap<Box<str>, metrics::Key>>,
    sessions: FastMap<(Option<Revision>, Option<Network>), metrics::Key>,
}

static KEYS: LazyLock<RwLock<Keys>> = LazyLock::new(RwLock::default);

fn label(key: &'static str, value: &'static str) -> metrics::Label {
    metrics::Label::from_static_parts(key, value)
}

/// The labels every duration carries: the revision and the network.
fn common(labels: &mut Vec<metrics::Label>, revision: Option<Revision>, network: Option<Network>) {
    if let Some(r) = revision {
        labels.push(label("mcp.protocol.version", r.as_str()));
    }
    if let Some(n) = network {
        labels.push(label("network.transport", n.transport()));
        labels.extend(n.protocol_name().map(|v| label("network.protocol.name", v)));
        labels.extend(n.protocol_version().map(|v| label("network.protocol.version", v)));
    }
}

fn operation_key(op: Operation, target: &str) -> metrics::Key {
    let mut labels = vec![label("mcp.method.name", op.method)];
    if op.method == "tools/call" {
        labels.push(label("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(kind) = op.target {
        labels.push(metrics::Label::new(kind.attribute(), target.to_owned()));
    }
    match op.failure {
        Some(Failure::Code(code)) => {
            labels.push(metrics::Label::new("error.type", code.to_string()));
            labels.push(metrics::Label::new("rpc.response.status_code", code.to_string()));
        }
        Some(f) => labels.extend(f.fixed().map(|t| label("error.type", t))),
        None => {}
    }
    common(&mut labels, op.revision, op.network);
    metrics::Key::from_parts(OPERATION_DURATION, labels)
}

/// One of the two histograms: its name, its description, and the recorder it was last
/// described to.
struct Histogram {
    name: &'static str,
    description: &'static str,
    /// The address of the recorder last told the unit and description (0: none yet).
    described_to: AtomicUsize,
}

static OPERATIONS: Histogram = Histogram {
    name: OPERATION_DURATION,
    description: "Duration of MCP requests as observed on the server.",
    described_to: AtomicUsize::new(0),
};

static SESSIONS: Histogram = Histogram {
    name: SESSION_DURATION,
    description: "Duration of legacy MCP sessions as observed on the server.",
    described_to: AtomicUsize::new(0),
};

impl Histogram {
    /// Records a sample under `key` with the recorder in effect. The recorder is told the unit
    /// and description first when the key is `new` (its first series) or when it is not the
    /// recorder they were last told to: a recorder installed after the first requests, or a
    /// thread's local one, learns them with its first sample.
    fn record(&self, key: &metrics::Key, new: bool, seconds: f64) {
        metrics::with_recorder(|r| {
            let at = std::ptr::from_ref(r).cast::<()>() as usize;
            if new || self.described_to.load(Ordering::Relaxed) != at {
                r.describe_histogram(
                    metrics::KeyName::from_const_str(self.name),
                    Some(metrics::Unit::Seconds),
                    self.description.into(),
                );
                self.described_to.store(at, Ordering::Relaxed);
            }
            r.register_histogram(key, &METADATA).record(seconds);
        });
    }
}

/// Records a request's duration under its labels (`target`: the registered tool or prompt it
/// names, empty for none).
pub(super) fn operation(op: Operation, target: &str, seconds: f64) {
    {
        let keys = KEYS.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = keys.operations.get(&op).and_then(|m| m.get(target)) {
            OPERATIONS.record(key, false, seconds);
            return;
        }
    }
    let mut keys = KEYS.write().unwrap_or_else(PoisonError::into_inner);
    let mut new = false;
    let key = keys
        .operations
        .entry(op)
        .or_default()
        .entry(Box::from(target))
        .or_insert_with(|| {
            new = true;
            operation_key(op, target)
        });
    OPERATIONS.record(key, new, seconds);
}

/// Records the duration of a legacy session that ended.
pub(crate) fn session(revision: Option<Revision>, network: Option<Network>, seconds: f64) {
    {
        let keys = KEYS.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(key) = keys.sessions.get(&(revision, network)) {
            SESSIONS.record(key, false, seconds);
            return;
        }
    }
    let mut keys = KEYS.write().unwrap_or_else(PoisonError::into_inner);
    let mut new = false;
    let key = keys.sessions.entry((revision, network)).or_insert_with(|| {
        new = true;
        let mut labels = Vec::new();
        common(&mut labels, revision, network);
        metrics::Key::from_parts(SESSION_DURATION, labels)
    });
    SESSIONS.record(key, new, seconds);
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A recorder that keeps what it was told of histograms: their names and units.
    #[derive(Default)]
    struct Told(Mutex<Vec<(String, Option<metrics::Unit>)>>);

    impl metrics::Recorder for Told {
        fn describe_counter(&self, _: metrics::KeyName, _: Option<metrics::Unit>, _: metrics::SharedString) {}
        fn describe_gauge(&self, _: metrics::KeyName, _: Option<metrics::Unit>, _: metrics::SharedString) {}
        fn describe_histogram(&self, key: metrics::KeyName, unit: Option<metrics::Unit>, _: metrics::SharedString) {
            self.0.lock().unwrap().push((key.as_str().to_owned(), unit));
        }
        fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Counter {
            metrics::Counter::noop()
        }
        fn register_gauge(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Gauge {
            metrics::Gauge::noop()
        }
        fn register_histogram(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> metrics::Histogram {
            metrics::Histogram::noop()
        }
    }

    impl Told {
        fn told(&self) -> Vec<(String, Option<metrics::Unit>)> {
            self.0.lock().unwrap().clone()
        }
    }

    /// A recorder that comes after the first samples (the key already built under another)
    /// learns the unit with its first sample. (Other tests of this binary may record meanwhile,
    /// on other threads, with other recorders: a recorder may then be told more than once.)
    #[test]
    fn each_recorder_learns_the_unit_with_its_first_sample() {
        let op = Operation {
            method: "tools/call",
            failure: None,
            revision: None,
            network: None,
            target: Some(TargetKind::Tool),
        };
        let (first, later) = (Told::default(), Told::default());
        let only = |told: Vec<(String, Option<metrics::Unit>)>, name: &str| {
            !told.is_empty()
                && told
                    .iter()
                    .all(|(n, unit)| n == name && *unit == Some(metrics::Unit::Seconds))
        };
        metrics::with_local_recorder(&first, || operation(op, "described-once", 0.1));
        metrics::with_local_recorder(&later, || operation(op, "described-once", 0.1));
        assert!(only(first.told(), OPERATION_DURATION), "{:?}", first.told());
        assert!(only(later.told(), OPERATION_DURATION), "{:?}", later.told());
        let before = later.told().len();
        metrics::with_local_recorder(&later, || session(None, None, 3.0));
        assert!(
            only(later.told()[before..].to_vec(), SESSION_DURATION),
            "{:?}",
            later.told()
        );
    }
}
