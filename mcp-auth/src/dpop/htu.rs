//! Comparing a proof's `htu` with the URL of the request (RFC 9449 §4.3, item 9): both are
//! reduced to scheme, host, port and path, with the query and fragment dropped and the
//! normalisations RFC 9449 asks for (RFC 3986 §6.2.2 syntax-based: case of the scheme and host,
//! percent-encodings, dot segments; §6.2.3 scheme-based: the default port, an empty path).

/// A URL reduced to what `htu` is compared on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Normalized {
    scheme: &'static str,
    host: String,
    port: Option<u16>,
    path: String,
}

impl Normalized {
    /// The normalised path.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

impl std::fmt::Display for Normalized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}", self.scheme, self.host)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        f.write_str(&self.path)
    }
}

/// Normalises an absolute `http` or `https` URL; `None` when it is not one (or has user info).
pub(crate) fn normalize(url: &str) -> Option<Normalized> {
    let url = url.split('#').next().unwrap_or("");
    let url = url.split('?').next().unwrap_or("");
    let (scheme, rest) = url.split_once("://")?;
    let (scheme, default_port) = if scheme.eq_ignore_ascii_case("https") {
        ("https", 443)
    } else if scheme.eq_ignore_ascii_case("http") {
        ("http", 80)
    } else {
        return None;
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let (host, port) = split_port(authority)?;
    if host.is_empty() || !host.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let port = port.filter(|p| *p != default_port);
    Some(Normalized {
        scheme,
        host: normalize_percent(host)?.to_ascii_lowercase(),
        port,
        path: normalize_path(path)?,
    })
}

/// Normalises an origin-form request path (`/a/b`, without the query).
pub(crate) fn normalize_request_path(path: &str) -> Option<String> {
    normalize_path(path.split('?').next().unwrap_or(""))
}

/// The host and the port of an authority (`[v6]:port` included); an empty port is none.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest {
            "" => (host, None),
            r => (host, Some(r.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None | Some("") => None,
        Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    Some((host, port))
}

/// The path with percent-encodings normalised and dot segments removed; `/` when empty.
fn normalize_path(path: &str) -> Option<String> {
    if !path.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let path = normalize_percent(path)?;
    let path = remove_dot_segments(&path);
    Some(if path.is_empty() { "/".to_owned() } else { path })
}

/// RFC 3986 §6.2.2.1-2: hex digits of a percent-encoding in upper case, and an encoded
/// unreserved character decoded. A `%` not followed by two hex digits is refused.
fn normalize_percent(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            let value = u8::from_str_radix(hex, 16).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            if value.is_ascii_alphanumeric() || matches!(value, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(value));
            } else {
                out.push('%');
                out.push_str(&hex.to_ascii_uppercase());
            }
            i += 3;
        } else {
            out.push(char::from(bytes[i]));
            i += 1;
        }
    }
    Some(out)
}

/// RFC 3986 §5.2.4.
fn remove_dot_segments(path: &str) -> String {
    let mut input = path;
    let mut output: Vec<&str> = Vec::new();
    while !input.is_empty() {
        if let Some(rest) = input.strip_prefix("../").or_else(|| input.strip_prefix("./")) {
            input = rest;
        } else if input.starts_with("/./") {
            input = &input[2..];
        } else if input == "/." {
            input = "/";
        } else if input.starts_with("/../") {
            input = &input[3..];
            output.pop();
        } else if input == "/.." {
            input = "/";
            output.pop();
        } else if input == "." || input == ".." {
            input = "";
        } else {
            let start = usize::from(input.starts_with('/'));
            let end = input[start..].find('/').map_or(input.len(), |i| i + start);
            output.push(&input[..end]);
            input = &input[end..];
        }
    }
    output.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(url: &str) -> String {
        normalize(url).map(|u| u.to_string()).unwrap_or_else(|| "-".into())
    }

    #[test]
    fn query_and_fragment_are_ignored() {
        assert_eq!(n("https://h.example/mcp?x=1#f"), "https://h.example/mcp");
        assert_eq!(n("https://h.example/mcp#f?x"), "https://h.example/mcp");
        assert_eq!(n("https://h.example?x"), "https://h.example/");
    }

    #[test]
    fn scheme_and_syntax_normalisation() {
        assert_eq!(n("HTTPS://H.Example:443/mcp"), "https://h.example/mcp");
        assert_eq!(n("http://h.example:80"), "http://h.example/");
        assert_eq!(n("https://h.example:/mcp"), "https://h.example/mcp");
        assert_eq!(n("https://h.example:8443/mcp"), "https://h.example:8443/mcp");
        assert_eq!(n("http://127.0.0.1:8080/mcp"), "http://127.0.0.1:8080/mcp");
        assert_eq!(n("https://[::1]:443/mcp"), "https://[::1]/mcp");
        assert_eq!(n("https://[::1]:9/mcp"), "https://[::1]:9/mcp");
        assert_eq!(n("https://h.example/a/./b/../c"), "https://h.example/a/c");
        assert_eq!(n("https://h.example/%7euser/%2f%41"), "https://h.example/~user/%2FA");
        // The path is case-sensitive; a trailing slash matters.
        assert_ne!(n("https://h.example/MCP"), n("https://h.example/mcp"));
        assert_ne!(n("https://h.example/mcp/"), n("https://h.example/mcp"));
    }

    #[test]
    fn unusable_urls() {
        for bad in [
            "ftp://h/x",
            "//h/x",
            "/mcp",
            "https://",
            "https://u@h/x",
            "https://h:99999/x",
            "https://h:x/x",
            "https://h/%zz",
            "https://h/%4",
            "https://h/a b",
            "https://[::1/x",
        ] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }

    #[test]
    fn request_paths() {
        assert_eq!(normalize_request_path("/mcp?x=1").as_deref(), Some("/mcp"));
        assert_eq!(normalize_request_path("").as_deref(), Some("/"));
        assert_eq!(normalize_request_path("/a/%7e").as_deref(), Some("/a/~"));
    }

    #[test]
    fn dot_segments() {
        assert_eq!(remove_dot_segments("/a/b/c/./../../g"), "/a/g");
        assert_eq!(remove_dot_segments("mid/content=5/../6"), "mid/6");
        assert_eq!(remove_dot_segments("/.."), "/");
        assert_eq!(remove_dot_segments("/a/.."), "/");
    }
}
