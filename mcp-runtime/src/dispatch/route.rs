//! Routing: the checks of behaviour invariant 3 that come after the envelope, the header
//! agreement and the legacy session, and what they decide, carried to the dispatcher so that
//! nothing is classified, looked up or parsed twice.
//!
//! The era comes decided (the engine classifies a request once, `mcp_protocol::classify`); the
//! route checks that the method is served in it (-32601 beats every later error), then the modern
//! `_meta`, and resolves what the method names: for `tools/call`, its params are read once and
//! the tool is looked up once, as the caller sees it (a hidden tool is unknown). Then the
//! caller must hold every scope the operation needs (`catalog::scopes`): a refusal names them
//! all, before anything runs. Last, a call's secure parameters are admitted (`secure`).

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::meta::{ModernMeta, parse_modern_meta};
use mcp_protocol::model::{CallToolParamsRef, ClientCapabilities};
use mcp_protocol::{Era, Method, Params, Request, Revision, RpcError};

use crate::catalog::scope_check::ScopeCheck;
use crate::catalog::{Catalog, CatalogKind, MethodScopes, ToolEntry, Visibility, visible};
use crate::extension::{Extensions, MethodEntry};
use crate::session::Session;

/// A request routed to its era, with what the route decided.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The era.
    pub(crate) era: Era,
    /// The revision: the modern `_meta` one, or the session's.
    pub(crate) revision: Option<Revision>,
    /// The validated modern `_meta`.
    pub(crate) modern: Option<Arc<ModernMeta>>,
    /// What the method names, resolved.
    pub(crate) target: Target,
    /// The catalog snapshot the request was routed in, and is served from.
    pub(crate) catalog: Arc<Catalog>,
}

impl Route {
    /// Whether the request is a long-lived stream (a custom method marked `long_lived`).
    pub(crate) fn long_lived(&self) -> bool {
        matches!(&self.target, Target::Custom(m) if m.method.is_long_lived())
    }
}

/// What a routed request names, resolved once.
#[derive(Debug, Clone, Default)]
pub(crate) enum Target {
    /// Nothing to resolve for this method.
    #[default]
    None,
    /// A `tools/call`.
    Tool(ToolCall),
    /// A custom method (a vendor method, or an extension's).
    Custom(Arc<MethodEntry>),
}

/// A `tools/call` as the route read it.
#[derive(Debug, Clone)]
pub(crate) struct ToolCall {
    /// The tool as the caller sees it: `None` when it is unknown or hidden from the caller
    /// (answered exactly alike), or the params name none.
    pub(crate) tool: Option<Arc<ToolEntry>>,
    /// Why the params are not well formed (`name` a string, `arguments` an object), if they
    /// are not: the -32602 is answered by the dispatcher, at the stage it always was.
    pub(crate) invalid: Option<Box<RpcError>>,
}

impl Route {
    /// The tool a routed `tools/call` resolved to (`None`: another method, or an unknown or
    /// hidden tool).
    pub(crate) fn tool(&self) -> Option<&Arc<ToolEntry>> {
        match &self.target {
            Target::Tool(call) => call.tool.as_ref(),
            Target::None | Target::Custom(_) => None,
        }
    }

    /// The metric label of a custom method the route resolved (a core method's label is its
    /// catalogue name).
    pub(crate) fn custom_label(&self) -> Option<&'static str> {
        match &self.target {
            Target::Custom(entry) => Some(entry.method.label()),
            _ => None,
        }
    }
}

/// A request refused before any handler ran.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub(crate) struct Rejection {
    /// The era the request was classified in (for the HTTP status).
    pub(crate) era: Era,
    /// The error to answer with.
    pub(crate) error: RpcError,
}

/// What the route reads besides the request.
pub(crate) struct Routing<'a> {
    /// The revisions errors name (-32022 `data.supported`).
    pub(crate) advertised: &'a [Revision],
    /// The catalog snapshot the request is routed in and served from.
    pub(crate) catalog: Arc<Catalog>,
    /// Which items each principal sees.
    pub(crate) visibility: Option<&'a Visibility>,
    /// The custom methods.
    pub(crate) extensions: &'a Extensions,
    /// The scopes each method needs.
    pub(crate) method_scopes: &'a MethodScopes,
    /// Whether the server offers logging (the rest of what it offers follows the catalog).
    pub(crate) logging: bool,
}

/// Routes a request whose era is decided: the method is served in the era (legacy: in the
/// session's revision; a custom method: by the registry), then the modern `_meta`, then what
/// the method names. A method of an extension the client did not declare (a modern tasks
/// method, a custom method of a registered extension) is -32021, by the same rule.
pub(crate) fn route(
    at: &Routing<'_>,
    req: &Request,
    era: Era,
    session: Option<&Session>,
    auth: &AuthInfo,
) -> Result<Route, Rejection> {
    let reject = |error| Rejection { era, error };
    let custom = match &req.method {
        Method::Unknown(name) => at.extensions.method(name).filter(|m| m.serves(era)),
        _ => None,
    };
    // A method of a capability the server does not declare is unknown, in every era.
    if let Some(capability) = req.method.capability()
        && !super::lifecycle::features(at.logging, &at.catalog).offers(capability)
    {
        return Err(reject(RpcError::method_not_found(req.method.as_str())));
    }
    let session_revision = session.map(Session::revision);
    let (revision, modern) = match era {
        Era::Modern => {
            if custom.is_none() {
                req.method.check(era, None).map_err(reject)?;
            }
            let meta = parse_modern_meta(req.params.as_ref(), at.advertised).map_err(reject)?;
            // A method of an extension the client did not declare (the modern tasks methods).
            if let Some(id) = req.method.extension(era)
                && !meta.client_capabilities.extension(id)
            {
                return Err(reject(mcp_protocol::RpcError::undeclared_extension(id)));
            }
            (Some(meta.revision), Some(Arc::new(meta)))
        }
        Era::Legacy => {
            if custom.is_none() {
                req.method.check(era, session_revision).map_err(reject)?;
            }
            (session_revision, None)
        }
    };
    let empty = ClientCapabilities::default();
    let caps = match (&modern, session) {
        (Some(m), _) => &m.client_capabilities,
        (None, Some(s)) => s.client_capabilities(),
        (None, None) => &empty,
    };
    let target = match (&req.method, custom) {
        (_, Some(entry)) => {
            entry.check_client(caps).map_err(reject)?;
            Target::Custom(entry.clone())
        }
        (Method::ToolsCall, None) => Target::Tool(tool_call(at, req, auth)),
        _ => Target::None,
    };
    let tool = match &target {
        Target::Tool(call) => call.tool.as_deref(),
        _ => None,
    };
    ScopeCheck {
        methods: at.method_scopes,
        catalog: &at.catalog,
        visibility: at.visibility,
    }
    .check(req, tool, auth)
    .map_err(reject)?;
    // The secure parameters of a well-formed call, before anything runs (a malformed one is
    // answered by the dispatcher).
    if let Target::Tool(ToolCall {
        tool: Some(tool),
        invalid: None,
    }) = &target
    {
        let empty = Params::default();
        super::secure::admit(tool, caps, req.params.as_ref().unwrap_or(&empty)).map_err(reject)?;
    }
    Ok(Route {
        era,
        revision,
        modern,
        target,
        catalog: at.catalog.clone(),
    })
}

/// Reads a `tools/call`'s params and looks its tool up, once.
fn tool_call(at: &Routing<'_>, req: &Request, auth: &AuthInfo) -> ToolCall {
    let empty = Params::default();
    let params = req.params.as_ref().unwrap_or(&empty);
    let name = params.str("name");
    let tool = name.and_then(|n| {
        let tool = at.catalog.tool(&n)?;
        visible(at.visibility, auth, CatalogKind::Tool, &n).then(|| tool.clone())
    });
    ToolCall {
        tool,
        invalid: CallToolParamsRef::parse(params).err().map(Box::new),
    }
}
