//! The security suite's fixture: the real providers of `mcp-auth` (bearer
//! HS256, API key, basic), HS256 tokens minted by hand, and a runtime with
//! the tools the suite drives (a server-to-client request, a task, an MRTR
//! round, a URL elicitation, and catalog items hidden by a visibility hook).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use http::StatusCode;
use mcp_auth::{ApiKey, ApiKeyAuth, BasicAuth, BasicUser, BearerAuth, MIN_PBKDF2_ITERATIONS};
use mcp_protocol::model::{
    CallToolResult, GetPromptResult, PromptDef, PromptMessage, ReadResourceResult, ResourceContents, ResourceDef,
    ToolDef,
};
use mcp_protocol::task_mode::TaskSupport;
use mcp_runtime::mrtr::InputRequired;
use mcp_runtime::registry::{PromptEntry, ResourceEntry, ToolEntry};
use mcp_runtime::{CatalogKind, Ctx, HandlerError, Registry, ServerConfig, ToolResult, Visibility};
use mcp_transport_http::HttpConfig;
use serde_json::{Map, Value, json};

use crate::support::{Req, Server};

/// The HS256 secret of the bearer provider (at least 32 bytes).
pub(crate) const SECRET: &str = "security-suite-hs256-secret-0123456789";
/// The audience tokens must name.
pub(crate) const AUDIENCE: &str = "mcp-test";
/// The issuer tokens must name.
pub(crate) const ISSUER: &str = "https://issuer.example";
/// The metadata document named in bearer challenges.
pub(crate) const PRM: &str = "http://127.0.0.1/.well-known/oauth-protected-resource/mcp";
/// The scope the scoped bearer server requires.
pub(crate) const SCOPE: &str = "mcp:tools";
/// The API key of principal `ci-bot`.
pub(crate) const API_KEY: &str = "k-security-suite-7f3a9c";
/// The basic-auth user and password.
pub(crate) const USER: &str = "carol";
/// Carol's password.
pub(crate) const PASSWORD: &str = "pa55-w0rd-of-carol";

/// The Unix time in seconds.
pub(crate) fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() as i64
}

/// Signs `claims` as an HS256 JWT with [`SECRET`] (by hand: header, payload, HMAC-SHA-256).
pub(crate) fn mint(claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let input = format!("{header}.{payload}");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).expect("any key length");
    mac.update(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes()))
}

/// Valid claims for `sub` (5 minutes left, scope [`SCOPE`]).
pub(crate) fn claims(sub: &str) -> Value {
    json!({"sub": sub, "aud": AUDIENCE, "iss": ISSUER, "iat": now(), "exp": now() + 300, "scope": SCOPE})
}

/// A valid token for `sub`.
pub(crate) fn token(sub: &str) -> String {
    mint(&claims(sub))
}

/// Adds `Authorization: Bearer <a valid token of who>`.
pub(crate) fn by(r: Req, who: &str) -> Req {
    r.header("authorization", &format!("Bearer {}", token(who)))
}

/// The bearer provider, requiring `scopes`.
pub(crate) fn bearer(scopes: &[&str]) -> BearerAuth {
    BearerAuth::builder()
        .hs256_secret(SECRET.as_bytes().to_vec())
        .audience(AUDIENCE)
        .issuer(ISSUER)
        .resource_metadata(PRM)
        .required_scopes(scopes.iter().copied())
        .build()
        .expect("bearer provider")
}

/// The API-key provider: [`API_KEY`] is principal `ci-bot`.
pub(crate) fn api_keys() -> ApiKeyAuth {
    ApiKeyAuth::builder()
        .key(ApiKey::plain(API_KEY, "ci-bot"))
        .build()
        .expect("api-key provider")
}

/// The basic provider: [`USER`] with [`PASSWORD`].
pub(crate) fn basic() -> BasicAuth {
    BasicAuth::builder()
        .password_iterations(MIN_PBKDF2_ITERATIONS)
        .user(BasicUser::plain(USER, PASSWORD))
        .build()
        .expect("basic provider")
}

fn tool<F, Fut>(name: &str, support: TaskSupport, f: F) -> ToolEntry
where
    F: Fn(Map<String, Value>, Ctx) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ToolResult> + Send + 'static,
{
    let def = ToolDef::new(name)
        .with_input_schema(json!({"type": "object"}))
        .with_task_support(support);
    ToolEntry::new(def, Arc::new(f), true, true).expect("valid tool")
}

fn name_request() -> Value {
    json!({"message": "Your name?", "requestedSchema": {"type": "object",
        "properties": {"name": {"type": "string"}}, "required": ["name"]}})
}

/// The suite's tools, a resource and a prompt.
pub(crate) fn registry() -> Arc<Registry> {
    use TaskSupport::{Forbidden, Optional};
    let r = Registry::new();
    r.add_tool(tool("whoami", Forbidden, |_, ctx: Ctx| async move {
        Ok(CallToolResult::text(ctx.auth().principal.to_string()))
    }));
    r.add_tool(tool("sample", Forbidden, |_, ctx: Ctx| async move {
        let params = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5});
        let reply = ctx.create_message(params).await?;
        Ok(CallToolResult::text(format!("said {}", reply["content"]["text"])))
    }));
    r.add_tool(tool("slow", Optional, |_, ctx: Ctx| async move {
        tokio::select! {
            _ = ctx.cancellation().cancelled() => {}
            _ = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        Ok(CallToolResult::text("slow done"))
    }));
    r.add_tool(tool("asks", Forbidden, |_, ctx: Ctx| async move {
        let ask = InputRequired::new()
            .request("name", "elicitation/create", name_request())
            .with_state(json!({"step": 1}));
        let answers = ctx.input(ask).await?;
        let name = answers["name"]["content"]["name"].as_str().unwrap_or("?").to_owned();
        Ok(CallToolResult::text(format!("hello {name}")))
    }));
    r.add_tool(tool("connect", Forbidden, |_, ctx: Ctx| async move {
        let e = ctx
            .elicit_url("Connect your account", "https://example.com/connect")
            .await
            .map_err(HandlerError::from)?;
        Ok(CallToolResult::text(e.elicitation_id))
    }));
    r.add_tool(tool("admin_reset", Forbidden, |_, _| async {
        Ok(CallToolResult::text("reset"))
    }));
    r.add_resource(ResourceEntry::new(
        ResourceDef::new("test://admin/secret", "secret"),
        Arc::new(|_: String, _: Map<String, Value>, _: Ctx| async {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                "test://admin/secret",
                "text/plain",
                "42",
            )]))
        }),
    ));
    r.add_prompt(PromptEntry::new(
        PromptDef::new("admin_prompt"),
        Arc::new(|_: Map<String, Value>, _: Ctx| async {
            Ok(GetPromptResult::new(vec![PromptMessage::user(
                mcp_protocol::model::Content::text("p"),
            )]))
        }),
    ));
    Arc::new(r)
}

/// Items whose name or URI mentions `admin` are seen by principal `root` only.
pub(crate) fn admin_only() -> Visibility {
    Visibility::new(|auth, _kind: CatalogKind, name| !name.contains("admin") || &*auth.principal == "root")
}

/// A server over the suite's tools with `config`, authenticating with `http`'s provider.
pub(crate) async fn server_with(config: ServerConfig, http: HttpConfig) -> Server {
    let runtime = mcp_tests::engine::memory(config, registry());
    Server::serve_engine(runtime, http).await
}

/// A server whose callers are bearer principals (no scope required).
pub(crate) async fn bearer_server() -> Server {
    server_with(
        ServerConfig::default(),
        HttpConfig::default().auth(Arc::new(bearer(&[]))),
    )
    .await
}

/// The modern `_meta` with client capabilities `caps`.
pub(crate) fn modern_with(id: i64, method: &str, params: Value, caps: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A modern POST by `who`: the body with its `_meta`, and the `MCP-Protocol-Version`,
/// `Mcp-Method` and `Mcp-Name` headers that must agree with it.
pub(crate) fn modern_by(s: &Server, who: &str, id: i64, method: &str, params: Value, caps: Value) -> Req {
    let name = mcp_protocol::Method::parse(method)
        .name_field()
        .and_then(|f| params.get(f))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut r = by(s.post(modern_with(id, method, params, caps)), who)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(n) = name {
        r = r.header("mcp-name", &n);
    }
    r
}

/// The capabilities of a modern client with the tasks extension and form elicitation.
pub(crate) fn tasks_caps() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// A legacy 2025-11-25 session of `who` declaring `caps`: its id.
pub(crate) async fn session(s: &Server, who: &str, caps: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "security-suite", "version": "1"}
    }});
    let resp = by(s.post(init), who).send().await;
    assert_eq!(resp.status, StatusCode::OK);
    let sid = resp.header("mcp-session-id").expect("session id").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = by(s.post(note), who).header("mcp-session-id", &sid).send().await;
    assert_eq!(ack.status, StatusCode::ACCEPTED);
    sid
}

/// A legacy request.
pub(crate) fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}
