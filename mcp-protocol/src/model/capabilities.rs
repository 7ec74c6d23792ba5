//! Client and server capabilities, per era.

use serde_json::{Map, Value, json};

use crate::extension::{Declared, declare};
use crate::method::Capability;
use crate::revision::{Era, Feature, Revision};
use crate::task_mode::TASKS_EXTENSION;

/// The capabilities a client declared (in `initialize`, or per request in the
/// modern era), with the queries the server needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientCapabilities {
    raw: Map<String, Value>,
}

impl ClientCapabilities {
    /// Wraps a declared capabilities object.
    pub fn new(raw: Map<String, Value>) -> Self {
        ClientCapabilities { raw }
    }

    /// The declared object, verbatim.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    fn object(&self, key: &str) -> Option<&Map<String, Value>> {
        self.raw.get(key)?.as_object()
    }

    /// `sampling` declared.
    pub fn sampling(&self) -> bool {
        self.object("sampling").is_some()
    }

    /// `sampling.context` declared (`includeContext` other than `none` is welcome).
    pub fn sampling_context(&self) -> bool {
        self.object("sampling").is_some_and(|s| s.contains_key("context"))
    }

    /// `sampling.tools` declared (tool-enabled sampling).
    pub fn sampling_tools(&self) -> bool {
        self.object("sampling").is_some_and(|s| s.contains_key("tools"))
    }

    /// `roots` declared.
    pub fn roots(&self) -> bool {
        self.object("roots").is_some()
    }

    /// Form-mode elicitation declared (`elicitation: {}` means form only).
    pub fn elicitation_form(&self) -> bool {
        self.object("elicitation")
            .is_some_and(|e| e.is_empty() || e.contains_key("form"))
    }

    /// URL-mode elicitation declared, in a revision that has it.
    pub fn elicitation_url(&self, revision: Option<Revision>) -> bool {
        revision.is_none_or(|r| r.has(Feature::UrlElicitation))
            && self.object("elicitation").is_some_and(|e| e.contains_key("url"))
    }

    /// An extension declared under `extensions`.
    pub fn extension(&self, id: &str) -> bool {
        self.object("extensions").is_some_and(|e| e.contains_key(id))
    }

    /// The tasks extension declared (modern era).
    pub fn tasks_extension(&self) -> bool {
        self.extension(TASKS_EXTENSION)
    }
}

/// What a server offers, from which its capabilities are rendered per revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ServerFeatures {
    /// Tools are served.
    pub tools: bool,
    /// Resources are served.
    pub resources: bool,
    /// Prompts are served.
    pub prompts: bool,
    /// At least one completion handler is registered.
    pub completions: bool,
    /// Logging notifications are offered.
    pub logging: bool,
    /// Resource subscriptions are offered (legacy `resources/subscribe`;
    /// modern `resourceSubscriptions` on `subscriptions/listen`).
    pub resource_subscriptions: bool,
    /// List-changed notifications are sent.
    pub list_changed: bool,
    /// Tasks are offered (core tasks in 2025-11-25, the extension in 2026-07-28).
    pub tasks: bool,
}

impl ServerFeatures {
    /// Whether the server declares `capability`.
    pub fn offers(&self, capability: Capability) -> bool {
        match capability {
            Capability::Tools => self.tools,
            Capability::Resources => self.resources,
            Capability::Prompts => self.prompts,
            Capability::Completions => self.completions,
            Capability::Logging => self.logging,
        }
    }
}

/// Renders the server capabilities for a revision (`None`: a legacy client
/// before negotiation), with the extensions the server declares (those of the modern era only
/// stay out of a legacy result): the tasks extension from `f`, the others as given, among them
/// MCP Apps' ([`crate::apps::declaration`]) when the server offers apps.
pub fn server_capabilities(f: &ServerFeatures, revision: Option<Revision>, extensions: &[Declared]) -> Value {
    let era = revision.map_or(Era::Legacy, Revision::era);
    let mut caps = Map::new();
    let list_changed = |c: &mut Map<String, Value>| {
        if f.list_changed {
            c.insert("listChanged".into(), Value::Bool(true));
        }
    };
    if f.tools {
        let mut c = Map::new();
        list_changed(&mut c);
        caps.insert("tools".into(), Value::Object(c));
    }
    if f.resources {
        let mut c = Map::new();
        if f.resource_subscriptions {
            c.insert("subscribe".into(), Value::Bool(true));
        }
        list_changed(&mut c);
        caps.insert("resources".into(), Value::Object(c));
    }
    if f.prompts {
        let mut c = Map::new();
        list_changed(&mut c);
        caps.insert("prompts".into(), Value::Object(c));
    }
    if f.completions && revision.is_none_or(|r| r.has(Feature::CompletionsCapability)) {
        caps.insert("completions".into(), json!({}));
    }
    if f.logging {
        caps.insert("logging".into(), json!({}));
    }
    if f.tasks {
        match era {
            Era::Legacy if revision.is_some_and(|r| r.has(Feature::CoreTasks)) => {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
            Era::Modern => {
                let tasks = Declared {
                    id: TASKS_EXTENSION.to_owned(),
                    settings: Map::new(),
                    legacy: false,
                    modern: true,
                };
                declare(&mut caps, &[tasks], revision);
            }
            Era::Legacy => {}
        }
    }
    declare(&mut caps, extensions, revision);
    Value::Object(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities::new(v.as_object().unwrap().clone())
    }

    #[test]
    fn client_queries() {
        let c = caps(json!({"sampling": {"tools": {}}, "elicitation": {}, "roots": {"listChanged": true}}));
        assert!(c.sampling() && c.sampling_tools() && c.roots() && c.elicitation_form());
        assert!(!c.elicitation_url(None));
        let c = caps(json!({"elicitation": {"url": {}}, "extensions": {"io.modelcontextprotocol/tasks": {}}}));
        assert!(!c.elicitation_form());
        assert!(c.elicitation_url(Some(Revision::V2025_11_25)));
        assert!(!c.elicitation_url(Some(Revision::V2025_06_18)));
        assert!(c.tasks_extension());
        assert!(!caps(json!({})).sampling());
        assert!(!caps(json!({"sampling": true})).sampling());
    }

    #[test]
    fn server_capabilities_per_revision() {
        let f = ServerFeatures {
            tools: true,
            resources: true,
            prompts: true,
            completions: true,
            logging: true,
            resource_subscriptions: true,
            list_changed: true,
            tasks: true,
        };
        let v = server_capabilities(&f, Some(Revision::V2025_11_25), &[]);
        assert_eq!(v["tasks"]["requests"]["tools"]["call"], json!({}));
        assert_eq!(v["resources"], json!({"subscribe": true, "listChanged": true}));
        assert_eq!(v["completions"], json!({}));
        let v = server_capabilities(&f, Some(Revision::V2025_06_18), &[]);
        assert!(v.get("tasks").is_none());
        let v = server_capabilities(&f, Some(Revision::V2024_11_05), &[]);
        assert!(v.get("completions").is_none());
        let v = server_capabilities(&f, Some(Revision::V2026_07_28), &[]);
        assert!(v.get("tasks").is_none());
        assert_eq!(v["extensions"], json!({"io.modelcontextprotocol/tasks": {}}));
        let v = server_capabilities(&f, Some(Revision::V2025_06_18), &[]);
        assert!(v.get("extensions").is_none());
        let v = server_capabilities(&ServerFeatures::default(), None, &[]);
        assert_eq!(v, json!({}));
    }
}
