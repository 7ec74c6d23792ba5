//! What a sampling request (`sampling/createMessage`) asks of the client beyond its messages:
//! the context to include ([`IncludeContext`]) and the rule that governs it.

use serde::{Deserialize, Serialize};

use super::capabilities::ClientCapabilities;
use crate::revision::{Feature, Revision};

/// `includeContext`: the MCP servers whose context the client is asked to attach to the prompt
/// (the client may ignore it). From 2025-11-25 on, `thisServer` and `allServers` are
/// deprecated and sent only to a client that declares `sampling.context`
/// ([`IncludeContext::for_client`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum IncludeContext {
    /// No context (the default).
    None,
    /// The context of the server asking.
    ThisServer,
    /// The context of every server the client is connected to.
    AllServers,
}

impl IncludeContext {
    /// The value to send to a client of `revision` with `capabilities`: as asked, but `none`
    /// in place of a deprecated value for a 2025-11-25 or later client that does not declare
    /// `sampling.context`.
    pub fn for_client(self, revision: Option<Revision>, capabilities: &ClientCapabilities) -> IncludeContext {
        let declared = capabilities.sampling_context();
        let deprecated = revision.is_some_and(|r| r.has(Feature::SamplingContextCapability));
        match self {
            IncludeContext::ThisServer | IncludeContext::AllServers if deprecated && !declared => IncludeContext::None,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn caps(v: serde_json::Value) -> ClientCapabilities {
        ClientCapabilities::new(v.as_object().cloned().unwrap_or_default())
    }

    #[test]
    fn deprecated_values_need_the_context_capability_from_2025_11_25() {
        let none = caps(json!({"sampling": {}}));
        let context = caps(json!({"sampling": {"context": {}}}));
        let this = IncludeContext::ThisServer;
        assert_eq!(
            this.for_client(Some(Revision::V2025_06_18), &none),
            this,
            "not yet deprecated"
        );
        assert_eq!(
            this.for_client(Some(Revision::V2025_11_25), &none),
            IncludeContext::None
        );
        assert_eq!(
            IncludeContext::AllServers.for_client(Some(Revision::V2026_07_28), &none),
            IncludeContext::None
        );
        assert_eq!(this.for_client(Some(Revision::V2026_07_28), &context), this);
        assert_eq!(
            serde_json::to_value(IncludeContext::AllServers).unwrap(),
            json!("allServers")
        );
        assert_eq!(
            serde_json::to_value(IncludeContext::ThisServer).unwrap(),
            json!("thisServer")
        );
        assert_eq!(serde_json::to_value(IncludeContext::None).unwrap(), json!("none"));
    }
}
