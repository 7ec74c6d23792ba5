//! Progress, log messages and cancellation through the facade, in both eras, through
//! `mcp_server::testing`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::testing::{ClientError, TestClient};

const REVISIONS: [Revision; 3] = [Revision::V2024_11_05, Revision::V2025_11_25, Revision::V2026_07_28];

const WAIT: Duration = Duration::from_secs(5);

fn server(saw_cancel: Arc<AtomicBool>) -> McpServer {
    McpServer::builder()
        .logging(true)
        .name("progress-test")
        .version("1")
        .tool(Tool::new(
            "steps",
            "Reports three steps",
            |_args, ctx: Ctx| async move {
                for (i, m) in ["one", "two", "three"].iter().enumerate() {
                    ctx.progress(i as f64 + 1.0, Some(3.0), Some(m)).await;
                }
                "done"
            },
        ))
        .tool(Tool::new(
            "chatty",
            "Logs at every level",
            |_args, ctx: Ctx| async move {
                for level in [
                    LoggingLevel::Debug,
                    LoggingLevel::Info,
                    LoggingLevel::Warning,
                    LoggingLevel::Error,
                ] {
                    ctx.log(level, Some("chatty"), json!({"at": level})).await;
                }
                "logged"
            },
        ))
        .tool(Tool::new(
            "tagged",
            "Reports its argument",
            |args, ctx: Ctx| async move {
                let tag = args["tag"].as_str().unwrap_or_default().to_owned();
                for _ in 0..3 {
                    ctx.progress(1.0, None, Some(&tag)).await;
                    tokio::task::yield_now().await;
                }
                tag
            },
        ))
        .tool(Tool::new("wait", "Waits until cancelled", move |_args, ctx: Ctx| {
            let saw_cancel = saw_cancel.clone();
            async move {
                ctx.progress(0.0, None, Some("waiting")).await;
                tokio::select! {
                    () = ctx.cancellation().cancelled() => saw_cancel.store(true, Ordering::SeqCst),
                    () = tokio::time::sleep(Duration::from_secs(30)) => {}
                }
                "not cancelled"
            }
        }))
        .build()
        .expect("valid server")
}

async fn client(server: &McpServer, revision: Revision) -> TestClient {
    server
        .test_client()
        .revision(revision)
        .connect()
        .await
        .expect("connects")
}

#[tokio::test]
async fn progress_reaches_the_call_in_order_with_its_token() {
    let server = server(Arc::default());
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let call = c.call_tool_exchange("steps", json!({})).await.unwrap();
        assert_eq!(call.result.content, vec![Content::text("done")]);
        let progress = call.progress();
        let values: Vec<(f64, Option<f64>)> = progress.iter().map(|p| (p.progress, p.total)).collect();
        assert_eq!(
            values,
            [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))],
            "{revision:?}"
        );
        // `message` exists from 2025-03-26 on.
        let messages: Vec<Option<&str>> = progress.iter().map(|p| p.message.as_deref()).collect();
        if revision == Revision::V2024_11_05 {
            assert_eq!(messages, [None, None, None]);
        } else {
            assert_eq!(messages, [Some("one"), Some("two"), Some("three")], "{revision:?}");
        }
        let token = &progress[0].token;
        assert!(token.as_str().is_some_and(|t| t.starts_with("progress-")), "{token}");
        assert!(progress.iter().all(|p| &p.token == token));
        // The client's log saw them too.
        let logged = c.take_notifications();
        assert_eq!(
            logged.iter().filter(|n| n.method == "notifications/progress").count(),
            3
        );
        assert!(c.take_notifications().is_empty());
    }
}

#[tokio::test]
async fn no_progress_without_a_progress_token() {
    let server = server(Arc::default());
    for revision in REVISIONS {
        let c = server
            .test_client()
            .revision(revision)
            .progress_tokens(false)
            .connect()
            .await
            .unwrap();
        let call = c.call_tool_exchange("steps", json!({})).await.unwrap();
        assert_eq!(call.result.content, vec![Content::text("done")]);
        assert!(call.notifications.is_empty(), "{revision:?}: {:?}", call.notifications);
    }
}

#[tokio::test]
async fn concurrent_calls_each_get_their_own_notifications() {
    let server = server(Arc::default());
    for revision in REVISIONS {
        let c = client(&server, revision).await;
        let a = c.start_call_tool("tagged", json!({"tag": "a"}));
        let b = c.start_call_tool("tagged", json!({"tag": "b"}));
        for (call, tag) in [(a, "a"), (b, "b")] {
            let done = call.outcome().await.unwrap();
            let tags: Vec<Option<String>> = done.progress().into_iter().map(|p| p.message).collect();
            let expected = if revision == Revision::V2024_11_05 {
                None
            } else {
                Some(tag.to_owned())
            };
            assert_eq!(tags, vec![expected; 3], "{revision:?}");
        }
    }
}

fn levels(call: &mcp_server::testing::Exchange<CallToolResult>) -> Vec<LoggingLevel> {
    call.logs().into_iter().map(|l| l.level).collect()
}

#[tokio::test]
async fn modern_logs_need_a_log_level_and_honour_it() {
    let server = server(Arc::default());
    let silent = client(&server, Revision::V2026_07_28).await;
    let call = silent.call_tool_exchange("chatty", json!({})).await.unwrap();
    assert_eq!(call.result.content, vec![Content::text("logged")]);
    assert_eq!(levels(&call), []);
    let warned = server
        .test_client()
        .modern()
        .log_level(LoggingLevel::Warning)
        .connect()
        .await
        .unwrap();
    let call = warned.call_tool_exchange("chatty", json!({})).await.unwrap();
    assert_eq!(levels(&call), [LoggingLevel::Warning, LoggingLevel::Error]);
    let log = &call.logs()[0];
    assert_eq!(log.logger.as_deref(), Some("chatty"));
    assert_eq!(log.data, json!({"at": "warning"}));
}

#[tokio::test]
async fn legacy_logs_start_at_info_and_follow_set_level() {
    let server = server(Arc::default());
    for revision in [Revision::V2024_11_05, Revision::V2025_11_25] {
        let c = client(&server, revision).await;
        let call = c.call_tool_exchange("chatty", json!({})).await.unwrap();
        assert_eq!(
            levels(&call),
            [LoggingLevel::Info, LoggingLevel::Warning, LoggingLevel::Error]
        );
        c.set_log_level(LoggingLevel::Error).await.unwrap();
        let call = c.call_tool_exchange("chatty", json!({})).await.unwrap();
        assert_eq!(levels(&call), [LoggingLevel::Error], "{revision:?}");
        let debug = server
            .test_client()
            .revision(revision)
            .log_level(LoggingLevel::Debug)
            .connect()
            .await
            .unwrap();
        let call = debug.call_tool_exchange("chatty", json!({})).await.unwrap();
        assert_eq!(levels(&call).len(), 4, "{revision:?}");
    }
}

#[tokio::test]
async fn a_cancelled_call_gets_no_answer_and_its_handler_sees_the_cancellation() {
    for revision in REVISIONS {
        let saw_cancel = Arc::new(AtomicBool::new(false));
        let server = server(saw_cancel.clone());
        let c = client(&server, revision).await;
        let call = c.start_call_tool("wait", json!({}));
        let started = c.wait_for_notification("notifications/progress", WAIT).await;
        assert!(started.is_some(), "{revision:?}: the handler never reported");
        assert!(!call.is_finished());
        call.cancel(Some("the test is done")).await.unwrap();
        assert_eq!(
            call.outcome().await.unwrap_err(),
            ClientError::Cancelled,
            "{revision:?}"
        );
        assert!(saw_cancel.load(Ordering::SeqCst), "{revision:?}");
        // The client goes on serving, and the id space too.
        let r = c.call_tool("steps", json!({})).await.unwrap();
        assert_eq!(r.content, vec![Content::text("done")]);
    }
}

#[tokio::test]
async fn closing_a_legacy_session_cancels_its_calls() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let server = server(saw_cancel.clone());
    let c = client(&server, Revision::V2025_11_25).await;
    let call = c.start_call_tool("wait", json!({}));
    c.wait_for_notification("notifications/progress", WAIT)
        .await
        .expect("started");
    c.close();
    assert_eq!(call.outcome().await.unwrap_err(), ClientError::Cancelled);
    assert!(saw_cancel.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_closed_client_serves_no_more() {
    let server = server(Arc::default());
    for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
        let c = client(&server, revision).await;
        c.close();
        assert_eq!(
            c.call_tool("steps", json!({})).await.unwrap_err(),
            ClientError::Cancelled,
            "{revision:?}"
        );
        // Another client of the same server is unaffected.
        let other = client(&server, revision).await;
        assert_eq!(
            other.call_tool("steps", json!({})).await.unwrap().content,
            vec![Content::text("done")]
        );
    }
}
