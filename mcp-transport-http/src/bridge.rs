//! What the runtime says in its own words, said in HTTP's: the runtime names no type of the
//! `http` crate, so this crate translates at the seam.
//!
//! - in: a request's `http::Version` becomes the [`HttpVersion`] its telemetry records
//!   ([`network`]), and its `http::Extensions` become one attachment, whole ([`attachments`]):
//!   a handler reads what axum, the application's layers or the authentication provider put
//!   there with `ctx.attachments().get::<http::Extensions>()`;
//! - out: the [`Headers`] middleware layers added to an answer are written into the response's
//!   `HeaderMap` ([`write_headers`]). Whether a name and a value are valid HTTP is checked here,
//!   where they become HTTP: a field that is not is left out, and logged.

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};
use mcp_runtime::Attachments;
use mcp_runtime::middleware::Headers;
use mcp_runtime::observe::{HttpVersion, Network};

/// The network of a request of HTTP `version` (a version `http` adds later counts as 1.1).
pub(crate) fn network(version: http::Version) -> Network {
    let version = match version {
        http::Version::HTTP_09 => HttpVersion::V0_9,
        http::Version::HTTP_10 => HttpVersion::V1_0,
        http::Version::HTTP_2 => HttpVersion::V2,
        http::Version::HTTP_3 => HttpVersion::V3,
        _ => HttpVersion::V1_1,
    };
    Network::http(version)
}

/// What the engine attaches to a request for middleware and handlers: its `http::Extensions`,
/// whole.
pub(crate) fn attachments(extensions: http::Extensions) -> Attachments {
    let mut attachments = Attachments::new();
    attachments.insert(extensions);
    attachments
}

/// Writes the fields middleware layers added into `target`, each replacing a field of its name;
/// a name or value that is not valid HTTP is left out (and logged).
pub(crate) fn write_headers(target: &mut HeaderMap, headers: &Headers) {
    for (name, value) in headers.iter() {
        match (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
            (Ok(name), Ok(value)) => {
                target.insert(name, value);
            }
            _ => tracing::warn!(header = name, "a middleware layer's header is not valid HTTP: left out"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_map_one_to_one() {
        let cases = [
            (http::Version::HTTP_09, "0.9"),
            (http::Version::HTTP_10, "1.0"),
            (http::Version::HTTP_11, "1.1"),
            (http::Version::HTTP_2, "2"),
            (http::Version::HTTP_3, "3"),
        ];
        for (version, recorded) in cases {
            assert_eq!(network(version).protocol_version(), Some(recorded), "{version:?}");
        }
    }

    #[test]
    fn the_extensions_are_one_attachment() {
        #[derive(Clone, Debug, PartialEq)]
        struct Tenant(&'static str);
        let mut extensions = http::Extensions::new();
        extensions.insert(Tenant("acme"));
        let attached = attachments(extensions);
        assert_eq!(attached.len(), 1);
        let extensions = attached.get::<http::Extensions>().expect("attached");
        assert_eq!(extensions.get::<Tenant>(), Some(&Tenant("acme")));
    }

    #[test]
    fn fields_that_are_not_http_are_left_out() {
        let mut target = HeaderMap::new();
        target.insert("retry-after", HeaderValue::from_static("60"));
        let mut headers = Headers::new();
        headers.insert("Retry-After", "1");
        headers.insert("x-rate-remaining", "9");
        headers.insert("bad name", "1");
        headers.insert("x-bad-value", "a\nb");
        write_headers(&mut target, &headers);
        assert_eq!(target.len(), 2);
        assert_eq!(target["retry-after"], "1");
        assert_eq!(target["x-rate-remaining"], "9");
    }
}
