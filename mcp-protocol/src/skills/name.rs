//! The Agent Skills naming rules a skill's name follows (the final `<skill-path>` segment).

/// Why a skill name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Empty, or longer than 64 characters.
    #[error("skill name {0:?} must be 1 to 64 characters long")]
    Length(String),
    /// A character other than a lowercase ASCII letter, a digit or a hyphen.
    #[error("skill name {0:?} may only contain lowercase letters, digits and hyphens")]
    Characters(String),
    /// A hyphen at either end, or two in a row.
    #[error("skill name {0:?} may not start or end with a hyphen or contain two in a row")]
    Hyphens(String),
}

/// Checks a skill name: 1–64 characters, lowercase ASCII letters, digits and hyphens, no
/// leading, trailing or consecutive hyphen.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() || name.len() > 64 {
        return Err(NameError::Length(name.to_owned()));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(NameError::Characters(name.to_owned()));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(NameError::Hyphens(name.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "pdf-processing", "x1", &"a".repeat(64)] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        assert!(matches!(check_name(""), Err(NameError::Length(_))));
        assert!(matches!(check_name(&"a".repeat(65)), Err(NameError::Length(_))));
        for bad in ["PDF", "pdf_x", "pdf x", "é", "a.b"] {
            assert!(matches!(check_name(bad), Err(NameError::Characters(_))), "{bad}");
        }
        for bad in ["-a", "a-", "a--b"] {
            assert!(matches!(check_name(bad), Err(NameError::Hyphens(_))), "{bad}");
        }
    }
}
