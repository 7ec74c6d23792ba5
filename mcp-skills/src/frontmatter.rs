//! `SKILL.md` frontmatter: the leading `---` block, parsed as YAML into a JSON object.

use serde_json::{Map, Value};

use crate::error::SkillError;

/// Parses the frontmatter of `text` (the contents of `file`) into a JSON object with non-empty
/// string `name` and `description`. A byte-order mark is skipped; the block opens with a
/// `---` line and closes with the next line that is `---` (trailing spaces allowed).
pub(crate) fn parse(file: &str, text: &str) -> Result<Map<String, Value>, SkillError> {
    let none = || SkillError::NoFrontmatter { file: file.to_owned() };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or_else(none)?;
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Err(none());
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end_matches(['\r', '\n']).trim_end_matches([' ', '\t']) == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(none());
    }
    let bad = |reason: String| SkillError::BadFrontmatter {
        file: file.to_owned(),
        reason,
    };
    let value: Value = serde_norway::from_str(&yaml).map_err(|e| bad(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(bad("the frontmatter is not a mapping".into()));
    };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => {
                return Err(SkillError::MissingField {
                    file: file.to_owned(),
                    field,
                });
            }
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_block() {
        let fm = parse(
            "a",
            "---\nname: a\ndescription: \"Does: things\"\nmetadata:\n  v: 1\n---\n# Body\n",
        )
        .unwrap();
        assert_eq!(fm["name"], "a");
        assert_eq!(fm["description"], "Does: things");
        assert_eq!(fm["metadata"]["v"], 1);
        let crlf = parse("a", "\u{feff}---\r\nname: a\r\ndescription: d\r\n--- \r\nbody").unwrap();
        assert_eq!(crlf["description"], "d");
    }

    #[test]
    fn refuses_bad_blocks() {
        assert!(matches!(
            parse("f", "# no frontmatter"),
            Err(SkillError::NoFrontmatter { .. })
        ));
        assert!(matches!(
            parse("f", "---\nname: a\n"),
            Err(SkillError::NoFrontmatter { .. })
        ));
        assert!(matches!(
            parse("f", "---\n[1, 2]\n---\n"),
            Err(SkillError::BadFrontmatter { .. })
        ));
        assert!(matches!(
            parse("f", "---\nname: [\n---\n"),
            Err(SkillError::BadFrontmatter { .. })
        ));
        assert!(matches!(
            parse("f", "---\nname: a\n---\n"),
            Err(SkillError::MissingField {
                field: "description",
                ..
            })
        ));
        assert!(matches!(
            parse("f", "---\nname: 3\ndescription: d\n---\n"),
            Err(SkillError::MissingField { field: "name", .. })
        ));
        let e = parse("skills/a/SKILL.md", "---\n: :\n---\n").unwrap_err();
        assert!(e.to_string().starts_with("skills/a/SKILL.md"), "{e}");
    }
}
