//! One skill: its path, its parsed frontmatter and its files, held in memory.

use std::collections::BTreeMap;
use std::sync::Arc;

use mcp_protocol::skills::{
    MAX_BYTES, MAX_FILES, SKILL_MD, SkillEntry, SkillFiles, SkillResource, SkillUri, check_name, digest, mime_type,
    segment_allowed,
};
use serde_json::{Map, Value};

use crate::error::SkillError;
use crate::frontmatter;

/// A file of a skill: its bytes, their digest and its MIME type.
#[derive(Debug, Clone)]
pub struct SkillFile {
    bytes: Arc<[u8]>,
    digest: String,
    mime_type: &'static str,
}

impl SkillFile {
    fn new(name: &str, bytes: Vec<u8>) -> Self {
        SkillFile {
            digest: digest(&bytes),
            bytes: bytes.into(),
            mime_type: mime_type(name),
        }
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `sha256:<hex>` of the bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The MIME type it is served with.
    pub fn mime_type(&self) -> &'static str {
        self.mime_type
    }
}

/// A skill: a `SKILL.md` with frontmatter and its supporting files, each checked against the
/// SEP-2640 rules as it is added (naming, path segments, 512 files, 16 MiB).
///
/// ```
/// use mcp_skills::Skill;
///
/// let skill = Skill::new("acme/refunds", "---\nname: refunds\ndescription: Refund policy\n---\n# Refunds\n")?
///     .file("templates/email.md", "Dear customer,")?;
/// assert_eq!(skill.uri(), "skill://acme/refunds/SKILL.md");
/// assert_eq!(skill.name(), "refunds");
/// assert!(Skill::new("acme/Refunds", "---\nname: Refunds\ndescription: d\n---\n").is_err());
/// # Ok::<(), mcp_skills::SkillError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Skill {
    root: SkillUri,
    frontmatter: Map<String, Value>,
    files: BTreeMap<String, SkillFile>,
    bytes: u64,
}

impl Skill {
    /// A skill at `path` (`/`-separated segments, the last one its name) whose `SKILL.md` is
    /// `skill_md`. Refused when the path, the frontmatter or the name breaks a rule.
    pub fn new(path: &str, skill_md: impl Into<Vec<u8>>) -> Result<Self, SkillError> {
        let root = skill_path(path)?;
        let label = format!("{root}/{SKILL_MD}");
        Self::assemble(root, &label, skill_md.into())
    }

    /// Builds a skill whose `SKILL.md` (named `label` in errors) is `skill_md`.
    pub(crate) fn assemble(root: SkillUri, label: &str, skill_md: Vec<u8>) -> Result<Self, SkillError> {
        let text = std::str::from_utf8(&skill_md).map_err(|_| SkillError::NoFrontmatter { file: label.to_owned() })?;
        let frontmatter = frontmatter::parse(label, text)?;
        let name = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default();
        check_name(name).map_err(|source| SkillError::BadName {
            file: label.to_owned(),
            source,
        })?;
        if name != root.last() {
            return Err(SkillError::NameMismatch {
                file: label.to_owned(),
                name: name.to_owned(),
                directory: root.last().to_owned(),
            });
        }
        let mut skill = Skill {
            root,
            frontmatter,
            files: BTreeMap::new(),
            bytes: 0,
        };
        skill.insert(SKILL_MD.to_owned(), SkillFile::new(SKILL_MD, skill_md), label)?;
        Ok(skill)
    }

    /// Adds a supporting file at `path` (relative to the skill's root, `/`-separated).
    pub fn file(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Result<Self, SkillError> {
        let bad = || SkillError::BadPath { path: path.to_owned() };
        if path.is_empty() || !path.split('/').all(segment_allowed) {
            return Err(bad());
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let label = format!("{}/{path}", self.root);
        self.insert(path.to_owned(), SkillFile::new(name, bytes.into()), &label)?;
        Ok(self)
    }

    /// Adds a file, enforcing the limits.
    pub(crate) fn insert(&mut self, path: String, file: SkillFile, label: &str) -> Result<(), SkillError> {
        if self.files.contains_key(&path) {
            return Err(SkillError::Duplicate { uri: label.to_owned() });
        }
        if self.files.len() >= MAX_FILES {
            return Err(SkillError::TooManyFiles {
                skill: self.uri(),
                count: self.files.len() + 1,
            });
        }
        let bytes = self.bytes + file.bytes.len() as u64;
        if bytes > MAX_BYTES {
            return Err(SkillError::TooLarge {
                skill: self.uri(),
                file: label.to_owned(),
            });
        }
        self.bytes = bytes;
        self.files.insert(path, file);
        Ok(())
    }

    /// The URI of its `SKILL.md`.
    pub fn uri(&self) -> String {
        format!("{}/{SKILL_MD}", self.root)
    }

    /// Its root directory (`skill://<skill-path>`).
    pub fn root(&self) -> &SkillUri {
        &self.root
    }

    /// Its name (the frontmatter's, equal to the path's final segment).
    pub fn name(&self) -> &str {
        self.root.last()
    }

    /// Its frontmatter, as parsed.
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    /// Its files by path relative to its root, `SKILL.md` included.
    pub fn files(&self) -> &BTreeMap<String, SkillFile> {
        &self.files
    }

    /// Its entry, as `skills/list` and `skills/get` return it.
    pub fn entry(&self) -> SkillEntry {
        let resources = self
            .files
            .iter()
            .map(|(path, f)| SkillResource {
                uri: format!("{}/{path}", self.root),
                digest: f.digest.clone(),
                size: f.bytes.len() as u64,
            })
            .collect();
        SkillEntry {
            uri: self.uri(),
            frontmatter: self.frontmatter.clone(),
            resources: SkillFiles::Listed(resources),
        }
    }
}

/// A skill path (`acme/billing/refunds`) as the skill's root URI.
pub(crate) fn skill_path(path: &str) -> Result<SkillUri, SkillError> {
    SkillUri::from_segments(path.split('/')).map_err(|_| SkillError::BadPath { path: path.to_owned() })
}

/// Makes a [`SkillFile`] from bytes read elsewhere (the loader).
pub(crate) fn file_of(name: &str, bytes: Vec<u8>) -> SkillFile {
    SkillFile::new(name, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "---\nname: a\ndescription: d\n---\n";

    #[test]
    fn builds_entries() {
        let s = Skill::new("x/a", MD).unwrap().file("refs/b.md", "b").unwrap();
        let e = s.entry();
        assert_eq!(e.uri, "skill://x/a/SKILL.md");
        let SkillFiles::Listed(files) = e.resources else {
            panic!("listed")
        };
        assert_eq!(files.len(), 2);
        assert!(
            files
                .iter()
                .any(|f| f.uri == "skill://x/a/SKILL.md" && f.size == MD.len() as u64)
        );
        assert!(files.iter().any(|f| f.uri == "skill://x/a/refs/b.md" && f.size == 1));
    }

    #[test]
    fn refuses_bad_paths_and_names() {
        for bad in ["", "/a", "a/", "../a", "x/../a", "x/%2e%2e/a", "x\\a"] {
            assert!(
                matches!(Skill::new(bad, MD), Err(SkillError::BadPath { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(Skill::new("b", MD), Err(SkillError::NameMismatch { .. })));
        let upper = "---\nname: A\ndescription: d\n---\n";
        assert!(matches!(Skill::new("A", upper), Err(SkillError::BadName { .. })));
        let s = Skill::new("a", MD).unwrap();
        for bad in ["../x", "/etc/passwd", "r/./x", "r//x", "%2F", ""] {
            assert!(
                matches!(s.clone().file(bad, "x"), Err(SkillError::BadPath { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(s.file("SKILL.md", "x"), Err(SkillError::Duplicate { .. })));
    }

    #[test]
    fn enforces_limits() {
        let mut s = Skill::new("a", MD).unwrap();
        for i in 1..MAX_FILES {
            s = s.file(&format!("f{i}"), "").unwrap();
        }
        assert!(matches!(s.file("one-more", ""), Err(SkillError::TooManyFiles { .. })));
        let big = vec![0u8; usize::try_from(MAX_BYTES).unwrap_or(usize::MAX) - MD.len()];
        let s = Skill::new("a", MD).unwrap().file("big", big).unwrap();
        let e = s.file("x", "1").unwrap_err();
        assert!(matches!(e, SkillError::TooLarge { .. }));
        assert!(e.to_string().contains("skill://a/x"), "{e}");
    }
}
