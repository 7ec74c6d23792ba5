//! What a client receives without asking: the server's notifications, and the two it reads
//! most (progress and log messages).

use serde_json::Value;

use crate::model::LoggingLevel;

/// A notification the server sent to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerNotification {
    /// The method, e.g. `notifications/progress`.
    pub method: String,
    /// The params (`Value::Null` when there were none).
    pub params: Value,
}

impl ServerNotification {
    /// The notification as a progress report, if it is `notifications/progress`.
    pub fn as_progress(&self) -> Option<Progress> {
        if self.method != "notifications/progress" {
            return None;
        }
        Some(Progress {
            progress: self.params.get("progress")?.as_f64()?,
            total: self.params.get("total").and_then(Value::as_f64),
            message: self.params.get("message").and_then(Value::as_str).map(str::to_owned),
            token: self.params.get("progressToken").cloned().unwrap_or(Value::Null),
        })
    }

    /// The notification as a log message, if it is `notifications/message`.
    pub fn as_log(&self) -> Option<LogMessage> {
        if self.method != "notifications/message" {
            return None;
        }
        Some(LogMessage {
            level: serde_json::from_value(self.params.get("level")?.clone()).ok()?,
            logger: self.params.get("logger").and_then(Value::as_str).map(str::to_owned),
            data: self.params.get("data").cloned().unwrap_or(Value::Null),
        })
    }
}

/// One `notifications/progress`.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// The message (revisions from 2025-03-26 on).
    pub message: Option<String>,
    /// The progress token the notification names.
    pub token: Value,
}

/// One `notifications/message`.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// The level.
    pub level: LoggingLevel,
    /// The logger name, if given.
    pub logger: Option<String>,
    /// The data.
    pub data: Value,
}
