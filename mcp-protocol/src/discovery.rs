//! Discovery before connecting (SEP-2127, MCP Server Cards, as the experimental server-card
//! extension's `docs/discovery.md` gives it): where a client finds a server's card and a
//! domain's catalog, what they are called on the wire, and how a catalog names a server.
//!
//! - A **Server Card** describes one remote server (identity, endpoints, protocol versions),
//!   as `application/mcp-server-card+json` ([`SERVER_CARD_MEDIA_TYPE`]), at the reserved
//!   `<streamable-http-url>/server-card` ([`server_card_path`]). Its `$schema` is
//!   [`SERVER_CARD_SCHEMA`].
//! - An **AI Catalog** lists a domain's cards at [`CATALOG_PATH`], as
//!   `application/ai-catalog+json` ([`CATALOG_MEDIA_TYPE`]): `specVersion`
//!   ([`CATALOG_SPEC_VERSION`]) and `entries`, each an `identifier` ([`catalog_identifier`]), the
//!   card's media type as `type`, and the card's `url` (or the card itself as `data`).
//!
//! Both are public and read-only: served to any origin with the CORS headers of
//! [`CORS_ALLOW_HEADERS`] and [`CORS_EXPOSE_HEADERS`], cacheable ([`CACHE_CONTROL`]) and
//! revalidated with an `ETag`.

/// The media type of a Server Card.
pub const SERVER_CARD_MEDIA_TYPE: &str = "application/mcp-server-card+json";

/// The `$schema` of a Server Card.
pub const SERVER_CARD_SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";

/// The suffix of a Server Card's reserved location, after the Streamable HTTP endpoint's path.
pub const SERVER_CARD_SUFFIX: &str = "/server-card";

/// The well-known path of a domain's AI Catalog.
pub const CATALOG_PATH: &str = "/.well-known/ai-catalog.json";

/// The media type of an AI Catalog.
pub const CATALOG_MEDIA_TYPE: &str = "application/ai-catalog+json";

/// The `specVersion` of an AI Catalog.
pub const CATALOG_SPEC_VERSION: &str = "1.0";

/// The caching the discovery documents are served with.
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// `Access-Control-Allow-Headers` of the discovery documents: a browser may revalidate.
pub const CORS_ALLOW_HEADERS: &str = "Content-Type, If-None-Match";

/// `Access-Control-Expose-Headers` of the discovery documents: a browser may read the tag.
pub const CORS_EXPOSE_HEADERS: &str = "ETag";

/// The reserved location of the card of the endpoint at `endpoint_path` (`/mcp` gives
/// `/mcp/server-card`; the root gives `/server-card`).
pub fn server_card_path(endpoint_path: &str) -> String {
    format!("{}{SERVER_CARD_SUFFIX}", endpoint_path.trim_end_matches('/'))
}

/// The catalog identifier of the card named `name` (reverse-DNS, one slash), in the AI
/// Catalog's domain-anchored form `urn:air:{publisher}:mcp:{name}`: the publisher is the
/// namespace's domain in forward order (`com.example/weather` is
/// `urn:air:example.com:mcp:weather`). `None` for a name without exactly one slash or with an
/// empty part.
pub fn catalog_identifier(name: &str) -> Option<String> {
    let (namespace, server) = name.split_once('/')?;
    if namespace.is_empty() || server.is_empty() || server.contains('/') {
        return None;
    }
    let publisher: Vec<&str> = namespace.split('.').rev().collect();
    Some(format!("urn:air:{}:mcp:{server}", publisher.join(".")))
}

/// Whether `url` may be a remote's URL in a card: absolute `http` or `https` with something
/// after the scheme, and no whitespace.
pub fn is_remote_url(url: &str) -> bool {
    ["http://", "https://"]
        .iter()
        .any(|scheme| url.strip_prefix(scheme).is_some_and(|rest| !rest.is_empty()))
        && !url.contains(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_are_absolute_http_without_whitespace() {
        for ok in ["https://mcp.example.com/mcp", "http://127.0.0.1:3000/mcp"] {
            assert!(is_remote_url(ok), "{ok}");
        }
        for bad in ["https://", "ftp://x/y", "mcp.example.com", "https://a b/mcp", "/mcp"] {
            assert!(!is_remote_url(bad), "{bad}");
        }
    }

    #[test]
    fn identifiers_anchor_on_the_publisher_domain() {
        assert_eq!(
            catalog_identifier("com.example/weather").as_deref(),
            Some("urn:air:example.com:mcp:weather")
        );
        assert_eq!(
            catalog_identifier("io.github.owner/notes").as_deref(),
            Some("urn:air:owner.github.io:mcp:notes")
        );
        for bad in ["weather", "/weather", "com.example/", "a/b/c"] {
            assert_eq!(catalog_identifier(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_card_sits_under_the_endpoint() {
        assert_eq!(server_card_path("/mcp"), "/mcp/server-card");
        assert_eq!(server_card_path("/mcp/"), "/mcp/server-card");
        assert_eq!(server_card_path("/"), "/server-card");
    }
}
