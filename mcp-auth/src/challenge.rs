//! Refusals and their `WWW-Authenticate` headers (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9449 §7.1).

use std::fmt;
use std::time::Duration;

/// The `error_description` of an operation's `insufficient_scope` refusal.
pub(crate) const INSUFFICIENT_SCOPE_DESCRIPTION: &str = "the token lacks scopes this operation needs";

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
    /// (visible ASCII) when built by this crate. It may hold several challenges separated by
    /// commas (RFC 9110 §11.6.1): a bearer provider that accepts both schemes answers
    /// `Bearer realm="mcp", …, DPoP realm="mcp", algs="ES256 RS256", …` (RFC 9449 §7.2).
    pub www_authenticate: Option<String>,
    /// When the client may try again (`Retry-After`, in whole seconds rounded up), if the
    /// refusal says.
    pub retry_after: Option<Duration>,
    /// Other response headers the refusal must carry, in order, each to be appended to the
    /// response as given: e.g. `DPoP-Nonce` with a `use_dpop_nonce` refusal (RFC 9449 §9).
    /// Empty for every refusal but those of a DPoP-enabled bearer provider.
    pub headers: Vec<(http::HeaderName, http::HeaderValue)>,
}

impl Challenge {
    /// A refusal with any status and an optional challenge header.
    pub fn new(status: u16, www_authenticate: Option<String>) -> Self {
        Challenge {
            status,
            www_authenticate,
            retry_after: None,
            headers: Vec::new(),
        }
    }

    /// A refusal with `status` carrying several challenges in one `WWW-Authenticate` value,
    /// separated by commas (RFC 9110 §11.6.1); none when `challenges` is empty.
    pub fn with_challenges(status: u16, challenges: &[WwwAuthenticate]) -> Self {
        let value = challenges
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        Self::new(status, (!value.is_empty()).then_some(value))
    }

    /// The same refusal, with one more response header (appended after those already there).
    pub fn with_header(mut self, name: http::HeaderName, value: http::HeaderValue) -> Self {
        self.headers.push((name, value));
        self
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

    /// The challenge itself, with an error and a description or without (no error attributes),
    /// to be combined with another scheme's in one refusal ([`Challenge::with_challenges`]).
    pub fn www_authenticate(&self, error: Option<BearerError>, description: Option<&str>) -> WwwAuthenticate {
        self.header(error, description, self.scope.as_deref())
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

/// The error codes of a `DPoP` challenge (RFC 9449 §7.1): RFC 6750's and DPoP's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DpopErrorCode {
    /// The request is malformed (e.g. two `Authorization` headers): 400.
    InvalidRequest,
    /// The access token is invalid, or not bound to the key of the DPoP proof: 401.
    InvalidToken,
    /// The token lacks a scope the request needs: 403.
    InsufficientScope,
    /// The DPoP proof is missing or invalid (RFC 9449 §4.3): 401.
    InvalidDpopProof,
    /// The DPoP proof must carry a nonce the server provides in a `DPoP-Nonce` response
    /// header (RFC 9449 §9): 401.
    UseDpopNonce,
}

impl DpopErrorCode {
    /// The `error` attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            DpopErrorCode::InvalidRequest => "invalid_request",
            DpopErrorCode::InvalidToken => "invalid_token",
            DpopErrorCode::InsufficientScope => "insufficient_scope",
            DpopErrorCode::InvalidDpopProof => "invalid_dpop_proof",
            DpopErrorCode::UseDpopNonce => "use_dpop_nonce",
        }
    }

    /// The HTTP status paired with the error.
    pub fn status(self) -> u16 {
        match self {
            DpopErrorCode::InvalidRequest => 400,
            DpopErrorCode::InsufficientScope => 403,
            DpopErrorCode::InvalidToken | DpopErrorCode::InvalidDpopProof | DpopErrorCode::UseDpopNonce => 401,
        }
    }
}

impl From<BearerError> for DpopErrorCode {
    fn from(e: BearerError) -> Self {
        match e {
            BearerError::InvalidRequest => DpopErrorCode::InvalidRequest,
            BearerError::InvalidToken => DpopErrorCode::InvalidToken,
            BearerError::InsufficientScope => DpopErrorCode::InsufficientScope,
        }
    }
}

/// The parameters a resource server repeats in each of its `DPoP` challenges (RFC 9449 §7.1):
/// the realm, the scopes it wants, the JWS algorithms it accepts for DPoP proofs (`algs`) and
/// the URL of its RFC 9728 metadata document.
///
/// ```
/// use mcp_auth::{DpopChallenge, DpopErrorCode};
///
/// let c = DpopChallenge::new("mcp").algs(["ES256", "RS256"]);
/// assert_eq!(c.missing().www_authenticate.unwrap(), r#"DPoP realm="mcp", algs="ES256 RS256""#);
/// let e = c.error(DpopErrorCode::InvalidDpopProof, "the DPoP proof expired");
/// assert_eq!(e.status, 401);
/// assert_eq!(e.www_authenticate.unwrap(),
///     r#"DPoP realm="mcp", error="invalid_dpop_proof", error_description="the DPoP proof expired", algs="ES256 RS256""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DpopChallenge {
    realm: String,
    scope: Option<String>,
    algs: Option<String>,
    resource_metadata: Option<String>,
}

impl DpopChallenge {
    /// Challenges for `realm`, with no scope hint, no `algs` and no metadata URL.
    pub fn new(realm: impl Into<String>) -> Self {
        DpopChallenge {
            realm: realm.into(),
            scope: None,
            algs: None,
            resource_metadata: None,
        }
    }

    /// Names the JWS algorithms accepted for DPoP proofs (`algs="ES256 RS256"`); none when empty.
    pub fn algs<S: AsRef<str>>(mut self, algs: impl IntoIterator<Item = S>) -> Self {
        let joined = join_scopes(algs);
        self.algs = (!joined.is_empty()).then_some(joined);
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

    /// The 401 for a request that sent no credentials of this scheme at all: no error
    /// attributes.
    pub fn missing(&self) -> Challenge {
        self.www_authenticate(None, None).unauthorized()
    }

    /// The refusal for `error`, with its status and a description.
    pub fn error(&self, error: DpopErrorCode, description: &str) -> Challenge {
        let header = self.www_authenticate(Some(error), Some(description));
        Challenge::new(error.status(), Some(header.to_string()))
    }

    /// The 403 `insufficient_scope` naming the scopes the request needs.
    pub fn insufficient_scope(&self, needed: &[String], description: &str) -> Challenge {
        let scope = join_scopes(needed);
        self.header(Some(DpopErrorCode::InsufficientScope), Some(description), Some(&scope))
            .forbidden()
    }

    /// The challenge itself, with an error and a description or without (no error attributes),
    /// to be combined with another scheme's in one refusal ([`Challenge::with_challenges`]).
    pub fn www_authenticate(&self, error: Option<DpopErrorCode>, description: Option<&str>) -> WwwAuthenticate {
        self.header(error, description, self.scope.as_deref())
    }

    fn header(&self, error: Option<DpopErrorCode>, description: Option<&str>, scope: Option<&str>) -> WwwAuthenticate {
        WwwAuthenticate::new("DPoP")
            .param("realm", &self.realm)
            .param_opt("error", error.map(DpopErrorCode::as_str))
            .param_opt("error_description", description)
            .param_opt("scope", scope)
            .param_opt("algs", self.algs.as_deref())
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
    fn dpop_challenge_format() {
        let base = DpopChallenge::new("mcp")
            .algs(["ES256", "", "RS256"])
            .scope(["files:read"])
            .resource_metadata("https://h/prm");
        assert_eq!(
            base.missing().www_authenticate.as_deref(),
            Some(r#"DPoP realm="mcp", scope="files:read", algs="ES256 RS256", resource_metadata="https://h/prm""#)
        );
        let c = base.error(DpopErrorCode::UseDpopNonce, "a nonce is required");
        assert_eq!(c.status, 401);
        assert!(
            c.www_authenticate
                .unwrap()
                .starts_with(r#"DPoP realm="mcp", error="use_dpop_nonce", error_description="a nonce is required""#)
        );
        let c = base.insufficient_scope(&["admin".to_owned()], "missing scope admin");
        assert_eq!(c.status, 403);
        assert!(
            c.www_authenticate
                .unwrap()
                .contains(r#"scope="admin", algs="ES256 RS256""#)
        );
        assert_eq!(base.error(DpopErrorCode::InvalidRequest, "x").status, 400);
        assert_eq!(DpopErrorCode::from(BearerError::InvalidToken).as_str(), "invalid_token");
    }

    #[test]
    fn several_challenges_in_one_header_and_extra_headers() {
        let bearer = BearerChallenge::new("mcp").www_authenticate(Some(BearerError::InvalidToken), Some("bad"));
        let dpop = DpopChallenge::new("mcp").algs(["ES256"]).www_authenticate(None, None);
        let c = Challenge::with_challenges(401, &[bearer, dpop]).with_header(
            http::HeaderName::from_static("dpop-nonce"),
            http::HeaderValue::from_static("n1"),
        );
        assert_eq!(
            c.www_authenticate.as_deref(),
            Some(
                r#"Bearer realm="mcp", error="invalid_token", error_description="bad", DPoP realm="mcp", algs="ES256""#
            )
        );
        assert!(http::HeaderValue::from_str(c.www_authenticate.as_deref().unwrap()).is_ok());
        assert_eq!(c.headers.len(), 1);
        assert_eq!(c.headers[0].1, "n1");
        assert_eq!(Challenge::with_challenges(401, &[]).www_authenticate, None);
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
