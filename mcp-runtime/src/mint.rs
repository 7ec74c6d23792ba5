//! Fresh ids (sessions, tasks, URL elicitations, instances): a prefix and random bytes from the
//! OS CSPRNG as lowercase hex digits, so that no id can be guessed from another.

use std::fmt::Write;

/// `prefix` followed by `N` random bytes as `2N` lowercase hex digits; `None` when the OS
/// generator fails.
pub(crate) fn random_id<const N: usize>(prefix: &str) -> Option<String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).ok()?;
    let mut id = String::with_capacity(prefix.len() + 2 * N);
    id.push_str(prefix);
    for b in bytes {
        let _ = write!(id, "{b:02x}");
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::random_id;

    #[test]
    fn a_prefix_then_hex_digits_each_time_new() {
        let a = random_id::<16>("el_").unwrap();
        assert_eq!(a.len(), 3 + 32);
        assert!(a.starts_with("el_"));
        assert!(a[3..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert_ne!(a, random_id::<16>("el_").unwrap());
        assert_eq!(random_id::<8>("").unwrap().len(), 16);
    }
}
