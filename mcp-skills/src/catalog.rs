//! A catalog: the skills served, by the URI of their `SKILL.md`, with the index of every file
//! and directory resource under them. Immutable once built; a reload builds a new one.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use mcp_protocol::skills::{SKILL_MD, SkillUri};

use crate::error::SkillError;
use crate::skill::{Skill, SkillFile};

/// A child of a directory resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Child {
    /// A file.
    File,
    /// A subdirectory.
    Directory,
}

/// The skills and the index of their resources.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Skills by the URI of their `SKILL.md`, in URI order (the listing's order).
    pub(crate) skills: BTreeMap<String, Arc<Skill>>,
    /// Every file by URI. A nested skill's file is a file of its enclosing skill too: one
    /// entry, the same bytes.
    pub(crate) files: HashMap<String, SkillFile>,
    /// Every directory resource (each level from the authority down) and its direct children,
    /// by child URI.
    pub(crate) directories: HashMap<String, BTreeMap<String, Child>>,
}

impl Catalog {
    /// Builds the index; refused when two skills share a path, or when one URI would be two
    /// different files, or both a file and a directory.
    pub(crate) fn new(skills: impl IntoIterator<Item = Skill>) -> Result<Self, SkillError> {
        let mut catalog = Catalog::default();
        for skill in skills {
            let uri = skill.uri();
            if catalog.skills.contains_key(&uri) {
                return Err(SkillError::Duplicate { uri });
            }
            for (path, file) in skill.files() {
                let mut segments = skill.root().segments().to_vec();
                segments.extend(path.split('/').map(str::to_owned));
                catalog.add_file(&segments, file)?;
            }
            catalog.skills.insert(uri, Arc::new(skill));
        }
        let clash = catalog
            .files
            .keys()
            .find(|f| catalog.directories.contains_key(*f))
            .cloned();
        match clash {
            Some(uri) => Err(SkillError::Duplicate { uri }),
            None => Ok(catalog),
        }
    }

    fn add_file(&mut self, segments: &[String], file: &SkillFile) -> Result<(), SkillError> {
        let uri = render(segments);
        match self.files.get(&uri) {
            Some(known) if known.digest() != file.digest() => return Err(SkillError::Duplicate { uri }),
            Some(_) => return Ok(()),
            None => {}
        }
        self.files.insert(uri, file.clone());
        for depth in 1..segments.len() {
            let kind = if depth + 1 == segments.len() {
                Child::File
            } else {
                Child::Directory
            };
            self.directories
                .entry(render(&segments[..depth]))
                .or_default()
                .insert(render(&segments[..=depth]), kind);
        }
        Ok(())
    }

    /// The skill whose `SKILL.md` is `uri`.
    pub(crate) fn skill(&self, uri: &str) -> Option<&Arc<Skill>> {
        self.skills.get(uri)
    }

    /// The URIs of every `SKILL.md` (listed in `resources/list`).
    pub(crate) fn manifests(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.values()
    }

    /// Whether `uri` names a `SKILL.md` of a skill served here.
    pub(crate) fn is_manifest(&self, uri: &str) -> bool {
        uri.ends_with(SKILL_MD) && self.skills.contains_key(uri)
    }
}

/// `skill://` and the segments joined by `/`.
fn render(segments: &[String]) -> String {
    SkillUri::from_segments(segments.iter().cloned()).map_or_else(|_| String::new(), |u| u.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(path: &str, name: &str) -> Skill {
        let md = format!("---\nname: {name}\ndescription: d\n---\n");
        Skill::new(path, md).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn indexes_files_and_directories() {
        let outer = skill("pdf", "pdf").file("refs/a.md", "a").unwrap();
        let nested = skill("pdf/refs/inner", "inner");
        let outer = outer
            .file("refs/inner/SKILL.md", "---\nname: inner\ndescription: d\n---\n")
            .unwrap();
        let c = Catalog::new([outer, nested]).unwrap();
        assert_eq!(c.skills.len(), 2);
        assert!(c.files.contains_key("skill://pdf/refs/a.md"));
        let root = &c.directories["skill://pdf"];
        assert_eq!(root["skill://pdf/SKILL.md"], Child::File);
        assert_eq!(root["skill://pdf/refs"], Child::Directory);
        assert_eq!(c.directories["skill://pdf/refs/inner"].len(), 1);
        assert!(c.is_manifest("skill://pdf/refs/inner/SKILL.md"));
    }

    #[test]
    fn refuses_clashes() {
        assert!(matches!(
            Catalog::new([skill("a", "a"), skill("a", "a")]),
            Err(SkillError::Duplicate { .. })
        ));
        let outer = skill("pdf", "pdf").file("inner/SKILL.md", "other bytes").unwrap();
        assert!(Catalog::new([outer, skill("pdf/inner", "inner")]).is_err());
    }
}
