//! What one request needs of its caller: the scopes of its method and of what it names, checked
//! before anything runs ([`ScopeCheck`]; see `scopes` for how they are declared).

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::{Method, Request, RpcError};

use super::entries::ToolEntry;
use super::scopes::{MethodScopes, Scopes, push_unique};
use super::snapshot::Catalog;
use super::visibility::{CatalogKind, Visibility, visible};

/// What the scope check of one request reads.
pub(crate) struct ScopeCheck<'a> {
    pub(crate) methods: &'a MethodScopes,
    pub(crate) catalog: &'a Catalog,
    pub(crate) visibility: Option<&'a Visibility>,
}

impl ScopeCheck<'_> {
    /// Refuses `req` when `auth` lacks a scope it needs, naming every scope it needs. `tool`
    /// is the tool a `tools/call` resolved to (as the caller sees it). What the caller cannot
    /// see needs no scope here: it is answered as unknown later.
    pub(crate) fn check(&self, req: &Request, tool: Option<&ToolEntry>, auth: &AuthInfo) -> Result<(), RpcError> {
        if self.methods.is_empty() && !self.catalog.scoped() {
            return Ok(());
        }
        let mut needed = self.methods.of(req.method.as_str()).to_vec();
        if self.catalog.scoped() {
            self.target_scopes(req, tool, auth, &mut needed)?;
        }
        if needed.iter().all(|s| auth.has_scope(s)) {
            return Ok(());
        }
        tracing::debug!(principal = %auth.principal, method = %req.method.as_str(), "request lacks a needed scope");
        Err(RpcError::insufficient_scope(&needed))
    }

    /// Appends the scopes of what the request names.
    fn target_scopes(
        &self,
        req: &Request,
        tool: Option<&ToolEntry>,
        auth: &AuthInfo,
        needed: &mut Vec<String>,
    ) -> Result<(), RpcError> {
        let text = |key: &str| req.params.as_ref()?.str(key);
        let fixed = |scopes: &Scopes, needed: &mut Vec<String>| {
            for s in scopes.fixed_scopes() {
                push_unique(needed, s.to_owned());
            }
        };
        match req.method {
            Method::ToolsCall => {
                if let Some(t) = tool {
                    fixed(&t.scopes, needed);
                }
            }
            Method::PromptsGet => {
                if let Some(name) = text("name")
                    && let Some(p) = self.catalog.prompt(&name)
                    && visible(self.visibility, auth, CatalogKind::Prompt, &name)
                {
                    fixed(&p.scopes, needed);
                }
            }
            Method::ResourcesRead => {
                let Some(uri) = text("uri") else { return Ok(()) };
                let uri = &*uri;
                if let Some(r) = self.catalog.resource(uri)
                    && visible(self.visibility, auth, CatalogKind::Resource, uri)
                {
                    fixed(&r.scopes, needed);
                } else if let Some((t, vars)) = self.catalog.match_template(uri)
                    && visible(
                        self.visibility,
                        auth,
                        CatalogKind::ResourceTemplate,
                        &t.def.uri_template,
                    )
                {
                    t.scopes.expand_into(&vars, needed)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
