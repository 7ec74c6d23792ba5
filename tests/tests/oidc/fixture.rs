//! The `everything` fixture as a deployment runs it: the example binary that `cargo test`
//! builds beside this suite, started on a free loopback port with the flags of a test
//! (authentication, `--metrics`), killed on drop; and the MCP requests the tests send it
//! (modern, and legacy in a session).

use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::process::Child;

use crate::net::{Answer, exchange};

/// A running `everything`.
pub(crate) struct Everything {
    /// Its MCP endpoint, `http://127.0.0.1:<port>/mcp`: the resource tokens must name.
    pub(crate) endpoint: String,
    /// Its Prometheus endpoint, `http://127.0.0.1:<port>/metrics`, when started with
    /// `--metrics` (the second line it prints).
    #[allow(dead_code)] // the Prometheus suite's, not the OpenID provider suite's
    pub(crate) metrics: Option<String>,
    _child: Child,
}

impl Everything {
    /// Starts `everything` with `flags` and waits for its endpoint (and its metrics endpoint,
    /// with `--metrics`).
    pub(crate) async fn start(flags: &[&str]) -> Everything {
        let with_metrics = flags.contains(&"--metrics");
        let (child, addr, after) = mcp_tests::fixture::start_everything(flags, usize::from(with_metrics)).await;
        let endpoint = format!("http://{addr}/mcp");
        let metrics = after.first().map(|line| {
            line.strip_prefix("metrics on ")
                .unwrap_or_else(|| panic!("unexpected second line: {line}"))
                .to_owned()
        });
        Everything {
            endpoint,
            metrics,
            _child: child,
        }
    }

    /// A POST of `body` with `headers` and the usual `Accept` and `Content-Type`.
    pub(crate) async fn post(&self, body: &Value, headers: &[(&str, String)]) -> Answer {
        let mut all = vec![
            ("accept", "application/json, text/event-stream".to_owned()),
            ("content-type", "application/json".to_owned()),
        ];
        all.extend(headers.iter().cloned());
        exchange(Method::POST, &self.endpoint, &all, body.to_string().into_bytes()).await
    }

    /// A modern (2026-07-28) `tools/call` of `test_simple_text`, authorized by `auth`
    /// (`Authorization` and, for DPoP, the proof).
    pub(crate) async fn modern_call(&self, auth: &[(&str, String)]) -> Answer {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "test_simple_text", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }});
        let mut headers = vec![
            ("mcp-protocol-version", "2026-07-28".to_owned()),
            ("mcp-method", "tools/call".to_owned()),
            ("mcp-name", "test_simple_text".to_owned()),
        ];
        headers.extend(auth.iter().cloned());
        self.post(&body, &headers).await
    }

    /// A legacy (2025-11-25) session opened with `auth()` (called for each request: a DPoP
    /// proof is good once), then a `tools/call` of `test_simple_text` in it with `call_auth`:
    /// the call's answer.
    pub(crate) async fn legacy_call(
        &self,
        auth: impl Fn() -> Vec<(&'static str, String)>,
        call_auth: &[(&str, String)],
    ) -> Answer {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "oidc-suite", "version": "1"}
        }});
        let opened = self.post(&init, &auth()).await;
        assert_eq!(
            opened.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&opened.body)
        );
        let sid = opened.header("mcp-session-id").expect("a session").to_owned();
        let mut headers = vec![
            ("mcp-session-id", sid),
            ("mcp-protocol-version", "2025-11-25".to_owned()),
        ];
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let mut first = headers.clone();
        first.extend(auth());
        assert_eq!(self.post(&note, &first).await.status, StatusCode::ACCEPTED);
        headers.extend(call_auth.iter().cloned());
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "test_simple_text", "arguments": {}}});
        self.post(&call, &headers).await
    }
}

/// `Authorization: Bearer <token>`.
pub(crate) fn bearer(token: &str) -> Vec<(&'static str, String)> {
    vec![("authorization", format!("Bearer {token}"))]
}

/// Checks a served `test_simple_text` call.
pub(crate) fn assert_served(a: &Answer) {
    assert_eq!(a.status, StatusCode::OK, "{}", String::from_utf8_lossy(&a.body));
    let body = a.json();
    assert_eq!(
        body["result"]["content"][0]["text"], "This is a simple text response for testing.",
        "{body}"
    );
}

/// Checks a 401 whose challenge (of `scheme`) says `error` and names the metadata document.
pub(crate) fn assert_challenged(a: &Answer, scheme: &str, error: Option<&str>) {
    assert_eq!(
        a.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        String::from_utf8_lossy(&a.body)
    );
    let challenge = a.header("www-authenticate").expect("a challenge");
    assert!(challenge.contains(&format!("{scheme} ")), "{challenge}");
    assert!(
        challenge.contains("resource_metadata=\"http://127.0.0.1:"),
        "{challenge}"
    );
    match error {
        Some(e) => assert!(challenge.contains(&format!("error=\"{e}\"")), "{challenge}"),
        None => assert!(!challenge.contains("error="), "{challenge}"),
    }
}
