//! `skill://` URIs: a skill's files and directories, split into checked path segments.

use std::fmt;

/// The scheme prefix of skill resources.
pub const SCHEME: &str = "skill://";

/// Why a URI does not name a place in a skill namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UriError {
    /// Not a `skill://` URI.
    #[error("{0:?} is not a skill:// URI")]
    Scheme(String),
    /// A segment that could leave the namespace or be read two ways: empty (`//`, a trailing
    /// slash), `.` or `..`, a backslash, a percent-encoded byte, a query or fragment, a control
    /// character.
    #[error("{0:?} has a path segment that is not allowed in a skill URI")]
    Segment(String),
}

/// A `skill://` URI split into its path segments (the first one is the authority).
///
/// ```
/// use mcp_protocol::skills::SkillUri;
///
/// let uri = SkillUri::parse("skill://acme/billing/refunds/SKILL.md").unwrap();
/// assert_eq!(uri.segments(), ["acme", "billing", "refunds", "SKILL.md"]);
/// assert!(SkillUri::parse("skill://acme/../etc/passwd").is_err());
/// assert!(SkillUri::parse("skill://acme/%2e%2e/x").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SkillUri {
    segments: Vec<String>,
}

impl SkillUri {
    /// Parses a `skill://` URI.
    pub fn parse(uri: &str) -> Result<Self, UriError> {
        let rest = uri
            .strip_prefix(SCHEME)
            .ok_or_else(|| UriError::Scheme(uri.to_owned()))?;
        let segments: Vec<String> = rest.split('/').map(str::to_owned).collect();
        if segments.iter().any(|s| !segment_allowed(s)) {
            return Err(UriError::Segment(uri.to_owned()));
        }
        Ok(SkillUri { segments })
    }

    /// A URI from segments, each checked as [`parse`](Self::parse) checks them.
    pub fn from_segments<I, S>(segments: I) -> Result<Self, UriError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let segments: Vec<String> = segments.into_iter().map(Into::into).collect();
        if segments.is_empty() || segments.iter().any(|s| !segment_allowed(s)) {
            return Err(UriError::Segment(segments.join("/")));
        }
        Ok(SkillUri { segments })
    }

    /// The path segments, the authority first.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The last segment.
    pub fn last(&self) -> &str {
        self.segments.last().map_or("", String::as_str)
    }

    /// This URI with one more segment (checked).
    pub fn join(&self, segment: &str) -> Result<Self, UriError> {
        if !segment_allowed(segment) {
            return Err(UriError::Segment(format!("{self}/{segment}")));
        }
        let mut segments = self.segments.clone();
        segments.push(segment.to_owned());
        Ok(SkillUri { segments })
    }
}

impl fmt::Display for SkillUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(SCHEME)?;
        f.write_str(&self.segments.join("/"))
    }
}

/// Whether a path segment (a skill-path segment, a directory or a file name) may appear in a
/// skill URI: not empty, not `.` or `..`, no slash, backslash, `%`, `?`, `#` or control
/// character. A percent sign is refused outright, so that `%2F` or `%2e%2e` can never decode
/// into a separator or a parent directory anywhere downstream.
pub fn segment_allowed(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && !segment
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '%' | '?' | '#') || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders() {
        let uri = SkillUri::parse("skill://pdf-processing/references/FORMS.md").unwrap();
        assert_eq!(uri.to_string(), "skill://pdf-processing/references/FORMS.md");
        assert_eq!(uri.last(), "FORMS.md");
        assert_eq!(uri.join("x").unwrap().segments().len(), 4);
        assert!(uri.join("..").is_err());
        assert_eq!(
            SkillUri::from_segments(["a", "SKILL.md"]).unwrap().to_string(),
            "skill://a/SKILL.md"
        );
    }

    #[test]
    fn refuses_hostile_uris() {
        for bad in [
            "skill://",
            "skill://a//b",
            "skill://a/",
            "skill://a/../b",
            "skill://a/./b",
            "skill://../etc/passwd",
            "skill://a/%2e%2e/b",
            "skill://a%2Fb/SKILL.md",
            "skill://a\\..\\b",
            "skill://a/b?x=1",
            "skill://a/b#f",
            "skill://a/\u{0}",
        ] {
            assert!(matches!(SkillUri::parse(bad), Err(UriError::Segment(_))), "{bad}");
        }
        for bad in ["file:///etc/passwd", "/etc/passwd", "SKILL://a/SKILL.md"] {
            assert!(matches!(SkillUri::parse(bad), Err(UriError::Scheme(_))), "{bad}");
        }
        assert!(SkillUri::from_segments(Vec::<String>::new()).is_err());
    }
}
