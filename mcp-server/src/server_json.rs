//! `server.json`: the entry that lists a server in the MCP registry, made from the server's own
//! name and version ([`McpServerBuilder::name`](crate::McpServerBuilder::name) and
//! [`version`](crate::McpServerBuilder::version)) and a [`RegistryEntry`] saying what the
//! registry needs besides (its reverse-DNS name, a description, where the source lives).
//!
//! The package it lists is the server's crate on crates.io (`registryType: "cargo"`), run
//! over stdio once installed with `cargo install`; a hosted endpoint is listed under `remotes`.
//! A server's binary can print it on demand, so that the entry never disagrees with the
//! server it describes:
//!
//! ```
//! use mcp_server::prelude::*;
//! use mcp_server::server_json::RegistryEntry;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::builder()
//!     .name("notes-server")
//!     .version("1.2.0") // env!("CARGO_PKG_VERSION") in a real server
//!     .build()?;
//! let entry = RegistryEntry::new("io.github.example/notes", "Notes kept by an MCP server")
//!     .repository("https://github.com/example/notes-server");
//! let json = server.server_json(&entry)?;
//! if std::env::args().any(|a| a == "--server-json") {
//!     println!("{json:#}");
//!     return Ok(());
//! }
//! assert_eq!(json["version"], "1.2.0");
//! assert_eq!(json["packages"][0]["registryType"], "cargo");
//! assert_eq!(json["packages"][0]["identifier"], "notes-server");
//! // ... serve as usual.
//! # Ok(())
//! # }
//! ```
//!
//! The official registry (`registry.modelcontextprotocol.io`) accepts packages from npm,
//! PyPI, NuGet, OCI images and MCPB bundles; it does not list crates.io yet, so there a Rust
//! server is published as an OCI image or an MCPB bundle, or as a remote. The `cargo` entry
//! follows the same shape for registries and clients that read it.

use serde_json::{Map, Value, json};

use crate::McpServer;

/// The `$schema` a generated `server.json` names.
pub const SERVER_JSON_SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json";

/// Where the `cargo` package of a `server.json` is downloaded from.
pub const CRATES_IO: &str = "https://crates.io";

/// The longest description the registry takes.
pub const MAX_DESCRIPTION_CHARS: usize = 100;

/// What a `server.json` says besides the server's name and version: see
/// [`McpServer::server_json`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryEntry {
    name: String,
    description: String,
    crate_name: Option<String>,
    package: bool,
    repository: Option<String>,
    website_url: Option<String>,
    remotes: Vec<String>,
}

impl RegistryEntry {
    /// An entry named `name` in the registry (reverse-DNS with one slash, such as
    /// `io.github.owner/server`: the namespace the publisher proves it owns) described by
    /// `description` (at most 100 characters). Its package is the crate named as the server
    /// (`serverInfo.name`) unless [`crate_name`](Self::crate_name) says otherwise.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        RegistryEntry {
            name: name.into(),
            description: description.into(),
            crate_name: None,
            package: true,
            repository: None,
            website_url: None,
            remotes: Vec::new(),
        }
    }

    /// The crate that installs the server, when it is not named as the server.
    pub fn crate_name(mut self, name: impl Into<String>) -> Self {
        self.crate_name = Some(name.into());
        self
    }

    /// Lists no package: a server reached only at its [`remote`](Self::remote) endpoints.
    pub fn without_package(mut self) -> Self {
        self.package = false;
        self
    }

    /// The source repository (`repository.url`; `repository.source` is `github` or `gitlab`
    /// for those hosts, the host name otherwise).
    pub fn repository(mut self, url: impl Into<String>) -> Self {
        self.repository = Some(url.into());
        self
    }

    /// The server's home page or documentation (`websiteUrl`).
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.website_url = Some(url.into());
        self
    }

    /// A hosted endpoint of the server (a `streamable-http` remote), such as
    /// `https://mcp.example.com/mcp`.
    pub fn remote(mut self, url: impl Into<String>) -> Self {
        self.remotes.push(url.into());
        self
    }
}

/// Why a `server.json` could not be made: the registry would refuse it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerJsonError {
    /// The registry name is not reverse-DNS with exactly one slash.
    #[error("registry name {0:?} is not a namespace and a name joined by one slash, such as io.github.owner/server")]
    Name(String),
    /// The description is empty or longer than the registry takes.
    #[error("the description must have 1 to {MAX_DESCRIPTION_CHARS} characters, it has {0}")]
    Description(usize),
    /// The server's version is not one specific version.
    #[error("server version {0:?} is not a specific version (set one with the builder's version)")]
    Version(String),
    /// The crate name is empty.
    #[error("the package needs a crate name")]
    CrateName,
    /// The entry lists neither a package nor a remote.
    #[error("the entry lists neither a package nor a remote")]
    Nothing,
    /// A Server Card describes a remote server: the entry names no endpoint.
    #[error("a Server Card needs the server's endpoint: add it with RegistryEntry::remote")]
    NoRemote,
    /// A remote is not an `http://` or `https://` URL.
    #[error("remote {0:?} is not an http:// or https:// URL")]
    Remote(String),
}

impl McpServer {
    /// This server's `server.json` for the MCP registry: `name`, `description` and the rest
    /// from `entry`, `version` from the server's own (`serverInfo.version`), and a `cargo`
    /// package of that version whose crate is named as the server (`serverInfo.name`) unless
    /// the entry names another. Refused when the registry would refuse it (see
    /// [`ServerJsonError`]). See the [module](crate::server_json) and the publishing guide.
    pub fn server_json(&self, entry: &RegistryEntry) -> Result<Value, ServerJsonError> {
        let info = &self.engine.config().server_info;
        server_json(entry, &info.name, &info.version)
    }
}

/// What `server.json` and the Server Card say alike of `entry` at `version`, under `$schema`:
/// the name, description and version, the repository and website. Refused as the registry
/// refuses them.
pub(crate) fn identity(
    entry: &RegistryEntry,
    version: &str,
    schema: &str,
) -> Result<Map<String, Value>, ServerJsonError> {
    if !is_registry_name(&entry.name) {
        return Err(ServerJsonError::Name(entry.name.clone()));
    }
    let chars = entry.description.chars().count();
    if chars == 0 || chars > MAX_DESCRIPTION_CHARS {
        return Err(ServerJsonError::Description(chars));
    }
    if !is_specific_version(version) {
        return Err(ServerJsonError::Version(version.to_owned()));
    }
    let mut doc = Map::new();
    doc.insert("$schema".into(), json!(schema));
    doc.insert("name".into(), json!(entry.name));
    doc.insert("description".into(), json!(entry.description));
    doc.insert("version".into(), json!(version));
    if let Some(url) = &entry.repository {
        doc.insert("repository".into(), json!({ "url": url, "source": source_of(url) }));
    }
    if let Some(url) = &entry.website_url {
        doc.insert("websiteUrl".into(), json!(url));
    }
    Ok(doc)
}

/// The endpoints the entry names (`remote`).
pub(crate) fn remotes(entry: &RegistryEntry) -> &[String] {
    &entry.remotes
}

/// The `server.json` of `entry` for the server `server_name` at `version`.
fn server_json(entry: &RegistryEntry, server_name: &str, version: &str) -> Result<Value, ServerJsonError> {
    let mut doc = identity(entry, version, SERVER_JSON_SCHEMA)?;
    if !entry.package && entry.remotes.is_empty() {
        return Err(ServerJsonError::Nothing);
    }
    if entry.package {
        let identifier = entry.crate_name.as_deref().unwrap_or(server_name);
        if identifier.is_empty() {
            return Err(ServerJsonError::CrateName);
        }
        doc.insert(
            "packages".into(),
            json!([{
                "registryType": "cargo",
                "registryBaseUrl": CRATES_IO,
                "identifier": identifier,
                "version": version,
                "transport": { "type": "stdio" },
            }]),
        );
    }
    if !entry.remotes.is_empty() {
        let remotes: Vec<Value> = entry
            .remotes
            .iter()
            .map(|url| json!({ "type": "streamable-http", "url": url }))
            .collect();
        doc.insert("remotes".into(), Value::Array(remotes));
    }
    Ok(Value::Object(doc))
}

/// The registry's name rule: `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`, 3 to 200 characters.
fn is_registry_name(name: &str) -> bool {
    let Some((namespace, server)) = name.split_once('/') else {
        return false;
    };
    (3..=200).contains(&name.len())
        && !namespace.is_empty()
        && !server.is_empty()
        && namespace
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && server
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// A version the registry takes: not empty, not `latest`, not a range (`^1`, `~1.2`, `>=1`,
/// `1.x`, `1.*`).
fn is_specific_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 255
        && version != "latest"
        && !version.starts_with(['^', '~', '>', '<', '='])
        && !version.contains('*')
        && !version
            .split(['.', '-', '+'])
            .any(|part| part.eq_ignore_ascii_case("x"))
}

/// `repository.source`: the forge's identifier for GitHub and GitLab, the host otherwise.
fn source_of(url: &str) -> String {
    let host = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest)
        .split(['/', ':'])
        .next()
        .unwrap_or_default();
    let host = host
        .rsplit_once('@')
        .map_or(host, |(_, h)| h)
        .trim_start_matches("www.");
    match host {
        "github.com" => "github".to_owned(),
        "gitlab.com" => "gitlab".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_registry_pattern() {
        for ok in ["io.github.owner/notes", "com.example/a_b-c.d", "a/b"] {
            assert!(is_registry_name(ok), "{ok}");
        }
        for bad in [
            "notes",
            "io.github/owner/notes",
            "/notes",
            "io.github.owner/",
            "io_x/notes",
            "a/b c",
        ] {
            assert!(!is_registry_name(bad), "{bad}");
        }
        assert!(!is_registry_name(&format!("a/{}", "b".repeat(199))));
    }

    #[test]
    fn versions_must_be_specific() {
        for ok in ["1.0.0", "0.1.0-alpha.1", "2.1.0+build.5", "20260101"] {
            assert!(is_specific_version(ok), "{ok}");
        }
        for bad in ["", "latest", "^1.2.3", "~1.2", ">=1.0.0", "1.x", "1.*", "1.2.X"] {
            assert!(!is_specific_version(bad), "{bad}");
        }
    }

    fn entry() -> RegistryEntry {
        RegistryEntry::new("io.github.example/notes", "Notes")
    }

    #[test]
    fn what_the_registry_refuses_is_refused() {
        let long = "n".repeat(MAX_DESCRIPTION_CHARS + 1);
        assert_eq!(
            server_json(&RegistryEntry::new("io.github.example/notes", long), "s", "1.0.0"),
            Err(ServerJsonError::Description(101))
        );
        assert_eq!(
            server_json(&RegistryEntry::new("io.github.example/notes", ""), "s", "1.0.0"),
            Err(ServerJsonError::Description(0))
        );
        assert_eq!(
            server_json(&entry(), "s", "latest"),
            Err(ServerJsonError::Version("latest".into()))
        );
        assert_eq!(server_json(&entry(), "", "1.0.0"), Err(ServerJsonError::CrateName));
        assert_eq!(
            server_json(&entry().without_package(), "s", "1.0.0"),
            Err(ServerJsonError::Nothing)
        );
        // A description of exactly 100 characters (not bytes) is taken.
        let hundred = "é".repeat(MAX_DESCRIPTION_CHARS);
        assert!(server_json(&RegistryEntry::new("io.github.example/notes", hundred), "s", "1.0.0").is_ok());
    }

    #[test]
    fn a_remote_only_entry_lists_no_package() {
        let doc = server_json(
            &entry().without_package().remote("https://mcp.example.com/mcp"),
            "s",
            "2.0.0",
        )
        .unwrap();
        assert!(doc.get("packages").is_none());
        assert_eq!(
            doc["remotes"],
            json!([{"type": "streamable-http", "url": "https://mcp.example.com/mcp"}])
        );
        assert_eq!(doc["version"], "2.0.0");
        assert!(doc.get("repository").is_none() && doc.get("websiteUrl").is_none());
    }

    #[test]
    fn the_package_is_the_named_crate_at_the_server_s_version() {
        let doc = server_json(
            &entry().crate_name("notes-bin").website_url("https://notes.example.com"),
            "notes",
            "0.3.1",
        )
        .unwrap();
        assert_eq!(
            doc["packages"],
            json!([{"registryType": "cargo", "registryBaseUrl": "https://crates.io", "identifier": "notes-bin",
                    "version": "0.3.1", "transport": {"type": "stdio"}}])
        );
        assert_eq!(doc["websiteUrl"], "https://notes.example.com");
        assert_eq!(doc["$schema"], SERVER_JSON_SCHEMA);
    }

    #[test]
    fn the_forge_is_named_from_the_host() {
        assert_eq!(source_of("https://github.com/o/r"), "github");
        assert_eq!(source_of("https://www.gitlab.com/o/r"), "gitlab");
        assert_eq!(source_of("https://codeberg.org/o/r"), "codeberg.org");
        assert_eq!(source_of("git@github.com:o/r.git"), "github");
    }
}
