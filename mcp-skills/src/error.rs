//! Why skills could not be loaded: every error names the file or skill it is about.

use std::path::PathBuf;

use mcp_protocol::skills::{MAX_BYTES, MAX_FILES, NameError};

/// A skill or a skills tree that was refused. Nothing of a refused load is served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `SKILL.md` does not begin with a `---` delimited frontmatter block, or is not UTF-8.
    #[error("{file}: SKILL.md must begin with YAML frontmatter between two --- lines")]
    NoFrontmatter {
        /// The `SKILL.md`.
        file: String,
    },
    /// The frontmatter is not valid YAML, or not a mapping with string keys.
    #[error("{file}: invalid YAML frontmatter: {reason}")]
    BadFrontmatter {
        /// The `SKILL.md`.
        file: String,
        /// What the parser said.
        reason: String,
    },
    /// `name` or `description` is missing or not a non-empty string.
    #[error("{file}: the frontmatter must have a non-empty string {field:?}")]
    MissingField {
        /// The `SKILL.md`.
        file: String,
        /// `name` or `description`.
        field: &'static str,
    },
    /// The name breaks the naming rules.
    #[error("{file}: {source}")]
    BadName {
        /// The `SKILL.md`.
        file: String,
        /// The broken rule.
        #[source]
        source: NameError,
    },
    /// The skill's directory name (its path's final segment) differs from its `name`.
    #[error("{file}: the frontmatter name {name:?} must equal the skill's directory name {directory:?}")]
    NameMismatch {
        /// The `SKILL.md`.
        file: String,
        /// The frontmatter's name.
        name: String,
        /// The final skill-path segment.
        directory: String,
    },
    /// A skill path or file path that cannot be a `skill://` URI segment (empty, `.`, `..`,
    /// absolute, a backslash, `%`, `?`, `#`, a control character, not UTF-8).
    #[error(
        "{path}: not a valid skill path (segments may not be empty, . or .., nor contain / \\ % ? # or control characters)"
    )]
    BadPath {
        /// The path as given or found.
        path: String,
    },
    /// A symbolic link that points outside the root, or at a directory.
    #[error("{path}: symbolic links may only point at files inside the skills root")]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// More than [`MAX_FILES`] files in one skill.
    #[error("skill {skill}: more than {MAX_FILES} files (found {count})")]
    TooManyFiles {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// How many were found (at least).
        count: usize,
    },
    /// More than [`MAX_BYTES`] bytes in one skill.
    #[error("skill {skill}: more than {MAX_BYTES} bytes, reached at {file}")]
    TooLarge {
        /// The skill's `SKILL.md` URI.
        skill: String,
        /// The file at which the total passed the limit.
        file: String,
    },
    /// Two skills at one path, or one file given twice with different contents.
    #[error("{uri}: defined twice")]
    Duplicate {
        /// The URI defined twice.
        uri: String,
    },
    /// A reload of skills that were not loaded from a directory.
    #[error("these skills were not loaded from a directory: replace them instead")]
    NotFromDirectory,
}
