//! Secure Parameters (SEP-3221, `io.modelcontextprotocol/secure-params`,
//! `seps/3221-secure-parameters.md` at 0375037 of modelcontextprotocol/modelcontextprotocol), over
//! HTTP in both eras: the declaration, the listing per client, the call's refusals (their codes,
//! statuses and messages that name no value), the handler's typed access, an `x-mcp-header` on a
//! secure parameter, and the retry after `input_required` that must send them again.

use hyper::StatusCode;
use mcp_protocol::secure_params::EXTENSION;
use mcp_runtime::{HandlerError, InputRequired, ServerConfig};
use mcp_server::Tool;
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use super::support::{Server, bounded, engine_with, init_body};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    query: String,
}

/// What the host binds: the model never sees or writes it.
#[derive(serde::Deserialize)]
struct Target {
    instance: String,
    zone: Option<String>,
}

/// `execute_sql` (a required secure `instance`, an optional `zone` mirrored in `Mcp-Param-Zone`),
/// `audited` (an optional secure `ticket` only) and `approve` (asks the client to confirm, then
/// answers with its secure `instance`), beside the suite's tools.
async fn server() -> Server {
    let (engine, registry) = engine_with(ServerConfig::default());
    let secure = json!({
        "type": "object",
        "properties": {
            "instance": {"type": "string", "minLength": 8},
            "zone": {"type": "string", "x-mcp-header": "Zone"}
        },
        "required": ["instance"]
    });
    let sql = Tool::typed("execute_sql", "Runs a query", |q: Query, ctx| async move {
        let t: Target = ctx.secure_arguments()?;
        Ok::<_, HandlerError>(format!(
            "{} on {} in {}",
            q.query,
            t.instance,
            t.zone.as_deref().unwrap_or("-")
        ))
    })
    .secure_input_schema(secure.clone());
    registry.add_tool(sql.into_entry().expect("valid tool"));
    let optional = json!({"type": "object", "properties": {"ticket": {"type": "string"}}});
    let audited = Tool::new("audited", "Answers its ticket", |_, ctx| async move {
        let secure: serde_json::Map<String, Value> = ctx.secure_arguments()?;
        Ok::<_, HandlerError>(format!(
            "ticket {}",
            secure.get("ticket").and_then(Value::as_str).unwrap_or("none")
        ))
    })
    .secure_input_schema(optional);
    registry.add_tool(audited.into_entry().expect("valid tool"));
    let approve = Tool::new("approve", "Asks for a confirmation", |_, ctx| async move {
        if ctx.input_responses().is_none_or(|r| !r.contains_key("ok")) {
            let ask =
                json!({"mode": "form", "message": "Proceed?", "requestedSchema": {"type": "object", "properties": {}}});
            return Err(InputRequired::new().request("ok", "elicitation/create", ask).into());
        }
        let t: Target = ctx.secure_arguments()?;
        Ok::<_, HandlerError>(format!("approved on {}", t.instance))
    })
    .secure_input_schema(secure);
    registry.add_tool(approve.into_entry().expect("valid tool"));
    Server::serve_engine(engine, HttpConfig::default()).await
}

/// The modern `_meta`, declaring the extension (and form elicitation) when `declared`.
fn meta(declared: bool) -> Value {
    let caps = match declared {
        true => json!({"elicitation": {"form": {}}, "extensions": {EXTENSION: {}}}),
        false => json!({"elicitation": {"form": {}}}),
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps
    })
}

/// A modern request with its headers; `name` for a `tools/call`.
async fn modern(
    s: &Server,
    method: &str,
    mut params: Value,
    declared: bool,
    zone: Option<&str>,
) -> (StatusCode, Value) {
    params["_meta"] = meta(declared);
    let name = params["name"].as_str().map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = s
        .post(body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        req = req.header("mcp-name", &name);
    }
    if let Some(zone) = zone {
        req = req.header("mcp-param-zone", zone);
    }
    let resp = req.send().await;
    (resp.status, resp.json().await)
}

fn tool_names(list: &Value) -> Vec<&str> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect()
}

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("{name} not listed: {list}"))
}

fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"))
}

#[tokio::test]
async fn the_server_declares_the_extension_in_both_eras() {
    bounded(async {
        let s = server().await;
        let (_, discover) = modern(&s, "server/discover", json!({}), false, None).await;
        assert_eq!(
            discover["result"]["capabilities"]["extensions"][EXTENSION],
            json!({}),
            "{discover}"
        );
        let init = s.post(init_body("2025-11-25")).send().await.json().await;
        assert_eq!(
            init["result"]["capabilities"]["extensions"][EXTENSION],
            json!({}),
            "{init}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_declaring_client_sees_every_secure_schema_and_another_no_tool_it_cannot_call() {
    bounded(async {
        let s = server().await;
        let (_, list) = modern(&s, "tools/list", json!({}), true, None).await;
        let sql = tool(&list, "execute_sql");
        assert_eq!(sql["secureInputSchema"]["required"], json!(["instance"]));
        // The model's schema names no secure parameter.
        assert!(sql["inputSchema"]["properties"].get("instance").is_none(), "{sql}");
        assert_eq!(tool(&list, "audited")["secureInputSchema"]["type"], "object");

        let (_, plain) = modern(&s, "tools/list", json!({}), false, None).await;
        let names = tool_names(&plain);
        assert!(
            !names.contains(&"execute_sql") && !names.contains(&"approve"),
            "{names:?}"
        );
        let audited = tool(&plain, "audited");
        assert!(audited.get("secureInputSchema").is_none(), "{audited}");
        // Each list comes from its own cached page: asking again gives the same.
        let (_, again) = modern(&s, "tools/list", json!({}), true, None).await;
        assert_eq!(again, list);
    })
    .await;
}

#[tokio::test]
async fn a_call_with_its_secure_arguments_reaches_the_handler_typed() {
    bounded(async {
        let s = server().await;
        let params = json!({"name": "execute_sql", "arguments": {"query": "SELECT 1"},
                            "secureArguments": {"instance": "db-prod-04", "zone": "eu-1"}});
        let (status, answer) = modern(&s, "tools/call", params, true, Some("eu-1")).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(text(&answer), "SELECT 1 on db-prod-04 in eu-1");
        // Optional secure parameters: none sent is `{}`, to any client.
        let (_, none) = modern(
            &s,
            "tools/call",
            json!({"name": "audited", "arguments": {}}),
            false,
            None,
        )
        .await;
        assert_eq!(text(&none), "ticket none");
        let with = json!({"name": "audited", "arguments": {}, "secureArguments": {"ticket": "T-9"}});
        let (_, answer) = modern(&s, "tools/call", with, true, None).await;
        assert_eq!(text(&answer), "ticket T-9");
    })
    .await;
}

#[tokio::test]
async fn a_client_without_the_extension_is_told_what_it_lacks() {
    bounded(async {
        let s = server().await;
        let params = json!({"name": "execute_sql", "arguments": {"query": "SELECT 1"},
                            "secureArguments": {"instance": "db-prod-04"}});
        let (status, answer) = modern(&s, "tools/call", params, false, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert_eq!(answer["error"]["code"], -32021);
        assert_eq!(
            answer["error"]["data"]["requiredCapabilities"],
            json!({"extensions": {EXTENSION: {}}})
        );
    })
    .await;
}

#[tokio::test]
async fn refusals_are_protocol_errors_that_name_no_value() {
    bounded(async {
        let s = server().await;
        let secret = "db-payroll-77";
        let cases = [
            // The model wrote a secure parameter: never taken from `arguments`.
            (
                "execute_sql",
                json!({"query": "SELECT 1", "instance": secret}),
                json!({"instance": "db-prod-04"}),
                "\"instance\"",
            ),
            // A required one missing.
            (
                "execute_sql",
                json!({"query": "SELECT 1"}),
                json!({"zone": secret}),
                "missing required",
            ),
            // One that fails the schema.
            (
                "execute_sql",
                json!({"query": "SELECT 1"}),
                json!({"instance": 77}),
                "\"type\"",
            ),
            (
                "execute_sql",
                json!({"query": "SELECT 1"}),
                json!({"instance": "db-7"}),
                "\"minLength\"",
            ),
            // Not an object.
            (
                "execute_sql",
                json!({"query": "SELECT 1"}),
                json!(secret),
                "must be an object",
            ),
            // To a tool that has no secure parameter.
            ("echo", json!({}), json!({"token": secret}), "takes no secureArguments"),
        ];
        for (name, arguments, secure, says) in cases {
            let params = json!({"name": name, "arguments": arguments, "secureArguments": secure});
            let (status, answer) = modern(&s, "tools/call", params, true, None).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
            assert_eq!(answer["error"]["code"], -32602, "{answer}");
            let message = answer["error"]["message"].as_str().expect("message");
            assert!(message.contains(says), "{message} should say {says}");
            assert!(!answer.to_string().contains(secret), "{answer}");
            assert!(!answer.to_string().contains("db-7\""), "{answer}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_secure_parameter_in_a_header_must_agree_with_the_secure_arguments() {
    bounded(async {
        let s = server().await;
        let params = json!({"name": "execute_sql", "arguments": {"query": "SELECT 1"},
                            "secureArguments": {"instance": "db-prod-04", "zone": "eu-1"}});
        let (status, answer) = modern(&s, "tools/call", params.clone(), true, Some("us-2")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
        assert_eq!(answer["error"]["code"], -32020);
        let (status, answer) = modern(&s, "tools/call", params, true, None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "a missing header: {answer}");
        assert_eq!(answer["error"]["code"], -32020);
    })
    .await;
}

#[tokio::test]
async fn a_retry_after_input_required_sends_the_secure_arguments_again() {
    bounded(async {
        let s = server().await;
        let secure = json!({"instance": "db-prod-04"});
        let first = json!({"name": "approve", "arguments": {}, "secureArguments": secure});
        let (_, asked) = modern(&s, "tools/call", first, true, None).await;
        assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
        // The sealed state binds the call, secure arguments included, and carries none of them.
        let state = asked["result"]["requestState"]
            .as_str()
            .expect("requestState")
            .to_owned();
        assert!(!asked.to_string().contains("db-prod-04"), "{asked}");
        let responses = json!({"ok": {"action": "accept", "content": {}}});
        let retry = |secure: Value| {
            json!({"name": "approve", "arguments": {}, "secureArguments": secure,
                   "inputResponses": responses, "requestState": state})
        };
        let (_, done) = modern(&s, "tools/call", retry(secure.clone()), true, None).await;
        assert_eq!(text(&done), "approved on db-prod-04", "{done}");
        // Other secure arguments on the retry: the state was not sealed for them.
        let (_, other) = modern(
            &s,
            "tools/call",
            retry(json!({"instance": "db-payroll-77"})),
            true,
            None,
        )
        .await;
        assert!(other.get("error").is_some(), "{other}");
        // None at all: a required one is missing.
        let without = json!({"name": "approve", "arguments": {}, "inputResponses": responses, "requestState": state});
        let (status, refused) = modern(&s, "tools/call", without, true, None).await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32602))
        );
    })
    .await;
}

#[tokio::test]
async fn a_legacy_client_declares_the_extension_at_initialize() {
    bounded(async {
        let s = server().await;
        for declared in [true, false] {
            let mut init = init_body("2025-11-25");
            if declared {
                init["params"]["capabilities"]["extensions"] = json!({EXTENSION: {}});
            }
            let resp = s.post(init).send().await;
            let sid = resp.header("mcp-session-id").expect("session").to_owned();
            let send = |id: i64, method: &str, params: Value| {
                s.post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
                    .header("mcp-session-id", &sid)
                    .header("mcp-protocol-version", "2025-11-25")
            };
            let list = send(1, "tools/list", json!({})).send().await.json().await;
            let call = json!({"name": "execute_sql", "arguments": {"query": "SELECT 2"},
                              "secureArguments": {"instance": "db-prod-04"}});
            let answer = send(2, "tools/call", call).send().await;
            assert_eq!(answer.status, StatusCode::OK, "legacy errors are in-band");
            let answer = answer.json().await;
            if declared {
                assert!(tool(&list, "execute_sql").get("secureInputSchema").is_some(), "{list}");
                assert_eq!(text(&answer), "SELECT 2 on db-prod-04 in -");
            } else {
                assert!(!tool_names(&list).contains(&"execute_sql"), "{list}");
                assert_eq!(answer["error"]["code"], -32021, "{answer}");
            }
        }
    })
    .await;
}
