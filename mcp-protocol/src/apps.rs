//! MCP Apps (SEP-1865, the `io.modelcontextprotocol/ui` extension): the wire types a server
//! emits and the rules they follow.
//!
//! An app is an HTML page the host renders in a sandboxed iframe. The server offers it as a
//! resource and links tools to it:
//!
//! - **UI resource**: a `ui://` URI whose contents have the MIME type
//!   `text/html;profile=mcp-app` ([`MIME_TYPE`]), as text or base64 blob. Its `_meta.ui`
//!   ([`ResourceUi`]) carries what the host needs to sandbox it: the CSP domains ([`Csp`]), the
//!   browser permissions it asks for ([`Permissions`]), a dedicated sandbox `domain` and a border
//!   preference. It may be given on the `resources/list` entry, on each `resources/read`
//!   content item, or both (the content item wins).
//! - **Tool link**: a tool's `_meta.ui` ([`ToolUi`]) names the resource (`resourceUri`) and who
//!   may use the tool ([`ToolVisibility`]: the model, the app, or both, the default). The server
//!   lists every tool; the *host* keeps app-only tools out of the model's tool list and refuses
//!   an app's call of a model-only tool. For older hosts the deprecated flat key
//!   `_meta["ui/resourceUri"]` ([`LEGACY_RESOURCE_URI_KEY`]) is written too, as the official
//!   server helpers do.
//! - **Declaration**: a server with an app resource or tool declares [`EXTENSION_ID`] in both
//!   eras with no settings (`{}`, [`declaration`]; SEP-2133's own example): the `mimeTypes` are
//!   the client's (the host says which views it renders, [`client_supports`]). The runtime hands
//!   the declaration to `model::server_capabilities` among the declared extensions.
//!
//! The checks ([`check_resource`], [`check_tool_meta`]) are made when a resource or tool is
//! registered, so that a server never lists a UI resource a host would refuse.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::extension::Declared;
use crate::model::ClientCapabilities;

/// The extension identifier.
pub use crate::extension::APPS_EXTENSION as EXTENSION_ID;

/// The MIME type of an HTML app (the only one the specification defines).
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The URI scheme of UI resources.
pub const URI_SCHEME: &str = "ui://";

/// The deprecated flat `_meta` key naming a tool's UI resource, still read by older hosts.
pub const LEGACY_RESOURCE_URI_KEY: &str = "ui/resourceUri";

/// Why an app resource or a tool's UI metadata was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppsError {
    /// The URI of a UI resource does not use the `ui://` scheme (or names nothing after it).
    #[error("MCP Apps resource URI {0:?} must use the ui:// scheme (e.g. ui://my-server/view)")]
    NotUiUri(String),
    /// A `ui://` resource does not have the MIME type `text/html;profile=mcp-app`.
    #[error(
        "ui:// resource {uri:?} must have MIME type \"text/html;profile=mcp-app\", not {}",
        .found.as_deref().map_or_else(|| "none".to_owned(), |m| format!("{m:?}"))
    )]
    WrongMimeType {
        /// The resource's URI (or URI template).
        uri: String,
        /// The MIME type it has (`None`: none).
        found: Option<String>,
    },
    /// A tool's `_meta.ui` does not follow the specification's shape.
    #[error("tool {tool:?}: invalid _meta.ui: {why}")]
    InvalidToolMeta {
        /// The tool.
        tool: String,
        /// What does not fit.
        why: String,
    },
    /// A tool's `visibility` lists nobody: no one could call it.
    #[error("tool {0:?}: _meta.ui.visibility must name \"model\", \"app\" or both")]
    EmptyVisibility(String),
    /// A tool names a UI resource the server does not offer.
    #[error("tool {tool:?} names the UI resource {uri:?}, which is not registered")]
    MissingResource {
        /// The tool.
        tool: String,
        /// The `resourceUri` it names.
        uri: String,
    },
}

/// Checks a UI resource URI: `ui://` followed by at least one character.
pub fn check_uri(uri: &str) -> Result<(), AppsError> {
    match uri.strip_prefix(URI_SCHEME) {
        Some(rest) if !rest.is_empty() && !rest.chars().any(char::is_whitespace) => Ok(()),
        _ => Err(AppsError::NotUiUri(uri.to_owned())),
    }
}

/// Whether `uri` (a URI or a URI template) is in the `ui://` scheme.
pub fn is_ui_uri(uri: &str) -> bool {
    uri.starts_with(URI_SCHEME)
}

/// Checks a resource (or template) before it is registered: a `ui://` one must have the MIME
/// type [`MIME_TYPE`]; any other URI passes.
pub fn check_resource(uri: &str, mime_type: Option<&str>) -> Result<(), AppsError> {
    if !is_ui_uri(uri) {
        return Ok(());
    }
    check_uri(uri)?;
    if mime_type != Some(MIME_TYPE) {
        return Err(AppsError::WrongMimeType {
            uri: uri.to_owned(),
            found: mime_type.map(str::to_owned),
        });
    }
    Ok(())
}

/// The CSP domains a UI resource needs (each list empty: none, the host's restrictive default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct Csp {
    /// Origins for fetch, XHR and WebSocket (`connect-src`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins for scripts, styles, images, fonts and media (`script-src`, `style-src`,
    /// `img-src`, `font-src`, `media-src`); `https://*.example.com` wildcards allowed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins of nested iframes (`frame-src`; none: `'none'`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Allowed base URIs (`base-uri`; none: `'self'`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

impl Csp {
    /// No domain at all.
    pub fn new() -> Self {
        Csp::default()
    }

    /// Adds an origin for network requests.
    pub fn connect(mut self, origin: impl Into<String>) -> Self {
        self.connect_domains.push(origin.into());
        self
    }

    /// Adds an origin for static resources.
    pub fn resource(mut self, origin: impl Into<String>) -> Self {
        self.resource_domains.push(origin.into());
        self
    }

    /// Adds an origin for nested iframes.
    pub fn frame(mut self, origin: impl Into<String>) -> Self {
        self.frame_domains.push(origin.into());
        self
    }

    /// Adds an allowed base URI.
    pub fn base_uri(mut self, origin: impl Into<String>) -> Self {
        self.base_uri_domains.push(origin.into());
        self
    }
}

/// The browser permissions a UI resource asks for (the host may grant them through the
/// iframe's `allow` attribute; an app must feature-detect). Each is `{}` on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Permissions {
    /// `camera`.
    pub camera: bool,
    /// `microphone`.
    pub microphone: bool,
    /// `geolocation`.
    pub geolocation: bool,
    /// `clipboard-write` (`clipboardWrite`).
    pub clipboard_write: bool,
}

impl Permissions {
    /// None.
    pub fn new() -> Self {
        Permissions::default()
    }

    /// Asks for the camera.
    pub fn camera(mut self) -> Self {
        self.camera = true;
        self
    }

    /// Asks for the microphone.
    pub fn microphone(mut self) -> Self {
        self.microphone = true;
        self
    }

    /// Asks for geolocation.
    pub fn geolocation(mut self) -> Self {
        self.geolocation = true;
        self
    }

    /// Asks for clipboard writes.
    pub fn clipboard_write(mut self) -> Self {
        self.clipboard_write = true;
        self
    }

    fn names(&self) -> [(&'static str, bool); 4] {
        [
            ("camera", self.camera),
            ("microphone", self.microphone),
            ("geolocation", self.geolocation),
            ("clipboardWrite", self.clipboard_write),
        ]
    }

    /// Whether nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.names().iter().all(|(_, on)| !on)
    }
}

impl Serialize for Permissions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m: Map<String, Value> = self
            .names()
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| (k.to_owned(), json!({})))
            .collect();
        m.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Permissions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let m = Map::<String, Value>::deserialize(d)?;
        let mut p = Permissions::default();
        for (k, v) in m {
            if !v.as_object().is_some_and(Map::is_empty) {
                return Err(serde::de::Error::custom(format!("permission {k:?} must be {{}}")));
            }
            match k.as_str() {
                "camera" => p.camera = true,
                "microphone" => p.microphone = true,
                "geolocation" => p.geolocation = true,
                "clipboardWrite" => p.clipboard_write = true,
                other => return Err(serde::de::Error::custom(format!("unknown permission {other:?}"))),
            }
        }
        Ok(p)
    }
}

/// A UI resource's `_meta.ui`: how the host should sandbox and frame it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ResourceUi {
    /// The CSP domains it needs (absent: the host's restrictive default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csp: Option<Csp>,
    /// The browser permissions it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Permissions>,
    /// A dedicated sandbox origin (its format is the host's, e.g. `{hash}.claudemcpcontent.com`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the host should draw a border and background (absent: the host decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

impl ResourceUi {
    /// Nothing set.
    pub fn new() -> Self {
        ResourceUi::default()
    }

    /// Sets the CSP domains.
    pub fn csp(mut self, csp: Csp) -> Self {
        self.csp = Some(csp);
        self
    }

    /// Sets the permissions asked for.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Sets the dedicated sandbox domain.
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Sets the border preference.
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.prefers_border = Some(border);
        self
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ResourceUi::default()
    }

    /// The `_meta` object carrying it: `{"ui": {...}}`.
    pub fn to_meta(&self) -> Value {
        json!({ "ui": self })
    }
}

/// Who may use a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolVisibility {
    /// The model: the host lists the tool to the agent, which may call it.
    Model,
    /// The app of this server: it may call the tool through the host.
    App,
}

/// A tool's `_meta.ui`: the UI resource that renders its results, and who may use it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolUi {
    /// The `ui://` resource rendering the tool's results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_uri: Option<String>,
    /// Who may use the tool (absent: `["model", "app"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Vec<ToolVisibility>>,
}

impl ToolUi {
    /// A tool rendered by the UI resource `resource_uri` (refused unless it is a `ui://` URI).
    pub fn new(resource_uri: impl Into<String>) -> Result<Self, AppsError> {
        let uri = resource_uri.into();
        check_uri(&uri)?;
        Ok(ToolUi {
            resource_uri: Some(uri),
            visibility: None,
        })
    }

    /// A tool with no UI of its own (an app-only helper the app calls, for example).
    pub fn without_resource() -> Self {
        ToolUi::default()
    }

    /// Sets who may use the tool.
    pub fn visibility(mut self, visibility: impl IntoIterator<Item = ToolVisibility>) -> Self {
        let mut v: Vec<ToolVisibility> = Vec::new();
        for who in visibility {
            if !v.contains(&who) {
                v.push(who);
            }
        }
        self.visibility = Some(v);
        self
    }

    /// Only the app may call the tool: hosts keep it out of the model's tool list.
    pub fn app_only(self) -> Self {
        self.visibility([ToolVisibility::App])
    }

    /// Only the model may call the tool: hosts refuse the app's calls of it.
    pub fn model_only(self) -> Self {
        self.visibility([ToolVisibility::Model])
    }

    /// Whether `who` may use the tool.
    pub fn visible_to(&self, who: ToolVisibility) -> bool {
        self.visibility.as_ref().is_none_or(|v| v.contains(&who))
    }

    /// Merges the tool's `_meta` with this: `ui` (and the deprecated `ui/resourceUri` when a
    /// resource is named) replace what was there; other keys are kept.
    pub fn merge_into(&self, meta: Option<Value>) -> Value {
        let mut m = match meta {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        m.insert("ui".into(), json!(self));
        match &self.resource_uri {
            Some(uri) => m.insert(LEGACY_RESOURCE_URI_KEY.into(), Value::String(uri.clone())),
            None => m.remove(LEGACY_RESOURCE_URI_KEY),
        };
        Value::Object(m)
    }
}

/// Reads and checks a tool's `_meta.ui` (and the deprecated flat key): `None` when the tool has
/// neither; refused when `ui` does not have the specification's shape, names a URI outside
/// `ui://`, lists nobody in `visibility`, or disagrees with the flat key.
pub fn check_tool_meta(tool: &str, meta: Option<&Value>) -> Result<Option<ToolUi>, AppsError> {
    let invalid = |why: String| AppsError::InvalidToolMeta {
        tool: tool.to_owned(),
        why,
    };
    let Some(meta) = meta.and_then(Value::as_object) else {
        return Ok(None);
    };
    let flat = match meta.get(LEGACY_RESOURCE_URI_KEY) {
        None => None,
        Some(Value::String(uri)) => Some(uri.as_str()),
        Some(_) => return Err(invalid(format!("{LEGACY_RESOURCE_URI_KEY} must be a string"))),
    };
    let ui = match meta.get("ui") {
        None => None,
        Some(v) => Some(ToolUi::deserialize(v).map_err(|e| invalid(e.to_string()))?),
    };
    let ui = match (ui, flat) {
        (None, None) => return Ok(None),
        (None, Some(uri)) => ToolUi {
            resource_uri: Some(uri.to_owned()),
            visibility: None,
        },
        (Some(ui), Some(uri)) if ui.resource_uri.as_deref() != Some(uri) => {
            return Err(invalid(format!(
                "ui.resourceUri and {LEGACY_RESOURCE_URI_KEY} name different resources"
            )));
        }
        (Some(ui), _) => ui,
    };
    if let Some(uri) = &ui.resource_uri {
        check_uri(uri)?;
    }
    if ui.visibility.as_ref().is_some_and(Vec::is_empty) {
        return Err(AppsError::EmptyVisibility(tool.to_owned()));
    }
    Ok(Some(ui))
}

/// Whether a tool's `_meta` links it to an app (`ui`, or the deprecated flat key): a server
/// with one declares the extension.
pub fn is_app_tool(meta: Option<&Value>) -> bool {
    meta.and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("ui") || m.contains_key(LEGACY_RESOURCE_URI_KEY))
}

/// Whether a resource (or template) is a UI resource: a `ui://` URI or the app MIME type.
pub fn is_app_resource(uri: &str, mime_type: Option<&str>) -> bool {
    is_ui_uri(uri) || mime_type == Some(MIME_TYPE)
}

/// The server's declaration of the extension, in both eras: no settings (`{}`). A host
/// declares the `mimeTypes` it renders; a server only says that it offers apps.
pub fn declaration() -> Declared {
    Declared {
        id: EXTENSION_ID.to_owned(),
        settings: Map::new(),
        legacy: true,
        modern: true,
    }
}

/// Whether a client (a host) declared MCP Apps with HTML support: its
/// `extensions["io.modelcontextprotocol/ui"].mimeTypes` lists [`MIME_TYPE`]. A tool may answer
/// a text-only client with a text fallback.
pub fn client_supports(caps: &ClientCapabilities) -> bool {
    caps.raw()
        .get("extensions")
        .and_then(|e| e.get(EXTENSION_ID))
        .and_then(|s| s.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|types| types.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

#[cfg(test)]
mod tests;
