//! The `_meta` a server author sets on its four catalog lists (`McpServerBuilder::list_meta`,
//! `Registry::set_list_meta`): on every page of `tools/list`, `prompts/list`, `resources/list`
//! and `resources/templates/list`, in every revision (the legacy ones over a session, the modern
//! one stateless), whether the page is built or served from the snapshot's cache; a new value
//! reaches the next page; a value that is not an object is refused.

use std::future::IntoFuture;
use std::sync::Arc;

use mcp_protocol::auth::AuthInfo;
use mcp_protocol::{Params, Request, RequestId, Revision};
use mcp_runtime::{Engine, Peer, Reply, SessionHandle, Sessions, Sink};
use mcp_server::ServerConfig;
use mcp_server::catalog::{CatalogKind, RegistryError};
use mcp_server::prelude::*;
use mcp_tests::drive;

/// Each list, its method and the member its items are in.
const LISTS: [(CatalogKind, &str, &str); 4] = [
    (CatalogKind::Tool, "tools/list", "tools"),
    (CatalogKind::Prompt, "prompts/list", "prompts"),
    (CatalogKind::Resource, "resources/list", "resources"),
    (
        CatalogKind::ResourceTemplate,
        "resources/templates/list",
        "resourceTemplates",
    ),
];

/// The key each list's `_meta` carries, with the list's method as its value.
const KEY: &str = "com.example/list";

/// A server with three items of each kind, two to a page, and a `_meta` on each list.
fn server() -> McpServer {
    let mut config = ServerConfig::default();
    config.page_size = 2;
    let mut builder = McpServer::builder().name("list-meta").version("1").config(config);
    for i in 0..3 {
        builder =
            builder
                .tool(Tool::new(format!("tool_{i}"), "a tool", |_, _| async { "ok" }))
                .prompt(Prompt::new(format!("prompt_{i}"), "a prompt", |_, _| async {
                    GetPromptResult::new(vec![PromptMessage::user_text("hi")])
                }))
                .resource(Resource::text(
                    format!("memo://{i}"),
                    format!("memo {i}"),
                    "text/plain",
                    "memo",
                ))
                .resource_template(ResourceTemplate::new(
                    format!("note{i}://{{id}}"),
                    format!("note {i}"),
                    |uri, _, _| async move {
                        ReadResourceResult::new(vec![ResourceContents::text(uri, "text/plain", "note")])
                    },
                ));
    }
    for (kind, method, _) in LISTS {
        builder = builder.list_meta(kind, json!({ KEY: method, "n": [1, 2] }));
    }
    let server = builder.build().expect("a valid server");
    if let Some(driver) = server.driver() {
        tokio::spawn(driver.into_future());
    }
    server
}

/// A client of one revision: a legacy one in the session its `initialize` minted.
struct Client {
    engine: Engine,
    revision: Revision,
    session: Option<SessionHandle>,
    auth: Arc<AuthInfo>,
}

impl Client {
    async fn connect(engine: &Engine, revision: Revision) -> Client {
        let auth = Arc::new(AuthInfo::new("alice"));
        let mut client = Client {
            engine: engine.clone(),
            revision,
            session: None,
            auth,
        };
        if revision.era() == Era::Legacy {
            let init = json!({"protocolVersion": revision.as_str(), "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}});
            let peer = Peer::new(client.auth.clone(), Sessions::Store(None));
            let (sink, _rx) = Sink::channel(4);
            let driven = drive::request(engine, &peer, request("initialize", init), sink).await;
            client.session = Some(driven.session.expect("a session"));
        }
        client
    }

    /// The result of `method` (the modern `_meta` envelope added for a modern client).
    async fn ask(&self, method: &str, mut params: Value) -> (Value, bool) {
        if self.revision.era() == Era::Modern {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": self.revision.as_str(),
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        let sessions = match &self.session {
            Some(s) => Sessions::Store(Some(s.id())),
            None => Sessions::None,
        };
        let peer = Peer::new(self.auth.clone(), sessions);
        let (sink, _rx) = Sink::channel(4);
        match drive::request(&self.engine, &peer, request(method, params), sink)
            .await
            .reply
        {
            Reply::Result(v) => (v, false),
            Reply::Encoded(e) => (e.to_value(), true),
            other => panic!("{} {method}: expected a result, got {other:?}", self.revision.as_str()),
        }
    }
}

fn request(method: &str, params: Value) -> Request {
    Request {
        id: RequestId::Number(1),
        method: method.into(),
        params: Params::from_value(params),
    }
}

/// Checks one page of a list: its items, its `_meta` (the list's own, beside the server's
/// `Implementation` in the modern era), and the era's decoration; returns its next cursor.
fn check_page(revision: Revision, method: &str, member: &str, page: &Value, expected_meta: &Value) -> Option<String> {
    let at = format!("{} {method}", revision.as_str());
    assert!(page[member].as_array().is_some_and(|a| !a.is_empty()), "{at}: {page}");
    let meta = page["_meta"]
        .as_object()
        .unwrap_or_else(|| panic!("{at}: no _meta in {page}"));
    for (k, v) in expected_meta.as_object().unwrap() {
        assert_eq!(meta.get(k), Some(v), "{at}: {page}");
    }
    match revision.era() {
        Era::Modern => {
            assert_eq!(page["resultType"], "complete", "{at}: {page}");
            assert!(page["ttlMs"].is_u64(), "{at}: the cache hint stays: {page}");
        }
        Era::Legacy => {
            assert_eq!(meta.len(), expected_meta.as_object().unwrap().len(), "{at}: {page}");
            assert!(page.get("resultType").is_none(), "{at}: {page}");
        }
    }
    page["nextCursor"].as_str().map(str::to_owned)
}

#[tokio::test]
async fn every_page_of_every_list_carries_its_meta_in_every_revision() {
    let server = server();
    for revision in Revision::ALL {
        let client = Client::connect(server.engine(), revision).await;
        for (_, method, member) in LISTS {
            let expected = json!({ KEY: method, "n": [1, 2] });
            // Twice: built, then (for callers who all see the same list) from the cache.
            for _ in 0..2 {
                let (first, _) = client.ask(method, json!({})).await;
                let cursor = check_page(revision, method, member, &first, &expected)
                    .unwrap_or_else(|| panic!("{method}: three items, two to a page: {first}"));
                let (second, _) = client.ask(method, json!({ "cursor": cursor })).await;
                let last = check_page(revision, method, member, &second, &expected);
                assert_eq!(last, None, "{method}: the second page is the last");
            }
        }
    }
}

#[tokio::test]
async fn a_new_meta_reaches_the_next_page_and_announces_nothing() {
    let server = server();
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let client = Client::connect(server.engine(), revision).await;
        let (before, _) = client.ask("tools/list", json!({})).await;
        assert_eq!(before["_meta"][KEY], "tools/list");
    }
    let mut changes = server.registry().subscribe();
    server
        .registry()
        .set_list_meta(CatalogKind::Tool, json!({ KEY: "v2" }))
        .expect("an object");
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let client = Client::connect(server.engine(), revision).await;
        let (after, cached) = client.ask("tools/list", json!({})).await;
        assert_eq!(
            after["_meta"][KEY],
            "v2",
            "{}: no stale page: {after}",
            revision.as_str()
        );
        assert!(after["_meta"].get("n").is_none(), "replaced, not merged: {after}");
        let (again, cached_again) = client.ask("tools/list", json!({})).await;
        assert_eq!(again, after, "the cached page is the built one");
        if revision.era() == Era::Modern {
            assert!(cached && cached_again, "modern pages leave encoded");
        }
        let (prompts, _) = client.ask("prompts/list", json!({})).await;
        assert_eq!(prompts["_meta"][KEY], "prompts/list", "the other lists keep theirs");
    }
    let quiet = tokio::time::timeout(std::time::Duration::from_millis(100), changes.next()).await;
    assert!(quiet.is_err(), "setting a list's _meta is no list change: {quiet:?}");
}

#[tokio::test]
async fn a_meta_that_is_not_an_object_is_refused() {
    for (kind, _, _) in LISTS {
        for bad in [json!(null), json!("x"), json!(3), json!([{"k": 1}])] {
            let built = McpServer::builder().list_meta(kind, bad.clone()).build();
            assert!(
                matches!(
                    built,
                    Err(ServerError::Registry(RegistryError::ListMetaNotObject(k))) if k == kind
                ),
                "{kind:?} {bad}: {:?}",
                built.err()
            );
        }
    }
    let server = server();
    let refused = server.registry().set_list_meta(CatalogKind::Resource, json!(true));
    assert!(matches!(
        refused,
        Err(RegistryError::ListMetaNotObject(CatalogKind::Resource))
    ));
    let client = Client::connect(server.engine(), Revision::V2026_07_28).await;
    let (page, _) = client.ask("resources/list", json!({})).await;
    assert_eq!(page["_meta"][KEY], "resources/list", "a refused value changes nothing");
}
