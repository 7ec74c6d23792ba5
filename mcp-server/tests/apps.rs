//! MCP Apps through the facade: the apps example's server (its `server()`, as its `main` serves
//! it) with the in-process test client and over Streamable HTTP in both eras, and small servers
//! of this file's own for what is refused at registration.

#![cfg(feature = "http")]

use mcp_server::apps::{AppResource, AppsError, Csp, MIME_TYPE, Permissions, ToolUi, ToolVisibility, client_supports};
use mcp_server::catalog::RegistryError;
use mcp_server::prelude::*;
use mcp_server::{Extension, ExtensionError};
use support::{BOTH, Running, bounded};

mod support;

#[allow(dead_code)]
#[path = "../examples/apps.rs"]
mod apps;

const EXTENSION: &str = "io.modelcontextprotocol/ui";
const VIEW: &str = "ui://counter/view";

/// What the server declares: the extension, with no settings.
fn declaration() -> Value {
    json!({})
}

/// What a host that renders HTML views declares.
fn host_declaration() -> Value {
    json!({ "mimeTypes": [MIME_TYPE] })
}

/// The handshake result of a client of `revision` (`initialize` or `server/discover`).
async fn handshake(server: &McpServer, revision: Revision) -> Value {
    let client = server
        .test_client()
        .revision(revision)
        .discover(true)
        .connect()
        .await
        .expect("connects");
    match client.era() {
        Era::Legacy => client.initialize_result(),
        Era::Modern => client.discover_result(),
    }
    .expect("a handshake result")
}

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("{name} is listed: {list}"))
}

fn refused(r: Result<McpServer, ServerError>) -> AppsError {
    match r {
        Err(ServerError::Registry(RegistryError::Apps(e))) => e,
        other => panic!("expected an MCP Apps registration error, got {other:?}"),
    }
}

fn open_tool() -> Tool {
    Tool::new("open", "Opens the view", |_, _| async { "opened" })
}

// ------------------------------------------------------------------------ the example

/// Both eras: the extension is declared (with no settings); both tools are listed with their
/// `_meta.ui` (the app-only one too: hosts filter, the server does not); the view reads as
/// `text/html;profile=mcp-app` with its `_meta.ui`; the app-only tool answers and keeps the count.
#[tokio::test]
async fn the_example_in_both_eras() {
    bounded(async {
        let server = apps::server().expect("builds");
        let mut expected = 0;
        for revision in BOTH {
            let declared = handshake(&server, revision).await;
            assert_eq!(
                declared["capabilities"]["extensions"][EXTENSION],
                declaration(),
                "{revision:?}"
            );

            let client = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");
            let tools = client.request("tools/list", json!({})).await.expect("tools/list");
            assert_eq!(
                tool(&tools, "counter_show")["_meta"]["ui"],
                json!({ "resourceUri": VIEW })
            );
            assert_eq!(tool(&tools, "counter_show")["_meta"]["ui/resourceUri"], VIEW);
            assert_eq!(
                tool(&tools, "counter_increment")["_meta"]["ui"],
                json!({ "resourceUri": VIEW, "visibility": ["app"] })
            );

            let resources = client
                .request("resources/list", json!({}))
                .await
                .expect("resources/list");
            let view = &resources["resources"][0];
            assert_eq!(
                (view["uri"].as_str(), view["mimeType"].as_str()),
                (Some(VIEW), Some(MIME_TYPE))
            );
            assert_eq!(view["_meta"]["ui"], json!({ "prefersBorder": true }));

            let read = client
                .request("resources/read", json!({ "uri": VIEW }))
                .await
                .expect("resources/read");
            let content = &read["contents"][0];
            assert_eq!(content["mimeType"], MIME_TYPE);
            assert_eq!(content["_meta"]["ui"], json!({ "prefersBorder": true }));
            let html = content["text"].as_str().expect("HTML text");
            assert!(html.starts_with("<!doctype html>") && html.contains("counter_increment"));

            let shown = client.call_tool("counter_show", json!({})).await.expect("counter_show");
            assert_eq!(shown.structured_content, Some(json!({ "count": expected })));
            let added = client
                .call_tool("counter_increment", json!({ "by": 2 }))
                .await
                .expect("counter_increment");
            expected += 2;
            assert_eq!(added.structured_content, Some(json!({ "count": expected })));
            // Arguments are still validated for the app's calls.
            let bad = client
                .call_tool("counter_increment", json!({ "by": 0 }))
                .await
                .expect("a tool result");
            assert!(bad.is_error, "{bad:?}");
        }
    })
    .await;
}

/// Over Streamable HTTP, as a host reaches it: the legacy `initialize` and a 2026-07-28
/// `server/discover` declare the extension; the view is read in both.
#[tokio::test]
async fn over_http_in_both_eras() {
    bounded(async {
        let running = Running::start(apps::server().expect("builds")).await;
        let host = json!({ "extensions": { EXTENSION: host_declaration() } });
        let params = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": host,
            "clientInfo": { "name": "host", "version": "1" }
        });
        let (init, session) = running.legacy_handshake(params).await;
        assert_eq!(
            init.message()["result"]["capabilities"]["extensions"][EXTENSION],
            declaration()
        );
        let read = running
            .legacy(&session, 1, "resources/read", json!({ "uri": VIEW }))
            .await;
        assert_eq!(read.message()["result"]["contents"][0]["mimeType"], MIME_TYPE);

        let discover = running.modern(2, "server/discover", json!({}), host.clone()).await;
        assert_eq!(discover.status, 200, "{discover:?}");
        assert_eq!(
            discover.message()["result"]["capabilities"]["extensions"][EXTENSION],
            declaration()
        );
        let call = running
            .modern(
                3,
                "tools/call",
                json!({ "name": "counter_increment", "arguments": { "by": 1 } }),
                host,
            )
            .await;
        assert_eq!(call.message()["result"]["structuredContent"], json!({ "count": 1 }));
        running.stop().await;
    })
    .await;
}

// ------------------------------------------------------------------------ declaration

/// No view, no linked tool: nothing declared. A view added at run time declares it from then on.
#[tokio::test]
async fn declared_only_with_an_app_and_from_run_time_additions() {
    bounded(async {
        let server = McpServer::builder().tool(open_tool()).build().expect("builds");
        for revision in BOTH {
            let declared = handshake(&server, revision).await;
            assert!(
                declared["capabilities"]["extensions"].get(EXTENSION).is_none(),
                "{declared}"
            );
        }
        let view = AppResource::blob("ui://later/view", "later", "PCFkb2N0eXBlIGh0bWw+").expect("a ui:// URI");
        server.add_resource(view).expect("a valid view");
        for revision in BOTH {
            let declared = handshake(&server, revision).await;
            assert_eq!(declared["capabilities"]["extensions"][EXTENSION], declaration());
        }
        let client = server.test_client().modern().connect().await.expect("connects");
        let read = client
            .request("resources/read", json!({ "uri": "ui://later/view" }))
            .await
            .expect("read");
        assert_eq!(read["contents"][0]["blob"], "PCFkb2N0eXBlIGh0bWw+");
        assert_eq!(read["contents"][0]["mimeType"], MIME_TYPE);
        assert!(read["contents"][0].get("_meta").is_none(), "{read}");
    })
    .await;
}

/// The extension is the runtime's: declaring it by hand is refused.
#[test]
fn the_extension_cannot_be_declared_by_hand() {
    assert!(matches!(Extension::new(EXTENSION), Err(ExtensionError::Builtin(_))));
}

/// A full `_meta.ui` on the list entry and the content; the other `_meta` keys of a tool stay.
#[tokio::test]
async fn every_field_reaches_the_wire() {
    bounded(async {
        let view = AppResource::html("ui://full/view", "full", "<!doctype html><p>full</p>")
            .expect("a ui:// URI")
            .title("Full")
            .csp(
                Csp::new()
                    .connect("https://api.example.com")
                    .resource("https://*.cdn.example.com")
                    .frame("https://player.example.com")
                    .base_uri("https://cdn.example.com"),
            )
            .permissions(Permissions::new().microphone().clipboard_write())
            .domain("abc.apps.example.com")
            .prefers_border(false);
        let want = json!({
            "csp": {
                "connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://*.cdn.example.com"],
                "frameDomains": ["https://player.example.com"],
                "baseUriDomains": ["https://cdn.example.com"]
            },
            "permissions": { "microphone": {}, "clipboardWrite": {} },
            "domain": "abc.apps.example.com",
            "prefersBorder": false
        });
        let linked = open_tool()
            .meta(json!({ "com.example/keep": true }))
            .ui(ToolUi::new("ui://full/view")
                .expect("a ui:// URI")
                .visibility([ToolVisibility::Model]));
        let server = McpServer::builder()
            .resource(view)
            .tool(linked)
            .build()
            .expect("builds");
        let client = server.test_client().legacy().connect().await.expect("connects");
        let listed = client.request("resources/list", json!({})).await.expect("list");
        assert_eq!(listed["resources"][0]["_meta"]["ui"], want);
        let read = client
            .request("resources/read", json!({ "uri": "ui://full/view" }))
            .await
            .expect("read");
        assert_eq!(read["contents"][0]["_meta"]["ui"], want);
        let tools = client.request("tools/list", json!({})).await.expect("tools");
        let meta = &tool(&tools, "open")["_meta"];
        assert_eq!(meta["com.example/keep"], true);
        assert_eq!(
            meta["ui"],
            json!({ "resourceUri": "ui://full/view", "visibility": ["model"] })
        );
    })
    .await;
}

/// A host's declaration is visible to handlers: `client_supports`.
#[tokio::test]
async fn handlers_see_whether_the_host_renders_apps() {
    bounded(async {
        let view = AppResource::html("ui://v/view", "v", "<!doctype html>").expect("a ui:// URI");
        let tool = Tool::new(
            "where",
            "Says whether the host renders apps",
            |_, ctx: Ctx| async move {
                if client_supports(ctx.client_capabilities()) {
                    "rendered in the view"
                } else {
                    "plain text"
                }
            },
        )
        .ui(ToolUi::new("ui://v/view").expect("a ui:// URI"));
        let server = McpServer::builder().resource(view).tool(tool).build().expect("builds");
        for revision in BOTH {
            let host = server
                .test_client()
                .revision(revision)
                .extension(EXTENSION, host_declaration())
                .connect()
                .await
                .expect("connects");
            let plain = server
                .test_client()
                .revision(revision)
                .connect()
                .await
                .expect("connects");
            let text = |r: CallToolResult| serde_json::to_value(&r.content[0]).expect("JSON")["text"].clone();
            assert_eq!(
                text(host.call_tool("where", json!({})).await.expect("call")),
                "rendered in the view"
            );
            assert_eq!(
                text(plain.call_tool("where", json!({})).await.expect("call")),
                "plain text"
            );
        }
    })
    .await;
}

// ------------------------------------------------------------------------ refused

#[test]
fn a_ui_resource_with_another_mime_type_is_refused() {
    for mime in ["text/html", "text/plain", "text/html; profile=mcp-app"] {
        let wrong = Resource::text("ui://x/view", "view", mime, "<p>");
        let e = refused(McpServer::builder().resource(wrong).build());
        assert_eq!(
            e,
            AppsError::WrongMimeType {
                uri: "ui://x/view".into(),
                found: Some(mime.into())
            }
        );
    }
    let untyped = Resource::new("ui://x/view", "view", |uri, _, _| async move {
        ResourceContents::text(uri, MIME_TYPE, "<p>")
    });
    assert!(matches!(
        refused(McpServer::builder().resource(untyped).build()),
        AppsError::WrongMimeType { found: None, .. }
    ));
    let template = ResourceTemplate::new("ui://x/{id}", "views", |uri, _, _| async move {
        ResourceContents::text(uri, "text/html", "<p>")
    })
    .mime_type("text/html");
    assert!(matches!(
        refused(McpServer::builder().resource_template(template).build()),
        AppsError::WrongMimeType { .. }
    ));
    // Other schemes keep any MIME type.
    let plain = Resource::text("file:///x.html", "x", "text/html", "<p>");
    assert!(McpServer::builder().resource(plain).build().is_ok());
}

#[test]
fn a_wrong_ui_resource_added_at_run_time_is_refused() {
    let server = McpServer::builder().build().expect("builds");
    let wrong = Resource::text("ui://x/view", "view", "text/html", "<p>");
    assert!(matches!(
        server.add_resource(wrong),
        Err(ServerError::Registry(RegistryError::Apps(
            AppsError::WrongMimeType { .. }
        )))
    ));
    assert!(server.registry().snapshot().resource("ui://x/view").is_none());
}

#[test]
fn views_and_links_outside_ui_are_refused() {
    for uri in ["https://example.com/view", "ui://", "javascript:alert(1)", "ui:/x"] {
        assert_eq!(
            AppResource::html(uri, "v", "<p>").err(),
            Some(AppsError::NotUiUri(uri.into()))
        );
        assert_eq!(ToolUi::new(uri).err(), Some(AppsError::NotUiUri(uri.into())));
        let e = refused(McpServer::builder().tool(open_tool().app(uri)).build());
        assert_eq!(e, AppsError::NotUiUri(uri.into()));
    }
}

#[test]
fn a_link_to_a_missing_view_is_refused() {
    let e = refused(McpServer::builder().tool(open_tool().app("ui://nowhere/view")).build());
    assert_eq!(
        e,
        AppsError::MissingResource {
            tool: "open".into(),
            uri: "ui://nowhere/view".into()
        }
    );
    // A template serving the URI is enough.
    let views = ResourceTemplate::new("ui://views/{id}", "views", |uri, _, _| async move {
        ResourceContents::text(uri, MIME_TYPE, "<!doctype html>")
    })
    .mime_type(MIME_TYPE);
    let linked = open_tool().app("ui://views/one");
    assert!(
        McpServer::builder()
            .resource_template(views)
            .tool(linked)
            .build()
            .is_ok()
    );
}

#[test]
fn hand_written_tool_metas_are_checked() {
    let view = || AppResource::html("ui://v/view", "v", "<!doctype html>").expect("a ui:// URI");
    let cases = [
        json!({ "ui": { "resourceUri": "ui://v/view", "visibility": [] } }),
        json!({ "ui": { "resourceUri": "ui://v/view", "visibility": ["agent"] } }),
        json!({ "ui": { "resourceUri": "ui://v/view", "csp": {} } }),
        json!({ "ui": "ui://v/view" }),
        json!({ "ui": { "resourceUri": "ui://v/view" }, "ui/resourceUri": "ui://v/other" }),
        json!({ "ui/resourceUri": "http://v/view" }),
    ];
    for meta in cases {
        let r = McpServer::builder()
            .resource(view())
            .tool(open_tool().meta(meta.clone()))
            .build();
        assert!(
            matches!(r, Err(ServerError::Registry(RegistryError::Apps(_)))),
            "{meta} was accepted"
        );
    }
    // At run time too.
    let server = McpServer::builder().resource(view()).build().expect("builds");
    let bad = open_tool().meta(json!({ "ui": { "resourceUri": "https://evil.example/" } }));
    assert!(matches!(
        server.add_tool(bad),
        Err(ServerError::Registry(RegistryError::Apps(AppsError::NotUiUri(_))))
    ));
    // The deprecated flat key alone is a valid link.
    let flat = open_tool().meta(json!({ "ui/resourceUri": "ui://v/view" }));
    assert!(McpServer::builder().resource(view()).tool(flat).build().is_ok());
}
