//! Protocol revisions, eras and the feature table.
//!
//! Revisions are an enumerated set: they are never compared as strings, and a
//! feature is available in a revision because a table says so, not because the
//! revision is "at least" some date (behaviour invariant 2).

use std::fmt;

/// One published MCP protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Revision {
    /// `2024-11-05`: the first revision (HTTP+SSE pair, no batches in the schema).
    V2024_11_05,
    /// `2025-03-26`: Streamable HTTP, JSON-RPC batches, tool annotations, audio.
    V2025_03_26,
    /// `2025-06-18`: structured tool output, elicitation, titles; batches removed.
    V2025_06_18,
    /// `2025-11-25`: icons, URL elicitation, experimental core tasks; last legacy revision.
    V2025_11_25,
    /// `2026-07-28`: the modern, stateless era (`server/discover`, MRTR, listen).
    V2026_07_28,
}

/// The two protocol eras.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize` handshake, optional sessions.
    Legacy,
    /// 2026-07-28 and later: per-request `_meta`, stateless.
    Modern,
}

/// The revision a transport declares beside the body (the HTTP `MCP-Protocol-Version`
/// header; stdio declares none).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TransportRevision {
    /// None declared.
    #[default]
    Absent,
    /// A known revision.
    Known(Revision),
    /// A value that names no revision (legacy requests are refused with -32600).
    Unknown(String),
}

impl TransportRevision {
    /// Parses the declared value, if any (surrounding whitespace ignored).
    pub fn parse(value: Option<&[u8]>) -> Self {
        match value {
            None => TransportRevision::Absent,
            Some(v) => {
                let s = String::from_utf8_lossy(v);
                let s = s.trim();
                Revision::parse(s).map_or_else(|| TransportRevision::Unknown(s.to_owned()), TransportRevision::Known)
            }
        }
    }

    /// The declared revision, when it is a known one.
    pub fn known(&self) -> Option<Revision> {
        match self {
            TransportRevision::Known(r) => Some(*r),
            _ => None,
        }
    }
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 5] = [
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];
    /// The newest legacy revision: what `initialize` answers for an unknown request.
    pub const LATEST_LEGACY: Revision = Revision::V2025_11_25;
    /// The newest modern revision.
    pub const LATEST_MODERN: Revision = Revision::V2026_07_28;

    /// Parses a revision string; unknown strings give `None`.
    pub fn parse(s: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The wire spelling of the revision.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The era the revision belongs to.
    pub const fn era(self) -> Era {
        match self {
            Revision::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// Whether the revision has a feature (see [`Feature`]).
    pub fn has(self, feature: Feature) -> bool {
        feature.revisions().contains(&self)
    }

    /// How the revision treats JSON-RPC batches.
    pub const fn batch_support(self) -> BatchSupport {
        match self {
            Revision::V2024_11_05 => BatchSupport::Compatibility,
            Revision::V2025_03_26 => BatchSupport::Required,
            _ => BatchSupport::Refused,
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a revision treats JSON-RPC batch arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchSupport {
    /// Not in the revision's schema, accepted for compatibility (2024-11-05).
    Compatibility,
    /// The revision requires servers to accept batches (2025-03-26).
    Required,
    /// Batches are refused with -32600.
    Refused,
}

impl BatchSupport {
    /// Whether a batch is accepted.
    pub const fn accepted(self) -> bool {
        !matches!(self, BatchSupport::Refused)
    }
}

/// A protocol feature whose availability depends on the revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Feature {
    /// `title` on tools, resources, prompts and implementations.
    Titles,
    /// `icons` on tools, resources, prompts and implementations.
    Icons,
    /// `outputSchema` on tools and `structuredContent` in tool results.
    OutputSchema,
    /// `structuredContent` may be any JSON value, not only an object.
    AnyStructuredContent,
    /// Tool `annotations`.
    ToolAnnotations,
    /// `audio` content blocks.
    AudioContent,
    /// `resource_link` content blocks.
    ResourceLinks,
    /// The `completions` server capability.
    CompletionsCapability,
    /// `message` on progress notifications.
    ProgressMessage,
    /// Form-mode `elicitation/create`.
    Elicitation,
    /// URL-mode elicitation.
    UrlElicitation,
    /// `elicitationId` and `notifications/elicitation/complete`.
    ElicitationComplete,
    /// The 2025-11-25 experimental core tasks.
    CoreTasks,
    /// The `sampling.context` client capability, without which a server sends a sampling
    /// request's `includeContext` only as `none`.
    SamplingContextCapability,
    /// The `io.modelcontextprotocol/tasks` extension.
    TasksExtension,
    /// `Mcp-Session-Id` on Streamable HTTP.
    Sessions,
    /// The `MCP-Protocol-Version` HTTP header after initialization.
    ProtocolVersionHeader,
    /// Server-to-client JSON-RPC requests (sampling, roots, elicitation).
    ServerRequests,
    /// Multi round-trip requests (`input_required`).
    Mrtr,
    /// `resultType` on every result, cache hints, `serverInfo` in `_meta`.
    ResultType,
}

impl Feature {
    /// The revisions that have the feature.
    pub const fn revisions(self) -> &'static [Revision] {
        use Revision::*;
        match self {
            Feature::Titles | Feature::OutputSchema | Feature::ResourceLinks | Feature::Elicitation => {
                &[V2025_06_18, V2025_11_25, V2026_07_28]
            }
            Feature::Icons | Feature::UrlElicitation | Feature::SamplingContextCapability => {
                &[V2025_11_25, V2026_07_28]
            }
            Feature::AnyStructuredContent | Feature::TasksExtension | Feature::Mrtr | Feature::ResultType => {
                &[V2026_07_28]
            }
            Feature::ToolAnnotations
            | Feature::AudioContent
            | Feature::CompletionsCapability
            | Feature::ProgressMessage => &[V2025_03_26, V2025_06_18, V2025_11_25, V2026_07_28],
            Feature::ElicitationComplete | Feature::CoreTasks => &[V2025_11_25],
            Feature::Sessions => &[V2025_03_26, V2025_06_18, V2025_11_25],
            Feature::ProtocolVersionHeader => &[V2025_06_18, V2025_11_25, V2026_07_28],
            Feature::ServerRequests => &[V2024_11_05, V2025_03_26, V2025_06_18, V2025_11_25],
        }
    }
}

/// Which revisions a server names as supported (`server/discover`
/// `supportedVersions`, and `data.supported` of -32022).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AdvertiseVersions {
    /// Modern revisions only (the default: `server/discover` is a modern method).
    #[default]
    Modern,
    /// Every revision the server serves.
    All,
    /// Legacy revisions only.
    Legacy,
}

impl AdvertiseVersions {
    /// The advertised revisions, newest first.
    pub fn revisions(self) -> Vec<Revision> {
        Revision::ALL
            .into_iter()
            .rev()
            .filter(|r| match self {
                AdvertiseVersions::Modern => r.era() == Era::Modern,
                AdvertiseVersions::Legacy => r.era() == Era::Legacy,
                AdvertiseVersions::All => true,
            })
            .collect()
    }
}

/// The version an `initialize` answer carries: the requested one when it is a
/// legacy revision we serve, else the newest legacy revision.
pub fn negotiate_initialize(requested: &str) -> Revision {
    match Revision::parse(requested) {
        Some(r) if r.era() == Era::Legacy => r,
        _ => Revision::LATEST_LEGACY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Revision::*;

    #[test]
    fn parse_round_trips_and_rejects_unknown() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
        for bad in ["2024-10-07", "2026-06-30", "", "1.0.0", "2025-11-25 "] {
            assert_eq!(Revision::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn eras() {
        let table = [
            (V2024_11_05, Era::Legacy),
            (V2025_03_26, Era::Legacy),
            (V2025_06_18, Era::Legacy),
            (V2025_11_25, Era::Legacy),
            (V2026_07_28, Era::Modern),
        ];
        for (r, e) in table {
            assert_eq!(r.era(), e, "{r}");
        }
    }

    #[test]
    fn batch_table() {
        let table = [
            (V2024_11_05, true),
            (V2025_03_26, true),
            (V2025_06_18, false),
            (V2025_11_25, false),
            (V2026_07_28, false),
        ];
        for (r, ok) in table {
            assert_eq!(r.batch_support().accepted(), ok, "{r}");
        }
    }

    #[test]
    fn feature_table() {
        // (feature, [2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28])
        let table: [(Feature, [bool; 5]); 12] = [
            (Feature::Titles, [false, false, true, true, true]),
            (Feature::Icons, [false, false, false, true, true]),
            (Feature::OutputSchema, [false, false, true, true, true]),
            (Feature::AnyStructuredContent, [false, false, false, false, true]),
            (Feature::AudioContent, [false, true, true, true, true]),
            (Feature::Elicitation, [false, false, true, true, true]),
            (Feature::UrlElicitation, [false, false, false, true, true]),
            (Feature::ElicitationComplete, [false, false, false, true, false]),
            (Feature::CoreTasks, [false, false, false, true, false]),
            (Feature::TasksExtension, [false, false, false, false, true]),
            (Feature::Sessions, [false, true, true, true, false]),
            (Feature::ServerRequests, [true, true, true, true, false]),
        ];
        for (f, row) in table {
            for (r, want) in Revision::ALL.into_iter().zip(row) {
                assert_eq!(r.has(f), want, "{f:?} at {r}");
            }
        }
    }

    #[test]
    fn initialize_negotiation() {
        assert_eq!(negotiate_initialize("2025-06-18"), V2025_06_18);
        assert_eq!(negotiate_initialize("2024-11-05"), V2024_11_05);
        assert_eq!(negotiate_initialize("2026-07-28"), V2025_11_25);
        assert_eq!(negotiate_initialize("1999-01-01"), V2025_11_25);
    }

    #[test]
    fn advertised() {
        assert_eq!(AdvertiseVersions::Modern.revisions(), vec![V2026_07_28]);
        assert_eq!(AdvertiseVersions::All.revisions().len(), 5);
        assert_eq!(AdvertiseVersions::All.revisions()[0], V2026_07_28);
        assert!(!AdvertiseVersions::Legacy.revisions().contains(&V2026_07_28));
    }
}
