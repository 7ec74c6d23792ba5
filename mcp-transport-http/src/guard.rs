//! Origin and Host validation (DNS-rebinding protection) and the `Accept` rules.
//!
//! Origins are parsed structurally into scheme, host and port and compared field by field; a
//! string prefix never matches (`http://localhost.evil.com` is not `http://localhost`).

use http::HeaderMap;
use http::header::{ACCEPT, HOST, ORIGIN};

use crate::config::HttpConfig;
use crate::error::HttpError;

/// A port in an allow-list entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    Any,
    Exact(u16),
}

impl Port {
    fn matches(self, port: u16) -> bool {
        match self {
            Port::Any => true,
            Port::Exact(p) => p == port,
        }
    }
}

/// A parsed origin (`scheme://host:port`), lowercase.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginParts {
    scheme: String,
    host: String,
    port: Port,
}

/// Splits `host[:port]` (the host may be a bracketed IPv6 literal). `*` as the port is
/// [`Port::Any`] when `wildcard` allows it; no port gives `None`.
/// The host (as written: compare it with [`str::eq_ignore_ascii_case`]) and port of an
/// authority.
fn split_authority(authority: &str, wildcard: bool) -> Option<(&str, Option<Port>)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let host = &authority[..end + 2];
        match &rest[end + 1..] {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => !v6.is_empty() && v6.bytes().all(|c| c.is_ascii_hexdigit() || matches!(c, b':' | b'.')),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_'))
        }
    };
    if !host_ok {
        return None;
    }
    let port = match port {
        None => None,
        Some("*") if wildcard => Some(Port::Any),
        Some(p) if !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) => Some(Port::Exact(p.parse().ok()?)),
        Some(_) => return None,
    };
    Some((host, port))
}

fn parse_origin(s: &str, wildcard: bool) -> Option<OriginParts> {
    let (scheme, authority) = s.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
    {
        return None;
    }
    let (host, port) = split_authority(authority, wildcard)?;
    let port = match port {
        Some(p) => p,
        None => Port::Exact(match scheme.as_str() {
            "http" | "ws" => 80,
            "https" | "wss" => 443,
            _ => 0,
        }),
    };
    Some(OriginParts {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The allowed origins.
#[derive(Debug, Clone)]
pub(crate) struct OriginPolicy {
    any: bool,
    allow_null: bool,
    allow_missing: bool,
    entries: Vec<OriginParts>,
}

impl OriginPolicy {
    /// The policy of a configuration; `loopback` tells whether the bind is loopback (or unknown).
    pub(crate) fn new(config: &HttpConfig, loopback: bool) -> Result<Self, HttpError> {
        let mut policy = OriginPolicy {
            any: false,
            allow_null: false,
            allow_missing: config.allow_missing_origin,
            entries: Vec::new(),
        };
        match &config.allowed_origins {
            None => {
                debug_assert!(loopback, "the caller refuses a public bind without a list");
                for scheme in ["http", "https"] {
                    for host in LOOPBACK_HOSTS {
                        policy.entries.push(OriginParts {
                            scheme: scheme.into(),
                            host: host.into(),
                            port: Port::Any,
                        });
                    }
                }
            }
            Some(list) => {
                for entry in list {
                    match entry.trim() {
                        "*" => policy.any = true,
                        "null" => policy.allow_null = true,
                        e => policy
                            .entries
                            .push(parse_origin(e, true).ok_or_else(|| HttpError::InvalidOrigin(entry.clone()))?),
                    }
                }
            }
        }
        Ok(policy)
    }

    /// Whether an `Origin` header value is allowed (`None`: no header).
    pub(crate) fn allows(&self, origin: Option<&[u8]>) -> bool {
        let Some(raw) = origin else {
            return self.allow_missing;
        };
        let Ok(s) = std::str::from_utf8(raw) else {
            return false;
        };
        if s == "null" {
            return self.allow_null;
        }
        if self.any {
            return true;
        }
        let Some(o) = parse_origin(s, false) else {
            return false;
        };
        let Port::Exact(port) = o.port else {
            return false;
        };
        self.entries
            .iter()
            .any(|e| e.scheme == o.scheme && e.host == o.host && e.port.matches(port))
    }
}

/// The allowed `Host` header values.
#[derive(Debug, Clone)]
pub(crate) struct HostPolicy {
    /// `None`: any host.
    entries: Option<Vec<(String, Port)>>,
}

impl HostPolicy {
    /// The policy of a configuration; `loopback` tells whether the bind is loopback (or unknown).
    pub(crate) fn new(config: &HttpConfig, loopback: bool) -> Result<Self, HttpError> {
        let entries = match &config.allowed_hosts {
            None if loopback => Some(LOOPBACK_HOSTS.iter().map(|h| ((*h).to_owned(), Port::Any)).collect()),
            None => None,
            Some(list) if list.iter().any(|h| h.trim() == "*") => None,
            Some(list) => Some(
                list.iter()
                    .map(|h| {
                        split_authority(h.trim(), true)
                            .map(|(host, port)| (host.to_ascii_lowercase(), port.unwrap_or(Port::Any)))
                            .ok_or_else(|| HttpError::InvalidHost(h.clone()))
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(HostPolicy { entries })
    }

    /// Whether a `Host` value (or the URI authority) is allowed.
    pub(crate) fn allows(&self, host: Option<&[u8]>) -> bool {
        let Some(entries) = &self.entries else {
            return true;
        };
        let Some((name, port)) = host
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| split_authority(h, false))
        else {
            return false;
        };
        entries.iter().any(|(n, p)| {
            n.eq_ignore_ascii_case(name)
                && match port {
                    None => *p == Port::Any,
                    Some(Port::Exact(x)) => p.matches(x),
                    Some(Port::Any) => false,
                }
        })
    }
}

/// Why a request's host could not be told (answered `400`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadHost {
    /// More than one `Host` header (RFC 9112 §3.2).
    Duplicate,
    /// HTTP/2: `:authority` and `Host` name different hosts (RFC 9113 §8.3.1).
    Disagree,
}

/// The host a request is addressed to, to check against [`HostPolicy`].
///
/// The target's authority wins: an HTTP/1.1 request in absolute form
/// (`POST http://host/mcp`) is addressed to that host and its `Host` header is ignored
/// (RFC 9112 §3.2.2); an HTTP/2 request's `:authority` (which hyper puts in the URI) wins too,
/// and a `Host` header beside it must name the same host (RFC 9113 §8.3.1). Without an
/// authority the one `Host` header is the host. Two `Host` headers are refused whatever the
/// version.
pub(crate) fn host_of<'a>(
    headers: &'a HeaderMap,
    uri: &'a http::Uri,
    version: http::Version,
) -> Result<Option<&'a [u8]>, BadHost> {
    let mut hosts = headers.get_all(HOST).iter();
    let host = hosts.next().map(|v| v.as_bytes());
    if hosts.next().is_some() {
        return Err(BadHost::Duplicate);
    }
    let Some(authority) = uri.authority().map(|a| a.as_str().as_bytes()) else {
        return Ok(host);
    };
    if version == http::Version::HTTP_2 && host.is_some_and(|h| !h.eq_ignore_ascii_case(authority)) {
        return Err(BadHost::Disagree);
    }
    Ok(Some(authority))
}

/// Two `Origin` headers: a browser never sends them (RFC 6454 §7.3 gives one value), so a
/// request carrying more than one is refused whatever their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DuplicateOrigin;

/// The `Origin` header, if any; more than one is refused.
pub(crate) fn origin_of(headers: &HeaderMap) -> Result<Option<&[u8]>, DuplicateOrigin> {
    let mut origins = headers.get_all(ORIGIN).iter();
    let origin = origins.next().map(|v| v.as_bytes());
    if origins.next().is_some() {
        return Err(DuplicateOrigin);
    }
    Ok(origin)
}

/// The media ranges of `Accept` this transport answers with, read in one pass (parameters and
/// blanks dropped, case-insensitive).
#[derive(Debug, Default, Clone, Copy)]
struct Accepted {
    /// Something is listed.
    listed: bool,
    /// `*/*`.
    any: bool,
    /// `application/*`.
    application: bool,
    /// `application/json`.
    json: bool,
    /// `text/*`.
    text: bool,
    /// `text/event-stream`.
    sse: bool,
}

impl Accepted {
    fn of(headers: &HeaderMap) -> Accepted {
        let mut a = Accepted::default();
        let ranges = headers
            .get_all(ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|item| item.split(';').next().unwrap_or("").trim())
            .filter(|m| !m.is_empty());
        for range in ranges {
            a.listed = true;
            let flag = match range.len() {
                3 if range == "*/*" => &mut a.any,
                6 if range.eq_ignore_ascii_case("text/*") => &mut a.text,
                13 if range.eq_ignore_ascii_case("application/*") => &mut a.application,
                16 if range.eq_ignore_ascii_case("application/json") => &mut a.json,
                17 if range.eq_ignore_ascii_case("text/event-stream") => &mut a.sse,
                _ => continue,
            };
            *flag = true;
        }
        a
    }
}

/// POST: `*/*`, or both `application/json` and `text/event-stream`.
pub(crate) fn accepts_post(headers: &HeaderMap) -> bool {
    let a = Accepted::of(headers);
    a.any || (a.json && a.sse)
}

/// Whether a POST body is declared as JSON: `Content-Type: application/json`, with or without
/// parameters (`; charset=utf-8`), case-insensitive. Anything else (a missing type, `text/plain`,
/// a form encoding: what a browser's "simple" cross-site request sends) is answered 415.
pub(crate) fn is_json_body(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// POST in the simple mode (JSON replies only): no `Accept`, or one that lists
/// `application/json`, `application/*` or `*/*`.
pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    let a = Accepted::of(headers);
    !a.listed || a.any || a.application || a.json
}

/// GET: `*/*` or `text/event-stream`.
pub(crate) fn accepts_sse(headers: &HeaderMap) -> bool {
    let a = Accepted::of(headers);
    a.any || a.sse || a.text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(list: Option<&[&str]>) -> OriginPolicy {
        let mut c = HttpConfig::default();
        if let Some(l) = list {
            c = c.allowed_origins(l.iter().copied());
        }
        OriginPolicy::new(&c, true).unwrap()
    }

    #[test]
    fn json_bodies_only() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(http::header::CONTENT_TYPE, v.parse().unwrap());
            is_json_body(&h)
        };
        assert!(with("application/json"));
        assert!(with("Application/JSON; charset=utf-8"));
        assert!(!with("text/plain"));
        assert!(!with("application/x-www-form-urlencoded"));
        assert!(!with("multipart/form-data; boundary=x"));
        assert!(!with("application/jsonx"));
        assert!(!is_json_body(&HeaderMap::new()));
    }

    #[test]
    fn loopback_origins() {
        let p = origins(None);
        let table: [(Option<&str>, bool); 14] = [
            (None, true),
            (Some("http://localhost"), true),
            (Some("http://localhost:3000"), true),
            (Some("https://127.0.0.1:8443"), true),
            (Some("http://[::1]:9"), true),
            (Some("HTTP://LOCALHOST:1"), true),
            (Some("http://localhost.evil.com"), false),
            (Some("http://evil.com"), false),
            (Some("http://evil.com?localhost"), false),
            (Some("http://user@localhost"), false),
            (Some("null"), false),
            (Some("ftp://localhost"), false),
            (Some("localhost"), false),
            (Some("http://localhost:99999"), false),
        ];
        for (o, ok) in table {
            assert_eq!(p.allows(o.map(str::as_bytes)), ok, "{o:?}");
        }
    }

    #[test]
    fn configured_origins() {
        let p = origins(Some(&["https://app.example.com", "http://dev.example.com:*", "null"]));
        let table = [
            ("https://app.example.com", true),
            ("https://app.example.com:443", true),
            ("https://app.example.com:8443", false),
            ("http://app.example.com", false),
            ("http://dev.example.com:1234", true),
            ("null", true),
            ("http://localhost", false),
        ];
        for (o, ok) in table {
            assert_eq!(p.allows(Some(o.as_bytes())), ok, "{o}");
        }
        assert!(origins(Some(&["*"])).allows(Some(b"http://anything:1")));
        assert!(!origins(Some(&["*"])).allows(Some(b"null")));
        let bad = HttpConfig::default().allowed_origins(["not an origin"]);
        assert!(matches!(
            OriginPolicy::new(&bad, true),
            Err(HttpError::InvalidOrigin(_))
        ));
        let strict = HttpConfig::default().allow_missing_origin(false);
        assert!(!OriginPolicy::new(&strict, true).unwrap().allows(None));
    }

    #[test]
    fn hosts() {
        let loopback = HostPolicy::new(&HttpConfig::default(), true).unwrap();
        let table: [(Option<&str>, bool); 7] = [
            (Some("localhost:8080"), true),
            (Some("127.0.0.1"), true),
            (Some("[::1]:1"), true),
            (Some("LOCALHOST:1"), true),
            (Some("evil.example.com"), false),
            (Some("evil.example.com:8080"), false),
            (None, false),
        ];
        for (h, ok) in table {
            assert_eq!(loopback.allows(h.map(str::as_bytes)), ok, "{h:?}");
        }
        assert!(
            HostPolicy::new(&HttpConfig::default(), false)
                .unwrap()
                .allows(Some(b"x.example"))
        );
        let listed = HostPolicy::new(&HttpConfig::default().allowed_hosts(["mcp.example.com:443"]), false).unwrap();
        assert!(listed.allows(Some(b"mcp.example.com:443")));
        assert!(!listed.allows(Some(b"mcp.example.com:80")));
        assert!(!listed.allows(Some(b"mcp.example.com")));
    }

    #[test]
    fn the_authority_wins_and_host_is_one() {
        use http::Version;
        let headers = |hosts: &[&str]| {
            let mut h = HeaderMap::new();
            for v in hosts {
                h.append(HOST, v.parse().unwrap());
            }
            h
        };
        let origin_form: http::Uri = "/mcp".parse().unwrap();
        let absolute: http::Uri = "http://evil.example/mcp".parse().unwrap();
        let loopback: http::Uri = "http://127.0.0.1:1/mcp".parse().unwrap();
        let one = headers(&["127.0.0.1:1"]);
        let h1 = Version::HTTP_11;
        let h2 = Version::HTTP_2;
        assert_eq!(host_of(&one, &origin_form, h1), Ok(Some(&b"127.0.0.1:1"[..])));
        assert_eq!(host_of(&HeaderMap::new(), &origin_form, h1), Ok(None));
        assert_eq!(
            host_of(&headers(&["127.0.0.1:1", "evil.example"]), &origin_form, h1),
            Err(BadHost::Duplicate)
        );
        assert_eq!(
            host_of(&headers(&["127.0.0.1:1", "127.0.0.1:1"]), &loopback, h2),
            Err(BadHost::Duplicate)
        );
        // HTTP/1.1 absolute form: the target's host, the Host header ignored.
        assert_eq!(host_of(&one, &absolute, h1), Ok(Some(&b"evil.example"[..])));
        // HTTP/2: `:authority` wins and must agree with Host.
        assert_eq!(host_of(&one, &absolute, h2), Err(BadHost::Disagree));
        assert_eq!(
            host_of(&HeaderMap::new(), &absolute, h2),
            Ok(Some(&b"evil.example"[..]))
        );
        assert_eq!(
            host_of(&headers(&["127.0.0.1:1"]), &loopback, h2),
            Ok(Some(&b"127.0.0.1:1"[..]))
        );
        assert_eq!(
            host_of(&headers(&["LOCALHOST:1"]), &"http://localhost:1/".parse().unwrap(), h2),
            Ok(Some(&b"localhost:1"[..])),
            "names compare without case"
        );
        let policy = HostPolicy::new(&HttpConfig::default(), true).unwrap();
        assert!(
            !policy.allows(host_of(&one, &absolute, h1).unwrap()),
            "403 for evil.example"
        );
    }

    #[test]
    fn accept_rules() {
        let h = |v: &str| {
            let mut m = HeaderMap::new();
            m.insert(ACCEPT, v.parse().unwrap());
            m
        };
        assert!(accepts_post(&h("application/json, text/event-stream")));
        assert!(accepts_post(&h("text/event-stream;q=0.9,application/json")));
        assert!(accepts_post(&h("*/*")));
        assert!(!accepts_post(&h("application/json")));
        assert!(!accepts_post(&HeaderMap::new()));
        assert!(accepts_json(&HeaderMap::new()));
        assert!(accepts_json(&h("application/json")));
        assert!(!accepts_json(&h("text/event-stream")));
        assert!(accepts_sse(&h("text/event-stream")));
        assert!(!accepts_sse(&h("application/json")));
        // Case-insensitive, parameters and blanks dropped, several headers read as one list.
        assert!(accepts_post(&h(" Application/JSON ; q=1 , TEXT/Event-Stream")));
        assert!(accepts_json(&h("application/*")));
        assert!(!accepts_json(&h("application/jsonx, text/*")));
        assert!(accepts_sse(&h("text/*;q=0.1")));
        let mut two = h("application/json");
        two.append(ACCEPT, "text/event-stream".parse().unwrap());
        assert!(accepts_post(&two));
        assert!(accepts_json(&h(" , ")), "a list of blanks lists nothing");
    }
}
