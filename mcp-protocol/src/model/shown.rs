//! [`Shown`]: the presentation fields every definition may carry (title, description, MIME type,
//! annotations, icons, `_meta`), rendered as the revision knows them.

use serde_json::{Map, Value};

use super::icon::Icon;
use crate::revision::{Feature, Revision};

/// The presentation fields every definition may carry, borrowed for
/// rendering.
#[derive(Default)]
pub(super) struct Shown<'a> {
    pub(super) title: Option<&'a String>,
    pub(super) description: Option<&'a String>,
    pub(super) mime_type: Option<&'a String>,
    pub(super) annotations: Option<&'a Value>,
    pub(super) icons: &'a [Icon],
    pub(super) meta: Option<&'a Value>,
}

impl Shown<'_> {
    /// Writes the fields the revision knows (`title` from 2025-06-18, `icons`
    /// from 2025-11-25; `None`: every field).
    pub(super) fn render(&self, m: &mut Map<String, Value>, revision: Option<Revision>) {
        let has = |f: Feature| revision.is_none_or(|r| r.has(f));
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.into(), v);
            }
        };
        put(
            "title",
            self.title.filter(|_| has(Feature::Titles)).cloned().map(Value::String),
        );
        put("description", self.description.cloned().map(Value::String));
        put("mimeType", self.mime_type.cloned().map(Value::String));
        put("annotations", self.annotations.cloned());
        if !self.icons.is_empty() && has(Feature::Icons) {
            put("icons", serde_json::to_value(self.icons).ok());
        }
        put("_meta", self.meta.cloned());
    }
}
