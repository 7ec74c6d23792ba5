//! SEP-1699: priming events and ids on legacy POST streams, the server closing a POST stream
//! mid-call (`poll_after`), and resumption with GET + `Last-Event-ID`, which reaches only the
//! stream the id names, of a session the caller owns.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use mcp_transport_http::HttpConfig;
use serde_json::json;

use crate::support::{NamedUsers, Server, bounded, call, init_body};

/// A GET resuming from `last`.
fn resume(s: &Server, sid: &str, last: &str) -> crate::support::Req {
    s.req(Method::GET)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("last-event-id", last)
}

#[tokio::test]
async fn a_polled_call_is_closed_and_resumed_with_get() {
    bounded(async {
        let config = HttpConfig::default()
            .poll_after(Duration::from_millis(50))
            .poll_tools(["nap"]);
        let s = Server::start(config).await;
        let sid = s.initialize().await;

        // What the conformance scenario `server-sse-polling` does with `test_reconnection`.
        let resp = s.post(call(1, "nap", None)).header("mcp-session-id", &sid).send().await;
        assert_eq!(resp.status, StatusCode::OK);
        let mut post = resp.sse();
        let priming = post.next().await.expect("priming event");
        assert!(priming.data.is_empty());
        assert_eq!(priming.retry.as_deref(), Some("1000"));
        let last = priming.id.expect("priming id");
        assert!(post.next().await.is_none(), "closed by the server before the reply");

        let resumed = resume(&s, &sid, &last).send().await;
        assert_eq!(resumed.status, StatusCode::OK);
        let mut get = resumed.sse();
        let reply = get.next().await.expect("the reply");
        assert_eq!(reply.json()["id"], 1);
        assert_eq!(reply.json()["result"]["content"][0]["text"], "nap done");
        let reply_id = reply.id.expect("reply id");
        assert!(get.next().await.is_none(), "the resumed stream ends with the reply");

        // Nothing is left: 204 tells the client to stop reconnecting.
        let again = resume(&s, &sid, &reply_id).send().await;
        assert_eq!(again.status, StatusCode::NO_CONTENT);
        let unknown = resume(&s, &sid, "999-0").send().await;
        assert_eq!(unknown.status, StatusCode::NO_CONTENT);

        // Other tools are not polled: a quick call is still answered with JSON.
        let echo = s
            .post(call(2, "echo", None))
            .header("mcp-session-id", &sid)
            .send()
            .await;
        assert_eq!(echo.header("content-type"), Some("application/json"));
    })
    .await;
}

#[tokio::test]
async fn a_client_that_drops_its_stream_resumes_it() {
    bounded(async {
        let s = Server::default_config().await;
        let sid = s.initialize().await;
        let body = call(5, "progress", Some(json!({"progressToken": "p"})));
        let mut post = s.post(body).header("mcp-session-id", &sid).send().await.sse();
        let priming = post.next().await.expect("priming");
        let first = post.next().await.expect("first progress");
        assert_eq!(first.json()["params"]["progress"], 1.0);
        let last = first.id.expect("id");
        drop(post);
        assert!(
            priming
                .id
                .is_some_and(|p| p.split('-').next() == last.split('-').next()),
            "one stream"
        );

        // A legacy disconnect does not cancel the call: the rest waits for the client.
        let mut get = resume(&s, &sid, &last).send().await.sse();
        let mut rest = Vec::new();
        while let Some(m) = get.message().await {
            rest.push(m);
        }
        let progress: Vec<_> = rest.iter().filter_map(|m| m["params"]["progress"].as_f64()).collect();
        assert_eq!(progress, vec![2.0, 3.0], "exactly the events after Last-Event-ID");
        assert_eq!(
            rest.last().expect("reply")["result"]["content"][0]["text"],
            "progress done"
        );
    })
    .await;
}

#[tokio::test]
async fn resumption_needs_the_owning_principal() {
    bounded(async {
        let config = HttpConfig::default()
            .auth(Arc::new(NamedUsers))
            .poll_after(Duration::ZERO)
            .poll_tools(["nap"]);
        let s = Server::start(config).await;
        let init = s
            .post(init_body("2025-11-25"))
            .header("authorization", "Bearer alice")
            .send()
            .await;
        let sid = init.header("mcp-session-id").expect("session").to_owned();
        let mut post = s
            .post(call(1, "nap", None))
            .header("authorization", "Bearer alice")
            .header("mcp-session-id", &sid)
            .send()
            .await
            .sse();
        let last = post.next().await.expect("priming").id.expect("id");
        assert!(post.next().await.is_none(), "closed at once");

        let as_bob = resume(&s, &sid, &last)
            .header("authorization", "Bearer bob")
            .send()
            .await;
        assert_eq!(as_bob.status, StatusCode::NOT_FOUND, "another principal's session: 404");
        let unknown = resume(&s, "mcp_x", &last)
            .header("authorization", "Bearer bob")
            .send()
            .await;
        assert_eq!(
            as_bob.json().await,
            unknown.json().await,
            "the same 404 as an unknown id"
        );

        let mut mine = resume(&s, &sid, &last)
            .header("authorization", "Bearer alice")
            .send()
            .await
            .sse();
        assert_eq!(mine.message().await.expect("reply")["id"], 1);
    })
    .await;
}

#[tokio::test]
async fn deleting_the_session_ends_its_resumable_streams() {
    bounded(async {
        let polled = Server::start(HttpConfig::default().poll_after(Duration::ZERO)).await;
        let psid = polled.initialize().await;
        let mut stream = polled
            .post(call(4, "slow", None))
            .header("mcp-session-id", &psid)
            .send()
            .await
            .sse();
        let last = stream.next().await.expect("priming").id.expect("id");
        let mut get = resume(&polled, &psid, &last).send().await.sse();
        let del = polled.req(Method::DELETE).header("mcp-session-id", &psid).send().await;
        assert_eq!(del.status, StatusCode::NO_CONTENT);
        assert!(get.message().await.is_none(), "the stream ended with its session");
    })
    .await;
}
