//! TLS through rustls: building a server configuration from PEM, and ALPN.
//!
//! The server offers ALPN `h2` then `http/1.1`, so an HTTP/2 client gets HTTP/2 and every other
//! client HTTP/1.1. The `ring` provider is named explicitly, so the configuration does not depend
//! on which rustls provider the rest of the program happens to install as the process default.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::HttpError;

/// The ALPN protocols offered, in order of preference.
pub(crate) fn alpn() -> Vec<Vec<u8>> {
    vec![b"h2".to_vec(), b"http/1.1".to_vec()]
}

/// A server configuration from a PEM certificate chain (leaf first) and a PEM private key.
pub(crate) fn server_config(cert_chain_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>, HttpError> {
    let certs = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| HttpError::Tls(format!("certificate chain: {e}")))?;
    if certs.is_empty() {
        return Err(HttpError::Tls("certificate chain: no certificate in the PEM".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| HttpError::Tls(format!("private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| HttpError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| HttpError::Tls(e.to_string()))?;
    config.alpn_protocols = alpn();
    Ok(Arc::new(config))
}

/// A user's configuration, with `h2` and `http/1.1` offered when it names no ALPN protocol.
pub(crate) fn with_alpn(config: Arc<ServerConfig>) -> Arc<ServerConfig> {
    if !config.alpn_protocols.is_empty() {
        return config;
    }
    let mut owned = (*config).clone();
    owned.alpn_protocols = alpn();
    Arc::new(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_pem_is_refused() {
        assert!(matches!(server_config(b"", b""), Err(HttpError::Tls(_))));
        let not_pem = b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
        assert!(matches!(server_config(not_pem, b""), Err(HttpError::Tls(_))));
    }
}
