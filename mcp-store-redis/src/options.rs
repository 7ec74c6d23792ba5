//! [`RedisOptions`]: how a [`RedisStore`](crate::RedisStore) names its keys and bus channel, bounds
//! its publishing, and (feature `tls`) trusts a `rediss://` server.

/// Options of a [`RedisStore`](crate::RedisStore).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// What every key starts with (`mcp` by default). Servers that share a Redis but not their
    /// state use different prefixes. It must not contain `{` or `}` (the hash tags follow it).
    pub prefix: String,
    /// The bus channel (`<prefix>:bus` by default).
    pub bus_channel: Option<String>,
    /// How many bus messages may wait to be published (10 000 by default); past that,
    /// `publish` answers `Unavailable`.
    pub max_pending_publishes: usize,
    /// For a `rediss://` URL (feature `tls`): the certificate authority to trust instead of the
    /// platform's and the webpki roots, and a client certificate for Redis's
    /// `tls-auth-clients yes`. `None`: the roots, and no client certificate.
    #[cfg(feature = "tls")]
    pub tls: Option<RedisTls>,
}

/// TLS settings of a `rediss://` connection (feature `tls`), as PEM.
#[cfg(feature = "tls")]
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RedisTls {
    /// The CA certificate(s) that signed the server's certificate (a private CA); `None`: the
    /// platform's and the webpki roots.
    pub root_ca: Option<Vec<u8>>,
    /// The client's certificate chain and private key, when Redis asks for one.
    pub client: Option<(Vec<u8>, Vec<u8>)>,
}

#[cfg(feature = "tls")]
impl std::fmt::Debug for RedisTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTls")
            .field("root_ca", &self.root_ca.is_some())
            .field("client", &self.client.is_some())
            .finish()
    }
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            prefix: "mcp".to_owned(),
            bus_channel: None,
            max_pending_publishes: 10_000,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}
