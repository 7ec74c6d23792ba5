//! Server-provided nonces (RFC 9449 §9), kept without state: a nonce is the time it was issued
//! and an HMAC-SHA-256 of that time under the server's secret, so that any instance sharing the
//! secret recognises it, and a nonce is fresh while it is younger than its lifetime.
//!
//! `nonce = base64url(issued at, 8 bytes big-endian ‖ first 16 bytes of HMAC(secret, label ‖ issued at))`,
//! 32 characters, all within RFC 9449 §8.1's `NQCHAR`.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What the MAC covers before the time, so that these MACs serve nothing else.
const LABEL: &[u8] = b"mcp-auth dpop nonce v1\0";
/// Bytes of the MAC kept.
const TAG_LEN: usize = 16;
/// How far in the future a nonce's time may be (another instance's clock).
const FUTURE_TOLERANCE_SECS: u64 = 5;

/// Issues and checks nonces.
#[derive(Clone)]
pub(crate) struct Nonces {
    secret: Vec<u8>,
    lifetime_secs: u64,
}

impl std::fmt::Debug for Nonces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nonces")
            .field("lifetime_secs", &self.lifetime_secs)
            .finish_non_exhaustive()
    }
}

impl Nonces {
    pub(crate) fn new(secret: Vec<u8>, lifetime_secs: u64) -> Self {
        Nonces {
            secret,
            lifetime_secs: lifetime_secs.max(1),
        }
    }

    fn tag(&self, issued: u64) -> [u8; TAG_LEN] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).expect("HMAC takes keys of any length");
        mac.update(LABEL);
        mac.update(&issued.to_be_bytes());
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    /// A nonce issued at `now` (seconds since the epoch).
    pub(crate) fn issue(&self, now: u64) -> String {
        let mut raw = [0u8; 8 + TAG_LEN];
        raw[..8].copy_from_slice(&now.to_be_bytes());
        raw[8..].copy_from_slice(&self.tag(now));
        URL_SAFE_NO_PAD.encode(raw)
    }

    /// Whether `nonce` was issued with this secret and is still fresh at `now`.
    pub(crate) fn is_fresh(&self, nonce: &str, now: u64) -> bool {
        if nonce.len() != 32 {
            return false;
        }
        let Ok(raw) = URL_SAFE_NO_PAD.decode(nonce) else {
            return false;
        };
        let Ok(raw) = <[u8; 8 + TAG_LEN]>::try_from(raw.as_slice()) else {
            return false;
        };
        let mut issued = [0u8; 8];
        issued.copy_from_slice(&raw[..8]);
        let issued = u64::from_be_bytes(issued);
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).expect("HMAC takes keys of any length");
        mac.update(LABEL);
        mac.update(&issued.to_be_bytes());
        if mac.verify_truncated_left(&raw[8..]).is_err() {
            return false;
        }
        issued <= now.saturating_add(FUTURE_TOLERANCE_SECS) && now.saturating_sub(issued) < self.lifetime_secs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000;

    #[test]
    fn issued_nonces_are_fresh_for_their_lifetime() {
        let n = Nonces::new(vec![7; 32], 300);
        let nonce = n.issue(NOW);
        assert_eq!(nonce.len(), 32);
        assert!(
            nonce
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert!(n.is_fresh(&nonce, NOW));
        assert!(n.is_fresh(&nonce, NOW + 299));
        assert!(!n.is_fresh(&nonce, NOW + 300), "stale");
        assert!(n.is_fresh(&nonce, NOW - 5), "another instance's clock, a little behind");
        assert!(!n.is_fresh(&nonce, NOW - 6));
    }

    #[test]
    fn forged_or_foreign_nonces_are_refused() {
        let n = Nonces::new(vec![7; 32], 300);
        let other = Nonces::new(vec![8; 32], 300);
        assert!(!n.is_fresh(&other.issue(NOW), NOW));
        let mut forged = n.issue(NOW).into_bytes();
        forged[31] = if forged[31] == b'A' { b'B' } else { b'A' };
        assert!(!n.is_fresh(std::str::from_utf8(&forged).unwrap(), NOW));
        for junk in ["", "x", "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", &"A".repeat(33)] {
            assert!(!n.is_fresh(junk, NOW), "{junk}");
        }
    }
}
