//! The dispatcher: runs a routed request's method and finalizes the result for the era.
//!
//! The route ([`route`]) carries what it decided (era, revision, the modern `_meta`, the tool a
//! `tools/call` names); [`dispatch`] builds the handler's [`Ctx`], opens the MRTR round a modern
//! retry carries, runs the method through the catalog, tools, tasks or lifecycle methods, and
//! decorates the result ([`finish`]). Everything it uses of the runtime comes borrowed in
//! [`Parts`](parts::Parts).

mod catalog;
mod custom;
pub(crate) mod errors;
pub(crate) mod finish;
pub(crate) mod lifecycle;
pub(crate) mod parts;
pub(crate) mod route;
mod secure;
mod tools;

use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::meta::progress_token;
use mcp_protocol::{Era, Method, Params, Request, RpcError};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::api::ctx::{Ctx, CtxInner, Origin};
use crate::exec::rounds::Round;
use crate::reply::Reply;
use crate::session::Session;
use crate::sink::Sink;
use parts::Parts;
use route::{Route, Target};

/// What a routed request runs with besides its body.
#[derive(Debug)]
pub(crate) struct RequestEnv {
    /// The authenticated caller.
    pub(crate) auth: Arc<AuthInfo>,
    /// The legacy session the request belongs to, if any.
    pub(crate) session: Option<Arc<Session>>,
    /// Where progress, logs and server-to-client requests go.
    pub(crate) sink: Sink,
    /// Cancelled when the request is cancelled.
    pub(crate) cancel: CancellationToken,
    /// What the transport and middleware attached for the handler.
    pub(crate) attachments: crate::attachments::Attachments,
    /// The client's address, where the transport tells clients apart.
    pub(crate) remote: Option<std::net::IpAddr>,
}

/// Runs a routed request (anything but a legacy `initialize` and `subscriptions/listen`).
pub(crate) async fn dispatch(parts: &Parts<'_>, mut req: Request, route: &Route, env: RequestEnv) -> Reply {
    let round = if route.era == Era::Modern && req.method.allows_input_required() {
        match parts
            .rounds
            .open(req.method.as_str(), req.params.as_ref(), &env.auth.principal)
        {
            Ok(r) => r,
            Err(e) => return Reply::Error(e),
        }
    } else {
        Round::default()
    };
    let raw = req.params.take().unwrap_or_default();
    let ctx = ctx(parts, &req, &raw, route, env, round);
    // Whether the request was cancelled is read from a handle on the context (shared, not a
    // clone of its token) once the handler is done with it.
    let handle = ctx.clone();
    if let (Method::ToolsCall, Target::Tool(call)) = (&req.method, &route.target) {
        // The hot path reads its members from the text; the rest below read the whole object.
        let reply = tools::call(parts, ctx, &raw, call).await;
        if handle.is_cancelled() {
            return Reply::Cancelled;
        }
        return finish::finish(parts, &req.method, &raw, route.era, reply);
    }
    if req.method.lists_catalog() {
        return catalog::list(parts, &req.method, &raw, route.era, &ctx);
    }
    let params = raw.object();
    let outcome = match (&req.method, &route.target) {
        (Method::Ping, _) => Ok(Value::Object(Map::new())),
        (Method::Discover, _) => Ok(lifecycle::discover(parts.config, &parts.catalog)),
        (Method::SetLogLevel, _) => lifecycle::set_level(&ctx, params),
        (Method::ResourcesSubscribe, _) => lifecycle::subscribe(&ctx, params, true, &parts.config.subscription_bounds),
        (Method::ResourcesUnsubscribe, _) => {
            lifecycle::subscribe(&ctx, params, false, &parts.config.subscription_bounds)
        }
        (Method::ResourcesRead, _) => catalog::read_resource(parts, ctx, params).await,
        (Method::PromptsGet, _) => catalog::get_prompt(parts, ctx, params).await,
        (Method::Complete, _) => catalog::complete(parts, ctx, params).await,
        (_, Target::Custom(entry)) => {
            let outcome = custom::call(parts, ctx, params, entry).await;
            if handle.is_cancelled() {
                return Reply::Cancelled;
            }
            let reply = outcome.map_or_else(Reply::Error, Reply::Result);
            let cacheable = entry.method.is_cacheable();
            return finish::finish_as(parts, &req.method, &raw, route.era, reply, cacheable);
        }
        (
            m
            @ (Method::TasksGet | Method::TasksResult | Method::TasksList | Method::TasksCancel | Method::TasksUpdate),
            _,
        ) => Box::pin(parts.tasks.serve(&ctx, m, params)).await,
        // `initialize` runs through the engine's `initialize`, `subscriptions/listen` through
        // the engine's `listen`; anything else is unknown.
        (other, _) => Err(RpcError::method_not_found(other.as_str())),
    };
    if handle.is_cancelled() {
        return Reply::Cancelled;
    }
    let reply = match outcome {
        Ok(v) => Reply::Result(v),
        Err(e) => Reply::Error(e),
    };
    finish::finish(parts, &req.method, &raw, route.era, reply)
}

/// The handler's context of a routed request.
fn ctx(parts: &Parts<'_>, req: &Request, params: &Params, route: &Route, env: RequestEnv, round: Round) -> Ctx {
    let origin = match (&route.modern, env.session) {
        (Some(m), _) => Origin::Modern(m.clone()),
        (None, Some(s)) => Origin::Session(s),
        (None, None) => Origin::Sessionless,
    };
    Ctx::new(CtxInner {
        remote: env.remote,
        auth: env.auth,
        origin,
        request_id: req.id.clone(),
        method: req.method.clone(),
        params: params.clone(),
        progress_token: progress_token(Some(params)),
        cancel: env.cancel,
        sink: env.sink,
        attachments: env.attachments,
        client_request_timeout: parts.config.client_request_timeout,
        logging: parts.config.logging,
        input_responses: round.responses,
        request_state: round.state,
        task: None,
        resume: None,
        elicitations: parts.elicitations.clone(),
        state: parts.config.state.clone(),
    })
}
