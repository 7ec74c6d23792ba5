//! `server-legacy-extensions` (`src/scenarios/server/legacy-extensions.ts` at
//! 415be5264f444f91c4d9cfd27cf05a0bd9dd9d0b, its constants in
//! `src/scenarios/legacy-extensions.ts` at 9c138c2a90f2ed4a0e5d2ba1a0fa9a0af62e30d1): extensions and
//! their settings survive a 2025-11-25 handshake both ways, compared exactly.

use serde_json::json;

use crate::support::{Fixture, bounded};

#[tokio::test]
async fn extensions_round_trip_through_a_2025_11_25_handshake() {
    bounded(60, async {
        let fixture = Fixture::start().await;
        let client_extensions = json!({
            "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]},
            "com.example/conformance": {"nested": {"enabled": false, "limit": 0}, "values": ["a", 2, null]},
            "com.example/empty": {}
        });
        let version = [("mcp-protocol-version", "2025-11-25")];
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"extensions": client_extensions},
            "clientInfo": {"name": "legacy-extension-conformance", "version": "1.0.0"}}});
        let answer = fixture.post(&init, &version).await;
        assert_eq!(answer.status, 200);
        let sid = answer.header("mcp-session-id").expect("a session").to_owned();
        let result = answer.answer(1).await["result"].clone();
        // legacy-extensions-server-handshake.
        assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
        let with_session = [("mcp-protocol-version", "2025-11-25"), ("mcp-session-id", sid.as_str())];
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(fixture.post(&initialized, &with_session).await.status, 202);
        // legacy-extensions-server-advertisement-{ui,conformance,empty}: each exactly so.
        let declared = &result["capabilities"]["extensions"];
        assert_eq!(declared["io.modelcontextprotocol/ui"], json!({}), "{declared}");
        assert_eq!(
            declared["com.example/conformance"],
            json!({"nested": {"enabled": true, "limit": 3}, "values": [null, "b", 4]})
        );
        assert_eq!(declared["com.example/empty"], json!({}));
        // legacy-extensions-server-reception-{ui,conformance,empty}, through the diagnostic tool.
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "test_legacy_extension_capabilities", "arguments": {}}});
        let report = fixture.post(&call, &with_session).await.answer(2).await;
        assert_ne!(report["result"]["isError"], true, "{report}");
        let text = report["result"]["content"][0]["text"].as_str().expect("a text report");
        let reported: serde_json::Value = serde_json::from_str(text).expect("JSON text");
        for key in [
            "io.modelcontextprotocol/ui",
            "com.example/conformance",
            "com.example/empty",
        ] {
            assert_eq!(reported["extensions"][key], client_extensions[key], "{key}");
        }
    })
    .await;
}
