//! Stored forms of API keys and passwords.
//!
//! * API keys: `hmac-sha256$<base64 HMAC-SHA-256(pepper, key)>`. A pepper (a
//!   server-side secret kept outside the key store) makes a leaked store
//!   useless without it; API keys are long random strings, so one HMAC is
//!   enough work.
//! * Passwords: `pbkdf2-sha256$<iterations>$<base64 salt>$<base64 hash>`,
//!   PBKDF2-HMAC-SHA256 with 100,000 iterations and a 16-byte random salt by
//!   default. The string describes itself, so the work factor can grow later.
//!
//! Base64 is the standard alphabet with padding.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::AuthSetupError;

/// The prefix of an API-key hash.
pub const API_KEY_HASH_PREFIX: &str = "hmac-sha256$";
/// The first field of a password hash.
pub const PASSWORD_HASH_PREFIX: &str = "pbkdf2-sha256";
/// PBKDF2 iterations of [`hash_password`].
pub const DEFAULT_PBKDF2_ITERATIONS: u32 = 100_000;
/// The fewest PBKDF2 iterations a password hash may name.
pub const MIN_PBKDF2_ITERATIONS: u32 = 1_000;
/// The most PBKDF2 iterations a password hash may name (bounds the work of one request).
pub const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;

const SALT_LEN: usize = 16;
const HASH_LEN: usize = 32;

/// The stored form of an API key: `hmac-sha256$<base64>` of HMAC-SHA-256 keyed by `pepper`.
///
/// ```
/// let stored = mcp_auth::hash_api_key("k-123", "pepper");
/// assert!(stored.starts_with("hmac-sha256$"));
/// ```
pub fn hash_api_key(key: impl AsRef<[u8]>, pepper: impl AsRef<[u8]>) -> String {
    format!(
        "{API_KEY_HASH_PREFIX}{}",
        STANDARD.encode(api_key_mac(key.as_ref(), pepper.as_ref()))
    )
}

/// HMAC-SHA-256 of `key` under `pepper`.
pub(crate) fn api_key_mac(key: &[u8], pepper: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(pepper).expect("HMAC takes keys of any length");
    mac.update(key);
    mac.finalize().into_bytes().into()
}

/// The MAC inside a stored API-key hash.
pub(crate) fn parse_api_key_hash(stored: &str) -> Option<[u8; 32]> {
    let b64 = stored.strip_prefix(API_KEY_HASH_PREFIX)?;
    STANDARD.decode(b64).ok()?.try_into().ok()
}

/// The stored form of a password: PBKDF2-SHA256, 100,000 iterations, a fresh 16-byte salt.
///
/// # Panics
///
/// If the operating system's random number generator fails (see
/// [`hash_password_with`] for a fallible form).
pub fn hash_password(password: &str) -> String {
    hash_password_with(password, DEFAULT_PBKDF2_ITERATIONS).expect("the OS random number generator failed")
}

/// The stored form of a password with `iterations` PBKDF2 rounds and a fresh 16-byte salt.
///
/// Fails when `iterations` is outside
/// [`MIN_PBKDF2_ITERATIONS`]`..=`[`MAX_PBKDF2_ITERATIONS`] or the random number
/// generator fails.
pub fn hash_password_with(password: &str, iterations: u32) -> Result<String, AuthSetupError> {
    if !(MIN_PBKDF2_ITERATIONS..=MAX_PBKDF2_ITERATIONS).contains(&iterations) {
        return Err(AuthSetupError::InvalidIterations {
            iterations,
            min: MIN_PBKDF2_ITERATIONS,
            max: MAX_PBKDF2_ITERATIONS,
        });
    }
    let mut salt = vec![0u8; SALT_LEN];
    getrandom::fill(&mut salt).map_err(|_| AuthSetupError::Random)?;
    Ok(PasswordHash::derive(password.as_bytes(), iterations, salt).to_string())
}

/// Whether `password` matches a stored `pbkdf2-sha256$…` hash. A malformed
/// hash matches nothing. The comparison is constant-time.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::parse(hash).is_some_and(|h| h.verify(password.as_bytes()))
}

#[cfg(test)]
thread_local! {
    /// The PBKDF2 iterations [`PasswordHash::verify`] ran on this thread: what a test measures a
    /// password check's work by.
    pub(crate) static VERIFIED_ITERATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A parsed password hash.
#[derive(Clone)]
pub(crate) struct PasswordHash {
    pub(crate) iterations: u32,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

impl PasswordHash {
    fn derive(password: &[u8], iterations: u32, salt: Vec<u8>) -> Self {
        let mut hash = vec![0u8; HASH_LEN];
        pbkdf2::pbkdf2_hmac::<Sha256>(password, &salt, iterations, &mut hash);
        PasswordHash { iterations, salt, hash }
    }

    /// A hash of a random password under a random salt: what an unknown user
    /// is checked against, so that it costs the same work as a known one.
    pub(crate) fn dummy(iterations: u32) -> Result<Self, AuthSetupError> {
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret).map_err(|_| AuthSetupError::Random)?;
        let mut salt = vec![0u8; SALT_LEN];
        getrandom::fill(&mut salt).map_err(|_| AuthSetupError::Random)?;
        Ok(Self::derive(&secret, iterations, salt))
    }

    /// Parses `pbkdf2-sha256$<iters>$<b64 salt>$<b64 hash>`, within bounds
    /// (iterations, salt of 8 to 64 bytes, hash of 16 to 64 bytes).
    pub(crate) fn parse(stored: &str) -> Option<Self> {
        let mut fields = stored.split('$');
        if fields.next()? != PASSWORD_HASH_PREFIX {
            return None;
        }
        let iterations: u32 = fields.next()?.parse().ok()?;
        let salt = STANDARD.decode(fields.next()?).ok()?;
        let hash = STANDARD.decode(fields.next()?).ok()?;
        let ok = fields.next().is_none()
            && (MIN_PBKDF2_ITERATIONS..=MAX_PBKDF2_ITERATIONS).contains(&iterations)
            && (8..=64).contains(&salt.len())
            && (16..=64).contains(&hash.len());
        ok.then_some(PasswordHash { iterations, salt, hash })
    }

    /// Derives from `password` and compares in constant time.
    pub(crate) fn verify(&self, password: &[u8]) -> bool {
        #[cfg(test)]
        VERIFIED_ITERATIONS.with(|n| n.set(n.get() + u64::from(self.iterations)));
        let mut derived = vec![0u8; self.hash.len()];
        pbkdf2::pbkdf2_hmac::<Sha256>(password, &self.salt, self.iterations, &mut derived);
        derived.ct_eq(&self.hash).into()
    }
}

impl std::fmt::Display for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{PASSWORD_HASH_PREFIX}${}${}${}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.hash)
        )
    }
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordHash")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_hash_is_peppered_hmac() {
        let a = hash_api_key("key", "pepper");
        assert_eq!(a, hash_api_key("key", "pepper"));
        assert_ne!(a, hash_api_key("key", "other pepper"));
        assert_ne!(a, hash_api_key("kez", "pepper"));
        assert_eq!(parse_api_key_hash(&a), Some(api_key_mac(b"key", b"pepper")));
        // RFC 4231 test case 2: HMAC-SHA-256("Jefe", "what do ya want for nothing?").
        assert_eq!(
            hash_api_key("what do ya want for nothing?", "Jefe"),
            format!(
                "hmac-sha256${}",
                STANDARD.encode([
                    0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
                    0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43
                ])
            )
        );
    }

    #[test]
    fn malformed_api_key_hashes() {
        for bad in ["", "hmac-sha256$", "sha256$AAAA", "hmac-sha256$!!!", "hmac-sha256$AAAA"] {
            assert_eq!(parse_api_key_hash(bad), None, "{bad}");
        }
    }

    #[test]
    fn password_round_trip_with_default_cost() {
        let stored = hash_password("correct horse");
        let fields: Vec<&str> = stored.split('$').collect();
        assert_eq!(fields[0], "pbkdf2-sha256");
        assert_eq!(fields[1], "100000");
        assert_eq!(STANDARD.decode(fields[2]).unwrap().len(), 16);
        assert_eq!(STANDARD.decode(fields[3]).unwrap().len(), 32);
        assert!(verify_password("correct horse", &stored));
        assert!(!verify_password("correct horsf", &stored));
    }

    #[test]
    fn salts_differ() {
        let a = hash_password_with("pw", MIN_PBKDF2_ITERATIONS).unwrap();
        let b = hash_password_with("pw", MIN_PBKDF2_ITERATIONS).unwrap();
        assert_ne!(a, b);
        assert!(verify_password("pw", &a) && verify_password("pw", &b));
    }

    #[test]
    fn known_pbkdf2_vector() {
        // RFC 7914 §11: PBKDF2-HMAC-SHA256("passwd", "salt", 1 iteration), first 32 bytes;
        // checked through derive since 1 iteration is below the accepted minimum.
        let h = PasswordHash::derive(b"passwd", 1, b"salt".to_vec());
        assert_eq!(
            h.hash[..8],
            [0x55, 0xac, 0x04, 0x6e, 0x56, 0xe3, 0x08, 0x9f],
            "PBKDF2-HMAC-SHA256 known answer"
        );
    }

    #[test]
    fn iteration_bounds() {
        assert_eq!(
            hash_password_with("pw", 999),
            Err(AuthSetupError::InvalidIterations {
                iterations: 999,
                min: MIN_PBKDF2_ITERATIONS,
                max: MAX_PBKDF2_ITERATIONS
            })
        );
        assert!(hash_password_with("pw", MAX_PBKDF2_ITERATIONS + 1).is_err());
        let too_cheap = format!(
            "pbkdf2-sha256$1${}${}",
            STANDARD.encode([0u8; 16]),
            STANDARD.encode([0u8; 32])
        );
        assert!(PasswordHash::parse(&too_cheap).is_none());
    }

    #[test]
    fn malformed_password_hashes_match_nothing() {
        let good = hash_password_with("pw", MIN_PBKDF2_ITERATIONS).unwrap();
        let bad = [
            String::new(),
            "pw".to_owned(),
            good.replace("pbkdf2-sha256", "pbkdf2-sha1"),
            format!("{good}$extra"),
            good.replacen("$1000$", "$x$", 1),
            format!(
                "pbkdf2-sha256$1000${}${}",
                STANDARD.encode([0u8; 4]),
                STANDARD.encode([0u8; 32])
            ),
        ];
        for b in &bad {
            assert!(!verify_password("pw", b), "{b}");
        }
    }

    #[test]
    fn debug_shows_no_hash() {
        let h = PasswordHash::parse(&hash_password_with("pw", MIN_PBKDF2_ITERATIONS).unwrap()).unwrap();
        let shown = format!("{h:?}");
        assert!(!shown.contains(&STANDARD.encode(&h.hash)), "{shown}");
        assert!(!shown.contains(&STANDARD.encode(&h.salt)), "{shown}");
    }
}
