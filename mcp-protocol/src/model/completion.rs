//! `completion/complete` parameters and result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a completion refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompleteReference {
    /// A prompt argument.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt name.
        name: String,
    },
    /// A resource template variable.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template URI.
        uri: String,
    },
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteArgument {
    /// Argument name.
    pub name: String,
    /// The partial value typed so far.
    pub value: String,
}

/// `completion/complete` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// The reference.
    #[serde(rename = "ref")]
    pub reference: CompleteReference,
    /// The argument.
    pub argument: CompleteArgument,
    /// Already-resolved arguments (2025-06-18+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
}

/// `context` of a completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CompleteContext {
    /// Other arguments already given.
    #[serde(default)]
    pub arguments: Map<String, Value>,
}

/// The `completion` object of a `completion/complete` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values (at most 100 are sent).
    pub values: Vec<String>,
    /// Total number of matches, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist beyond those sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl Completion {
    /// The most values one result carries.
    pub const MAX_VALUES: usize = 100;

    /// A completion from values, truncated to [`Completion::MAX_VALUES`] with
    /// `total` and `hasMore` set accordingly.
    pub fn from_values(mut values: Vec<String>) -> Self {
        let total = values.len();
        let has_more = total > Self::MAX_VALUES;
        values.truncate(Self::MAX_VALUES);
        Completion {
            values,
            total: Some(total as u64),
            has_more: Some(has_more),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_params() {
        let p: CompleteParams = serde_json::from_value(json!({
            "ref": {"type": "ref/prompt", "name": "p"},
            "argument": {"name": "a", "value": "x"}
        }))
        .unwrap();
        assert_eq!(p.reference, CompleteReference::Prompt { name: "p".into() });
        let p: CompleteParams = serde_json::from_value(json!({
            "ref": {"type": "ref/resource", "uri": "test://{id}"},
            "argument": {"name": "id", "value": ""},
            "context": {"arguments": {"x": "1"}}
        }))
        .unwrap();
        assert_eq!(p.context.unwrap().arguments["x"], "1");
    }

    #[test]
    fn truncates() {
        let c = Completion::from_values((0..150).map(|i| i.to_string()).collect());
        assert_eq!(c.values.len(), 100);
        assert_eq!(c.total, Some(150));
        assert_eq!(c.has_more, Some(true));
    }
}
