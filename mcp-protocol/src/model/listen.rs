//! `subscriptions/listen` (2026-07-28): the filter a client asks for, parsed
//! into what the server honours, the acknowledgement that opens the stream
//! and the result that completes it.
//!
//! Unknown filter keys are dropped, not refused; a notification kind the
//! server does not offer is dropped too, and the acknowledgement says what
//! was honoured. Task ids are kept only for the caller's own tasks (others
//! are dropped without saying whether they exist).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::ServerFeatures;
use super::render::finalize;
use crate::bounds::SubscriptionBounds;
use crate::error::RpcError;
use crate::jsonrpc::{RequestId, encode_notification};
use crate::meta::SUBSCRIPTION_ID;
use crate::notifications::Change;
use crate::revision::Era;
use crate::task_mode::refusal;

/// The notifications a subscription asked for and was granted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenFilter {
    /// `toolsListChanged`: tool list changes.
    pub tools_list_changed: bool,
    /// `promptsListChanged`: prompt list changes.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`: resource and template list changes.
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`: the URIs whose updates are announced.
    pub resource_subscriptions: BTreeSet<String>,
    /// `taskIds`: the tasks whose status changes are announced
    /// (`notifications/tasks`, tasks extension).
    pub task_ids: BTreeSet<String>,
}

impl ListenFilter {
    /// Parses `params.notifications` of a `subscriptions/listen` request
    /// into what the server honours: list changes only when `offered`
    /// includes them, resource subscriptions only when offered, every
    /// requested task id (narrow them with [`ListenFilter::retain_task_ids`]).
    /// Unknown keys and non-string entries are dropped.
    ///
    /// Errors: -32602 when `notifications` is missing or not an object, or
    /// names more than `bounds` allow (entries, URI length, bytes);
    /// -32021 ([`refusal`]) when `taskIds` is present and the client did not
    /// declare the tasks extension (`tasks_declared`).
    pub fn parse(
        params: Option<&Map<String, Value>>,
        offered: &ServerFeatures,
        tasks_declared: bool,
        bounds: &SubscriptionBounds,
    ) -> Result<Self, RpcError> {
        let requested = params
            .and_then(|p| p.get("notifications"))
            .and_then(Value::as_object)
            .ok_or_else(|| RpcError::invalid_params("notifications must be an object"))?;
        bounds.check_filter(requested)?;
        if requested.contains_key("taskIds") && !tasks_declared {
            return Err(refusal());
        }
        let flag = |k: &str| offered.list_changed && requested.get(k).and_then(Value::as_bool) == Some(true);
        let strings = |k: &str| -> BTreeSet<String> {
            requested
                .get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        Ok(ListenFilter {
            tools_list_changed: flag("toolsListChanged"),
            prompts_list_changed: flag("promptsListChanged"),
            resources_list_changed: flag("resourcesListChanged"),
            resource_subscriptions: if offered.resource_subscriptions {
                strings("resourceSubscriptions")
            } else {
                BTreeSet::new()
            },
            task_ids: strings("taskIds"),
        })
    }

    /// Keeps only the task ids `owned` accepts (the caller's own tasks).
    pub fn retain_task_ids(&mut self, mut owned: impl FnMut(&str) -> bool) {
        self.task_ids.retain(|id| owned(id));
    }

    /// Whether the subscription announces `change`.
    pub fn wants(&self, change: &Change) -> bool {
        match change {
            Change::Tools => self.tools_list_changed,
            Change::Prompts => self.prompts_list_changed,
            Change::Resources => self.resources_list_changed,
            Change::ResourceUpdated(uri) => self.resource_subscriptions.contains(&**uri),
        }
    }

    /// Whether the subscription announces the status changes of `task_id`.
    pub fn wants_task(&self, task_id: &str) -> bool {
        self.task_ids.contains(task_id)
    }

    /// The honoured filter as the acknowledgement carries it: only what is
    /// on, lists sorted.
    pub fn honoured(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if on {
                m.insert(key.into(), Value::Bool(true));
            }
        }
        for (key, set) in [
            ("resourceSubscriptions", &self.resource_subscriptions),
            ("taskIds", &self.task_ids),
        ] {
            if !set.is_empty() {
                m.insert(key.into(), json!(set));
            }
        }
        m
    }

    /// The encoded `notifications/subscriptions/acknowledged` of the
    /// subscription `subscription` (the listen request's id): the first
    /// message of its stream, naming what was honoured.
    pub fn acknowledgement(&self, subscription: &RequestId) -> Vec<u8> {
        let params = json!({ "_meta": { SUBSCRIPTION_ID: subscription }, "notifications": self.honoured() });
        encode_notification("notifications/subscriptions/acknowledged", Some(&params))
    }
}

/// The result completing a subscription the server ends gracefully,
/// decorated like every modern result ([`finalize`]: `resultType`
/// `complete`, `serverInfo` in `_meta` when given), with the subscription
/// id in `_meta`.
pub fn listen_completion(subscription: &RequestId, server_info: Option<&Value>) -> Value {
    let mut result = json!({ "_meta": { SUBSCRIPTION_ID: subscription } });
    finalize(Era::Modern, &mut result, server_info, None);
    result
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::meta::SERVER_INFO;

    fn offered(list_changed: bool, resource_subscriptions: bool) -> ServerFeatures {
        ServerFeatures {
            list_changed,
            resource_subscriptions,
            ..ServerFeatures::default()
        }
    }

    fn parse(notifications: Value, f: &ServerFeatures, tasks: bool) -> Result<ListenFilter, RpcError> {
        let params = json!({ "notifications": notifications });
        ListenFilter::parse(params.as_object(), f, tasks, &SubscriptionBounds::default())
    }

    #[test]
    fn parses_what_is_offered_and_drops_the_rest() {
        let all = offered(true, true);
        let f = parse(
            json!({"toolsListChanged": true, "promptsListChanged": false, "resourcesListChanged": "yes",
                   "resourceSubscriptions": ["test://b", 3, "test://a"], "bogus": true}),
            &all,
            false,
        )
        .unwrap();
        assert_eq!(
            f,
            ListenFilter {
                tools_list_changed: true,
                resource_subscriptions: ["test://a".to_owned(), "test://b".to_owned()].into(),
                ..ListenFilter::default()
            }
        );
        assert_eq!(
            Value::Object(f.honoured()),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a", "test://b"]})
        );

        let none = offered(false, false);
        let f = parse(
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]}),
            &none,
            false,
        )
        .unwrap();
        assert_eq!(f, ListenFilter::default());
        assert!(f.honoured().is_empty());
    }

    #[test]
    fn refusals() {
        let all = offered(true, true);
        for params in [None, Some(json!({})), Some(json!({"notifications": []}))] {
            let e = ListenFilter::parse(
                params.as_ref().and_then(Value::as_object),
                &all,
                true,
                &SubscriptionBounds::default(),
            )
            .unwrap_err();
            assert_eq!(e.code, -32602, "{params:?}");
            assert_eq!(e.message, "notifications must be an object");
        }
        assert_eq!(parse(json!({"taskIds": ["t"]}), &all, false).unwrap_err(), refusal());
        assert_eq!(parse(json!({"taskIds": null}), &all, false).unwrap_err().code, -32021);
    }

    #[test]
    fn task_ids_narrowed_to_owned() {
        let mut f = parse(json!({"taskIds": ["mine", "theirs", 7]}), &offered(true, true), true).unwrap();
        assert_eq!(f.task_ids.len(), 2);
        f.retain_task_ids(|id| id == "mine");
        assert!(f.wants_task("mine"));
        assert!(!f.wants_task("theirs"));
        assert_eq!(Value::Object(f.honoured()), json!({"taskIds": ["mine"]}));
    }

    #[test]
    fn wants() {
        let f = parse(
            json!({"promptsListChanged": true, "resourcesListChanged": true, "resourceSubscriptions": ["test://a"]}),
            &offered(true, true),
            false,
        )
        .unwrap();
        assert!(!f.wants(&Change::Tools));
        assert!(f.wants(&Change::Prompts));
        assert!(f.wants(&Change::Resources));
        assert!(f.wants(&Change::ResourceUpdated(Arc::from("test://a"))));
        assert!(!f.wants(&Change::ResourceUpdated(Arc::from("test://b"))));
    }

    #[test]
    fn acknowledgement_frame() {
        let f = ListenFilter {
            tools_list_changed: true,
            ..ListenFilter::default()
        };
        assert_eq!(
            String::from_utf8(f.acknowledgement(&RequestId::Number(7))).unwrap(),
            r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true}}}"#
        );
        let empty = ListenFilter::default().acknowledgement(&RequestId::Number(1));
        let v: Value = serde_json::from_slice(&empty).unwrap();
        assert_eq!(v["params"]["notifications"], json!({}));
    }

    #[test]
    fn completion_is_decorated() {
        let id = RequestId::Number(9);
        assert_eq!(
            listen_completion(&id, None),
            json!({"_meta": {SUBSCRIPTION_ID: 9}, "resultType": "complete"})
        );
        let info = json!({"name": "s", "version": "1"});
        assert_eq!(
            listen_completion(&id, Some(&info)),
            json!({"_meta": {SUBSCRIPTION_ID: 9, SERVER_INFO: info}, "resultType": "complete"})
        );
    }
}
