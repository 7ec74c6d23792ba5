//! RFC 9728 OAuth 2.0 Protected Resource Metadata: the JSON document a
//! bearer challenge points at (`resource_metadata="<url>"`), telling a
//! client which authorization servers issue tokens for this resource.
//!
//! The document is served at the path-suffixed well-known URL of the
//! resource (`https://host/.well-known/oauth-protected-resource/<mcp path>`,
//! RFC 9728 §3.1) and at the root form
//! (`https://host/.well-known/oauth-protected-resource`), with
//! [`CACHE_CONTROL`] and [`CONTENT_TYPE`]. This module is pure: the HTTP
//! transport serves what it renders.

use serde_json::{Map, Value};

use crate::{AuthSetupError, WwwAuthenticate};

/// The well-known path prefix (RFC 9728 §3).
pub const WELL_KNOWN_PATH: &str = "/.well-known/oauth-protected-resource";
/// The `cache-control` of the document.
pub const CACHE_CONTROL: &str = "public, max-age=300";
/// The `content-type` of the document.
pub const CONTENT_TYPE: &str = "application/json";

/// The well-known path for a resource whose URL path is `resource_path`:
/// `/.well-known/oauth-protected-resource` followed by the path (nothing for `/`).
///
/// ```
/// use mcp_auth::metadata::well_known_path;
///
/// assert_eq!(well_known_path("/mcp"), "/.well-known/oauth-protected-resource/mcp");
/// assert_eq!(well_known_path("/"), "/.well-known/oauth-protected-resource");
/// ```
pub fn well_known_path(resource_path: &str) -> String {
    match resource_path {
        "" | "/" => WELL_KNOWN_PATH.to_owned(),
        p if p.starts_with('/') => format!("{WELL_KNOWN_PATH}{p}"),
        p => format!("{WELL_KNOWN_PATH}/{p}"),
    }
}

/// The auth-param naming a metadata document: `resource_metadata="<url>"`.
pub fn resource_metadata_param(url: &str) -> String {
    // Rendered through the challenge builder so the value is sanitised the same way.
    let rendered = WwwAuthenticate::new("x").param("resource_metadata", url).to_string();
    rendered["x ".len()..].to_owned()
}

/// Checks an absolute URL: `https` (or `http` on a loopback host), an
/// authority without user info, no fragment.
pub(crate) fn check_url(what: &'static str, url: &str) -> Result<http::Uri, AuthSetupError> {
    let bad = |reason| AuthSetupError::InvalidUrl {
        what,
        url: url.to_owned(),
        reason,
    };
    if url.contains('#') {
        return Err(bad("a fragment is not allowed"));
    }
    let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let authority = uri.authority().ok_or_else(|| bad("not an absolute URL"))?;
    if authority.as_str().contains('@') {
        return Err(bad("user info is not allowed"));
    }
    let loopback = is_loopback_host(authority.host());
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if loopback => Ok(uri),
        Some("http") => Err(bad("http is only allowed on a loopback host; use https")),
        _ => Err(bad("the scheme must be https")),
    }
}

/// Whether `host` (as a URL's authority names it) is the loopback: `localhost`, an address of
/// 127.0.0.0/8 or `[::1]`. A name that merely starts with `127.` is not.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Configures a [`ResourceMetadata`] document.
#[derive(Debug, Clone)]
pub struct ResourceMetadataBuilder {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    bearer_methods_supported: Vec<String>,
    jwks_uri: Option<String>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    metadata_url: Option<String>,
    dpop_signing_alg_values_supported: Vec<String>,
    dpop_bound_access_tokens_required: Option<bool>,
    extra: Map<String, Value>,
}

impl ResourceMetadataBuilder {
    /// An issuer of tokens for this resource (repeatable; MCP clients expect at least one).
    pub fn authorization_server(mut self, issuer_url: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer_url.into());
        self
    }

    /// Scopes a client may request (repeatable).
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes_supported.push(scope.into());
        self
    }

    /// Sets every supported scope at once.
    pub fn scopes_supported<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How tokens may be sent (default `["header"]`, the only method the bearer provider accepts).
    pub fn bearer_methods_supported<S: Into<String>>(mut self, methods: impl IntoIterator<Item = S>) -> Self {
        self.bearer_methods_supported = methods.into_iter().map(Into::into).collect();
        self
    }

    /// The resource's own JWK set URL (`jwks_uri`), for signed responses.
    pub fn jwks_uri(mut self, url: impl Into<String>) -> Self {
        self.jwks_uri = Some(url.into());
        self
    }

    /// A human-readable name (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A page documenting the resource (`resource_documentation`).
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// Where the document is published, when not at the default path-suffixed
    /// well-known URL of the resource.
    pub fn metadata_url(mut self, url: impl Into<String>) -> Self {
        self.metadata_url = Some(url.into());
        self
    }

    /// The JWS algorithms accepted for DPoP proofs (`dpop_signing_alg_values_supported`,
    /// RFC 9728 §2; omitted when empty), e.g. [`BearerAuth::dpop_algorithms`](crate::BearerAuth::dpop_algorithms).
    pub fn dpop_signing_alg_values_supported<S: Into<String>>(mut self, algs: impl IntoIterator<Item = S>) -> Self {
        self.dpop_signing_alg_values_supported = algs.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the resource accepts DPoP-bound tokens only (`dpop_bound_access_tokens_required`,
    /// RFC 9728 §2; false when omitted): true under
    /// [`DpopMode::Required`](crate::dpop::DpopMode::Required).
    pub fn dpop_bound_access_tokens_required(mut self, required: bool) -> Self {
        self.dpop_bound_access_tokens_required = Some(required);
        self
    }

    /// Any other metadata field; the fields above win over extras of the same name.
    pub fn extra(mut self, name: impl Into<String>, value: Value) -> Self {
        self.extra.insert(name.into(), value);
        self
    }

    /// Checks the URLs and renders the document.
    pub fn build(self) -> Result<ResourceMetadata, AuthSetupError> {
        let uri = check_url("resource", &self.resource)?;
        if uri.query().is_some() {
            return Err(AuthSetupError::InvalidUrl {
                what: "resource",
                url: self.resource,
                reason: "a query is not allowed",
            });
        }
        for url in &self.authorization_servers {
            check_url("authorization server", url)?;
        }
        for (what, url) in [
            ("jwks_uri", &self.jwks_uri),
            ("resource_documentation", &self.resource_documentation),
        ] {
            if let Some(url) = url {
                check_url(what, url)?;
            }
        }
        if let Some(scope) = self.scopes_supported.iter().find(|s| !crate::scopes::valid_scope(s)) {
            return Err(AuthSetupError::InvalidScope { scope: scope.clone() });
        }
        let origin = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or("https"),
            uri.authority().map_or("", |a| a.as_str())
        );
        let metadata_url = match self.metadata_url {
            Some(url) => url,
            None => format!("{origin}{}", well_known_path(uri.path())),
        };
        let metadata_uri = check_url("metadata", &metadata_url)?;
        let mut paths: Vec<String> = Vec::with_capacity(3);
        for p in [
            well_known_path(uri.path()),
            WELL_KNOWN_PATH.to_owned(),
            metadata_uri.path().to_owned(),
        ] {
            if !paths.contains(&p) {
                paths.push(p);
            }
        }

        let mut doc = Map::new();
        let strings = |v: &[String]| Value::Array(v.iter().cloned().map(Value::String).collect());
        doc.insert("resource".into(), Value::String(self.resource.clone()));
        if !self.authorization_servers.is_empty() {
            doc.insert("authorization_servers".into(), strings(&self.authorization_servers));
        }
        if let Some(url) = self.jwks_uri {
            doc.insert("jwks_uri".into(), Value::String(url));
        }
        if !self.scopes_supported.is_empty() {
            doc.insert("scopes_supported".into(), strings(&self.scopes_supported));
        }
        doc.insert(
            "bearer_methods_supported".into(),
            strings(&self.bearer_methods_supported),
        );
        if let Some(name) = self.resource_name {
            doc.insert("resource_name".into(), Value::String(name));
        }
        if let Some(url) = self.resource_documentation {
            doc.insert("resource_documentation".into(), Value::String(url));
        }
        if !self.dpop_signing_alg_values_supported.is_empty() {
            doc.insert(
                "dpop_signing_alg_values_supported".into(),
                strings(&self.dpop_signing_alg_values_supported),
            );
        }
        if let Some(required) = self.dpop_bound_access_tokens_required {
            doc.insert("dpop_bound_access_tokens_required".into(), Value::Bool(required));
        }
        for (k, v) in self.extra {
            doc.entry(k).or_insert(v);
        }
        Ok(ResourceMetadata {
            resource: self.resource,
            metadata_url,
            paths,
            document: doc,
        })
    }
}

/// A rendered RFC 9728 protected-resource metadata document and where it lives.
///
/// ```
/// use mcp_auth::ResourceMetadata;
///
/// let meta = ResourceMetadata::builder("https://mcp.example.com/mcp")
///     .authorization_server("https://auth.example.com")
///     .scope("mcp:tools")
///     .build()
///     .unwrap();
/// assert_eq!(meta.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
/// assert!(meta.serves("/.well-known/oauth-protected-resource"));
/// assert_eq!(meta.challenge_param(),
///     r#"resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp""#);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceMetadata {
    resource: String,
    metadata_url: String,
    paths: Vec<String>,
    document: Map<String, Value>,
}

impl ResourceMetadata {
    /// Starts a document for the resource identifier `resource` (the MCP endpoint's URL).
    pub fn builder(resource: impl Into<String>) -> ResourceMetadataBuilder {
        ResourceMetadataBuilder {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            bearer_methods_supported: vec!["header".to_owned()],
            jwks_uri: None,
            resource_name: None,
            resource_documentation: None,
            metadata_url: None,
            dpop_signing_alg_values_supported: Vec::new(),
            dpop_bound_access_tokens_required: None,
            extra: Map::new(),
        }
    }

    /// The resource identifier.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The URL of the document, as named by `resource_metadata="…"` in challenges.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }

    /// The paths to serve the document on: the path-suffixed well-known path
    /// of the resource, the root well-known path, and the path of a custom
    /// metadata URL (without duplicates).
    pub fn well_known_paths(&self) -> &[String] {
        &self.paths
    }

    /// Whether the document is served on `path`.
    pub fn serves(&self, path: &str) -> bool {
        self.paths.iter().any(|p| p == path)
    }

    /// The document's fields.
    pub fn document(&self) -> &Map<String, Value> {
        &self.document
    }

    /// The document as JSON text.
    pub fn to_json(&self) -> String {
        Value::Object(self.document.clone()).to_string()
    }

    /// `resource_metadata="<metadata url>"`, for a challenge.
    pub fn challenge_param(&self) -> String {
        resource_metadata_param(&self.metadata_url)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn document_and_paths() {
        let meta = ResourceMetadata::builder("https://mcp.example.com/mcp")
            .authorization_server("https://auth.example.com")
            .scopes_supported(["files:read", "files:write"])
            .resource_name("Example")
            .extra("resource", json!("ignored"))
            .extra("dpop_bound_access_tokens_required", json!(false))
            .build()
            .unwrap();
        let doc: Value = serde_json::from_str(&meta.to_json()).unwrap();
        assert_eq!(
            doc,
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "scopes_supported": ["files:read", "files:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Example",
                "dpop_bound_access_tokens_required": false
            })
        );
        assert_eq!(
            meta.well_known_paths(),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert!(meta.serves("/.well-known/oauth-protected-resource/mcp"));
        assert!(!meta.serves("/mcp"));
    }

    #[test]
    fn dpop_fields() {
        let meta = ResourceMetadata::builder("https://mcp.example.com/mcp")
            .dpop_signing_alg_values_supported(["ES256", "RS256"])
            .dpop_bound_access_tokens_required(true)
            .extra("dpop_bound_access_tokens_required", json!(false))
            .extra("x", json!(1))
            .build()
            .unwrap();
        let doc = meta.document();
        assert_eq!(doc["dpop_signing_alg_values_supported"], json!(["ES256", "RS256"]));
        assert_eq!(
            doc["dpop_bound_access_tokens_required"],
            json!(true),
            "the typed field wins"
        );
        assert_eq!(doc["x"], json!(1));
        let plain = ResourceMetadata::builder("https://h.example").build().unwrap();
        assert!(!plain.document().contains_key("dpop_signing_alg_values_supported"));
        assert!(!plain.document().contains_key("dpop_bound_access_tokens_required"));
    }

    #[test]
    fn root_resource_has_one_path() {
        let meta = ResourceMetadata::builder("https://h.example").build().unwrap();
        assert_eq!(
            meta.metadata_url(),
            "https://h.example/.well-known/oauth-protected-resource"
        );
        assert_eq!(meta.well_known_paths(), ["/.well-known/oauth-protected-resource"]);
        assert!(!meta.document().contains_key("authorization_servers"));
    }

    #[test]
    fn custom_metadata_url_and_loopback_http() {
        let meta = ResourceMetadata::builder("http://127.0.0.1:9090/mcp")
            .metadata_url("http://127.0.0.1:9090/prm.json")
            .build()
            .unwrap();
        assert_eq!(meta.metadata_url(), "http://127.0.0.1:9090/prm.json");
        assert!(meta.serves("/prm.json") && meta.serves("/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(
            meta.challenge_param(),
            r#"resource_metadata="http://127.0.0.1:9090/prm.json""#
        );
    }

    #[test]
    fn rejected_urls() {
        for bad in [
            "mcp.example.com/mcp",
            "/mcp",
            "http://mcp.example.com/mcp",
            "ftp://h/mcp",
            "https://h/mcp#frag",
            "https://h/mcp?x=1",
            "https://user@h/mcp",
            "http://127.evil.example/mcp",
            "http://localhost.evil.example/mcp",
        ] {
            let err = ResourceMetadata::builder(bad).build().unwrap_err();
            assert!(
                matches!(err, AuthSetupError::InvalidUrl { what: "resource", .. }),
                "{bad}: {err}"
            );
        }
        let err = ResourceMetadata::builder("https://h/mcp")
            .authorization_server("http://as.example")
            .build()
            .unwrap_err();
        assert!(matches!(
            err,
            AuthSetupError::InvalidUrl {
                what: "authorization server",
                ..
            }
        ));
        let err = ResourceMetadata::builder("https://h/mcp")
            .scope("a b")
            .build()
            .unwrap_err();
        assert!(matches!(err, AuthSetupError::InvalidScope { .. }));
    }

    #[test]
    fn loopback_hosts() {
        for host in ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "[::1]"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "127.evil.example",
            "127.0.0.1.nip.io",
            "10.0.0.1",
            "[::2]",
            "example.com",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn well_known_path_forms() {
        assert_eq!(well_known_path(""), WELL_KNOWN_PATH);
        assert_eq!(well_known_path("/a/b"), "/.well-known/oauth-protected-resource/a/b");
        assert_eq!(well_known_path("a"), "/.well-known/oauth-protected-resource/a");
        assert_eq!(
            resource_metadata_param("https://h/x\"y"),
            r#"resource_metadata="https://h/x'y""#
        );
    }
}
