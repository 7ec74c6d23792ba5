//! Session ownership beyond POST/GET/DELETE (in `http.rs`): a client response posted by another
//! principal never reaches the session's pending request, and is answered the same 202.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use mcp_transport_http::HttpConfig;
use serde_json::json;

use crate::support::{NamedUsers, Server, bounded, call, init_body};

#[tokio::test]
async fn client_responses_reach_only_the_owner() {
    bounded(async {
        let s = Server::start(HttpConfig::default().auth(Arc::new(NamedUsers))).await;
        let alice = |r: crate::support::Req| r.header("authorization", "Bearer alice");
        let init = alice(s.post(init_body("2025-11-25"))).send().await;
        let sid = init.header("mcp-session-id").expect("session").to_owned();
        let mut stream = alice(s.post(call(1, "sample", None)))
            .header("mcp-session-id", &sid)
            .send()
            .await
            .sse();
        let req = stream.message().await.expect("sampling request");
        let answer = |text: &str| {
            json!({"jsonrpc": "2.0", "id": req["id"], "result": {
                "role": "assistant", "content": {"type": "text", "text": text}, "model": "m"
            }})
        };
        let forged = s
            .post(answer("forged"))
            .header("authorization", "Bearer bob")
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(forged.status, StatusCode::ACCEPTED, "no oracle: the same 202");
        assert!(
            stream.next_within(Duration::from_millis(200)).await.is_none(),
            "bob's answer did not reach alice's call"
        );
        let real = alice(s.post(answer("real")))
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(real.status, StatusCode::ACCEPTED);
        let last = stream.message().await.expect("reply");
        assert_eq!(last["result"]["content"][0]["text"], "LLM said: real");
    })
    .await;
}
