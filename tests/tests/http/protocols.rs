//! HTTP/2 with prior knowledge on the cleartext listener (h2c), and TLS through rustls with ALPN
//! `h2` / `http/1.1`, with a self-signed certificate made at test time.

use std::sync::Arc;

use http::{StatusCode, Version};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_transport_http::HttpConfig;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, RootCertStore};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::support::{Resp, Server, bounded, call, init_body, list};

/// An HTTP/2 connection over `io`.
async fn h2<I>(io: I) -> SendRequest<http_body_util::Full<bytes::Bytes>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
        .await
        .expect("h2 handshake");
    tokio::spawn(conn);
    sender
}

/// Sends on an HTTP/2 connection and checks the response is HTTP/2.
async fn send(sender: &mut SendRequest<http_body_util::Full<bytes::Bytes>>, req: crate::support::Req) -> Resp {
    let resp = sender.send_request(req.into_request(true)).await.expect("response");
    assert_eq!(resp.version(), Version::HTTP_2);
    Resp::new(resp)
}

#[tokio::test]
async fn h2c_with_prior_knowledge() {
    bounded(async {
        let s = Server::default_config().await;
        let mut sender = h2(TcpStream::connect(s.addr).await.expect("connect")).await;
        let init = send(&mut sender, s.post(init_body("2025-06-18"))).await;
        assert_eq!(init.status, StatusCode::OK);
        let sid = init.header("mcp-session-id").expect("session").to_owned();

        // Several requests at once on the one connection.
        let lists = (1..=3).map(|i| {
            let mut sender = sender.clone();
            let req = s.post(list(i)).header("mcp-session-id", &sid);
            async move { send(&mut sender, req).await }
        });
        for resp in futures::future::join_all(lists).await {
            assert_eq!(resp.status, StatusCode::OK);
            assert!(resp.json().await["result"]["tools"].is_array());
        }

        // An SSE reply over HTTP/2.
        let body = call(4, "progress", Some(json!({"progressToken": "p"})));
        let mut sse = send(&mut sender, s.post(body).header("mcp-session-id", &sid))
            .await
            .sse();
        let mut seen = Vec::new();
        while let Some(m) = sse.message().await {
            seen.push(m);
        }
        assert_eq!(seen.len(), 4, "three progress notifications and the reply");
        assert_eq!(seen[3]["result"]["content"][0]["text"], "progress done");
    })
    .await;
}

/// A self-signed certificate for `localhost` and its key, as PEM, and a client trusting it.
fn certificate(alpn: &[&[u8]]) -> (String, String, TlsConnector) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("certificate");
    let mut roots = RootCertStore::empty();
    roots.add(made.cert.der().clone()).expect("trust the certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    (
        made.cert.pem(),
        made.signing_key.serialize_pem(),
        TlsConnector::from(Arc::new(config)),
    )
}

#[tokio::test]
async fn tls_offers_h2_then_http1() {
    bounded(async {
        let (cert, key, h2_client) = certificate(&[b"h2", b"http/1.1"]);
        let config = HttpConfig::default()
            .with_tls(cert.as_bytes(), key.as_bytes())
            .expect("TLS configuration");
        let s = Server::start(config).await;
        let name = ServerName::try_from("localhost").expect("name");

        let tcp = TcpStream::connect(s.addr).await.expect("connect");
        let tls = h2_client.connect(name.clone(), tcp).await.expect("TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let mut sender = h2(tls).await;
        let init = send(&mut sender, s.post(init_body("2025-11-25"))).await;
        assert_eq!(init.status, StatusCode::OK);
        assert!(init.header("mcp-session-id").is_some());

        let (_, _, h1_client) = certificate(&[b"http/1.1"]);
        // Another certificate: this client trusts only its own, so the handshake fails.
        let tcp = TcpStream::connect(s.addr).await.expect("connect");
        assert!(
            h1_client.connect(name.clone(), tcp).await.is_err(),
            "untrusted certificate"
        );

        let (cert2, key2, h1_client) = certificate(&[b"http/1.1"]);
        let s2 = Server::start(
            HttpConfig::default()
                .with_tls(cert2.as_bytes(), key2.as_bytes())
                .expect("TLS"),
        )
        .await;
        let tcp = TcpStream::connect(s2.addr).await.expect("connect");
        let tls = h1_client.connect(name, tcp).await.expect("TLS handshake");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("h1 handshake");
        tokio::spawn(conn);
        let resp = sender
            .send_request(s2.post(init_body("2025-11-25")).into_request(false))
            .await
            .expect("response");
        assert_eq!(resp.version(), Version::HTTP_11);
        assert_eq!(resp.status(), StatusCode::OK);

        // Plain HTTP on a TLS listener goes nowhere, and the server keeps serving TLS.
        assert!(s2.post(list(1)).try_send().await.is_none());
        assert!(
            HttpConfig::default().with_tls(b"", key.as_bytes()).is_err(),
            "no certificate"
        );
    })
    .await;
}
