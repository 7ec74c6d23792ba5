//! Refusals and their `WWW-Authenticate` headers (RFC 9110 §11.6.1, RFC 6750 §3).

use std::fmt;
use std::time::Duration;

/// The realm named in challenges unless a provider is configured otherwise.
pub const DEFAULT_REALM: &str = "mcp";

/// A refusal: the HTTP status and the header that explains it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("authentication failed with status {status}")]
#[non_exhaustive]
pub struct Challenge {
    /// 401 (no or bad credentials), 403 (insufficient scope), 400 (malformed request), 429
    /// (too many failed attempts) or 503 (the provider is over its own bound).
    pub status: u16,
    /// The `WWW-Authenticate` header value, if any. Always a valid header value
    /// (visible ASCII) when built by this crate.
    pub www_authenticate: Option<String>,
    /// When the client may try again (`Retry-After`, in whole seconds rounded up), if the
    /// refusal says.
    pub retry_after: Option<Duration>,
}

impl Challenge {
    /// A refusal with any status and an optional challenge header.
    pub fn new(status: u16, www_authenticate: Option<String>) -> Self {
        Challenge {
            status,
            www_authenticate,
            retry_after: None,
        }
    }

    /// A 429 Too Many Requests (RFC 6585 §4): the client's failed attempts are over a limit,
    /// and it may try again after `retry_after`. It carries no challenge: the credentials were
    /// not looked at.
    pub fn too_many_requests(retry_after: Duration) -> Self {
        Self::new(429, None).with_retry_after(retry_after)
    }

    /// The same refusal, telling the client when to try again.
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }

    /// The `Retry-After` value in whole seconds: the delay rounded up, at least 1.
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after
            .map(|d| (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1))
    }

    /// A 401 with a challenge header.
    pub fn unauthorized(www_authenticate: impl Into<String>) -> Self {
        Self::new(401, Some(www_authenticate.into()))
    }

    /// A 403 with a challenge header.
    pub fn forbidden(www_authenticate: impl Into<String>) -> Self {
        Self::new(403, Some(www_authenticate.into()))
    }

    /// A 400 with a challenge header (RFC 6750 `invalid_request`).
    pub fn bad_request(www_authenticate: impl Into<String>) -> Self {
        Self::new(400, Some(www_authenticate.into()))
    }
}

/// One `WWW-Authenticate` challenge under construction: a scheme and its
/// auth-params, rendered as `Scheme name="value", name="value"`.
///
/// Values are always quoted. Characters a quoted value may not carry in an
/// RFC 6750 challenge (`"`, `\`, anything outside visible ASCII and space) are
/// replaced, so the rendered value is always a valid header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WwwAuthenticate {
    scheme: String,
    params: Vec<(String, String)>,
}

impl WwwAuthenticate {
    /// A challenge for `scheme` (e.g. `Bearer`), with no parameters yet.
    pub fn new(scheme: impl Into<String>) -> Self {
        let scheme: String = scheme.into();
        WwwAuthenticate {
            scheme: scheme.chars().filter(|c| is_tchar(*c)).collect(),
            params: Vec::new(),
        }
    }

    /// Appends the auth-param `name="value"`.
    pub fn param(mut self, name: impl Into<String>, value: impl AsRef<str>) -> Self {
        let name: String = name.into();
        self.params.push((
            name.chars().filter(|c| is_tchar(*c)).collect(),
            sanitize(value.as_ref()),
        ));
        self
    }

    /// Appends the auth-param when `value` is `Some`.
    pub fn param_opt(self, name: impl Into<String>, value: Option<impl AsRef<str>>) -> Self {
        match value {
            Some(v) => self.param(name, v),
            None => self,
        }
    }

    /// A 401 carrying this challenge.
    pub fn unauthorized(&self) -> Challenge {
        Challenge::unauthorized(self.to_string())
    }

    /// A 403 carrying this challenge.
    pub fn forbidden(&self) -> Challenge {
        Challenge::forbidden(self.to_string())
    }
}

impl fmt::Display for WwwAuthenticate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.scheme)?;
        for (i, (name, value)) in self.params.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{name}=\"{value}\"")?;
        }
        Ok(())
    }
}

/// RFC 6750 §3.1 error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BearerError {
    /// The request is malformed (e.g. two `Authorization` headers): 400.
    InvalidRequest,
    /// The token is expired, revoked, malformed or otherwise invalid: 401.
    InvalidToken,
    /// The token lacks a scope the request needs: 403.
    InsufficientScope,
}

impl BearerError {
    /// The `error` attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            BearerError::InvalidRequest => "invalid_request",
            BearerError::InvalidToken => "invalid_token",
            BearerError::InsufficientScope => "insufficient_scope",
        }
    }

    /// The HTTP status RFC 6750 pairs with the error.
    pub fn status(self) -> u16 {
        match self {
            BearerError::InvalidRequest => 400,
            BearerError::InvalidToken => 401,
            BearerError::InsufficientScope => 403,
        }
    }
}

/// The parameters a resource server repeats in each of its `Bearer`
/// challenges: the realm, the scopes it wants (a hint for the client) and the
/// URL of its RFC 9728 metadata document.
///
/// ```
/// use mcp_auth::{BearerChallenge, BearerError};
///
/// let c = BearerChallenge::new("mcp").resource_metadata("https://mcp.example.com/.well-known/oauth-protected-resource");
/// assert_eq!(c.missing().www_authenticate.unwrap(),
///     r#"Bearer realm="mcp", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#);
/// let e = c.error(BearerError::InvalidToken, "the token expired");
/// assert_eq!(e.status, 401);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerChallenge {
    scheme: String,
    realm: String,
    scope: Option<String>,
    resource_metadata: Option<String>,
}

impl BearerChallenge {
    /// Challenges for `realm`, with no scope hint and no metadata URL.
    pub fn new(realm: impl Into<String>) -> Self {
        BearerChallenge {
            scheme: "Bearer".into(),
            realm: realm.into(),
            scope: None,
            resource_metadata: None,
        }
    }

    /// Replaces the realm.
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = realm.into();
        self
    }

    /// Uses another scheme than `Bearer` (for scope refusals of API-key or basic providers).
    pub fn scheme(mut self, scheme: impl Into<String>) -> Self {
        self.scheme = scheme.into();
        self
    }

    /// Names the scopes the resource wants in every challenge (`scope="a b"`); none when empty.
    pub fn scope<S: AsRef<str>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        let joined = join_scopes(scopes);
        self.scope = (!joined.is_empty()).then_some(joined);
        self
    }

    /// Names the RFC 9728 metadata document (`resource_metadata="<url>"`).
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into());
        self
    }

    /// The 401 for a request that sent no credentials of this scheme at all:
    /// no error attributes (RFC 6750 §3.1).
    pub fn missing(&self) -> Challenge {
        self.header(None, None, self.scope.as_deref()).unauthorized()
    }

    /// The refusal for `error`, with its RFC 6750 status and a description.
    pub fn error(&self, error: BearerError, description: &str) -> Challenge {
        let header = self.header(Some(error), Some(description), self.scope.as_deref());
        Challenge::new(error.status(), Some(header.to_string()))
    }

    /// The 403 `insufficient_scope` naming the scopes the request needs.
    pub fn insufficient_scope(&self, needed: &[String], description: &str) -> Challenge {
        let scope = join_scopes(needed);
        self.header(Some(BearerError::InsufficientScope), Some(description), Some(&scope))
            .forbidden()
    }

    fn header(&self, error: Option<BearerError>, description: Option<&str>, scope: Option<&str>) -> WwwAuthenticate {
        WwwAuthenticate::new(&self.scheme)
            .param("realm", &self.realm)
            .param_opt("error", error.map(BearerError::as_str))
            .param_opt("error_description", description)
            .param_opt("scope", scope)
            .param_opt("resource_metadata", self.resource_metadata.as_deref())
    }
}

fn join_scopes<S: AsRef<str>>(scopes: impl IntoIterator<Item = S>) -> String {
    scopes
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Keeps a quoted value within RFC 6750's `%x20-21 / %x23-5B / %x5D-7E`.
fn sanitize(value: &str) -> String {
    value
        .chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

/// Whether a realm can be rendered as given (visible ASCII and space, no quote or backslash).
pub(crate) fn valid_realm(realm: &str) -> bool {
    !realm.is_empty() && realm.chars().all(|c| matches!(c, ' '..='~') && c != '"' && c != '\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        let secs = |ms| Challenge::too_many_requests(Duration::from_millis(ms)).retry_after_secs();
        assert_eq!(secs(0), Some(1));
        assert_eq!(secs(1), Some(1));
        assert_eq!(secs(1_000), Some(1));
        assert_eq!(secs(1_001), Some(2));
        assert_eq!(secs(59_999), Some(60));
        let c = Challenge::too_many_requests(Duration::from_secs(3));
        assert_eq!((c.status, c.www_authenticate), (429, None));
        assert_eq!(Challenge::new(401, None).retry_after_secs(), None);
    }

    #[test]
    fn renders_params_in_order_and_quoted() {
        let h = WwwAuthenticate::new("Bearer")
            .param("realm", "mcp")
            .param("error", "invalid_token");
        assert_eq!(h.to_string(), r#"Bearer realm="mcp", error="invalid_token""#);
        assert_eq!(WwwAuthenticate::new("Basic").to_string(), "Basic");
    }

    #[test]
    fn values_cannot_break_out_of_the_header() {
        let h = WwwAuthenticate::new("Bear er\r\n").param("re alm", "a\"b\\c\r\nd\u{e9}");
        let s = h.to_string();
        assert_eq!(s, r#"Bearer realm="a'b/c??d?""#);
        assert!(http::HeaderValue::from_str(&s).is_ok());
    }

    #[test]
    fn bearer_missing_has_no_error_attributes() {
        let c = BearerChallenge::new("mcp").missing();
        assert_eq!(c.status, 401);
        assert_eq!(c.www_authenticate.as_deref(), Some(r#"Bearer realm="mcp""#));
    }

    #[test]
    fn bearer_error_format() {
        let c = BearerChallenge::new("mcp")
            .resource_metadata("https://h/.well-known/oauth-protected-resource/mcp")
            .error(BearerError::InvalidToken, "the token expired");
        assert_eq!(c.status, 401);
        assert_eq!(
            c.www_authenticate.as_deref(),
            Some(
                r#"Bearer realm="mcp", error="invalid_token", error_description="the token expired", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp""#
            )
        );
        let bad = BearerChallenge::new("mcp").error(BearerError::InvalidRequest, "two Authorization headers");
        assert_eq!(bad.status, 400);
    }

    #[test]
    fn bearer_scope_hint_and_insufficient_scope() {
        let base = BearerChallenge::new("mcp").scope(["files:read", "", "files:write"]);
        assert_eq!(
            base.missing().www_authenticate.as_deref(),
            Some(r#"Bearer realm="mcp", scope="files:read files:write""#)
        );
        let c = base.insufficient_scope(&["admin".to_owned()], "missing scope admin");
        assert_eq!(c.status, 403);
        assert_eq!(
            c.www_authenticate.as_deref(),
            Some(
                r#"Bearer realm="mcp", error="insufficient_scope", error_description="missing scope admin", scope="admin""#
            )
        );
        let empty = BearerChallenge::new("mcp").scope(Vec::<String>::new());
        assert_eq!(
            empty.missing().www_authenticate.as_deref(),
            Some(r#"Bearer realm="mcp""#)
        );
    }

    #[test]
    fn realm_validation() {
        assert!(valid_realm("mcp"));
        assert!(valid_realm("my server"));
        assert!(!valid_realm(""));
        assert!(!valid_realm("a\"b"));
        assert!(!valid_realm("a\nb"));
    }
}
