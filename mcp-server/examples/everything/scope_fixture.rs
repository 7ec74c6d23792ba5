//! `--scope-fixture`: the per-operation scopes of the proposed SEP-2350 conformance scenario
//! (`sep-2350-server-scope-challenge`), so that its request-time `insufficient_scope`
//! challenges can be probed from outside.
//!
//! | operation | scopes it needs |
//! | --- | --- |
//! | `tools/call` of `test_simple_text` | `mcp:conformance:tools:call`, `mcp:conformance:tools:test_simple_text` |
//! | `resources/read` of `test://static-text` | `mcp:conformance:resources:read`, `mcp:conformance:resources:static` |
//! | `resources/read` of `test://template/{id}/data` | `mcp:conformance:resources:read`, `mcp:conformance:resources:template:{id}` |
//! | `prompts/get` of `test_simple_prompt` | `mcp:conformance:prompts:get`, `mcp:conformance:prompts:test_simple_prompt` |
//!
//! Alone, the flag follows the scenario's own contract: the opaque token
//! `mcp-conformance-scope-low` holds only `mcp:conformance:baseline`,
//! `mcp-conformance-scope-full` every scope above (the template's for the id `123`), and a
//! request without credentials is served as before (it holds every fixture scope, so the other
//! scenarios are unchanged). With a real verifier (`--bearer-secret`, …) the scopes are the
//! same, and those literal tokens are refused like any other bad token.

use mcp_server::auth::http;
use mcp_server::auth::{AuthInfo, AuthProvider, BearerChallenge, BearerError, BoxFuture, Challenge};
use mcp_server::{McpServerBuilder, Prompt, Resource, ResourceTemplate, Tool};

/// The fixture token holding only the baseline scope.
const LOW_TOKEN: &str = "mcp-conformance-scope-low";
/// The fixture token holding every scope.
const FULL_TOKEN: &str = "mcp-conformance-scope-full";
/// The one scope of the low token.
const BASELINE: &str = "mcp:conformance:baseline";
/// The scopes each method needs.
const METHODS: [(&str, &str); 3] = [
    ("tools/call", "mcp:conformance:tools:call"),
    ("resources/read", "mcp:conformance:resources:read"),
    ("prompts/get", "mcp:conformance:prompts:get"),
];
const TOOL: &str = "mcp:conformance:tools:test_simple_text";
const STATIC: &str = "mcp:conformance:resources:static";
const TEMPLATE: &str = "mcp:conformance:resources:template:{id}";
const PROMPT: &str = "mcp:conformance:prompts:test_simple_prompt";
/// The full token's scopes: the methods', the items', the template's for the id the scenario
/// reads.
const FULL: [&str; 8] = [
    BASELINE,
    "mcp:conformance:tools:call",
    "mcp:conformance:resources:read",
    "mcp:conformance:prompts:get",
    TOOL,
    STATIC,
    "mcp:conformance:resources:template:123",
    PROMPT,
];

/// Whether the fixture's scopes are declared.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScopeFixture {
    pub(crate) on: bool,
}

impl ScopeFixture {
    fn scopes(self, scope: &'static str) -> Vec<&'static str> {
        if self.on { vec![scope] } else { Vec::new() }
    }

    /// The method scopes.
    pub(crate) fn methods(self, mut b: McpServerBuilder) -> McpServerBuilder {
        if self.on {
            for (method, scope) in METHODS {
                b = b.method_scopes(method, [scope]);
            }
        }
        b
    }

    /// `test_simple_text`'s scope.
    pub(crate) fn tool(self, t: Tool) -> Tool {
        t.scopes(self.scopes(TOOL))
    }

    /// `test://static-text`'s scope.
    pub(crate) fn resource(self, r: Resource) -> Resource {
        r.scopes(self.scopes(STATIC))
    }

    /// `test://template/{id}/data`'s scope, naming the id read.
    pub(crate) fn template(self, t: ResourceTemplate) -> ResourceTemplate {
        t.scopes(self.scopes(TEMPLATE))
    }

    /// `test_simple_prompt`'s scope.
    pub(crate) fn prompt(self, p: Prompt) -> Prompt {
        p.scopes(self.scopes(PROMPT))
    }
}

/// The scenario's own provider: the two fixture tokens, and callers without credentials
/// holding every scope.
pub(crate) struct FixtureTokens {
    challenge: BearerChallenge,
}

impl FixtureTokens {
    /// Challenges naming the metadata document at `metadata_url`.
    pub(crate) fn new(metadata_url: Option<&str>) -> Self {
        let mut challenge = BearerChallenge::new("mcp");
        if let Some(url) = metadata_url {
            challenge = challenge.resource_metadata(url);
        }
        FixtureTokens { challenge }
    }
}

impl AuthProvider for FixtureTokens {
    fn authenticate<'a>(&'a self, parts: &'a http::request::Parts) -> BoxFuture<'a, Result<AuthInfo, Challenge>> {
        let all = || FULL.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let outcome = match parts.headers.get(http::header::AUTHORIZATION).map(|v| v.to_str()) {
            None => Ok(AuthInfo::anonymous().with_scopes(all())),
            Some(Ok(v)) if v == format!("Bearer {LOW_TOKEN}") => {
                Ok(AuthInfo::new("scope-low").with_scopes(vec![BASELINE.to_owned()]))
            }
            Some(Ok(v)) if v == format!("Bearer {FULL_TOKEN}") => Ok(AuthInfo::new("scope-full").with_scopes(all())),
            Some(_) => Err(self.challenge.error(BearerError::InvalidToken, "not a fixture token")),
        };
        Box::pin(async move { outcome })
    }

    fn insufficient_scope(&self, needed: &[String]) -> Challenge {
        self.challenge
            .insufficient_scope(needed, "the token lacks scopes this operation needs")
    }
}
