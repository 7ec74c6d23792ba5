//! Extensions and custom methods through the facade: the extension example's server (its
//! `server()`, as its `main` serves it) with the in-process test client in both eras, over stdio
//! (`serve_io` on in-memory pipes) and over Streamable HTTP on a loopback port; and small servers
//! of this file's own for the registration rules and the eras an extension is declared in.

#![cfg(all(feature = "http", feature = "stdio"))]

use mcp_server::prelude::*;
use mcp_server::testing::TestClient;
use mcp_server::{Eras, ExtensionError};
use support::{BOTH, Pipe, Running, SERVER_INFO, bounded, modern_meta, rpc};

mod support;

#[allow(dead_code)]
#[path = "../examples/extension.rs"]
mod extension;

/// The example's extension.
const NOTES: &str = extension::NOTES;

/// The `requiredCapabilities` a -32021 for `id` carries.
fn required(id: &str) -> Value {
    json!({ "requiredCapabilities": { "extensions": { id: {} } } })
}

fn declaring() -> Value {
    json!({ "extensions": { NOTES: {} } })
}

// ------------------------------------------------------------------------ tests

/// The example's own demo runs to its end (it fails on any unexpected answer).
#[tokio::test]
async fn the_example_demo_runs() {
    let server = extension::server().expect("builds");
    bounded(extension::demo(&server)).await.expect("the demo succeeds");
}

/// A declaring client sees the extension with its settings and calls its typed method and the
/// vendor method, in both eras; modern results are decorated, legacy ones are not.
#[tokio::test]
async fn a_declaring_client_uses_the_extension_in_both_eras() {
    bounded(async {
        let server = extension::server().expect("builds");
        for (n, revision) in BOTH.into_iter().enumerate() {
            let client = server
                .test_client()
                .revision(revision)
                .extension(NOTES, json!({}))
                .discover(true)
                .connect()
                .await
                .expect("connects");
            let declared = match revision.era() {
                Era::Legacy => client.initialize_result(),
                Era::Modern => client.discover_result(),
            }
            .expect("an initialize or discover result");
            assert_eq!(
                declared["capabilities"]["extensions"][NOTES],
                json!({"maxHits": 10}),
                "{revision}: {declared}"
            );

            let note = format!("note of {revision}");
            client
                .call_tool("add_note", json!({ "text": note }))
                .await
                .expect("add_note");
            let hits = client
                .request("com.example/notes.search", json!({ "query": revision.as_str() }))
                .await
                .expect("search");
            assert_eq!(hits["hits"], json!([note]), "{revision}: {hits}");
            let count = client
                .request("com.example/notes.count", json!({}))
                .await
                .expect("count");
            assert_eq!(count["count"], json!(n + 1), "{revision}: {count}");

            for result in [&hits, &count] {
                match revision.era() {
                    Era::Modern => {
                        assert_eq!(result["resultType"], "complete", "{result}");
                        assert_eq!(result["_meta"][SERVER_INFO]["name"], "notes-extension", "{result}");
                    }
                    Era::Legacy => {
                        assert!(result.get("resultType").is_none(), "{result}");
                        assert!(result.get("_meta").is_none(), "{result}");
                    }
                }
            }
        }
    })
    .await;
}

/// A client that did not declare the extension (or declared another one) gets -32021 naming
/// it, in both eras, and still calls the vendor method of no extension.
#[tokio::test]
async fn an_undeclared_client_gets_32021_and_still_counts() {
    bounded(async {
        let server = extension::server().expect("builds");
        for revision in BOTH {
            let plain = server.test_client().revision(revision).connect();
            let other = server
                .test_client()
                .revision(revision)
                .extension("com.example/other", json!({}))
                .connect();
            for client in [plain.await.expect("connects"), other.await.expect("connects")] {
                let e = rpc(client.request("com.example/notes.search", json!({"query": "x"})).await);
                assert_eq!(e.code, -32021, "{revision}: {e:?}");
                assert_eq!(e.data, Some(required(NOTES)), "{revision}: {e:?}");
                assert!(e.message.contains(NOTES), "{revision}: {e:?}");

                let count = client
                    .request("com.example/notes.count", json!({}))
                    .await
                    .expect("count answers every client");
                assert_eq!(count["count"], 0, "{revision}: {count}");
            }
        }
    })
    .await;
}

/// Typed params that do not fit the params schema are -32602 naming the problem; an unknown
/// method under the extension's prefix stays -32601.
#[tokio::test]
async fn bad_params_are_32602_and_unknown_methods_32601() {
    bounded(async {
        let server = extension::server().expect("builds");
        for revision in BOTH {
            let client = server
                .test_client()
                .revision(revision)
                .extension(NOTES, json!({}))
                .connect()
                .await
                .expect("connects");

            let wrong_type = rpc(client.request("com.example/notes.search", json!({"query": 5})).await);
            assert_eq!(wrong_type.code, -32602, "{revision}: {wrong_type:?}");
            assert!(
                wrong_type.message.starts_with("Invalid params")
                    && wrong_type.message.contains("/query")
                    && wrong_type.message.contains("string"),
                "{revision}: {wrong_type:?}"
            );

            let missing = rpc(client.request("com.example/notes.search", json!({})).await);
            assert_eq!(missing.code, -32602, "{revision}: {missing:?}");
            assert!(
                missing.message.contains("query") && missing.message.contains("required"),
                "{revision}: {missing:?}"
            );

            for unknown in ["com.example/notes.delete", "com.example/unknown"] {
                let e = rpc(client.request(unknown, json!({})).await);
                assert_eq!(e.code, -32601, "{revision} {unknown}: {e:?}");
                assert!(e.message.contains(unknown), "{revision}: {e:?}");
            }
        }
    })
    .await;
}

/// Over stdio: a legacy handshake declaring the extension, then its method; a modern request
/// whose `_meta` declares it; a modern one whose `_meta` does not.
#[tokio::test]
async fn stdio_serves_the_extension_in_both_eras() {
    bounded(async {
        let server = extension::server().expect("builds");

        let mut legacy = Pipe::start(&server);
        let init = legacy
            .call(
                1,
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": declaring(),
                    "clientInfo": {"name": "stdio-test", "version": "1"}
                }),
            )
            .await;
        assert_eq!(
            init["result"]["capabilities"]["extensions"][NOTES],
            json!({"maxHits": 10}),
            "{init}"
        );
        legacy.notify("notifications/initialized", json!({})).await;
        let added = legacy
            .call(
                2,
                "tools/call",
                json!({"name": "add_note", "arguments": {"text": "piped legacy note"}}),
            )
            .await;
        assert_eq!(added["result"]["content"][0]["text"], "1 notes", "{added}");
        let hits = legacy
            .call(3, "com.example/notes.search", json!({"query": "piped"}))
            .await;
        assert_eq!(hits["result"]["hits"], json!(["piped legacy note"]), "{hits}");
        legacy.finish().await;

        let mut modern = Pipe::start(&server);
        let hits = modern
            .call(
                1,
                "com.example/notes.search",
                json!({"query": "piped", "_meta": modern_meta(declaring())}),
            )
            .await;
        assert_eq!(hits["result"]["hits"], json!(["piped legacy note"]), "{hits}");
        assert_eq!(hits["result"]["resultType"], "complete", "{hits}");
        assert_eq!(
            hits["result"]["_meta"][SERVER_INFO]["name"], "notes-extension",
            "{hits}"
        );
        let refused = modern
            .call(
                2,
                "com.example/notes.search",
                json!({"query": "piped", "_meta": modern_meta(json!({}))}),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32021, "{refused}");
        assert_eq!(refused["error"]["data"], required(NOTES), "{refused}");
        let count = modern
            .call(3, "com.example/notes.count", json!({"_meta": modern_meta(json!({}))}))
            .await;
        assert_eq!(count["result"]["count"], 1, "{count}");
        modern.finish().await;
    })
    .await;
}

/// Over Streamable HTTP: the method with its `Mcp-Method` header is 200; without the extension
/// in `clientCapabilities` 400 with -32021; an unknown method 404 with -32601; a header that
/// disagrees with the body 400 with -32020; `server/discover` declares the extension; a legacy
/// session that declared it at `initialize` calls it too.
#[tokio::test]
async fn http_serves_the_extension_with_its_statuses() {
    bounded(async {
        let server = Running::start(extension::server().expect("builds")).await;

        let added = server
            .modern(
                1,
                "tools/call",
                json!({"name": "add_note", "arguments": {"text": "wire note"}}),
                json!({}),
            )
            .await;
        assert_eq!(added.status, 200, "{:?}", added.message);

        let hits = server
            .modern(2, "com.example/notes.search", json!({"query": "wire"}), declaring())
            .await;
        assert_eq!(hits.status, 200, "{:?}", hits.message);
        let result = &hits.message()["result"];
        assert_eq!(result["hits"], json!(["wire note"]), "{result}");
        assert_eq!(result["resultType"], "complete", "{result}");

        let refused = server
            .modern(3, "com.example/notes.search", json!({"query": "wire"}), json!({}))
            .await;
        assert_eq!(refused.status, 400, "{:?}", refused.message);
        assert_eq!(refused.message()["error"]["code"], -32021);
        assert_eq!(refused.message()["error"]["data"], required(NOTES));

        let unknown = server
            .modern(4, "com.example/notes.delete", json!({}), declaring())
            .await;
        assert_eq!(unknown.status, 404, "{:?}", unknown.message);
        assert_eq!(unknown.message()["error"]["code"], -32601);

        // The header must name the method the body names, custom methods included.
        let body = json!({
            "jsonrpc": "2.0", "id": 5, "method": "com.example/notes.search",
            "params": {"query": "wire", "_meta": modern_meta(declaring())}
        });
        let mismatch = server
            .post(
                &[
                    ("MCP-Protocol-Version", "2026-07-28"),
                    ("Mcp-Method", "com.example/notes.count"),
                ],
                &body,
            )
            .await;
        assert_eq!(mismatch.status, 400, "{:?}", mismatch.message);
        assert_eq!(mismatch.message()["error"]["code"], -32020);

        let discover = server.modern(6, "server/discover", json!({}), json!({})).await;
        assert_eq!(discover.status, 200, "{:?}", discover.message);
        assert_eq!(
            discover.message()["result"]["capabilities"]["extensions"][NOTES],
            json!({"maxHits": 10})
        );

        // Legacy: the session declared the extension at initialize.
        let (init, session) = server
            .legacy_handshake(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": declaring(),
                "clientInfo": {"name": "http-test", "version": "1"}
            }))
            .await;
        assert_eq!(
            init.message()["result"]["capabilities"]["extensions"][NOTES],
            json!({"maxHits": 10})
        );
        let hits = server
            .legacy(&session, 8, "com.example/notes.search", json!({"query": "wire"}))
            .await;
        assert_eq!(hits.status, 200, "{:?}", hits.message);
        assert_eq!(hits.message()["result"]["hits"], json!(["wire note"]));

        server.stop().await;
    })
    .await;
}

fn noop(name: &str) -> Result<CustomMethod, ExtensionError> {
    CustomMethod::new(name, |_params, _ctx| async { Ok(json!({})) })
}

/// Invalid identifiers, reserved prefixes, core method names, settings that are no object and
/// duplicates are refused with the variant that says why (by the constructor, or by `build`).
#[test]
fn registrations_are_refused_with_their_reason() {
    assert!(
        matches!(Extension::new("notes"), Err(ExtensionError::InvalidId(id)) if id == "notes"),
        "an identifier without a prefix"
    );
    assert!(
        matches!(
            Extension::new("io.modelcontextprotocol/mine"),
            Err(ExtensionError::Reserved(id)) if id == "io.modelcontextprotocol/mine"
        ),
        "a reserved prefix"
    );
    assert!(
        matches!(
            Extension::new("io.modelcontextprotocol/tasks"),
            Err(ExtensionError::Builtin(_))
        ),
        "the tasks extension is the runtime's"
    );
    assert!(
        matches!(
            noop("tools/call"),
            Err(ExtensionError::InvalidMethod(name, _)) if name == "tools/call"
        ),
        "a core method"
    );
    for reserved in ["rpc.discover", "notifications/notes", "", "com.example/a b"] {
        assert!(
            matches!(noop(reserved), Err(ExtensionError::InvalidMethod(..))),
            "{reserved:?}"
        );
    }
    let settings = Extension::new("com.example/notes").expect("valid").settings(json!([1]));
    assert!(matches!(settings, Err(ExtensionError::SettingsNotObject(_))));
    // A null in settings cannot be declared to 2026-07-28 clients (their schema's JSONObject has
    // none); declared to legacy clients only, it can.
    let with_null = || {
        Extension::new("com.example/nulls")
            .expect("valid")
            .settings(json!({"values": [null, "b"]}))
            .expect("an object")
    };
    let both = McpServer::builder().extension(with_null()).build();
    assert!(
        matches!(&both, Err(ServerError::Extension(ExtensionError::SettingsNotModern(id))) if id == "com.example/nulls"),
        "{both:?}"
    );
    assert!(
        McpServer::builder()
            .extension(with_null().eras(Eras::Legacy))
            .build()
            .is_ok()
    );

    // Duplicates are found by the builder.
    let method = || noop("com.example/notes.count").expect("a valid name");
    let twice = McpServer::builder().method(method()).method(method()).build();
    assert!(
        matches!(
            &twice,
            Err(ServerError::Extension(ExtensionError::DuplicateMethod(name))) if name == "com.example/notes.count"
        ),
        "{twice:?}"
    );
    let ext = || Extension::new("com.example/notes").expect("valid").method(method());
    let in_both = McpServer::builder().extension(ext()).method(method()).build();
    assert!(
        matches!(
            &in_both,
            Err(ServerError::Extension(ExtensionError::DuplicateMethod(_)))
        ),
        "{in_both:?}"
    );
    let declared_twice = McpServer::builder().extension(ext()).extension(ext()).build();
    assert!(
        matches!(
            &declared_twice,
            Err(ServerError::Extension(ExtensionError::DuplicateExtension(id))) if id == "com.example/notes"
        ),
        "{declared_twice:?}"
    );
    let no_common_era = Extension::new("com.example/dead")
        .expect("valid")
        .eras(Eras::Modern)
        .method(noop("com.example/dead.x").expect("valid").eras(Eras::Legacy));
    let dead = McpServer::builder().extension(no_common_era).build();
    assert!(
        matches!(&dead, Err(ServerError::Extension(ExtensionError::InvalidMethod(..)))),
        "{dead:?}"
    );
    // The same extension registered once builds.
    assert!(McpServer::builder().extension(ext()).build().is_ok());
}

const MODERN_ONLY: &str = "com.example/modern";

fn eras_server() -> McpServer {
    let modern = Extension::new(MODERN_ONLY)
        .expect("valid")
        .settings(json!({"level": 2}))
        .expect("an object")
        .eras(Eras::Modern)
        .method(
            CustomMethod::new("com.example/modern.ping", |_p, _c| async { Ok(json!({"pong": true})) }).expect("valid"),
        );
    let legacy_only = CustomMethod::new("com.example/legacy.ping", |_p, ctx: Ctx| async move {
        Ok(json!({"era": format!("{:?}", ctx.era())}))
    })
    .expect("valid")
    .eras(Eras::Legacy);
    McpServer::builder()
        .name("eras")
        .version("1")
        .extension(modern)
        .method(legacy_only)
        .build()
        .expect("builds")
}

/// A modern-only extension is declared in `server/discover` but not in a legacy `initialize`
/// result, and its method is -32601 for a legacy client even one that declared it; a
/// legacy-only vendor method is the mirror image.
#[tokio::test]
async fn a_modern_only_extension_is_invisible_to_legacy_clients() {
    bounded(async {
        let server = eras_server();

        let legacy = server
            .test_client()
            .legacy()
            .extension(MODERN_ONLY, json!({}))
            .connect()
            .await
            .expect("connects");
        let init = legacy.initialize_result().expect("an initialize result");
        assert!(
            init["capabilities"]
                .get("extensions")
                .and_then(|e| e.get(MODERN_ONLY))
                .is_none(),
            "{init}"
        );
        let e = rpc(legacy.request("com.example/modern.ping", json!({})).await);
        assert_eq!(e.code, -32601, "{e:?}");
        let ping = legacy
            .request("com.example/legacy.ping", json!({}))
            .await
            .expect("the legacy-only method");
        assert_eq!(ping["era"], "Legacy");

        let modern = server
            .test_client()
            .modern()
            .extension(MODERN_ONLY, json!({}))
            .discover(true)
            .connect()
            .await
            .expect("connects");
        let discover = modern.discover_result().expect("a discover result");
        assert_eq!(
            discover["capabilities"]["extensions"][MODERN_ONLY],
            json!({"level": 2}),
            "{discover}"
        );
        let pong = modern
            .request("com.example/modern.ping", json!({}))
            .await
            .expect("the modern-only method");
        assert_eq!(pong["pong"], true);
        let e = rpc(modern.request("com.example/legacy.ping", json!({})).await);
        assert_eq!(e.code, -32601, "{e:?}");
    })
    .await;
}

/// An extension serving undeclared clients answers them; a custom method's handler gets the
/// caller's context (principal, era) and its params without `_meta`.
#[tokio::test]
async fn an_open_extension_answers_undeclared_clients_with_their_context() {
    bounded(async {
        let echo = CustomMethod::new("com.example/open.echo", |params, ctx: Ctx| async move {
            Ok(json!({
                "params": Value::Object(params),
                "principal": ctx.principal(),
                "era": format!("{:?}", ctx.era()),
            }))
        })
        .expect("valid");
        let open = Extension::new("com.example/open")
            .expect("valid")
            .serving_undeclared_clients()
            .method(echo);
        let server = McpServer::builder()
            .name("open")
            .version("1")
            .extension(open)
            .build()
            .expect("builds");
        for revision in BOTH {
            let client = TestClient::builder(&server)
                .revision(revision)
                .principal("ada")
                .connect()
                .await
                .expect("connects");
            let echoed = client
                .request("com.example/open.echo", json!({"x": 1}))
                .await
                .expect("answers an undeclared client");
            assert_eq!(echoed["params"], json!({"x": 1}), "{revision}: {echoed}");
            assert_eq!(echoed["principal"], "ada");
            assert_eq!(echoed["era"], format!("{:?}", revision.era()));
        }
    })
    .await;
}

/// A server's own extension is declared beside the tasks extension the runtime declares for a
/// task-capable tool (neither replaces the other).
#[tokio::test]
async fn the_tasks_extension_and_a_custom_one_are_declared_together() {
    bounded(async {
        let server = McpServer::builder()
            .name("both")
            .version("1")
            .tool(
                Tool::new("slow", "May run as a task", |_args, _ctx| async { "done" })
                    .task_support(TaskSupport::Optional),
            )
            .extension(Extension::new(NOTES).expect("valid"))
            .build()
            .expect("builds");
        let client = server
            .test_client()
            .modern()
            .discover(true)
            .connect()
            .await
            .expect("connects");
        let discover = client.discover_result().expect("a discover result");
        let extensions = &discover["capabilities"]["extensions"];
        assert_eq!(extensions[NOTES], json!({}), "{discover}");
        assert!(extensions.get("io.modelcontextprotocol/tasks").is_some(), "{discover}");
    })
    .await;
}

/// Custom methods run through the middleware chain like core methods (a layer sees them, with
/// the handler's outcome); a request the route refuses (-32021 for an undeclared extension,
/// -32601 for an unknown method) is answered before the chain and never seen by it.
#[tokio::test]
async fn custom_methods_go_through_the_middleware_chain() {
    use std::sync::{Arc, Mutex};

    bounded(async {
        let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
        let log = seen.clone();
        let search =
            CustomMethod::new("com.example/notes.search", |_p, _c| async { Ok(json!({"hits": []})) }).expect("valid");
        let server = McpServer::builder()
            .name("layered")
            .version("1")
            .extension(Extension::new(NOTES).expect("valid").method(search))
            .middleware(move |request: Inbound, next: Next| {
                let log = log.clone();
                async move {
                    let method = request.method().to_owned();
                    let outcome = next.run(request).await;
                    let ended = match outcome.rpc_error() {
                        Some(e) => format!("error {}", e.code),
                        None => "ok".to_owned(),
                    };
                    log.lock().expect("log").push((method, ended));
                    outcome
                }
            })
            .build()
            .expect("builds");
        let declaring = server
            .test_client()
            .modern()
            .extension(NOTES, json!({}))
            .connect()
            .await
            .expect("connects");
        let other = server.test_client().modern().connect().await.expect("connects");
        declaring
            .request("com.example/notes.search", json!({}))
            .await
            .expect("answered");
        assert_eq!(
            rpc(other.request("com.example/notes.search", json!({})).await).code,
            -32021
        );
        assert_eq!(
            rpc(declaring.request("com.example/notes.nope", json!({})).await).code,
            -32601
        );
        let seen = seen.lock().expect("log").clone();
        assert_eq!(seen, vec![("com.example/notes.search".to_owned(), "ok".to_owned())]);
    })
    .await;
}

/// A custom method registered `cacheable()` gets the server's cache hint on its complete
/// 2026-07-28 results (never in a legacy session); a plain one never does.
#[tokio::test]
async fn cacheable_custom_methods_carry_the_cache_hint() {
    let plain = CustomMethod::new("com.example/plain", |_p, _c| async { Ok(json!({ "x": 1 })) });
    let cached = CustomMethod::new("com.example/cached", |_p, _c| async { Ok(json!({ "x": 1 })) });
    let (plain, cached) = (
        plain.unwrap_or_else(|e| panic!("{e}")),
        cached.unwrap_or_else(|e| panic!("{e}")),
    );
    assert!(!plain.is_cacheable());
    let cached = cached.cacheable();
    assert!(cached.is_cacheable());
    let server = McpServer::builder()
        .method(plain)
        .method(cached)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    for revision in BOTH {
        let client = server
            .test_client()
            .revision(revision)
            .connect()
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let modern = client.era() == Era::Modern;
        let plain = client
            .request("com.example/plain", json!({}))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            plain.get("ttlMs").is_none() && plain.get("cacheScope").is_none(),
            "{revision:?}: {plain}"
        );
        let cached = client
            .request("com.example/cached", json!({}))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached.get("ttlMs").is_some(), modern, "{revision:?}: {cached}");
        assert_eq!(cached.get("cacheScope").is_some(), modern, "{revision:?}: {cached}");
    }
}
