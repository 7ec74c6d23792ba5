//! Reading credentials from request headers.

use http::HeaderMap;
use http::header::AUTHORIZATION;

/// What a header carries, as far as one provider is concerned.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found<'a> {
    /// The header is absent.
    Missing,
    /// The header is repeated or not visible ASCII: ambiguous, refused.
    Malformed,
    /// The single value.
    Value(&'a str),
}

/// The single value of header `name`.
pub(crate) fn single<'a>(headers: &'a HeaderMap, name: &http::HeaderName) -> Found<'a> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Found::Missing;
    };
    if values.next().is_some() {
        return Found::Malformed;
    }
    match first.to_str() {
        Ok(v) => Found::Value(v),
        Err(_) => Found::Malformed,
    }
}

/// The credentials of `Authorization: <scheme> <credentials>` when the scheme
/// matches (case-insensitively). Another scheme counts as [`Found::Missing`]:
/// the client sent nothing this provider understands.
pub(crate) fn authorization<'a>(headers: &'a HeaderMap, scheme: &str) -> Found<'a> {
    match single(headers, &AUTHORIZATION) {
        Found::Value(v) => {
            let v = v.trim_matches(' ');
            let (name, rest) = v.split_once(' ').unwrap_or((v, ""));
            if name.eq_ignore_ascii_case(scheme) {
                Found::Value(rest.trim_matches(' '))
            } else {
                Found::Missing
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn scheme_is_case_insensitive_and_spaces_trimmed() {
        let h = headers(&[("authorization", b"bEaReR   abc ")]);
        assert_eq!(authorization(&h, "Bearer"), Found::Value("abc"));
        assert_eq!(authorization(&h, "Basic"), Found::Missing);
    }

    #[test]
    fn scheme_without_credentials_is_empty() {
        let h = headers(&[("authorization", b"Bearer")]);
        assert_eq!(authorization(&h, "Bearer"), Found::Value(""));
    }

    #[test]
    fn absent_repeated_and_opaque_headers() {
        assert_eq!(authorization(&HeaderMap::new(), "Bearer"), Found::Missing);
        let twice = headers(&[("authorization", b"Bearer a"), ("authorization", b"Bearer b")]);
        assert_eq!(authorization(&twice, "Bearer"), Found::Malformed);
        let opaque = headers(&[("authorization", b"Bearer \xff")]);
        assert_eq!(authorization(&opaque, "Bearer"), Found::Malformed);
    }
}
