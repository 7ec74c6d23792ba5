//! The wire types of the extension: a skill's entry and the results of its methods.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A file of a skill with the digest and size of its raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:<hex>` of its bytes ([`digest`](super::digest)).
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

/// A skill's files: the complete list, or `"dynamic"` when no stable digest can be published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillFiles {
    /// Every file, `SKILL.md` included, each once.
    Listed(Vec<SkillResource>),
    /// The string `"dynamic"`.
    Dynamic(Dynamic),
}

/// The literal `"dynamic"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Dynamic {
    /// `"dynamic"`.
    #[serde(rename = "dynamic")]
    Dynamic,
}

/// The entry of one skill, as `skills/list` and `skills/get` return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of its `SKILL.md`.
    pub uri: String,
    /// Its `SKILL.md` frontmatter as a JSON object, verbatim (`name` and `description`
    /// always present).
    pub frontmatter: Map<String, Value>,
    /// Its files.
    pub resources: SkillFiles,
}

/// The result of `skills/list` (cache hints are added by the runtime in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// One page of entries.
    pub skills: Vec<SkillEntry>,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The result of `skills/get`: one entry, never a cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The entry.
    pub skill: SkillEntry,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entry_shapes() {
        let entry = SkillEntry {
            uri: "skill://a/SKILL.md".into(),
            frontmatter: json!({"name": "a", "description": "d"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            resources: SkillFiles::Dynamic(Dynamic::Dynamic),
        };
        let v = serde_json::to_value(&entry).unwrap();
        assert_eq!(v["resources"], "dynamic");
        let listed = ListSkillsResult {
            skills: vec![],
            next_cursor: None,
        };
        assert_eq!(serde_json::to_value(listed).unwrap(), json!({"skills": []}));
    }
}
