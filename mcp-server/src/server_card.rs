//! Server Cards and the AI Catalog (SEP-2127, as the experimental server-card extension's
//! `docs/discovery.md` gives it): what a client or a registry reads about a remote server
//! before it connects.
//!
//! A **Server Card** names the server (its registry name, version, title, icons, description,
//! repository and website) and its endpoints, each with the protocol revisions it serves. It is
//! made from the server itself ([`McpServer::server_card`]): the version, title and icons are
//! the `serverInfo` that `initialize` and `server/discover` answer with, the revisions are
//! those the server serves, and the rest is the same [`RegistryEntry`] a `server.json` is
//! made from, so the card, the registry entry and the live server cannot disagree. The HTTP
//! transport serves it at the reserved `<endpoint>/server-card`
//! ([`HttpConfig::with_server_card`](crate::HttpConfig::with_server_card)).
//!
//! An **AI Catalog** lists the cards a host offers ([`catalog`], one [`CatalogEntry`] per
//! card, by URL or inline), served at `/.well-known/ai-catalog.json`
//! ([`HttpConfig::with_catalog`](crate::HttpConfig::with_catalog)). An entry names the server
//! (`urn:air:{publisher}:mcp:{name}`) and where its card is; the card says the rest.
//!
//! ```
//! use mcp_server::prelude::*;
//! use mcp_server::server_card::{CatalogEntry, catalog};
//! use mcp_server::server_json::RegistryEntry;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::builder().name("notes-server").version("1.2.0").build()?;
//! let entry = RegistryEntry::new("com.example/notes", "Notes kept by an MCP server")
//!     .remote("https://mcp.example.com/mcp");
//! let card = server.server_card(&entry)?;
//! assert_eq!(card["remotes"][0]["url"], "https://mcp.example.com/mcp");
//! assert_eq!(card["remotes"][0]["supportedProtocolVersions"][0], "2026-07-28");
//!
//! let listed = CatalogEntry::of_card(&card, "https://mcp.example.com/mcp/server-card").expect("a named card");
//! let catalog = catalog(&[listed]);
//! assert_eq!(catalog["entries"][0]["identifier"], "urn:air:example.com:mcp:notes");
//! let config = HttpConfig::default().with_server_card(card).with_catalog(catalog);
//! # let _ = config;
//! # Ok(())
//! # }
//! ```

use mcp_protocol::Revision;
use mcp_protocol::discovery::{CATALOG_SPEC_VERSION, SERVER_CARD_MEDIA_TYPE, SERVER_CARD_SCHEMA, catalog_identifier};
use serde_json::{Value, json};

use crate::McpServer;
use crate::server_json::{RegistryEntry, ServerJsonError, identity, remotes};

/// The longest title a card takes.
pub const MAX_TITLE_CHARS: usize = 100;

impl McpServer {
    /// This server's Server Card: `name`, `description`, repository and website from `entry`,
    /// `version`, `title` and `icons` from the server's `serverInfo`, and one `streamable-http`
    /// remote per endpoint the entry names ([`RegistryEntry::remote`]), each listing every
    /// revision the server serves (those `server/discover` answers with, and the legacy ones
    /// `initialize` negotiates when it serves that era). Refused when a registry would refuse the
    /// entry, when it names no endpoint, or names one that is not an `http(s)://` URL. A title
    /// longer than a card takes is left out. See the [module](crate::server_card).
    pub fn server_card(&self, entry: &RegistryEntry) -> Result<Value, ServerJsonError> {
        let config = self.engine.config();
        let info = &config.server_info;
        let mut card = identity(entry, &info.version, SERVER_CARD_SCHEMA)?;
        if let Some(title) = info
            .title
            .as_ref()
            .filter(|t| (1..=MAX_TITLE_CHARS).contains(&t.chars().count()))
        {
            card.insert("title".into(), json!(title));
        }
        if !info.icons.is_empty() {
            card.insert("icons".into(), json!(info.icons));
        }
        if !card.contains_key("websiteUrl")
            && let Some(url) = &info.website_url
        {
            card.insert("websiteUrl".into(), json!(url));
        }
        let endpoints = remotes(entry);
        if endpoints.is_empty() {
            return Err(ServerJsonError::NoRemote);
        }
        // Every revision the endpoint serves, newest first: what `server/discover` lists, and
        // the legacy ones `initialize` negotiates when the server serves that era.
        let versions: Vec<&str> = config.eras.revisions().map(Revision::as_str).collect();
        let mut listed = Vec::with_capacity(endpoints.len());
        for url in endpoints {
            if !mcp_protocol::discovery::is_remote_url(url) {
                return Err(ServerJsonError::Remote(url.clone()));
            }
            listed.push(json!({"type": "streamable-http", "url": url, "supportedProtocolVersions": versions}));
        }
        card.insert("remotes".into(), Value::Array(listed));
        Ok(Value::Object(card))
    }
}

/// One server of an AI Catalog: its discovery identifier, and its card (where it is, or the
/// card itself).
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    identifier: String,
    card: Listed,
}

/// How an entry gives its card.
#[derive(Debug, Clone, PartialEq)]
enum Listed {
    /// The card is served at this URL.
    Url(String),
    /// The card itself.
    Data(Value),
}

impl CatalogEntry {
    /// The entry of `card` (a [`McpServer::server_card`]) served at `url`, identified as
    /// `urn:air:{publisher}:mcp:{name}` from the card's reverse-DNS name. `None` for a card
    /// without a usable name.
    pub fn of_card(card: &Value, url: impl Into<String>) -> Option<CatalogEntry> {
        Some(CatalogEntry {
            identifier: identifier_of(card)?,
            card: Listed::Url(url.into()),
        })
    }

    /// The entry carrying `card` itself (`data`), for a card served nowhere else.
    pub fn inline(card: Value) -> Option<CatalogEntry> {
        Some(CatalogEntry {
            identifier: identifier_of(&card)?,
            card: Listed::Data(card),
        })
    }
}

/// The catalog identifier of a card, from its name.
fn identifier_of(card: &Value) -> Option<String> {
    catalog_identifier(card.get("name")?.as_str()?)
}

/// The AI Catalog listing `entries`.
pub fn catalog(entries: &[CatalogEntry]) -> Value {
    let entries: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut entry = json!({"identifier": e.identifier, "type": SERVER_CARD_MEDIA_TYPE});
            match &e.card {
                Listed::Url(url) => entry["url"] = json!(url),
                Listed::Data(card) => entry["data"] = card.clone(),
            }
            entry
        })
        .collect();
    json!({"specVersion": CATALOG_SPEC_VERSION, "entries": entries})
}
