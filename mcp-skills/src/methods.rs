//! The extension's methods (`skills/list`, `skills/get`, `resources/directory/read`) and the
//! read of a skill file, answered from the current catalog.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use mcp_protocol::Revision;
use mcp_protocol::cursor::paginate;
use mcp_protocol::model::{ReadResourceResult, ResourceContents, ResourceDef};
use mcp_protocol::skills::{DIRECTORY_MIME_TYPE, GetSkillResult, ListSkillsResult, SkillUri, is_text};
use mcp_runtime::HandlerError;
use serde_json::{Map, Value};

use crate::Skill;
use crate::catalog::{Catalog, Child};

/// -32602 with a message.
fn invalid(message: String) -> HandlerError {
    HandlerError::invalid_params(message)
}

/// A string param, or -32602.
fn string<'a>(params: &'a Map<String, Value>, field: &str) -> Result<&'a str, HandlerError> {
    params
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("{field} must be a string")))
}

/// The optional `cursor` param, or -32602 when it is not a string.
fn cursor(params: &Map<String, Value>) -> Result<Option<&str>, HandlerError> {
    match params.get("cursor") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(c)) => Ok(Some(c)),
        Some(_) => Err(invalid("cursor must be a string".into())),
    }
}

/// The JSON of a serializable result.
fn json(result: impl serde::Serialize) -> Result<Value, HandlerError> {
    serde_json::to_value(result).map_err(HandlerError::internal)
}

/// `skills/list`: a page of whole entries.
pub(crate) fn list(catalog: &Catalog, params: &Map<String, Value>, page_size: usize) -> Result<Value, HandlerError> {
    // In `SKILL.md` URI order: a cursor names the last entry seen, so a page never splits one.
    let skills: Vec<(&String, &Arc<Skill>)> = catalog.skills.iter().collect();
    let (page, next) = paginate(&skills, |(u, _)| u.as_str(), cursor(params)?, page_size).map_err(HandlerError::Rpc)?;
    json(ListSkillsResult {
        skills: page.iter().map(|(_, s)| s.entry()).collect(),
        next_cursor: next,
    })
}

/// `skills/get`: the entry of one skill, or -32602.
pub(crate) fn get(catalog: &Catalog, params: &Map<String, Value>) -> Result<Value, HandlerError> {
    let uri = string(params, "uri")?;
    let skill = catalog
        .skill(uri)
        .ok_or_else(|| invalid(format!("No skill is served at {uri}")))?;
    json(GetSkillResult { skill: skill.entry() })
}

/// `resources/directory/read`: a page of a directory's direct children, or -32602 when the URI
/// is not a directory resource.
pub(crate) fn directory(
    catalog: &Catalog,
    params: &Map<String, Value>,
    page_size: usize,
    revision: Option<Revision>,
) -> Result<Value, HandlerError> {
    let uri = string(params, "uri")?;
    SkillUri::parse(uri).map_err(|e| invalid(e.to_string()))?;
    let children = catalog
        .directories
        .get(uri)
        .ok_or_else(|| invalid(format!("{uri} is not a directory resource")))?;
    let children: Vec<(&String, &Child)> = children.iter().collect();
    let (page, next) =
        paginate(&children, |(u, _)| u.as_str(), cursor(params)?, page_size).map_err(HandlerError::Rpc)?;
    let resources: Vec<Value> = page
        .iter()
        .map(|(child, kind)| {
            let name = child.rsplit('/').next().unwrap_or(child);
            let def = match kind {
                Child::Directory => ResourceDef::new(child.as_str(), name).with_mime_type(DIRECTORY_MIME_TYPE),
                Child::File => {
                    let file = &catalog.files[child.as_str()];
                    ResourceDef::new(child.as_str(), name)
                        .with_mime_type(file.mime_type())
                        .with_size(file.bytes().len() as u64)
                }
            };
            def.render(revision)
        })
        .collect();
    let mut result = Map::new();
    result.insert("resources".into(), Value::Array(resources));
    if let Some(next) = next {
        result.insert("nextCursor".into(), Value::String(next));
    }
    Ok(Value::Object(result))
}

/// `resources/read` of a skill file: its bytes as text (UTF-8 text types) or base64, or
/// -32602 when the URI is malformed, leaves the namespace, or names no file served here.
pub(crate) fn read(catalog: &Catalog, uri: &str) -> Result<ReadResourceResult, HandlerError> {
    SkillUri::parse(uri).map_err(|e| invalid(e.to_string()))?;
    let file = catalog
        .files
        .get(uri)
        .ok_or_else(|| invalid(format!("No skill file is served at {uri}")))?;
    let mime = file.mime_type();
    let contents = match std::str::from_utf8(file.bytes()) {
        Ok(text) if is_text(mime) => ResourceContents::text(uri, mime, text),
        _ => ResourceContents::Blob {
            uri: uri.to_owned(),
            mime_type: Some(mime.to_owned()),
            blob: STANDARD.encode(file.bytes()),
            meta: None,
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}
