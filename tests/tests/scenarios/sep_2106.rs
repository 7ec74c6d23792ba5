//! `sep-2106-json-schema-loosening` (`src/scenarios/server/sep-2106.ts` at
//! d4192ef186f44d5206a8c8cd75d46ba069b9a853) and `sep-2106-structured-content`
//! (`src/scenarios/server/sep-2106-structured-content.ts` at
//! cf8ac79d9aa8cc4005176575c77f3f1517ff5c5f): an output schema whose root is an array or a
//! number, an input schema with a `oneOf`, and structured content that is not an object.
//!
//! Both scenarios were written while the draft revision still had `initialize`: they open a
//! session with `protocolVersion: "2026-07-28"` and read the tools in it. The released
//! 2026-07-28 has no `initialize`; a dual-era server answers it with the newest legacy revision
//! (2025-11-25), whose schema allows an object root only (`Tool.outputSchema.type` is the
//! constant `"object"`, `structuredContent` an object). So the checks are followed here on the
//! 2026-07-28 wire, where SEP-2106 applies, and the legacy session is checked against its own
//! revision: the tools are listed, the non-object output schemas and structured content are
//! left out, and their JSON travels as text.

use serde_json::{Value, json};

use crate::support::{Fixture, bounded};

const ARRAY: &str = "sep_2106_array_output_tool";
const ONEOF: &str = "sep_2106_oneof_input_tool";
const PRIMITIVE: &str = "sep_2106_primitive_output_tool";

fn find<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
}

/// Every tool of `tools/list`, following `nextCursor`.
async fn list(fixture: &Fixture, session: Option<&str>) -> Vec<Value> {
    let (mut tools, mut cursor, mut id) = (Vec::new(), None::<String>, 100);
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = match session {
            Some(sid) => {
                let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
                fixture.post(&body, &[("mcp-session-id", sid)]).await.answer(id).await
            }
            None => fixture.modern(id, "tools/list", params).await.answer(id).await,
        };
        tools.extend(page["result"]["tools"].as_array().expect("tools").iter().cloned());
        match page["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return tools,
        }
        id += 1;
    }
}

#[tokio::test]
async fn the_loosened_shapes_survive_on_the_2026_wire() {
    bounded(60, async {
        let fixture = Fixture::start().await;
        let tools = list(&fixture, None).await;
        // sep-2106-array-output-tool-found, sep-2106-array-output-schema-preserved.
        assert_eq!(find(&tools, ARRAY)["outputSchema"]["type"], "array");
        // sep-2106-oneof-input-tool-found, sep-2106-oneof-input-schema-preserved.
        let one_of = &find(&tools, ONEOF)["inputSchema"];
        assert_eq!(one_of["type"], "object");
        assert!(one_of["oneOf"].as_array().is_some_and(|o| o.len() >= 2), "{one_of}");
        // sep-2106-primitive-output-tool-found, sep-2106-primitive-output-schema-preserved.
        assert_eq!(find(&tools, PRIMITIVE)["outputSchema"]["type"], "number");

        let call = |id, name: &str| fixture.modern(id, "tools/call", json!({"name": name, "arguments": {}}));
        let array = call(1, ARRAY).await.answer(1).await;
        // sep-2106-array-structured-content: the array itself, not wrapped.
        let structured = &array["result"]["structuredContent"];
        assert!(structured.is_array(), "{array}");
        // sep-2106-array-text-fallback: a text block holding the same JSON.
        let text = array["result"]["content"][0]["text"].as_str().expect("a text block");
        assert_eq!(&serde_json::from_str::<Value>(text).expect("JSON text"), structured);
        // sep-2106-primitive-structured-content: a raw number.
        let number = call(2, PRIMITIVE).await.answer(2).await;
        assert!(number["result"]["structuredContent"].is_number(), "{number}");
        // The oneOf input is validated: one branch or the other, not neither.
        let by_name = fixture
            .modern(3, "tools/call", json!({"name": ONEOF, "arguments": {"name": "widget"}}))
            .await
            .answer(3)
            .await;
        assert_eq!(
            by_name["result"]["content"][0]["text"], "Found by name: \"widget\"",
            "{by_name}"
        );
        let neither = call(4, ONEOF).await.answer(4).await;
        assert_eq!(neither["result"]["isError"], true, "{neither}");
    })
    .await;
}

#[tokio::test]
async fn a_session_opened_with_the_draft_version_gets_its_own_revisions_shapes() {
    bounded(60, async {
        let fixture = Fixture::start().await;
        // The scenarios' set-up (their `*-error` check): `initialize` asking for 2026-07-28 is
        // answered 2xx without an error.
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2026-07-28", "capabilities": {},
            "clientInfo": {"name": "sep-2106-raw-client", "version": "1.0.0"}}});
        let answer = fixture.post(&init, &[]).await;
        assert_eq!(answer.status, 200);
        let sid = answer.header("mcp-session-id").expect("a session").to_owned();
        let init = answer.answer(1).await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            fixture.post(&initialized, &[("mcp-session-id", &sid)]).await.status,
            202
        );

        let tools = list(&fixture, Some(&sid)).await;
        assert!(
            find(&tools, ARRAY).get("outputSchema").is_none(),
            "an array root is not a 2025-11-25 schema"
        );
        assert!(find(&tools, PRIMITIVE).get("outputSchema").is_none());
        assert!(
            find(&tools, ONEOF)["inputSchema"]["oneOf"].is_array(),
            "input keywords are kept"
        );
        let body =
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": ARRAY, "arguments": {}}});
        let array = fixture.post(&body, &[("mcp-session-id", &sid)]).await.answer(2).await;
        assert!(array["result"].get("structuredContent").is_none(), "{array}");
        let text = array["result"]["content"][0]["text"]
            .as_str()
            .expect("the JSON as text");
        assert!(serde_json::from_str::<Value>(text).expect("JSON").is_array());
    })
    .await;
}
