//! What a catalog holds: registered tools, resources, templates, prompts and completion keys,
//! each validated when it is registered.

use std::sync::Arc;

use mcp_protocol::apps::{AppsError, check_resource, check_tool_meta};
use mcp_protocol::headers::{ParamHeader, XMcpHeaderError, parse_param_headers};
use mcp_protocol::model::{CacheHint, PromptDef, ResourceDef, ResourceTemplateDef, ToolDef};
use mcp_protocol::schema::SchemaError;
use mcp_protocol::secure_params::{Listed, SecureSchemaError, check_schemas};
use serde_json::Value;

use super::scopes::{ScopeError, Scopes};
use super::uri_template::{TemplateError, UriTemplate};
use super::validator::{SchemaUse, Validator};
use super::visibility::CatalogKind;
use crate::api::handler::{PromptHandler, ResourceHandler, ToolHandler};

/// Why a registration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// The input, output or secure input schema does not compile.
    #[error("tool {tool}: invalid {which} schema: {source}")]
    InvalidSchema {
        /// The tool.
        tool: String,
        /// `input`, `output` or `secure input`.
        which: &'static str,
        /// Why.
        source: SchemaError,
    },
    /// An `x-mcp-header` annotation is invalid.
    #[error("tool {tool}: {source}")]
    InvalidHeaderAnnotation {
        /// The tool.
        tool: String,
        /// Why.
        source: XMcpHeaderError,
    },
    /// The input schema is not an object schema.
    #[error("tool {0}: inputSchema must be a JSON object with \"type\": \"object\"")]
    InputSchemaNotObject(String),
    /// The secure parameters' schema is not an object schema, or names a parameter of the
    /// input schema (SEP-3221).
    #[error("tool {tool}: {source}")]
    SecureSchema {
        /// The tool.
        tool: String,
        /// Why.
        source: SecureSchemaError,
    },
    /// A typed tool's output is not a JSON object, so it is sent as `{"result": …}`, but its
    /// derived schema cannot be wrapped to match.
    #[error(
        "tool {tool}: its output is not a JSON object and is sent as {{\"result\": …}}, but its schema cannot be wrapped: {reason}"
    )]
    OutputSchemaNotWrappable {
        /// The tool.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A scope an item needs is not a scope token.
    #[error("{item}: {source}")]
    InvalidScope {
        /// The tool, resource, template or prompt.
        item: String,
        /// Why.
        source: ScopeError,
    },
    /// A resource template cannot be routed.
    #[error(transparent)]
    InvalidTemplate(#[from] TemplateError),
    /// MCP Apps metadata is invalid: a tool's `_meta.ui` (a URI outside `ui://`, a shape the
    /// specification does not define, nobody in `visibility`), or a `ui://` resource or
    /// template without the MIME type `text/html;profile=mcp-app`.
    #[error(transparent)]
    Apps(#[from] AppsError),
    /// The `_meta` given for a list's results
    /// ([`Registry::set_list_meta`](super::Registry::set_list_meta)) is not a JSON object.
    #[error("the _meta of the {0:?} list must be a JSON object")]
    ListMetaNotObject(CatalogKind),
}

/// The refusal of an item's scope that is not a scope token.
fn invalid_scope(kind: &str, name: &str, source: ScopeError) -> RegistryError {
    RegistryError::InvalidScope {
        item: format!("{kind} {name}"),
        source,
    }
}

/// A registered tool.
pub struct ToolEntry {
    /// The definition, as listed.
    pub def: ToolDef,
    pub(crate) handler: Arc<dyn ToolHandler>,
    pub(crate) input: Validator,
    pub(crate) output: Validator,
    pub(crate) secure: Validator,
    /// The `x-mcp-header` parameters of the input schema (their values in `arguments`).
    pub param_headers: Vec<ParamHeader>,
    /// The `x-mcp-header` parameters of the secure parameters' schema (their values in
    /// `secureArguments`).
    pub secure_param_headers: Vec<ParamHeader>,
    /// The deadline of this tool's handler runs, overriding
    /// `ServerConfig::handler_timeout` (inline) and `ServerConfig::task_ttl` (as a task)
    /// when set (default `None`). See [`ToolEntry::with_timeout`].
    pub timeout: Option<std::time::Duration>,
    /// The scopes a call of this tool needs (besides those of `tools/call`). See
    /// [`ToolEntry::with_scopes`].
    pub scopes: Scopes,
    /// Whether a task of this tool outlives the worker running it: run again from its last
    /// checkpoint after the worker stopped. See [`ToolEntry::resumable`].
    pub resumable: bool,
}

impl std::fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

impl crate::observe::Named for ToolEntry {
    fn name(&self) -> &str {
        &self.def.name
    }
}

impl ToolEntry {
    /// Validates a tool for registration: the schemas compile, the input
    /// schema is an object schema, `x-mcp-header` annotations are valid, and an MCP Apps
    /// `_meta.ui` follows the specification ([`mcp_protocol::apps::check_tool_meta`]).
    /// Input is validated against the schema at every call when
    /// `validate_input`; structured output against `outputSchema` when
    /// `validate_output`. Both schemas are taken as given (compiled now); see
    /// [`ToolEntry::with_schemas`] for schemas derived from types.
    pub fn new(
        def: ToolDef,
        handler: Arc<dyn ToolHandler>,
        validate_input: bool,
        validate_output: bool,
    ) -> Result<Self, RegistryError> {
        Self::with_schemas(
            def,
            handler,
            SchemaUse::given(validate_input),
            SchemaUse::given(validate_output),
        )
    }

    /// As [`ToolEntry::new`], each schema used as its [`SchemaUse`] says: one derived from a
    /// Rust type is compiled at its first use rather than now.
    pub fn with_schemas(
        def: ToolDef,
        handler: Arc<dyn ToolHandler>,
        input: SchemaUse,
        output: SchemaUse,
    ) -> Result<Self, RegistryError> {
        if def.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RegistryError::InputSchemaNotObject(def.name.clone()));
        }
        let schema_err = |which, source| RegistryError::InvalidSchema {
            tool: def.name.clone(),
            which,
            source,
        };
        let input = Validator::prepare(&def.input_schema, input).map_err(|e| schema_err("input", e))?;
        let output = match &def.output_schema {
            Some(s) => Validator::prepare(s, output).map_err(|e| schema_err("output", e))?,
            None => Validator::Off,
        };
        let headers_of = |schema: &Value| {
            parse_param_headers(schema).map_err(|source| RegistryError::InvalidHeaderAnnotation {
                tool: def.name.clone(),
                source,
            })
        };
        let param_headers = headers_of(&def.input_schema)?;
        let (secure, secure_param_headers) = match &def.secure_input_schema {
            Some(s) => {
                check_schemas(&def.input_schema, s).map_err(|source| RegistryError::SecureSchema {
                    tool: def.name.clone(),
                    source,
                })?;
                // The secure parameters are always checked (when the build validates): they are
                // the host's, and a call that fails their schema is refused before anything runs.
                let v = Validator::prepare(s, SchemaUse::given(true)).map_err(|e| schema_err("secure input", e))?;
                (v, headers_of(s)?)
            }
            None => (Validator::Off, Vec::new()),
        };
        check_tool_meta(&def.name, def.meta.as_ref())?;
        Ok(ToolEntry {
            def,
            handler,
            input,
            output,
            secure,
            param_headers,
            secure_param_headers,
            timeout: None,
            scopes: Scopes::default(),
            resumable: false,
        })
    }

    /// How the tool is listed to a client that declared the secure-parameters extension or not.
    pub(crate) fn listed(&self, declared: bool) -> Listed {
        Listed::of(self.def.secure_input_schema.as_ref(), declared)
    }

    /// Sets the OAuth scopes a call of this tool needs, besides those of `tools/call`
    /// (`ServerConfig::method_scopes`): a caller short of one is refused before the handler
    /// runs, with every needed scope named. Fails on a string that is not a scope token.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Result<Self, RegistryError> {
        self.scopes = Scopes::fixed(scopes).map_err(|e| invalid_scope("tool", &self.def.name, e))?;
        Ok(self)
    }

    /// Sets the deadline of this tool's handler runs (behaviour invariant 15): it replaces
    /// `ServerConfig::handler_timeout` when the call runs inline and `ServerConfig::task_ttl`
    /// when it runs as a task (the task record still lives for its ttl). A run past it is the
    /// tool error "Tool execution timed out".
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Makes the tool's tasks resumable: a task keeps its call (and, sealed when a task key is
    /// configured, its arguments) in the task store and runs under a lease of the task queue;
    /// when the worker running it stops (killed, its host gone, its instance drained) a worker
    /// of any instance sharing the store runs it again, its handler getting the attempt
    /// (`Ctx::attempt`) and the last checkpoint it saved (`Ctx::checkpoint`,
    /// `Ctx::resumed_from`). The handler must be safe to run again from a checkpoint: runs
    /// are at least once. Only calls that become tasks are concerned (a tool whose
    /// `task_support` forbids tasks never resumes).
    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }
}

/// A registered concrete resource.
pub struct ResourceEntry {
    /// The definition.
    pub def: ResourceDef,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// A cache hint for reads of this resource (else the server default).
    pub cache: Option<CacheHint>,
    /// The scopes a read of this resource needs (besides those of `resources/read`).
    pub scopes: Scopes,
}

impl ResourceEntry {
    /// A resource.
    pub fn new(def: ResourceDef, handler: Arc<dyn ResourceHandler>) -> Self {
        ResourceEntry {
            def,
            handler,
            cache: None,
            scopes: Scopes::default(),
        }
    }

    /// Sets the OAuth scopes a read of this resource needs, besides those of `resources/read`.
    /// Fails on a string that is not a scope token.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Result<Self, RegistryError> {
        self.scopes = Scopes::fixed(scopes).map_err(|e| invalid_scope("resource", &self.def.uri, e))?;
        Ok(self)
    }
}

/// A registered resource template.
pub struct TemplateEntry {
    /// The definition.
    pub def: ResourceTemplateDef,
    pub(crate) template: UriTemplate,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// A cache hint for reads through this template.
    pub cache: Option<CacheHint>,
    /// The scopes a read through this template needs (besides those of `resources/read`);
    /// they may name the template's variables. See [`TemplateEntry::with_scopes`].
    pub scopes: Scopes,
}

impl TemplateEntry {
    /// A template; fails when the URI template cannot be routed, or is a `ui://` template
    /// without the MCP Apps MIME type.
    pub fn new(def: ResourceTemplateDef, handler: Arc<dyn ResourceHandler>) -> Result<Self, RegistryError> {
        let template = UriTemplate::parse(&def.uri_template)?;
        check_resource(&def.uri_template, def.mime_type.as_deref())?;
        Ok(TemplateEntry {
            def,
            template,
            handler,
            cache: None,
            scopes: Scopes::default(),
        })
    }

    /// Sets the OAuth scopes a read through this template needs, besides those of
    /// `resources/read`. `{name}` naming a variable of the template stands for its value in the
    /// URI being read (`files:read:{owner}` for `file://{owner}/{+path}`); other text is
    /// literal. Fails on a scope that is not a scope token.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Result<Self, RegistryError> {
        self.scopes = Scopes::templated(scopes, &self.template)
            .map_err(|e| invalid_scope("resource template", &self.def.uri_template, e))?;
        Ok(self)
    }
}

/// A registered prompt.
pub struct PromptEntry {
    /// The definition.
    pub def: PromptDef,
    pub(crate) handler: Arc<dyn PromptHandler>,
    /// The scopes getting this prompt needs (besides those of `prompts/get`).
    pub scopes: Scopes,
}

impl crate::observe::Named for PromptEntry {
    fn name(&self) -> &str {
        &self.def.name
    }
}

impl PromptEntry {
    /// A prompt.
    pub fn new(def: PromptDef, handler: Arc<dyn PromptHandler>) -> Self {
        PromptEntry {
            def,
            handler,
            scopes: Scopes::default(),
        }
    }

    /// Sets the OAuth scopes getting this prompt needs, besides those of `prompts/get`. Fails
    /// on a string that is not a scope token.
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Result<Self, RegistryError> {
        self.scopes = Scopes::fixed(scopes).map_err(|e| invalid_scope("prompt", &self.def.name, e))?;
        Ok(self)
    }
}

/// What a completion handler completes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CompletionKey {
    /// An argument of a prompt.
    Prompt {
        /// Prompt name.
        name: String,
        /// Argument name.
        argument: String,
    },
    /// A variable of a resource template.
    Resource {
        /// The URI template.
        uri: String,
        /// Variable name.
        argument: String,
    },
}
