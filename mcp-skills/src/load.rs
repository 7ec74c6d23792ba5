//! Loading a skills tree from disk: every directory holding a `SKILL.md` is a skill whose
//! path is its place under the root; its files are every file below it (nested skills'
//! included). Nothing outside the root is ever read.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use mcp_protocol::skills::{MAX_BYTES, SKILL_MD, SkillUri, segment_allowed};

use crate::error::SkillError;
use crate::skill::{Skill, file_of};

/// A file found under the root: its path relative to the root (segments) and on disk.
struct Found {
    segments: Vec<String>,
    path: PathBuf,
}

/// Loads every skill under `root`.
pub(crate) fn load(root: &Path) -> Result<Vec<Skill>, SkillError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| SkillError::Io { path, source }
    };
    let root = fs::canonicalize(root).map_err(io(root))?;
    let mut files = Vec::new();
    walk(&root, &root, &mut Vec::new(), &mut files)?;
    files.sort_by(|a, b| a.segments.cmp(&b.segments));
    let mut skills = Vec::new();
    for manifest in files
        .iter()
        .filter(|f| f.segments.last().is_some_and(|s| s == SKILL_MD))
    {
        let dir = &manifest.segments[..manifest.segments.len() - 1];
        if dir.is_empty() {
            return Err(SkillError::BadPath {
                path: manifest.path.display().to_string(),
            });
        }
        let label = manifest.path.display().to_string();
        let uri =
            SkillUri::from_segments(dir.iter().cloned()).map_err(|_| SkillError::BadPath { path: label.clone() })?;
        let mut skill = Skill::assemble(uri, &label, read(&manifest.path)?)?;
        for f in files
            .iter()
            .filter(|f| f.segments.starts_with(dir) && f.path != manifest.path)
        {
            let rel = f.segments[dir.len()..].join("/");
            let name = f.segments.last().map_or("", String::as_str);
            let bytes = read(&f.path)?;
            skill.insert(rel, file_of(name, bytes), &f.path.display().to_string())?;
        }
        skills.push(skill);
    }
    Ok(skills)
}

/// Collects the files under `dir`. Entries whose name starts with `.` are skipped; a name
/// that cannot be a URI segment is refused; a symbolic link is followed only to a file inside
/// the root.
fn walk(root: &Path, dir: &Path, at: &mut Vec<String>, out: &mut Vec<Found>) -> Result<(), SkillError> {
    let io = |source| SkillError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(SkillError::BadPath {
                path: path.display().to_string(),
            });
        };
        if name.starts_with('.') {
            continue;
        }
        if !segment_allowed(name) {
            return Err(SkillError::BadPath {
                path: path.display().to_string(),
            });
        }
        let kind = entry.file_type().map_err(|source| SkillError::Io {
            path: path.clone(),
            source,
        })?;
        let mut segments = at.clone();
        segments.push(name.to_owned());
        if kind.is_symlink() {
            let target = fs::canonicalize(&path).map_err(|_| SkillError::Symlink { path: path.clone() })?;
            if !target.starts_with(root) || !target.is_file() {
                return Err(SkillError::Symlink { path });
            }
            out.push(Found { segments, path: target });
        } else if kind.is_dir() {
            at.push(name.to_owned());
            walk(root, &path, at, out)?;
            at.pop();
        } else if kind.is_file() {
            out.push(Found { segments, path });
        }
    }
    Ok(())
}

/// Reads a file, never more than the per-skill limit (a larger file is refused by the
/// limit check that follows).
fn read(path: &Path) -> Result<Vec<u8>, SkillError> {
    let io = |source| SkillError::Io {
        path: path.to_owned(),
        source,
    };
    let file = fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(io)?;
    Ok(bytes)
}
