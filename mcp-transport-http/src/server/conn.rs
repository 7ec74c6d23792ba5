//! What a connection is served with: hyper's connection builder (HTTP/1.1 alone, or HTTP/1.1
//! and HTTP/2 with the `http2` feature) and the TLS acceptor (the `tls` feature).
//!
//! Without `http2`, hyper's HTTP/1.1 builder serves every connection (an HTTP/2 preface is a
//! malformed HTTP/1.1 request); with it, hyper-util's auto builder reads the first bytes and
//! picks the version. Without `tls` there is no acceptor type a value could be made of
//! ([`Acceptor`] is an empty enum), so the TLS branch of the accept loop is statically dead.

#[cfg(feature = "tls")]
use std::time::Duration;

use hyper_util::rt::TokioTimer;

use super::MIN_TIMEOUT;
use crate::config::HttpConfig;

/// The longest a TLS handshake may take.
#[cfg(feature = "tls")]
pub(super) const TLS_HANDSHAKE: Duration = Duration::from_secs(30);

/// The TLS acceptor of a listener.
#[cfg(feature = "tls")]
pub(super) type Acceptor = tokio_rustls::TlsAcceptor;
/// No TLS in this build: no acceptor can exist (an empty enum: the TLS branch is dead code).
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
pub(super) enum Acceptor {}

/// The acceptor of [`HttpConfig::tls`], if TLS is configured.
#[cfg(feature = "tls")]
pub(super) fn acceptor(config: &HttpConfig) -> Option<Acceptor> {
    config.tls.clone().map(tokio_rustls::TlsAcceptor::from)
}

/// No TLS in this build: every connection is cleartext.
#[cfg(not(feature = "tls"))]
pub(super) fn acceptor(_: &HttpConfig) -> Option<Acceptor> {
    None
}

/// The connection builder: HTTP/1.1 and HTTP/2, chosen by the connection's first bytes.
#[cfg(feature = "http2")]
pub(super) type ConnBuilder = hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>;
/// The connection builder: HTTP/1.1 only.
#[cfg(not(feature = "http2"))]
pub(super) type ConnBuilder = hyper::server::conn::http1::Builder;

/// The connection builder: hyper's timer, the HTTP/1.1 header timeout, the HTTP/2 limits.
#[cfg(feature = "http2")]
pub(super) fn builder(config: &HttpConfig) -> ConnBuilder {
    let mut b = ConnBuilder::new(hyper_util::rt::TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout.max(MIN_TIMEOUT));
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(config.h2_keep_alive_interval.map(|d| d.max(MIN_TIMEOUT)))
        .keep_alive_timeout(config.h2_keep_alive_timeout.max(MIN_TIMEOUT))
        .max_concurrent_streams(config.h2_max_concurrent_streams)
        .max_header_list_size(config.h2_max_header_list_size)
        .max_pending_accept_reset_streams(config.h2_max_pending_accept_reset_streams)
        .max_local_error_reset_streams(config.h2_max_local_error_reset_streams)
        .max_send_buf_size(config.h2_max_send_buf_size);
    b
}

/// The connection builder: hyper's timer and the HTTP/1.1 header timeout.
#[cfg(not(feature = "http2"))]
pub(super) fn builder(config: &HttpConfig) -> ConnBuilder {
    let mut b = ConnBuilder::new();
    b.timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout.max(MIN_TIMEOUT));
    b
}
