//! The OAuth scopes an operation needs: what tools, resources, templates, prompts and methods
//! declare ([`Scopes`], [`MethodScopes`]); `scope_check` holds what one request needs of its
//! caller.
//!
//! A request needs the scopes of its method (any method, core or custom: [`MethodScopes`])
//! plus those of what it names: the tool of a `tools/call`, the resource or template of a
//! `resources/read`, the prompt of a `prompts/get` ([`Scopes`] on each entry). A template's
//! scopes may name its variables (`files:read:{owner}`), filled from the URI being read. The
//! route checks them before anything runs, and a caller short of any is refused with
//! [`RpcError::insufficient_scope`] naming *every* scope the operation needs, so that a client
//! steps up once (2026-07-28 authorization, runtime insufficient scope errors; over HTTP a 403
//! with an `insufficient_scope` challenge).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_protocol::RpcError;
use mcp_protocol::auth::{AuthInfo, is_scope_token};
use serde_json::{Map, Value};

use super::uri_template::UriTemplate;

/// A scope that is not an RFC 6749 §3.3 `scope-token`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a scope (one or more visible ASCII characters other than '\"' and '\\')")]
pub struct ScopeError(pub String);

/// The scopes one catalog item needs, checked when they are set.
#[derive(Debug, Clone, Default)]
pub struct Scopes {
    rules: Arc<[Rule]>,
}

/// One needed scope: literal text, and (for a template) the variables it names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Var(String),
}

impl Scopes {
    /// Scopes taken literally (a tool's, a resource's, a prompt's).
    pub fn fixed<S: Into<String>>(scopes: impl IntoIterator<Item = S>) -> Result<Self, ScopeError> {
        let rules = scopes
            .into_iter()
            .map(|s| {
                let s = s.into();
                if is_scope_token(&s) {
                    Ok(Rule {
                        pieces: vec![Piece::Literal(s)],
                    })
                } else {
                    Err(ScopeError(s))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Scopes { rules: rules.into() })
    }

    /// Scopes of a resource template: `{name}` naming one of `template`'s variables is
    /// replaced by the variable's value in the URI being read; other text is literal.
    pub(crate) fn templated<S: Into<String>>(
        scopes: impl IntoIterator<Item = S>,
        template: &UriTemplate,
    ) -> Result<Self, ScopeError> {
        let mut rules = Vec::new();
        for scope in scopes {
            let scope = scope.into();
            let mut pieces = Vec::new();
            let mut literal = String::new();
            let mut rest = scope.as_str();
            while let Some(open) = rest.find('{') {
                let close = rest[open..].find('}').map(|c| open + c);
                match close {
                    Some(close) if template.has_variable(&rest[open + 1..close]) => {
                        literal.push_str(&rest[..open]);
                        if !literal.is_empty() {
                            pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                        }
                        pieces.push(Piece::Var(rest[open + 1..close].to_owned()));
                        rest = &rest[close + 1..];
                    }
                    _ => {
                        literal.push_str(&rest[..=open]);
                        rest = &rest[open + 1..];
                    }
                }
            }
            literal.push_str(rest);
            if !literal.is_empty() {
                pieces.push(Piece::Literal(literal));
            }
            let text: String = pieces
                .iter()
                .map(|p| match p {
                    Piece::Literal(l) => l.as_str(),
                    Piece::Var(_) => "x",
                })
                .collect();
            if !is_scope_token(&text) {
                return Err(ScopeError(scope));
            }
            rules.push(Rule { pieces });
        }
        Ok(Scopes { rules: rules.into() })
    }

    /// Whether no scope is needed.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The scopes that name no variable (all of them, for anything but a template).
    pub fn fixed_scopes(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().filter_map(|r| match r.pieces.as_slice() {
            [Piece::Literal(l)] => Some(l.as_str()),
            _ => None,
        })
    }

    /// Whether `auth` holds every scope that names no variable (what a list can tell).
    pub(crate) fn fixed_granted(&self, auth: &AuthInfo) -> bool {
        self.fixed_scopes().all(|s| auth.has_scope(s))
    }

    /// Appends the scopes needed for a read whose URI gave `vars`. A value that cannot be part
    /// of a scope (a space, a quote, a non-ASCII character) is refused: no token can grant it.
    pub(super) fn expand_into(&self, vars: &Map<String, Value>, out: &mut Vec<String>) -> Result<(), RpcError> {
        for rule in self.rules.iter() {
            let mut scope = String::new();
            for piece in &rule.pieces {
                match piece {
                    Piece::Literal(l) => scope.push_str(l),
                    Piece::Var(name) => scope.push_str(vars.get(name).and_then(Value::as_str).unwrap_or_default()),
                }
            }
            if !is_scope_token(&scope) {
                return Err(RpcError::invalid_params(
                    "The resource URI cannot be read: a variable the template's scopes name is not valid in a scope",
                ));
            }
            push_unique(out, scope);
        }
        Ok(())
    }
}

/// The scopes each method needs, whatever it names (any method: core, an extension's, a
/// vendor's; keyed by its wire name).
#[derive(Debug, Clone, Default)]
pub struct MethodScopes {
    by_method: HashMap<String, Vec<String>>,
}

impl MethodScopes {
    /// Requires `scopes` for every request of `method` (added to those set before).
    pub fn require<S: Into<String>>(
        mut self,
        method: impl Into<String>,
        scopes: impl IntoIterator<Item = S>,
    ) -> Result<Self, ScopeError> {
        let list = self.by_method.entry(method.into()).or_default();
        for scope in scopes {
            let scope = scope.into();
            if !is_scope_token(&scope) {
                return Err(ScopeError(scope));
            }
            push_unique(list, scope);
        }
        Ok(self)
    }

    /// The scopes `method` needs.
    pub fn of(&self, method: &str) -> &[String] {
        self.by_method.get(method).map_or(&[], Vec::as_slice)
    }

    /// Whether no method needs a scope.
    pub fn is_empty(&self) -> bool {
        self.by_method.is_empty()
    }

    /// Every scope some method needs.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        self.by_method.values().flatten().map(String::as_str)
    }
}

pub(super) fn push_unique(list: &mut Vec<String>, scope: String) {
    if !list.contains(&scope) {
        list.push(scope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(t: &str) -> UriTemplate {
        UriTemplate::parse(t).unwrap()
    }

    #[test]
    fn fixed_scopes_are_scope_tokens() {
        assert!(Scopes::fixed(["a:read", "b{c}"]).is_ok());
        assert_eq!(Scopes::fixed(["a read"]).unwrap_err(), ScopeError("a read".into()));
        assert!(Scopes::fixed([""]).is_err());
        assert!(Scopes::fixed(["a\"b"]).is_err());
        assert!(Scopes::fixed(["é"]).is_err());
    }

    #[test]
    fn template_scopes_fill_variables_from_the_uri() {
        let t = template("test://template/{id}/data");
        let scopes = Scopes::templated(["r:read", "r:template:{id}", "r:{other}"], &t).unwrap();
        assert_eq!(scopes.fixed_scopes().collect::<Vec<_>>(), ["r:read", "r:{other}"]);
        let vars = t.matches("test://template/123/data").unwrap();
        let mut out = Vec::new();
        scopes.expand_into(&vars, &mut out).unwrap();
        assert_eq!(out, ["r:read", "r:template:123", "r:{other}"]);
        let spaced = t.matches("test://template/a%20b/data").unwrap();
        assert!(scopes.expand_into(&spaced, &mut Vec::new()).is_err());
        assert!(Scopes::templated(["bad scope:{id}"], &t).is_err());
    }

    #[test]
    fn method_scopes_accumulate_without_duplicates() {
        let m = MethodScopes::default()
            .require("tools/call", ["a", "b"])
            .unwrap()
            .require("tools/call", ["b", "c"])
            .unwrap();
        assert_eq!(m.of("tools/call"), ["a", "b", "c"]);
        assert!(m.of("prompts/get").is_empty());
        assert!(MethodScopes::default().require("x", ["no good"]).is_err());
    }
}
