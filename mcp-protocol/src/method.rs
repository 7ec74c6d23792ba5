//! The methods a client sends, parsed once from the wire string, and what the protocol's tables
//! say about each: which eras (and legacy revisions) serve it, whether it needs a legacy
//! session, whether it opens a stream, whether it may answer `input_required`.
//!
//! Both catalogues are written once, in the two macro calls below; nothing else in the
//! workspace compares method strings. A method no table names is [`Method::Unknown`] (or
//! [`NotificationMethod::Unknown`]), which keeps its string for the answer.

use std::fmt;
use std::sync::Arc;

use crate::error::RpcError;
use crate::revision::{Era, Feature, Revision};

/// Which eras (and legacy revisions) serve a client-to-server method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Served {
    /// Legacy revisions only.
    Legacy,
    /// The modern era only.
    Modern,
    /// Both eras.
    Both,
    /// Legacy revisions with core tasks, and the modern era (extension).
    TasksBoth,
    /// Legacy revisions with core tasks only.
    TasksLegacy,
    /// The modern era's tasks extension only.
    TasksModern,
    /// No era: an unknown method.
    Never,
}

impl Served {
    fn serves(self, era: Era, revision: Option<Revision>) -> bool {
        let core_tasks = || revision.is_none_or(|r| r.has(Feature::CoreTasks));
        match (self, era) {
            (Served::Both, _) => true,
            (Served::Legacy, Era::Legacy) | (Served::Modern, Era::Modern) => true,
            (Served::TasksBoth, Era::Modern) | (Served::TasksModern, Era::Modern) => true,
            (Served::TasksBoth, Era::Legacy) | (Served::TasksLegacy, Era::Legacy) => core_tasks(),
            _ => false,
        }
    }
}

/// A server capability a client method belongs to ([`Method::capability`]): a server
/// that does not declare it answers the method -32601.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capability {
    /// `tools`.
    Tools,
    /// `resources`.
    Resources,
    /// `prompts`.
    Prompts,
    /// `completions`.
    Completions,
    /// `logging`.
    Logging,
}

/// Generates a method enum, its parser, its wire string and its row of the table.
macro_rules! catalogue {
    (
        $(#[$doc:meta])* $name:ident {
            $( $(#[$vdoc:meta])* $variant:ident => $wire:literal, $served:ident; )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )*
            /// A method no table names (its wire string is kept).
            Unknown(Arc<str>),
        }

        impl $name {
            /// Parses a wire method string.
            pub fn parse(s: &str) -> Self {
                match s {
                    $( $wire => $name::$variant, )*
                    other => $name::Unknown(Arc::from(other)),
                }
            }

            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $wire, )*
                    $name::Unknown(s) => s,
                }
            }

            /// The wire string of a method the table names, `"unknown"` for any other: a
            /// `'static` label of bounded cardinality (metrics).
            pub fn label(&self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )*
                    $name::Unknown(_) => "unknown",
                }
            }

            fn served(&self) -> Served {
                match self {
                    $( $name::$variant => Served::$served, )*
                    $name::Unknown(_) => Served::Never,
                }
            }

            /// Whether the method is served in an era. For the legacy era, `revision` is the
            /// negotiated one (`None` before negotiation: no gating).
            pub fn serves(&self, era: Era, revision: Option<Revision>) -> bool {
                self.served().serves(era, revision)
            }
        }
    };
}

catalogue! {
    /// A client-to-server request method.
    Method {
        /// `initialize` (legacy handshake).
        Initialize => "initialize", Legacy;
        /// `ping`.
        Ping => "ping", Legacy;
        /// `server/discover`: served in both eras, needs no session.
        Discover => "server/discover", Both;
        /// `tools/list`.
        ToolsList => "tools/list", Both;
        /// `tools/call`.
        ToolsCall => "tools/call", Both;
        /// `resources/list`.
        ResourcesList => "resources/list", Both;
        /// `resources/templates/list`.
        ResourceTemplatesList => "resources/templates/list", Both;
        /// `resources/read`.
        ResourcesRead => "resources/read", Both;
        /// `resources/subscribe` (legacy, per session).
        ResourcesSubscribe => "resources/subscribe", Legacy;
        /// `resources/unsubscribe` (legacy, per session).
        ResourcesUnsubscribe => "resources/unsubscribe", Legacy;
        /// `prompts/list`.
        PromptsList => "prompts/list", Both;
        /// `prompts/get`.
        PromptsGet => "prompts/get", Both;
        /// `completion/complete`.
        Complete => "completion/complete", Both;
        /// `logging/setLevel` (legacy).
        SetLogLevel => "logging/setLevel", Legacy;
        /// `subscriptions/listen` (modern): answered with a stream.
        Listen => "subscriptions/listen", Modern;
        /// `tasks/get`.
        TasksGet => "tasks/get", TasksBoth;
        /// `tasks/cancel`.
        TasksCancel => "tasks/cancel", TasksBoth;
        /// `tasks/result` (2025-11-25 core tasks).
        TasksResult => "tasks/result", TasksLegacy;
        /// `tasks/list` (2025-11-25 core tasks).
        TasksList => "tasks/list", TasksLegacy;
        /// `tasks/update` (the 2026-07-28 tasks extension).
        TasksUpdate => "tasks/update", TasksModern;
    }
}

catalogue! {
    /// A client-to-server notification method.
    NotificationMethod {
        /// `notifications/initialized`.
        Initialized => "notifications/initialized", Legacy;
        /// The bare `initialized` of early clients (deprecated).
        InitializedBare => "initialized", Legacy;
        /// `notifications/cancelled`.
        Cancelled => "notifications/cancelled", Both;
        /// `notifications/progress`.
        Progress => "notifications/progress", Legacy;
        /// `notifications/roots/list_changed`.
        RootsListChanged => "notifications/roots/list_changed", Legacy;
    }
}

impl Method {
    /// Checks the method against the era's catalogue: -32601 naming it otherwise (an unknown
    /// method is never served).
    pub fn check(&self, era: Era, revision: Option<Revision>) -> Result<(), RpcError> {
        if self.serves(era, revision) {
            Ok(())
        } else {
            Err(RpcError::method_not_found(self.as_str()))
        }
    }

    /// The server capability the method belongs to (`None`: the protocol's own methods, tasks
    /// and custom methods). A server that does not declare it answers the method -32601, as it
    /// answers a method it does not know.
    pub fn capability(&self) -> Option<Capability> {
        match self {
            Method::ToolsList | Method::ToolsCall => Some(Capability::Tools),
            Method::ResourcesList
            | Method::ResourceTemplatesList
            | Method::ResourcesRead
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe => Some(Capability::Resources),
            Method::PromptsList | Method::PromptsGet => Some(Capability::Prompts),
            Method::Complete => Some(Capability::Completions),
            Method::SetLogLevel => Some(Capability::Logging),
            _ => None,
        }
    }

    /// The extension whose declaration a client needs to call the method in `era` (the modern
    /// tasks methods need the tasks extension); a client that did not declare it gets -32021
    /// (`extension::undeclared`).
    pub fn extension(&self, era: Era) -> Option<&'static str> {
        match (self, era) {
            (Method::TasksGet | Method::TasksCancel | Method::TasksUpdate, Era::Modern) => {
                Some(crate::task_mode::TASKS_EXTENSION)
            }
            _ => None,
        }
    }

    /// Whether a legacy request needs a session where the transport keeps them (every method but
    /// `initialize`, which mints one, and `server/discover`, which neither needs nor mints one).
    pub fn needs_session(&self) -> bool {
        !matches!(self, Method::Initialize | Method::Discover)
    }

    /// Whether the answer is a long-lived stream rather than one response
    /// (`subscriptions/listen`).
    pub fn streams(&self) -> bool {
        matches!(self, Method::Listen)
    }

    /// Whether the method may answer `input_required` (MRTR).
    pub fn allows_input_required(&self) -> bool {
        matches!(self, Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead)
    }

    /// Whether the method lists a catalog (paginated, cacheable pages).
    pub fn lists_catalog(&self) -> bool {
        matches!(
            self,
            Method::ToolsList | Method::ResourcesList | Method::ResourceTemplatesList | Method::PromptsList
        )
    }

    /// Whether complete results of the method carry cache hints (2026-07-28).
    pub fn is_cacheable(&self) -> bool {
        self.lists_catalog() || matches!(self, Method::Discover | Method::ResourcesRead)
    }

    /// The params field that the `Mcp-Name` header mirrors for the method, if any.
    pub fn name_field(&self) -> Option<&'static str> {
        match self {
            Method::ToolsCall | Method::PromptsGet => Some("name"),
            Method::ResourcesRead => Some("uri"),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => Some("taskId"),
            _ => None,
        }
    }
}

impl NotificationMethod {
    /// Whether this is `notifications/cancelled`: routed at once, never queued behind the
    /// request it names.
    pub fn is_cancellation(&self) -> bool {
        matches!(self, NotificationMethod::Cancelled)
    }

    /// Whether this announces that the client finished the legacy handshake.
    pub fn is_initialized(&self) -> bool {
        matches!(
            self,
            NotificationMethod::Initialized | NotificationMethod::InitializedBare
        )
    }
}

macro_rules! string_like {
    ($name:ident) => {
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name::parse(s)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name::parse(&s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }
    };
}

string_like!(Method);
string_like!(NotificationMethod);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modern_tasks_methods_need_the_tasks_extension() {
        use crate::task_mode::TASKS_EXTENSION;
        for m in [Method::TasksGet, Method::TasksCancel, Method::TasksUpdate] {
            assert_eq!(m.extension(Era::Modern), Some(TASKS_EXTENSION), "{m:?}");
            assert_eq!(m.extension(Era::Legacy), None, "{m:?}: core tasks in 2025-11-25");
        }
        assert_eq!(Method::ToolsCall.extension(Era::Modern), None);
    }

    #[test]
    fn request_catalogue() {
        use Revision::*;
        // (method, legacy at 2025-06-18, legacy at 2025-11-25, modern)
        let table = [
            ("initialize", true, true, false),
            ("ping", true, true, false),
            ("server/discover", true, true, true),
            ("tools/list", true, true, true),
            ("tools/call", true, true, true),
            ("resources/list", true, true, true),
            ("resources/templates/list", true, true, true),
            ("resources/read", true, true, true),
            ("resources/subscribe", true, true, false),
            ("resources/unsubscribe", true, true, false),
            ("prompts/list", true, true, true),
            ("prompts/get", true, true, true),
            ("completion/complete", true, true, true),
            ("logging/setLevel", true, true, false),
            ("subscriptions/listen", false, false, true),
            ("tasks/get", false, true, true),
            ("tasks/cancel", false, true, true),
            ("tasks/result", false, true, false),
            ("tasks/list", false, true, false),
            ("tasks/update", false, false, true),
            ("sampling/createMessage", false, false, false),
            ("nonsense", false, false, false),
        ];
        for (m, l18, l25, modern) in table {
            let method = Method::parse(m);
            assert_eq!(method.as_str(), m, "round trip");
            assert_eq!(method.serves(Era::Legacy, Some(V2025_06_18)), l18, "{m} 2025-06-18");
            assert_eq!(method.serves(Era::Legacy, Some(V2025_11_25)), l25, "{m} 2025-11-25");
            assert_eq!(method.serves(Era::Modern, Some(V2026_07_28)), modern, "{m} modern");
        }
        let e = Method::Ping.check(Era::Modern, None).unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (-32601, "Method not found: ping"));
        assert!(matches!(Method::parse("x/y"), Method::Unknown(s) if &*s == "x/y"));
    }

    #[test]
    fn request_properties() {
        for (m, session, streams, mrtr) in [
            ("initialize", false, false, false),
            ("server/discover", false, false, false),
            ("ping", true, false, false),
            ("tools/call", true, false, true),
            ("prompts/get", true, false, true),
            ("resources/read", true, false, true),
            ("subscriptions/listen", true, true, false),
            ("nonsense", true, false, false),
        ] {
            let m = Method::parse(m);
            assert_eq!(m.needs_session(), session, "{m}");
            assert_eq!(m.streams(), streams, "{m}");
            assert_eq!(m.allows_input_required(), mrtr, "{m}");
        }
    }

    #[test]
    fn notification_catalogue() {
        use NotificationMethod as N;
        assert!(N::parse("notifications/initialized").serves(Era::Legacy, None));
        assert!(!N::parse("notifications/initialized").serves(Era::Modern, None));
        assert!(N::parse("initialized").is_initialized());
        assert!(N::parse("notifications/cancelled").serves(Era::Modern, None));
        assert!(N::parse("notifications/cancelled").is_cancellation());
        assert!(!N::parse("notifications/roots/list_changed").serves(Era::Modern, None));
        assert_eq!(N::parse("x").as_str(), "x");
    }
}
