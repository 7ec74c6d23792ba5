//! The `everything` fixture's Prometheus endpoint (`--metrics HOST:PORT`): after modern and
//! legacy requests and a deleted legacy session, `/metrics` serves the duration histograms of
//! OpenTelemetry's MCP conventions in the Prometheus text format, with the conventions' bucket
//! boundaries and labels.

#[allow(dead_code)]
#[path = "oidc/fixture.rs"]
mod fixture;
#[allow(dead_code)]
#[path = "oidc/net.rs"]
mod net;

use fixture::Everything;
use http::{Method, StatusCode};
use mcp_runtime::observe::DURATION_BUCKETS;
use serde_json::json;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

/// The sample lines of `family` (e.g. `mcp_server_operation_duration_seconds_bucket`) whose
/// labels include every one of `labels` (`name="value"`).
fn samples<'t>(text: &'t str, family: &str, labels: &[&str]) -> Vec<&'t str> {
    text.lines()
        .filter(|l| l.strip_prefix(family).is_some_and(|rest| rest.starts_with('{')))
        .filter(|l| labels.iter().all(|label| l.contains(label)))
        .collect()
}

/// The value of a sample line.
fn value(line: &str) -> f64 {
    let v = line.rsplit(' ').next().expect("a value");
    v.parse().unwrap_or_else(|_| panic!("not a value: {line}"))
}

#[tokio::test]
async fn the_fixture_serves_the_conventions_histograms_to_prometheus() {
    let server = Everything::start(&["--metrics", "127.0.0.1:0"]).await;
    let scrape_url = server.metrics.clone().expect("a metrics endpoint");

    // A modern call (no session), twice.
    for _ in 0..2 {
        fixture::assert_served(&server.modern_call(&[]).await);
    }
    // A legacy session, a call in it, then its end.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "prometheus-suite", "version": "1"}
    }});
    let opened = server.post(&init, &[]).await;
    assert_eq!(opened.status, StatusCode::OK);
    let sid = opened.header("mcp-session-id").expect("a session").to_owned();
    let headers = [
        ("mcp-session-id", sid.clone()),
        ("mcp-protocol-version", LEGACY.to_owned()),
    ];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(server.post(&note, &headers).await.status, StatusCode::ACCEPTED);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "test_error_handling", "arguments": {}}});
    let answer = server.post(&call, &headers).await;
    assert_eq!(answer.json()["result"]["isError"], true);
    let deleted = net::exchange(Method::DELETE, &server.endpoint, &headers, Vec::new()).await;
    assert!(deleted.status.is_success(), "{}", deleted.status);

    let scrape = net::exchange(Method::GET, &scrape_url, &[], Vec::new()).await;
    assert_eq!(scrape.status, StatusCode::OK);
    let text = String::from_utf8(scrape.body.to_vec()).expect("text");

    for family in [
        "mcp_server_operation_duration_seconds",
        "mcp_server_session_duration_seconds",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} histogram")),
            "{family} is a histogram: {text}"
        );
    }
    // The modern calls: every advised boundary, and +Inf.
    let modern = [
        "mcp_method_name=\"tools/call\"",
        "gen_ai_tool_name=\"test_simple_text\"",
        "gen_ai_operation_name=\"execute_tool\"",
        &format!("mcp_protocol_version=\"{MODERN}\""),
        "network_transport=\"tcp\"",
        "network_protocol_name=\"http\"",
    ];
    let buckets = samples(&text, "mcp_server_operation_duration_seconds_bucket", &modern);
    for bound in DURATION_BUCKETS
        .iter()
        .map(|b| format!("le=\"{b}\""))
        .chain(["le=\"+Inf\"".to_owned()])
    {
        let line = buckets
            .iter()
            .find(|l| l.contains(&bound))
            .unwrap_or_else(|| panic!("no {bound} bucket in {buckets:#?}\n{text}"));
        if bound == "le=\"+Inf\"" {
            assert_eq!(value(line), 2.0, "{line}");
        }
    }
    assert!(
        samples(&text, "mcp_server_operation_duration_seconds_count", &modern)
            .iter()
            .any(|l| value(l) == 2.0),
        "{text}"
    );
    assert!(
        !samples(&text, "mcp_server_operation_duration_seconds_count", &modern)
            .iter()
            .any(|l| l.contains("mcp_session_id")),
        "no session id is a label"
    );
    // The legacy tool error.
    let legacy = [
        "mcp_method_name=\"tools/call\"",
        "error_type=\"tool_error\"",
        &format!("mcp_protocol_version=\"{LEGACY}\""),
    ];
    let count = samples(&text, "mcp_server_operation_duration_seconds_count", &legacy);
    assert!(count.iter().any(|l| value(l) == 1.0), "{text}");
    // The deleted session.
    let session = [
        &format!("mcp_protocol_version=\"{LEGACY}\"")[..],
        "network_transport=\"tcp\"",
    ];
    let count = samples(&text, "mcp_server_session_duration_seconds_count", &session);
    assert_eq!(count.len(), 1, "{text}");
    assert_eq!(value(count[0]), 1.0, "{text}");
}
