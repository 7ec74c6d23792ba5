//! Why a provider could not be set up.

/// A provider's configuration is unusable. Returned by the providers'
/// `build()` (and [`ResourceMetadata`](crate::ResourceMetadata)'s), before any
/// port is bound: a server whose authentication cannot be set up must not start.
///
/// No variant carries key material, a password, a pepper or a hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthSetupError {
    /// The bearer provider names no audience (RFC 8707: a resource server must check that
    /// tokens were issued for it).
    #[error("bearer: an audience is required (any_audience() is only allowed with a token verifier)")]
    MissingAudience,
    /// `any_audience()` was set without a token verifier to check the audience instead.
    #[error("bearer: any_audience() is only allowed together with a token verifier")]
    AnyAudienceWithoutVerifier,
    /// The bearer provider has neither verification keys nor a token verifier.
    #[error("bearer: configure verification keys or a token verifier")]
    NoTokenSource,
    /// The bearer provider has both verification keys and a token verifier.
    #[error("bearer: configure verification keys or a token verifier, not both")]
    KeysAndVerifier,
    /// A verification key could not be parsed.
    #[error("bearer: key {index} is unusable: {reason}")]
    InvalidKey {
        /// The key's position among the configured keys.
        index: usize,
        /// What is wrong with it (never the key itself).
        reason: String,
    },
    /// An HS256 secret is shorter than the 256 bits RFC 7518 §3.2 requires.
    #[error("bearer: the HS256 secret of key {index} has {len} bytes; at least 32 are required (RFC 7518 §3.2)")]
    WeakSecret {
        /// The key's position among the configured keys.
        index: usize,
        /// The secret's length in bytes.
        len: usize,
    },
    /// A JWKS document could not be parsed, or one of its keys is unusable.
    #[error("bearer: invalid JWKS document: {reason}")]
    InvalidJwks {
        /// What is wrong with it.
        reason: String,
    },
    /// A JWKS document holds no signing key this provider can use.
    #[error("bearer: the JWKS document has no usable signing key")]
    EmptyJwks,
    /// Remote keys (an OpenID Connect issuer or a JWKS URL) were configured together with keys
    /// given directly: a provider uses one or the other.
    #[error("bearer: configure keys given directly or remote keys (oidc_issuer, jwks_uri), not both")]
    StaticAndRemoteKeys,
    /// An algorithm cannot be accepted: HS256/384/512 for keys fetched from an authorization
    /// server (a public document cannot hold a shared secret), an empty list, or a key given
    /// directly whose algorithm the configured list leaves out.
    #[error("bearer: algorithm {alg} is not allowed here: {reason}")]
    AlgorithmNotAllowed {
        /// The algorithm (`none` for an empty list).
        alg: String,
        /// Why.
        reason: &'static str,
    },
    /// An OAuth client id (for token introspection) is empty or holds a control character.
    #[error("introspection: the client id is empty or holds a control character")]
    InvalidClientId,
    /// The HTTPS client that talks to the authorization server could not be set up.
    #[error("the HTTPS client could not be set up: {reason}")]
    HttpClient {
        /// What failed.
        reason: String,
    },
    /// The provider has no credentials at all, so it would refuse everyone.
    #[error("{provider}: no credentials are configured")]
    NoCredentials {
        /// `apikey` or `basic`.
        provider: &'static str,
    },
    /// A stored API-key hash is not `hmac-sha256$<base64 of 32 bytes>`.
    #[error("apikey: key {index} has a malformed hash (expected hmac-sha256$<base64>)")]
    InvalidKeyHash {
        /// The key's position among the configured keys.
        index: usize,
    },
    /// An API key given in clear is empty.
    #[error("apikey: key {index} is empty")]
    EmptyKey {
        /// The key's position among the configured keys.
        index: usize,
    },
    /// Hashed API keys were configured without the pepper they were hashed with.
    #[error("apikey: hashed keys need the pepper they were hashed with")]
    MissingPepper,
    /// Two configured API keys are the same key.
    #[error("apikey: keys {first} and {second} are the same key")]
    DuplicateKey {
        /// The first key's position.
        first: usize,
        /// The second key's position.
        second: usize,
    },
    /// The API-key header name is not a valid HTTP header name.
    #[error("apikey: invalid header name {name:?}")]
    InvalidHeaderName {
        /// The rejected name.
        name: String,
    },
    /// A stored password hash is not `pbkdf2-sha256$<iters>$<b64 salt>$<b64 hash>` within bounds.
    #[error("basic: the password hash of user {user:?} is malformed")]
    InvalidPasswordHash {
        /// The user whose hash is malformed.
        user: String,
    },
    /// A user name is empty or contains `:` or a control character.
    #[error("basic: invalid user name {user:?}")]
    InvalidUserName {
        /// The rejected name.
        user: String,
    },
    /// A user is configured twice.
    #[error("basic: user {user:?} is configured twice")]
    DuplicateUser {
        /// The repeated name.
        user: String,
    },
    /// A PBKDF2 iteration count is outside the accepted range
    /// (`MIN_PBKDF2_ITERATIONS..=MAX_PBKDF2_ITERATIONS`).
    #[error("PBKDF2 iterations {iterations} outside {min}..={max}")]
    InvalidIterations {
        /// The count given.
        iterations: u32,
        /// The fewest accepted.
        min: u32,
        /// The most accepted.
        max: u32,
    },
    /// A realm is empty or holds characters a challenge cannot carry (`"`, `\`, controls).
    #[error("invalid realm {realm:?}")]
    InvalidRealm {
        /// The rejected realm.
        realm: String,
    },
    /// A principal is empty.
    #[error("an identity has an empty principal")]
    EmptyPrincipal,
    /// A scope is empty or contains whitespace, `"` or `\`.
    #[error("invalid scope {scope:?}")]
    InvalidScope {
        /// The rejected scope.
        scope: String,
    },
    /// A URL (resource, metadata, authorization server) is unusable.
    #[error("invalid {what} URL {url:?}: {reason}")]
    InvalidUrl {
        /// Which URL.
        what: &'static str,
        /// The rejected URL.
        url: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The DPoP options of the bearer provider are unusable (no endpoint URL, an algorithm that
    /// cannot sign proofs, a short nonce secret, …).
    #[error("bearer: invalid DPoP configuration: {reason}")]
    InvalidDpop {
        /// What is wrong with it (never a secret).
        reason: String,
    },
    /// The operating system's random number generator failed.
    #[error("the operating system's random number generator failed")]
    Random,
}
