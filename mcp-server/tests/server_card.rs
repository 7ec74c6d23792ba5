//! Server Cards and the AI Catalog (SEP-2127): the card `McpServer::server_card` makes is valid
//! against the official schema (vendored in `vendor/server-card/`, whose own examples show the
//! validation refuses what it should), says what the live server answers (`initialize` and
//! `server/discover`), and is served at `<endpoint>/server-card` as the discovery document of
//! the experimental server-card extension asks (`docs/discovery.md` at
//! 8924e08682b4a936e6464b57845ec2ff17dc8776): public, CORS, cacheable, revalidated with its
//! `ETag`. The catalog is served at `/.well-known/ai-catalog.json`.

#![cfg(feature = "http")]

use mcp_server::prelude::*;
use mcp_server::protocol::model::{Icon, Implementation};
use mcp_server::protocol::schema::{CompiledSchema, compile};
use mcp_server::server_card::{CatalogEntry, catalog};
use mcp_server::server_json::{RegistryEntry, ServerJsonError};
use support::{Running, bounded, init_params};

mod support;

const SCHEMA: &str = include_str!("../vendor/server-card/schema.json");

/// The official schema's `$defs/ServerCard`.
fn official() -> CompiledSchema {
    let mut doc: Value = serde_json::from_str(SCHEMA).expect("the vendored schema is JSON");
    doc["$ref"] = json!("#/$defs/ServerCard");
    compile(&doc).expect("the official schema compiles")
}

fn example(name: &str) -> Value {
    let path = format!("{}/vendor/server-card/examples/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).expect("an example")).expect("JSON")
}

#[test]
fn the_official_examples_show_the_validation_refuses_what_it_should() {
    let schema = official();
    for valid in ["valid-minimal", "valid-templated-remote"] {
        assert!(schema.validate(&example(valid)).is_ok(), "{valid}");
    }
    for invalid in [
        "invalid-bad-name-pattern",
        "invalid-date-versioned-schema",
        "invalid-missing-name",
        "invalid-missing-schema",
        "invalid-wrong-schema-name",
    ] {
        assert!(!schema.is_valid(&example(invalid)), "{invalid}");
    }
}

fn server() -> McpServer {
    let mut info = Implementation::new("notes-server", "1.4.2");
    info.title = Some("Notes".into());
    info.icons = vec![Icon::new("https://notes.example.com/icon.png")];
    McpServer::builder()
        .server_info(info)
        .tool(Tool::new("note", "Adds a note", |_, _| async { "noted" }))
        .build()
        .expect("builds")
}

fn entry() -> RegistryEntry {
    RegistryEntry::new("com.example/notes", "Notes kept by an MCP server")
        .repository("https://github.com/example/notes")
        .remote("https://mcp.example.com/mcp")
}

#[test]
fn a_card_is_valid_and_refuses_what_a_card_cannot_say() {
    let server = server();
    let card = server.server_card(&entry()).expect("a card");
    let violations = official().validate(&card);
    assert!(violations.is_ok(), "{card}: {violations:?}");
    assert_eq!(
        card["$schema"],
        "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
    );
    assert_eq!(
        card["repository"],
        json!({"url": "https://github.com/example/notes", "source": "github"})
    );
    let bare = RegistryEntry::new("com.example/notes", "Notes");
    assert_eq!(server.server_card(&bare), Err(ServerJsonError::NoRemote));
    let ftp = bare.clone().remote("ftp://mcp.example.com/mcp");
    assert_eq!(
        server.server_card(&ftp),
        Err(ServerJsonError::Remote("ftp://mcp.example.com/mcp".into()))
    );
    // A server of one era lists that era's revisions only.
    let modern = McpServer::builder()
        .eras(mcp_server::Eras::Modern)
        .build()
        .expect("builds");
    let card = modern.server_card(&entry()).expect("a card");
    assert_eq!(card["remotes"][0]["supportedProtocolVersions"], json!(["2026-07-28"]));
    let unnamed = RegistryEntry::new("notes", "Notes").remote("https://mcp.example.com/mcp");
    assert_eq!(server.server_card(&unnamed), Err(ServerJsonError::Name("notes".into())));
}

#[tokio::test]
async fn the_card_is_served_and_agrees_with_the_live_server() {
    bounded(async {
        let server = server();
        let card = server.server_card(&entry()).expect("a card");
        let listed = CatalogEntry::of_card(&card, "https://mcp.example.com/mcp/server-card").expect("named");
        let config = HttpConfig::default()
            .with_server_card(card.clone())
            .with_catalog(catalog(&[listed]));
        let running = Running::start_with(server, config).await;

        let served = running
            .request(
                "GET",
                "/mcp/server-card",
                &[("Origin", "https://elsewhere.example")],
                "",
            )
            .await;
        assert_eq!(served.status, 200, "{served:?}");
        assert_eq!(served.header("content-type"), Some("application/mcp-server-card+json"));
        assert_eq!(served.header("access-control-allow-origin"), Some("*"));
        assert_eq!(
            served.header("access-control-allow-headers"),
            Some("Content-Type, If-None-Match")
        );
        assert_eq!(served.header("access-control-expose-headers"), Some("ETag"));
        assert_eq!(served.header("cache-control"), Some("public, max-age=3600"));
        assert_eq!(served.message(), &card);
        let etag = served.header("etag").expect("an ETag").to_owned();
        // Revalidation: the tag held is not sent again; another is.
        let held = running
            .request("GET", "/mcp/server-card", &[("If-None-Match", &etag)], "")
            .await;
        assert_eq!((held.status, held.header("etag")), (304, Some(etag.as_str())));
        assert!(held.message.is_none());
        let stale = running
            .request("GET", "/mcp/server-card", &[("If-None-Match", "\"old\"")], "")
            .await;
        assert_eq!(stale.status, 200);
        let head = running.request("HEAD", "/mcp/server-card", &[], "").await;
        assert_eq!((head.status, head.header("etag")), (200, Some(etag.as_str())));
        assert_eq!(running.request("POST", "/mcp/server-card", &[], "{}").await.status, 405);

        let listed = running.request("GET", "/.well-known/ai-catalog.json", &[], "").await;
        assert_eq!(listed.status, 200);
        assert_eq!(listed.header("content-type"), Some("application/ai-catalog+json"));
        assert_eq!(
            listed.message(),
            &json!({"specVersion": "1.0", "entries": [{
                "identifier": "urn:air:example.com:mcp:notes",
                "type": "application/mcp-server-card+json",
                "url": "https://mcp.example.com/mcp/server-card"
            }]})
        );

        // What the card says is what the server answers once connected.
        let discover = running.modern(1, "server/discover", json!({}), json!({})).await;
        let discover = &discover.message()["result"];
        let info = &discover["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(card["version"], info["version"], "{discover}");
        assert_eq!(card["title"], info["title"]);
        assert_eq!(card["icons"], info["icons"]);
        // Every revision the endpoint serves: those discover lists, and the legacy one
        // initialize negotiates.
        let versions = card["remotes"][0]["supportedProtocolVersions"]
            .as_array()
            .expect("versions");
        for v in discover["supportedVersions"].as_array().expect("listed") {
            assert!(versions.contains(v), "{v} is served but not on the card");
        }
        assert_eq!(versions.len(), 5, "{versions:?}");
        let (init, _) = running.legacy_handshake(init_params("2025-11-25")).await;
        let init = &init.message()["result"];
        assert_eq!(card["version"], init["serverInfo"]["version"]);
        assert_eq!(card["title"], init["serverInfo"]["title"]);
        assert!(versions.contains(&init["protocolVersion"]), "{init}");
        running.stop().await;
    })
    .await;
}

#[tokio::test]
async fn without_a_card_nothing_is_served_there() {
    bounded(async {
        let running = Running::start(server()).await;
        assert_eq!(running.request("GET", "/mcp/server-card", &[], "").await.status, 404);
        assert_eq!(
            running
                .request("GET", "/.well-known/ai-catalog.json", &[], "")
                .await
                .status,
            404
        );
        running.stop().await;
    })
    .await;
}
