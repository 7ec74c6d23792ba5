//! Opaque pagination cursors for the `*/list` methods.
//!
//! A cursor names the last key of the page the client has already seen; the
//! next page holds the items whose key sorts strictly after it. On the wire the
//! cursor is opaque: it is the unpadded base64url encoding of a small versioned
//! payload (`v1:` followed by the key), so that the format can change without
//! clients noticing. Cursors are not secret and not authenticated (a client
//! that crafts one can only skip ahead in a listing it may read anyway), but
//! anything this module did not produce is refused with -32602
//! "Invalid cursor", as the specification asks.
//!
//! [`paginate`] cuts one page out of a slice sorted by key, with a binary
//! search for the cursor position, and returns the cursor of the next page
//! when more items remain.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::RpcError;

/// The version prefix of the cursor payload.
const PREFIX: &str = "v1:";

/// Encodes a cursor that resumes a listing after `after_key`.
pub fn encode_cursor(after_key: &str) -> String {
    let mut payload = String::with_capacity(PREFIX.len() + after_key.len());
    payload.push_str(PREFIX);
    payload.push_str(after_key);
    URL_SAFE_NO_PAD.encode(payload.as_bytes())
}

/// Decodes a cursor made by [`encode_cursor`] back into the key it resumes after.
///
/// Anything else (bad base64, padding, another version, non-UTF-8) is a
/// -32602 "Invalid cursor".
pub fn decode_cursor(cursor: &str) -> Result<String, RpcError> {
    let invalid = || RpcError::invalid_params("Invalid cursor");
    let bytes = URL_SAFE_NO_PAD.decode(cursor.as_bytes()).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    text.strip_prefix(PREFIX).map(str::to_owned).ok_or_else(invalid)
}

/// Cuts one page out of `items`, which must be sorted by `key` (ascending,
/// byte order, unique keys).
///
/// Without a cursor the page starts at the first item; with one it starts at
/// the first item whose key is strictly greater than the cursor's key (the key
/// need not exist any more: items removed between two calls do not break the
/// listing). Returns the page and, when items remain after it, the cursor of
/// the next page. A `page_size` of 0 means "no limit".
pub fn paginate<'a, T>(
    items: &'a [T],
    key: impl Fn(&T) -> &str,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(&'a [T], Option<String>), RpcError> {
    let start = match cursor {
        None => 0,
        Some(c) => {
            let after = decode_cursor(c)?;
            items.partition_point(|item| key(item) <= after.as_str())
        }
    };
    let end = if page_size == 0 {
        items.len()
    } else {
        start.saturating_add(page_size).min(items.len())
    };
    let page = &items[start..end];
    let next = match page.last() {
        Some(last) if end < items.len() => Some(encode_cursor(key(last))),
        _ => None,
    };
    Ok((page, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for key in [
            "",
            "a",
            "tool_name",
            "ünïcödé/∂",
            "with space",
            "v1:nested",
            "=?base64?x?=",
        ] {
            let c = encode_cursor(key);
            assert!(
                c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{c}"
            );
            assert_eq!(decode_cursor(&c).unwrap(), key);
        }
    }

    #[test]
    fn rejects_foreign_cursors() {
        let bad = [
            "",                                  // empty payload: no version prefix
            "!!!",                               // not base64
            "dGVzdA==",                          // padded (and no prefix)
            "dGVzdA",                            // "test": no prefix
            "djI6YQ",                            // "v2:a": another version
            "djE6YQ==",                          // "v1:a" but padded
            "djE6YR",                            // non-canonical trailing bits
            &URL_SAFE_NO_PAD.encode(b"v1:\xff"), // not UTF-8
            "djE6Y+",                            // standard alphabet character
        ];
        for c in bad {
            let e = decode_cursor(c).unwrap_err();
            assert_eq!(e.code, -32602, "{c}");
            assert_eq!(e.message, "Invalid cursor", "{c}");
        }
    }

    fn names(n: usize) -> Vec<String> {
        let mut v: Vec<String> = (0..n).map(|i| format!("item{i:03}")).collect();
        v.sort();
        v
    }

    #[test]
    fn pages_walk_the_whole_list() {
        for (len, size) in [(0, 3), (1, 3), (3, 3), (4, 3), (10, 3), (10, 1), (10, 10), (10, 50)] {
            let items = names(len);
            let mut seen = Vec::new();
            let mut cursor: Option<String> = None;
            let mut pages = 0;
            loop {
                let (page, next) = paginate(&items, |s: &String| s.as_str(), cursor.as_deref(), size).unwrap();
                assert!(page.len() <= size);
                seen.extend(page.iter().cloned());
                pages += 1;
                match next {
                    Some(n) => {
                        assert_eq!(page.len(), size, "only full pages have a next cursor");
                        cursor = Some(n);
                    }
                    None => break,
                }
            }
            assert_eq!(seen, items, "len {len} size {size}");
            assert_eq!(pages, len.div_ceil(size).max(1), "len {len} size {size}");
        }
    }

    #[test]
    fn cursor_key_need_not_exist() {
        let items = ["a", "c", "e", "g"];
        let table = [
            ("", &["a", "c"][..], Some("c")),
            ("a", &["c", "e"], Some("e")),
            ("b", &["c", "e"], Some("e")),
            ("c", &["e", "g"], None),
            ("f", &["g"], None),
            ("g", &[], None),
            ("z", &[], None),
        ];
        for (after, want, next) in table {
            let c = encode_cursor(after);
            let (page, n) = paginate(&items, |s: &&str| s, Some(&c), 2).unwrap();
            assert_eq!(page, want, "after {after:?}");
            assert_eq!(
                n.map(|n| decode_cursor(&n).unwrap()),
                next.map(str::to_owned),
                "after {after:?}"
            );
        }
    }

    #[test]
    fn zero_page_size_means_everything() {
        let items = ["a", "b", "c"];
        let (page, next) = paginate(&items, |s: &&str| s, None, 0).unwrap();
        assert_eq!(page, &items);
        assert_eq!(next, None);
        let c = encode_cursor("a");
        let (page, next) = paginate(&items, |s: &&str| s, Some(&c), 0).unwrap();
        assert_eq!(page, &["b", "c"]);
        assert_eq!(next, None);
    }

    #[test]
    fn bad_cursor_is_invalid_params() {
        let items = ["a"];
        let e = paginate(&items, |s: &&str| s, Some("garbage!"), 10).unwrap_err();
        assert_eq!(e.code, -32602);
    }
}
