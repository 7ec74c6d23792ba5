//! The catalog methods: lists, `resources/read`, `prompts/get`,
//! `completion/complete`.

use std::sync::Arc;

use mcp_protocol::RpcError;
use mcp_protocol::cursor::paginate;
use mcp_protocol::model::{CompleteParams, CompleteReference, Completion};
use serde_json::{Map, Value, json};

use super::{Runtime, handler_error, parse_params};
use crate::api::Ctx;
use crate::api::HandlerError;
use crate::catalog::CatalogKind;
use crate::catalog::{Catalog, CompletionKey};
use crate::guard::{Interrupted, run_guarded};

fn cursor(params: &Map<String, Value>) -> Result<Option<&str>, RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::invalid_params("Invalid cursor")),
    }
}

fn page(key: &str, items: Vec<Value>, next: Option<String>) -> Value {
    let mut m = Map::new();
    m.insert(key.into(), Value::Array(items));
    if let Some(n) = next {
        m.insert("nextCursor".into(), Value::String(n));
    }
    Value::Object(m)
}

/// The items of a list the caller sees (all of them without a visibility hook).
fn shown<'a, T>(
    rt: &Runtime,
    ctx: &Ctx,
    items: &'a [Arc<T>],
    kind: CatalogKind,
    key: impl Fn(&T) -> &str,
) -> Vec<&'a Arc<T>> {
    items.iter().filter(|i| rt.visible(ctx.auth(), kind, key(i))).collect()
}

pub(super) fn list_tools(rt: &Runtime, c: &Catalog, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let tools = shown(rt, ctx, c.tools(), CatalogKind::Tool, |t| &t.def.name);
    let (items, next) = paginate(&tools, |t| &t.def.name, cursor(params)?, rt.config.page_size)?;
    let rev = ctx.revision();
    Ok(page("tools", items.iter().map(|t| t.def.render(rev)).collect(), next))
}

pub(super) fn list_resources(
    rt: &Runtime,
    c: &Catalog,
    ctx: &Ctx,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let resources = shown(rt, ctx, c.resources(), CatalogKind::Resource, |r| &r.def.uri);
    let (items, next) = paginate(&resources, |r| &r.def.uri, cursor(params)?, rt.config.page_size)?;
    let rev = ctx.revision();
    Ok(page(
        "resources",
        items.iter().map(|r| r.def.render(rev)).collect(),
        next,
    ))
}

pub(super) fn list_templates(
    rt: &Runtime,
    c: &Catalog,
    ctx: &Ctx,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let templates = shown(rt, ctx, c.templates(), CatalogKind::ResourceTemplate, |t| {
        &t.def.uri_template
    });
    let (items, next) = paginate(&templates, |t| &t.def.name, cursor(params)?, rt.config.page_size)?;
    let rev = ctx.revision();
    Ok(page(
        "resourceTemplates",
        items.iter().map(|t| t.def.render(rev)).collect(),
        next,
    ))
}

pub(super) fn list_prompts(
    rt: &Runtime,
    c: &Catalog,
    ctx: &Ctx,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let prompts = shown(rt, ctx, c.prompts(), CatalogKind::Prompt, |p| &p.def.name);
    let (items, next) = paginate(&prompts, |p| &p.def.name, cursor(params)?, rt.config.page_size)?;
    let rev = ctx.revision();
    Ok(page("prompts", items.iter().map(|p| p.def.render(rev)).collect(), next))
}

fn interrupted(method: &str, i: Interrupted) -> RpcError {
    match i {
        Interrupted::TimedOut => RpcError::internal_with("Request timed out"),
        // Cancelled requests get no answer; the value is never sent.
        Interrupted::Panicked | Interrupted::Cancelled => {
            tracing::debug!(method, ?i, "request interrupted");
            RpcError::internal()
        }
    }
}

pub(super) async fn read_resource(rt: &Runtime, ctx: Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("uri must be a string"))?;
    let c = rt.registry.snapshot();
    let auth = ctx.auth();
    // A hidden resource or template is absent for this caller.
    let resource = c.resource(uri).filter(|_| rt.visible(auth, CatalogKind::Resource, uri));
    let template = || {
        c.match_template(uri)
            .filter(|(t, _)| rt.visible(auth, CatalogKind::ResourceTemplate, &t.def.uri_template))
    };
    let (handler, vars) = match resource {
        Some(r) => (r.handler.clone(), Map::new()),
        None => match template() {
            Some((t, vars)) => (t.handler.clone(), vars),
            None => return Err(RpcError::resource_not_found(ctx.era(), uri)),
        },
    };
    let uri = uri.to_owned();
    let call = move |ctx: Ctx| handler.read(uri.clone(), vars.clone(), ctx);
    let (outcome, ctx) = rt
        .run_rounds("resources/read", ctx, call)
        .await
        .map_err(|i| interrupted("resources/read", i))?;
    finish(rt, &ctx, params, outcome)
}

/// The answer of an MRTR-capable method: its result, `input_required`
/// (modern), or the error.
fn finish<T: serde::Serialize>(
    rt: &Runtime,
    ctx: &Ctx,
    params: &Map<String, Value>,
    outcome: Result<T, HandlerError>,
) -> Result<Value, RpcError> {
    match outcome {
        Ok(result) => serde_json::to_value(result).map_err(|_| RpcError::internal()),
        Err(HandlerError::InputRequired(ir)) => rt.input_required(ctx, Some(params), *ir),
        Err(e) => Err(handler_error(ctx.method(), e)),
    }
}

pub(super) async fn get_prompt(rt: &Runtime, ctx: Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("name must be a string"))?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    };
    let c = rt.registry.snapshot();
    let prompt = c
        .prompt(name)
        .filter(|_| rt.visible(ctx.auth(), CatalogKind::Prompt, name))
        .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: {name}")))?;
    if let Some(missing) = prompt
        .def
        .arguments
        .iter()
        .find(|a| a.required && !args.contains_key(&a.name))
    {
        return Err(RpcError::invalid_params(format!(
            "Missing required argument: {}",
            missing.name
        )));
    }
    let handler = prompt.handler.clone();
    let call = move |ctx: Ctx| handler.get(args.clone(), ctx);
    let (outcome, ctx) = rt
        .run_rounds("prompts/get", ctx, call)
        .await
        .map_err(|i| interrupted("prompts/get", i))?;
    finish(rt, &ctx, params, outcome)
}

pub(super) async fn complete(rt: &Runtime, ctx: Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let c = rt.registry.snapshot();
    if !c.has_completions() {
        return Err(RpcError::method_not_found("completion/complete"));
    }
    let p: CompleteParams = parse_params(params)?;
    let hidden = match &p.reference {
        CompleteReference::Prompt { name } => !rt.visible(ctx.auth(), CatalogKind::Prompt, name),
        CompleteReference::Resource { uri } => !rt.visible(ctx.auth(), CatalogKind::ResourceTemplate, uri),
    };
    let key = match &p.reference {
        CompleteReference::Prompt { name } => CompletionKey::Prompt {
            name: name.clone(),
            argument: p.argument.name.clone(),
        },
        CompleteReference::Resource { uri } => CompletionKey::Resource {
            uri: uri.clone(),
            argument: p.argument.name.clone(),
        },
    };
    let completion = match c.completion(&key).filter(|_| !hidden) {
        None => Completion::default(),
        Some(h) => {
            let cancel = ctx.cancellation().clone();
            let fut = h.complete(p, ctx);
            let mut done = run_guarded("completion/complete", fut, rt.config.handler_timeout, &cancel)
                .await
                .map_err(|i| interrupted("completion/complete", i))?
                .map_err(|e| handler_error("completion/complete", e))?;
            done.values.truncate(Completion::MAX_VALUES);
            done
        }
    };
    Ok(json!({ "completion": completion }))
}
