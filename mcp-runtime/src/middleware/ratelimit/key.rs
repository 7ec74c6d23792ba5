//! The bucket a request counts against: its caller (the principal, or the client's address for
//! anonymous callers), and the tool or method when the limit is per tool or per method.

use std::fmt::Write;

use crate::middleware::Inbound;
use crate::quota::ClientKey;

/// How a caller's requests are split into buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bucketing {
    /// One bucket per caller for every counted request.
    #[default]
    PerCaller,
    /// One bucket per caller and method.
    PerMethod,
    /// One bucket per caller and tool for `tools/call` (per caller and method for other
    /// counted methods).
    PerTool,
}

/// The bucket key of `request`: its client (`crate::quota::ClientKey`: `p<len>:<principal>`,
/// or `a:<address>` for an anonymous caller with an address), then `|m:<method>` or
/// `|t:<tool>` when split.
pub(crate) fn bucket_key(request: &Inbound, bucketing: Bucketing) -> String {
    let mut key = ClientKey::of(&request.auth.principal, request.remote()).to_string();
    match (bucketing, request.tool_name()) {
        (Bucketing::PerCaller, _) => {}
        (Bucketing::PerTool, Some(tool)) => {
            let _ = write!(key, "|t:{tool}");
        }
        (Bucketing::PerTool | Bucketing::PerMethod, _) => {
            let _ = write!(key, "|m:{}", request.method());
        }
    }
    key
}
