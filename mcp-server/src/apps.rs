//! MCP Apps (SEP-1865): interactive HTML views a host renders for a server's tools.
//!
//! An [`AppResource`] is the page: a `ui://` resource of type `text/html;profile=mcp-app`
//! whose `_meta.ui` ([`ResourceUi`]) tells the host how to sandbox it. A tool links to it with
//! [`Tool::ui`](crate::Tool::ui) (or [`Tool::app`](crate::Tool::app)), which writes the tool's
//! `_meta.ui` ([`ToolUi`]): the resource, and who may call the tool ([`ToolVisibility`]). The
//! server then declares the `io.modelcontextprotocol/ui` extension in both eras by itself.
//! The wire types live in [`mcp_protocol::apps`]; the guide is `docs/guides/apps.md`.

use mcp_protocol::apps::check_uri;
use mcp_protocol::model::ResourceContents;

use crate::resource::Resource;

pub use mcp_protocol::apps::{
    AppsError, Csp, MIME_TYPE, Permissions, ResourceUi, ToolUi, ToolVisibility, client_supports,
};

/// The page's bytes: HTML text, or base64-encoded HTML.
#[derive(Debug, Clone)]
enum Body {
    Text(String),
    Blob(String),
}

/// A UI resource ready to register: a `ui://` URI, an HTML document, and the `_meta.ui` the host
/// sandboxes it with. Its MIME type is always [`MIME_TYPE`]. The `_meta.ui` is written on the
/// `resources/list` entry (hosts review it at connection time) and on the `resources/read`
/// content (which hosts prefer).
///
/// ```
/// use mcp_server::apps::{AppResource, Csp};
///
/// let view = AppResource::html("ui://weather/view", "weather-view", "<!doctype html><p>Sunny</p>")?
///     .description("The forecast as a card")
///     .csp(Csp::new().connect("https://api.weather.example"))
///     .prefers_border(true);
/// # let _ = view;
/// # Ok::<(), mcp_server::apps::AppsError>(())
/// ```
#[derive(Debug, Clone)]
pub struct AppResource {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    body: Body,
    ui: ResourceUi,
}

impl AppResource {
    /// A page given as HTML text; refused unless `uri` is a `ui://` URI.
    pub fn html(uri: impl Into<String>, name: impl Into<String>, html: impl Into<String>) -> Result<Self, AppsError> {
        Self::with_body(uri.into(), name.into(), Body::Text(html.into()))
    }

    /// A page given as base64-encoded HTML; refused unless `uri` is a `ui://` URI.
    pub fn blob(uri: impl Into<String>, name: impl Into<String>, base64: impl Into<String>) -> Result<Self, AppsError> {
        Self::with_body(uri.into(), name.into(), Body::Blob(base64.into()))
    }

    fn with_body(uri: String, name: String, body: Body) -> Result<Self, AppsError> {
        check_uri(&uri)?;
        Ok(AppResource {
            uri,
            name,
            title: None,
            description: None,
            body,
            ui: ResourceUi::default(),
        })
    }

    /// Sets the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Replaces the whole `_meta.ui`.
    pub fn ui(mut self, ui: ResourceUi) -> Self {
        self.ui = ui;
        self
    }

    /// The origins the page may reach (absent: the host's restrictive default, no network).
    pub fn csp(mut self, csp: Csp) -> Self {
        self.ui.csp = Some(csp);
        self
    }

    /// The browser permissions the page asks for.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.ui.permissions = Some(permissions);
        self
    }

    /// A dedicated sandbox origin (its format is the host's).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.ui.domain = Some(domain.into());
        self
    }

    /// Whether the host should draw a border and background.
    pub fn prefers_border(mut self, border: bool) -> Self {
        self.ui.prefers_border = Some(border);
        self
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The `_meta.ui`.
    pub fn resource_ui(&self) -> &ResourceUi {
        &self.ui
    }

    /// The resource to register (what [`From`] gives).
    pub fn into_resource(self) -> Resource {
        let meta = (!self.ui.is_empty()).then(|| self.ui.to_meta());
        let (body, content_meta) = (self.body, meta.clone());
        let mut resource = Resource::new(self.uri, self.name, move |uri, _vars, _ctx| {
            let contents = match &body {
                Body::Text(text) => ResourceContents::Text {
                    uri,
                    mime_type: Some(MIME_TYPE.to_owned()),
                    text: text.clone(),
                    meta: content_meta.clone(),
                },
                Body::Blob(blob) => ResourceContents::Blob {
                    uri,
                    mime_type: Some(MIME_TYPE.to_owned()),
                    blob: blob.clone(),
                    meta: content_meta.clone(),
                },
            };
            async move { contents }
        })
        .mime_type(MIME_TYPE);
        if let Some(title) = self.title {
            resource = resource.title(title);
        }
        if let Some(description) = self.description {
            resource = resource.description(description);
        }
        match meta {
            Some(meta) => resource.meta(meta),
            None => resource,
        }
    }
}

impl From<AppResource> for Resource {
    fn from(app: AppResource) -> Self {
        app.into_resource()
    }
}
