//! Authentication flags of `everything` (HTTP only), so that anyone can try
//! the providers of `mcp-auth` against the fixture:
//!
//! ```text
//! everything --bearer-secret "$(head -c 32 /dev/urandom | base64)" --audience mcp-test [--issuer ISS]
//! everything --api-key KEY
//! everything --basic USER:PASSWORD
//! everything ... --require-scope SCOPE --resource-url https://mcp.example.com/mcp
//! everything --oidc-issuer https://id.example.com [--audience AUD] [--dpop allowed|required]
//! everything --introspection-url URL --client-id ID --client-secret SECRET [--oidc-issuer ISS]
//! everything --jwks '{"kty":"EC",…}' --issuer ISS --dpop required
//! ```
//!
//! With `--oidc-issuer` the bearer provider's keys come from the issuer (OpenID Connect
//! discovery, then RFC 8414; refreshed per their cache headers and on an unknown `kid`); with
//! `--introspection-url` opaque tokens are asked about at that RFC 7662 endpoint with this
//! server's client credentials. Tokens must name this server: `--audience`, else
//! `--resource-url`, else the endpoint's own URL. `--dpop` accepts or requires DPoP-bound
//! tokens (RFC 9449) whose proofs name that same URL. An `http://` issuer or endpoint is
//! accepted on loopback hosts only.
//!
//! The conformance suite's auth scenarios (modelcontextprotocol/conformance, `src/scenarios/server/`)
//! each ask the server for a set-up of its own:
//!
//! - `auth/dpop-server-validation` (`auth/dpop.ts`): trust the suite's test issuer, whose private
//!   JWK it reads from `DPOP_ISSUER_PRIVATE_JWK`, and require DPoP-bound tokens for this URL:
//!   `--jwks "$DPOP_ISSUER_PRIVATE_JWK" --issuer "$DPOP_ISSUER" --dpop required` (only the
//!   key's public members are kept). Followed in `tests/tests/dpop_validation.rs`.
//! - `auth-token-audience-validation` (`auth-token-audience.ts`): trust the suite's mock
//!   authorization server, which listens only while the scenario runs, fetching its keys at
//!   the first token: `--oidc-issuer http://127.0.0.1:9797`. Followed in
//!   `tests/tests/token_audience.rs`.
//! - `sep-2350-server-scope-challenge`: `--scope-fixture` (see `everything/scope_fixture.rs`).
//!
//! One provider at a time. A provider whose set-up fails (a secret shorter
//! than 32 bytes, a missing audience, a bad URL, …) makes the example exit
//! with an error before it binds its port. With a bearer provider the RFC 9728
//! protected-resource document is served (for `--resource-url`, or for the
//! endpoint's own URL on a loopback bind) and every bearer challenge names
//! it: `resource_metadata="…"`. No secret is ever printed or logged.

use std::fmt;
use std::sync::Arc;

use mcp_server::HttpConfig;
use mcp_server::auth::{
    ApiKey, ApiKeyAuth, AuthProvider, AuthProviderExt, AuthSetupError, BasicAuth, BasicUser, BearerAuth, DpopMode,
    DpopOptions, Introspection, ResourceMetadata,
};
use mcp_store_redis::RedisReplayCache;
use serde_json::Value;

use super::scope_fixture::{FixtureTokens, ScopeFixture};

/// The principal of the `--api-key` identity.
const API_KEY_PRINCIPAL: &str = "api-key";

/// The authentication flags.
#[derive(clap::Args)]
pub(super) struct AuthArgs {
    /// Require `Authorization: Bearer <JWT>` signed with this HS256 secret (at least 32 bytes:
    /// shorter secrets are refused). Needs --audience.
    #[arg(long, value_name = "SECRET", requires = "audience", conflicts_with_all = ["api_key", "basic"])]
    bearer_secret: Option<String>,
    /// The audience (`aud`) bearer tokens must name.
    #[arg(long, value_name = "AUD")]
    audience: Option<String>,
    /// The issuer (`iss`) bearer tokens must name (unchecked when absent).
    #[arg(long, value_name = "ISS")]
    issuer: Option<String>,
    /// Verify bearer JWTs with the keys of this OpenID issuer (discovery; `iss` must name it).
    #[arg(long, value_name = "URL", conflicts_with_all = ["bearer_secret", "api_key", "basic"])]
    oidc_issuer: Option<String>,
    /// Verify bearer JWTs with the public keys of this JWKS (JSON; a single JWK counts as a set
    /// of one, and private members such as `d` are dropped): the keys of a test issuer, as the
    /// conformance suite's `auth/dpop-server-validation` hands them over
    /// (`DPOP_ISSUER_PRIVATE_JWK`). With --issuer and --dpop.
    #[arg(long, value_name = "JSON", conflicts_with_all = ["bearer_secret", "oidc_issuer", "api_key", "basic"])]
    jwks: Option<String>,
    /// Check bearer tokens at this RFC 7662 introspection endpoint (opaque tokens); needs
    /// --client-id and --client-secret.
    #[arg(long, value_name = "URL", requires_all = ["client_id", "client_secret"],
        conflicts_with_all = ["bearer_secret", "api_key", "basic"])]
    introspection_url: Option<String>,
    /// This server's client id at the introspection endpoint.
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// This server's client secret at the introspection endpoint.
    #[arg(long, value_name = "SECRET")]
    client_secret: Option<String>,
    /// The tolerance for a bearer token's `exp` and `nbf`, in seconds (default 60).
    #[arg(long, value_name = "SECONDS")]
    clock_skew: Option<u64>,
    /// DPoP-bound tokens (RFC 9449): refused (`off`, the default), accepted beside bearer
    /// tokens, or required.
    #[arg(long, value_enum, default_value_t = Dpop::Off)]
    dpop: Dpop,
    /// Require this API key in `x-api-key` (or `Authorization: ApiKey <key>`); principal `api-key`.
    #[arg(long, value_name = "KEY", conflicts_with = "basic")]
    api_key: Option<String>,
    /// Require HTTP Basic authentication as USER with PASSWORD; principal USER.
    #[arg(long, value_name = "USER:PASSWORD")]
    basic: Option<String>,
    /// Require a scope (repeatable); fails closed: API-key and basic identities carry no scopes,
    /// so they are refused (403) — use it with --bearer-secret.
    #[arg(long, value_name = "SCOPE")]
    require_scope: Vec<String>,
    /// The resource URL of this server (its MCP endpoint, e.g. https://mcp.example.com/mcp):
    /// serves the RFC 9728 document for it and names the document in bearer challenges.
    #[arg(long, value_name = "URL")]
    resource_url: Option<String>,
    /// Declare the per-operation scopes of the SEP-2350 scope-challenge conformance scenario;
    /// alone, also accept its two fixture tokens (see `everything/scope_fixture.rs`).
    #[arg(long)]
    scope_fixture: bool,
}

impl fmt::Debug for AuthArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |o: &Option<String>| o.as_ref().map(|_| "<redacted>");
        f.debug_struct("AuthArgs")
            .field("bearer_secret", &set(&self.bearer_secret))
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .field("oidc_issuer", &self.oidc_issuer)
            .field("jwks", &self.jwks.as_ref().map(|_| "<given>"))
            .field("introspection_url", &self.introspection_url)
            .field("client_id", &self.client_id)
            .field("client_secret", &set(&self.client_secret))
            .field("dpop", &self.dpop)
            .field("clock_skew", &self.clock_skew)
            .field("api_key", &set(&self.api_key))
            .field("basic", &set(&self.basic))
            .field("require_scope", &self.require_scope)
            .field("resource_url", &self.resource_url)
            .field("scope_fixture", &self.scope_fixture)
            .finish()
    }
}

/// What `--dpop` asks for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dpop {
    /// Bearer tokens only.
    Off,
    /// DPoP-bound tokens beside bearer tokens.
    Allowed,
    /// DPoP-bound tokens only.
    Required,
}

impl From<Dpop> for DpopMode {
    fn from(d: Dpop) -> Self {
        match d {
            Dpop::Off => DpopMode::Off,
            Dpop::Allowed => DpopMode::Allowed,
            Dpop::Required => DpopMode::Required,
        }
    }
}

/// Why the flags cannot make a provider.
#[derive(Debug, thiserror::Error)]
pub(super) enum AuthError {
    /// A provider or the metadata document refused its configuration.
    #[error("authentication set-up failed: {0}")]
    Setup(#[from] AuthSetupError),
    /// `--basic` is not `USER:PASSWORD`.
    #[error("--basic expects USER:PASSWORD")]
    BasicFormat,
    /// `--jwks` is not a JWK or a JWK set.
    #[error("--jwks expects a JWK or a JWK set (JSON)")]
    JwksFormat,
    /// Authentication flags only apply to HTTP.
    #[error("authentication flags apply to HTTP only, not to --stdio")]
    Stdio,
}

/// Reports a set-up failure (its message names no secret) and exits with status 2.
pub(super) fn exit(e: &AuthError) -> ! {
    eprintln!("everything: {e}");
    std::process::exit(2)
}

/// The checked flags: everything that can fail is built here, before the port is bound.
pub(super) struct AuthPlan {
    args: AuthArgs,
    /// The API-key or basic provider (built once: hashing is deliberately slow).
    provider: Option<Arc<dyn AuthProvider>>,
    /// The metadata document of `--resource-url`.
    metadata: Option<ResourceMetadata>,
}

impl AuthArgs {
    /// The scope fixture, on or off.
    pub(super) fn scope_fixture(&self) -> ScopeFixture {
        ScopeFixture { on: self.scope_fixture }
    }

    /// Whether a bearer provider is asked for (a secret, an issuer's keys or introspection).
    fn bearer_wanted(&self) -> bool {
        self.bearer_secret.is_some()
            || self.oidc_issuer.is_some()
            || self.introspection_url.is_some()
            || self.jwks.is_some()
    }

    /// Whether any flag was given.
    fn any(&self) -> bool {
        self.bearer_wanted()
            || self.dpop != Dpop::Off
            || self.api_key.is_some()
            || self.basic.is_some()
            || !self.require_scope.is_empty()
            || self.resource_url.is_some()
            || self.scope_fixture
    }

    /// Checks the flags and builds what can be built before binding.
    pub(super) fn plan(mut self, stdio: bool) -> Result<AuthPlan, AuthError> {
        if stdio && self.any() {
            return Err(AuthError::Stdio);
        }
        if let Some(jwks) = &self.jwks {
            self.jwks = Some(public_jwks(jwks).ok_or(AuthError::JwksFormat)?);
        }
        let metadata = match &self.resource_url {
            Some(url) => Some(metadata(url, &self)?),
            None => None,
        };
        let provider: Option<Arc<dyn AuthProvider>> = if let Some(key) = &self.api_key {
            let p = ApiKeyAuth::builder()
                .key(ApiKey::plain(key.clone(), API_KEY_PRINCIPAL))
                .build()?;
            Some(Arc::new(p))
        } else if let Some(basic) = &self.basic {
            let (user, password) = basic.split_once(':').ok_or(AuthError::BasicFormat)?;
            Some(Arc::new(
                BasicAuth::builder().user(BasicUser::plain(user, password)).build()?,
            ))
        } else {
            None
        };
        let plan = AuthPlan {
            args: self,
            provider,
            metadata,
        };
        // A trial build of the bearer provider, so that a bad secret, audience or URL stops us
        // here (nothing is fetched before the first token).
        if plan.args.bearer_wanted() {
            plan.bearer(
                "http://127.0.0.1/mcp",
                Some("http://127.0.0.1/.well-known/oauth-protected-resource/mcp"),
                None,
            )?;
        }
        Ok(plan)
    }
}

/// A JWK set of the public members of `json` (a JWK or a set of them): what a verifier needs,
/// whatever private members the JSON carried.
fn public_jwks(json: &str) -> Option<String> {
    const PRIVATE: &[&str] = &["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let keys = match value {
        serde_json::Value::Object(mut set) if set.contains_key("keys") => match set.remove("keys") {
            Some(serde_json::Value::Array(keys)) => keys,
            _ => return None,
        },
        key @ serde_json::Value::Object(_) => vec![key],
        _ => return None,
    };
    let keys: Vec<serde_json::Value> = keys
        .into_iter()
        .map(|mut key| {
            if let Some(members) = key.as_object_mut() {
                members.retain(|name, _| !PRIVATE.contains(&name.as_str()));
            }
            key
        })
        .collect();
    Some(serde_json::json!({ "keys": keys }).to_string())
}

/// The RFC 9728 document of `resource`.
fn metadata(resource: &str, args: &AuthArgs) -> Result<ResourceMetadata, AuthSetupError> {
    let mut b = ResourceMetadata::builder(resource)
        .scopes_supported(args.require_scope.iter().cloned())
        .resource_name("mcp-rs everything");
    if let Some(iss) = args
        .oidc_issuer
        .as_deref()
        .or(args.issuer.as_deref())
        .filter(|i| i.starts_with("https://") || i.starts_with("http://"))
    {
        b = b.authorization_server(iss);
    }
    if args.dpop != Dpop::Off {
        b = b
            .dpop_signing_alg_values_supported(["ES256", "RS256"])
            .dpop_bound_access_tokens_required(args.dpop == Dpop::Required);
    }
    b.build()
}

impl AuthPlan {
    /// The bearer provider the flags ask for (`None`: none), for the server at `endpoint`; its
    /// DPoP proofs are remembered in `replay` when given (the store every instance shares).
    fn bearer(
        &self,
        endpoint: &str,
        metadata_url: Option<&str>,
        replay: Option<RedisReplayCache>,
    ) -> Result<Option<BearerAuth>, AuthSetupError> {
        let a = &self.args;
        let mut b = BearerAuth::builder().required_scopes(a.require_scope.iter().cloned());
        b = match (&a.bearer_secret, &a.introspection_url, &a.oidc_issuer) {
            (Some(secret), _, _) => b.hs256_secret(secret.as_bytes().to_vec()),
            (None, Some(url), issuer) => {
                let (id, secret) = (a.client_id.clone(), a.client_secret.clone());
                let introspection = Introspection::builder(url.clone())
                    .client_secret_basic(id.unwrap_or_default(), secret.unwrap_or_default())
                    .build()?;
                let b = b.verifier(introspection);
                match issuer {
                    Some(iss) => b.issuer(iss.clone()),
                    None => b,
                }
            }
            (None, None, Some(issuer)) => b.oidc_issuer(issuer.clone()),
            (None, None, None) => match &a.jwks {
                Some(jwks) => b.jwks(jwks.clone()),
                None => return Ok(None),
            },
        };
        // The URL clients know this server by: tokens name it, DPoP proofs name it.
        let resource = a.resource_url.clone().unwrap_or_else(|| endpoint.to_owned());
        b = b.audience(a.audience.clone().unwrap_or_else(|| resource.clone()));
        if let Some(iss) = &a.issuer {
            b = b.issuer(iss.clone());
        }
        if let Some(secs) = a.clock_skew {
            b = b.clock_skew(std::time::Duration::from_secs(secs));
        }
        if a.dpop != Dpop::Off {
            b = b.dpop(a.dpop.into()).dpop_url(resource);
            if let Some(cache) = replay {
                b = b.dpop_options(DpopOptions::new().replay_cache(cache));
            }
        }
        if let Some(url) = metadata_url {
            b = b.resource_metadata(url);
        }
        b.build().map(Some)
    }

    /// The HTTP configuration for the endpoint `endpoint` (`http://host:port/mcp`): the provider,
    /// the metadata document, and the scope requirement.
    /// With `replay` (the shared store's), DPoP proofs are remembered by every instance.
    pub(super) fn apply(
        self,
        config: HttpConfig,
        endpoint: &str,
        loopback: bool,
        replay: Option<RedisReplayCache>,
    ) -> Result<HttpConfig, AuthError> {
        let metadata = match self.metadata.clone() {
            Some(m) => Some(m),
            // The endpoint's own document, for bearer challenges to name.
            None if (self.args.bearer_wanted() || self.args.scope_fixture) && loopback => {
                Some(metadata(endpoint, &self.args)?)
            }
            None => None,
        };
        let url = metadata.as_ref().map(|m| m.metadata_url().to_owned());
        let mut config = config;
        if let Some(m) = &metadata {
            config = config.with_resource_metadata(Value::Object(m.document().clone()));
        }
        let provider: Arc<dyn AuthProvider> = match (self.bearer(endpoint, url.as_deref(), replay)?, self.provider) {
            // The bearer provider checks its own required scopes (named in its 401s too).
            (Some(bearer), _) => Arc::new(bearer),
            (None, Some(p)) if !self.args.require_scope.is_empty() => {
                let mut wrapped = p.require_scopes(self.args.require_scope.iter().cloned());
                if let Some(url) = &url {
                    wrapped = wrapped.resource_metadata(url.clone());
                }
                Arc::new(wrapped)
            }
            (None, Some(p)) => p,
            // The scenario's own contract: its two tokens, and no credentials served as before.
            (None, None) if self.args.scope_fixture => Arc::new(FixtureTokens::new(url.as_deref())),
            (None, None) if !self.args.require_scope.is_empty() => {
                // No credentials at all: everyone is anonymous, with no scopes; fail closed.
                Arc::new(mcp_server::auth::NoAuth.require_scopes(self.args.require_scope.iter().cloned()))
            }
            (None, None) => return Ok(config),
        };
        tracing::info!(metadata = ?url, "authentication enabled");
        Ok(config.auth(provider))
    }
}
