//! Log levels (RFC 5424 severities, as MCP names them).

use serde::{Deserialize, Serialize};

/// A log level, least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debug-level messages.
    Debug,
    /// Informational messages (the default minimum of a legacy session).
    #[default]
    Info,
    /// Normal but significant conditions.
    Notice,
    /// Warnings.
    Warning,
    /// Errors.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// Every level, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<LoggingLevel> {
        LoggingLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_and_names() {
        for w in LoggingLevel::ALL.windows(2) {
            assert!(w[0] < w[1]);
        }
        for l in LoggingLevel::ALL {
            assert_eq!(LoggingLevel::parse(l.as_str()), Some(l));
        }
        assert_eq!(LoggingLevel::parse("warn"), None);
    }
}
