//! `mcp_protocol::cursor`: decoding arbitrary cursors, and paginating with them.
//!
//! Checks that decoding never panics, that a cursor that decodes is exactly the one
//! `encode_cursor` makes for its key (so nothing else is accepted), that any key round trips,
//! and that `paginate` over a small sorted listing with an arbitrary cursor never panics and
//! returns only items after the cursor's key, within the page size.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_protocol::cursor::{decode_cursor, encode_cursor, paginate};

const KEYS: [&str; 6] = ["", "a", "b", "b\u{0}", "m", "zz"];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    assert_eq!(decode_cursor(&encode_cursor(&text)).ok().as_deref(), Some(&*text));
    let page_size = data.first().map_or(0, |b| usize::from(b % 4));
    match decode_cursor(&text) {
        Ok(key) => {
            assert_eq!(encode_cursor(&key), text, "a cursor decoded that we never make");
            let (page, next) = paginate(&KEYS, |k| k, Some(&text), page_size).expect("a valid cursor");
            assert!(page.iter().all(|k| **k > *key));
            assert!(page_size == 0 || page.len() <= page_size);
            if let Some(next) = next {
                let after = decode_cursor(&next).expect("we made it");
                assert_eq!(Some(after.as_str()), page.last().copied());
            }
        }
        Err(e) => {
            assert_eq!(e.code, -32602);
            assert!(paginate(&KEYS, |k| k, Some(&text), page_size).is_err());
        }
    }
});
