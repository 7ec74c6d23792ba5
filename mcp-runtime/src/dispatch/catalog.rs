//! The catalog methods: lists, `resources/read`, `prompts/get`,
//! `completion/complete`.

use std::borrow::Cow;
use std::sync::Arc;

use mcp_protocol::cursor::paginate;
use mcp_protocol::model::{CompleteParams, CompleteReference, Completion};
use mcp_protocol::secure_params::{self, Listed};
use mcp_protocol::{Era, Method, Params, RpcError};
use serde_json::{Map, Value, json};

use super::errors::{handler_error, interrupted, parse_params};
use super::finish::finish as decorate;
use super::parts::Parts;
use crate::api::{Ctx, HandlerError};
use crate::catalog::{Catalog, CatalogKind, CompletionKey, PageKey, Scopes};
use crate::exec::guard::run_guarded;
use crate::exec::run_rounds;
use crate::reply::{EncodedResult, Reply};

fn cursor(params: &Map<String, Value>) -> Result<Option<&str>, RpcError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::invalid_params("Invalid cursor")),
    }
}

/// One page of the list of `kind`: its items, the cursor of the next page, and the `_meta` the
/// catalog sets on every page of that list (looked up here, once per list request).
fn page(catalog: &Catalog, kind: CatalogKind, items: Vec<Value>, next: Option<String>) -> Value {
    let key = match kind {
        CatalogKind::Tool => "tools",
        CatalogKind::Prompt => "prompts",
        CatalogKind::Resource => "resources",
        CatalogKind::ResourceTemplate => "resourceTemplates",
    };
    let mut m = Map::new();
    m.insert(key.into(), Value::Array(items));
    if let Some(n) = next {
        m.insert("nextCursor".into(), Value::String(n));
    }
    if let Some(meta) = catalog.list_meta(kind) {
        m.insert("_meta".into(), Value::Object(meta.clone()));
    }
    Value::Object(m)
}

/// The items of a list the caller sees (all of them without a visibility hook), and of those
/// only the ones whose scopes it holds when lists show what is in scope.
fn shown<'a, T>(
    parts: &Parts<'_>,
    ctx: &Ctx,
    items: &'a [Arc<T>],
    kind: CatalogKind,
    key: impl Fn(&T) -> &str,
    scopes: impl Fn(&T) -> &Scopes,
) -> Vec<&'a Arc<T>> {
    let auth = ctx.auth();
    let in_scope = parts.config.lists_in_scope;
    items
        .iter()
        .filter(|i| parts.visible(auth, kind, key(i)) && (!in_scope || scopes(i).fixed_granted(auth)))
        .collect()
}

/// The tools the caller sees, each listed as the secure-parameters extension has it: with its
/// secure schema to a client that declared the extension; to another, without it, and not at
/// all when it requires a secure parameter.
fn list_tools(parts: &Parts<'_>, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let c = &parts.catalog;
    let declared = ctx.client_capabilities().extension(secure_params::EXTENSION);
    let mut tools = shown(parts, ctx, c.tools(), CatalogKind::Tool, |t| &t.def.name, |t| &t.scopes);
    tools.retain(|t| t.listed(declared) != Listed::Hidden);
    let (items, next) = paginate(&tools, |t| &t.def.name, cursor(params)?, parts.config.page_size)?;
    let rev = ctx.revision();
    Ok(page(
        c,
        CatalogKind::Tool,
        items
            .iter()
            .map(|t| t.def.render_listed(rev, t.listed(declared)))
            .collect(),
        next,
    ))
}

fn list_resources(parts: &Parts<'_>, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let c = &parts.catalog;
    let resources = shown(
        parts,
        ctx,
        c.resources(),
        CatalogKind::Resource,
        |r| &r.def.uri,
        |r| &r.scopes,
    );
    let (items, next) = paginate(&resources, |r| &r.def.uri, cursor(params)?, parts.config.page_size)?;
    let rev = ctx.revision();
    Ok(page(
        c,
        CatalogKind::Resource,
        items.iter().map(|r| r.def.render(rev)).collect(),
        next,
    ))
}

fn list_templates(parts: &Parts<'_>, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let c = &parts.catalog;
    let templates = shown(
        parts,
        ctx,
        c.templates(),
        CatalogKind::ResourceTemplate,
        |t| &t.def.uri_template,
        |t| &t.scopes,
    );
    let (items, next) = paginate(&templates, |t| &t.def.name, cursor(params)?, parts.config.page_size)?;
    let rev = ctx.revision();
    Ok(page(
        c,
        CatalogKind::ResourceTemplate,
        items.iter().map(|t| t.def.render(rev)).collect(),
        next,
    ))
}

fn list_prompts(parts: &Parts<'_>, ctx: &Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let c = &parts.catalog;
    let prompts = shown(
        parts,
        ctx,
        c.prompts(),
        CatalogKind::Prompt,
        |p| &p.def.name,
        |p| &p.scopes,
    );
    let (items, next) = paginate(&prompts, |p| &p.def.name, cursor(params)?, parts.config.page_size)?;
    let rev = ctx.revision();
    Ok(page(
        c,
        CatalogKind::Prompt,
        items.iter().map(|p| p.def.render(rev)).collect(),
        next,
    ))
}

pub(super) async fn read_resource(parts: &Parts<'_>, ctx: Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let uri = params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("uri must be a string"))?;
    let c = &parts.catalog;
    let auth = ctx.auth();
    // A hidden resource or template is absent for this caller.
    let resource = c
        .resource(uri)
        .filter(|_| parts.visible(auth, CatalogKind::Resource, uri));
    let template = || {
        c.match_template(uri)
            .filter(|(t, _)| parts.visible(auth, CatalogKind::ResourceTemplate, &t.def.uri_template))
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
    let (outcome, ctx) = run_rounds(parts.limits(), "resources/read", ctx, call)
        .await
        .map_err(|i| interrupted("resources/read", i))?;
    answer(parts, &ctx, params, outcome)
}

/// The answer of an MRTR-capable method: its result, `input_required`
/// (modern), or the error.
fn answer<T: serde::Serialize>(
    parts: &Parts<'_>,
    ctx: &Ctx,
    params: &Map<String, Value>,
    outcome: Result<T, HandlerError>,
) -> Result<Value, RpcError> {
    match outcome {
        Ok(result) => serde_json::to_value(result).map_err(|_| RpcError::internal()),
        Err(HandlerError::InputRequired(ir)) => parts.rounds.input_required(ctx, Some(params), *ir),
        Err(e) => Err(handler_error(ctx.method(), ctx.era(), e)),
    }
}

pub(super) async fn get_prompt(parts: &Parts<'_>, ctx: Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("name must be a string"))?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(_) => return Err(RpcError::invalid_params("arguments must be an object")),
    };
    let c = &parts.catalog;
    let prompt = c
        .prompt(name)
        .filter(|_| parts.visible(ctx.auth(), CatalogKind::Prompt, name))
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
    let (outcome, ctx) = run_rounds(parts.limits(), "prompts/get", ctx, call)
        .await
        .map_err(|i| interrupted("prompts/get", i))?;
    answer(parts, &ctx, params, outcome)
}

pub(super) async fn complete(parts: &Parts<'_>, ctx: Ctx, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let c = &parts.catalog;
    if !c.has_completions() {
        return Err(RpcError::method_not_found("completion/complete"));
    }
    let p: CompleteParams = parse_params(params)?;
    let hidden = match &p.reference {
        CompleteReference::Prompt { name } => !parts.visible(ctx.auth(), CatalogKind::Prompt, name),
        CompleteReference::Resource { uri } => !parts.visible(ctx.auth(), CatalogKind::ResourceTemplate, uri),
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
            let era = ctx.era();
            let fut = h.complete(p, ctx);
            let mut done = run_guarded("completion/complete", fut, parts.config.handler_timeout, &cancel)
                .await
                .map_err(|i| interrupted("completion/complete", i))?
                .map_err(|e| handler_error("completion/complete", era, e))?;
            done.values.truncate(Completion::MAX_VALUES);
            done
        }
    };
    Ok(json!({ "completion": completion }))
}

/// A catalog list. Unless lists differ per caller (a visibility hook, lists in scope) every
/// caller of a revision and era gets the same page, so finalized pages are kept serialized in
/// the catalog snapshot and written as they are (with the list's `_meta`, which is the
/// snapshot's too).
pub(super) fn list(parts: &Parts<'_>, method: &Method, params: &Params, era: Era, ctx: &Ctx) -> Reply {
    let catalog = &parts.catalog;
    let list = match method {
        Method::ToolsList => list_tools,
        Method::ResourcesList => list_resources,
        Method::ResourceTemplatesList => list_templates,
        _ => list_prompts,
    };
    let key = (!parts.per_caller_lists()).then(|| PageKey {
        method: method.clone(),
        revision: ctx.revision(),
        era,
        cursor: params.str("cursor").map(Cow::into_owned),
        secure_params: catalog.offers_secure_params() && ctx.client_capabilities().extension(secure_params::EXTENSION),
    });
    if let Some(page) = key.as_ref().and_then(|k| catalog.page(k)) {
        return Reply::Encoded(EncodedResult::shared(page));
    }
    let reply = match list(parts, ctx, params.object()) {
        Ok(v) => Reply::Result(v),
        Err(e) => Reply::Error(e),
    };
    let reply = decorate(parts, method, params, era, reply);
    let (key, encoded) = match (key, reply) {
        (Some(key), Reply::Encoded(e)) => (key, e),
        (Some(key), Reply::Result(v)) => match serde_json::value::to_raw_value(&v) {
            Ok(raw) => (key, EncodedResult::owned(raw)),
            Err(_) => return Reply::Result(v),
        },
        (_, reply) => return reply,
    };
    let page = encoded.into_shared();
    catalog.store_page(key, page.clone());
    Reply::Encoded(EncodedResult::shared(page))
}
