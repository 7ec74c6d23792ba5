//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): its identifier, methods,
//! limits, the skill naming rules, `skill://` URIs, digests and the wire types of its entries
//! and results. Pure rules: loading skills from disk and serving them live in `mcp-skills`.
//!
//! A skill is a directory whose root holds a `SKILL.md` beginning with YAML frontmatter (at
//! least `name` and `description`). Each of its files is a resource
//! `skill://<skill-path>/<file-path>`, where the final segment of `<skill-path>` is the skill's
//! name; the skill's root directory is `skill://<skill-path>` (no trailing slash), and every
//! directory level is a directory resource (`mimeType` [`DIRECTORY_MIME_TYPE`]).
//!
//! - [`check_name`]: 1–64 characters, lowercase ASCII letters, digits and hyphens, no leading,
//!   trailing or consecutive hyphen.
//! - [`SkillUri`]: a `skill://` URI split into segments, refusing anything that could name a
//!   path outside the namespace (`.`/`..` segments, empty segments, backslashes, percent
//!   encoding, control characters).
//! - [`digest`]: `sha256:<64 lowercase hex>` of a file's raw bytes.
//! - [`MAX_FILES`], [`MAX_BYTES`]: the per-skill limits a server should not exceed.

mod name;
mod types;
mod uri;

pub use name::{NameError, check_name};
pub use types::{Dynamic, GetSkillResult, ListSkillsResult, SkillEntry, SkillFiles, SkillResource};
pub use uri::{SCHEME, SkillUri, UriError, segment_allowed};

use sha2::{Digest, Sha256};

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The settings key a server sets to `true` when it serves [`DIRECTORY_READ`].
pub const DIRECTORY_READ_SETTING: &str = "directoryRead";
/// Lists the skills a server serves (paginated, an entry never split across pages).
pub const LIST: &str = "skills/list";
/// Returns the entry of one skill named by the URI of its `SKILL.md`.
pub const GET: &str = "skills/get";
/// Lists the direct children of a directory resource (optional, `directoryRead: true`).
pub const DIRECTORY_READ: &str = "resources/directory/read";
/// The manifest file at every skill's root.
pub const SKILL_MD: &str = "SKILL.md";
/// The MIME type of `SKILL.md`.
pub const SKILL_MD_MIME_TYPE: &str = "text/markdown";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// At most this many files per skill, `SKILL.md` included.
pub const MAX_FILES: usize = 512;
/// At most this many bytes per skill, summed over its files (16 MiB).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;
/// The `_meta` key prefix reserved for this extension on skill resources.
pub const META_PREFIX: &str = "io.modelcontextprotocol.skills/";

/// The digest of a file's raw bytes: `sha256:` and 64 lowercase hexadecimal characters.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Whether `s` is a well-formed digest (`sha256:` and 64 lowercase hex characters).
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// The MIME type a skill file is served with, from its name's extension: `text/markdown` for
/// Markdown (`SKILL.md` included), the usual types of common text and data files, else
/// `application/octet-stream`.
pub fn mime_type(file_name: &str) -> &'static str {
    let ext = file_name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => SKILL_MD_MIME_TYPE,
        Some("txt" | "text") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("xml") => "application/xml",
        Some("py") => "text/x-python",
        Some("sh") => "application/x-sh",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("rs") => "text/x-rust",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// Whether a MIME type is served as text (`text` contents) rather than base64 (`blob`).
pub fn is_text(mime_type: &str) -> bool {
    mime_type.starts_with("text/")
        || matches!(
            mime_type,
            "application/json"
                | "application/yaml"
                | "application/toml"
                | "application/xml"
                | "application/x-sh"
                | "image/svg+xml"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_digest(&digest(b"abc")));
        assert!(!is_digest("sha256:E3B0"));
        assert!(!is_digest("md5:00"));
    }

    #[test]
    fn mime_types() {
        assert_eq!(mime_type(SKILL_MD), "text/markdown");
        assert_eq!(mime_type("extract.PY"), "text/x-python");
        assert_eq!(mime_type("blob"), "application/octet-stream");
        assert!(is_text("text/markdown") && is_text("application/json") && !is_text("image/png"));
    }
}
