//! Task-capable tools through the facade (`Tool::task_support`): 2025-11-25 core tasks and the
//! 2026-07-28 tasks extension, through `mcp_server::testing`.

use std::time::Duration;

use mcp_server::prelude::*;
use mcp_server::testing::{ClientError, TestClient, ToolCall, accept};

/// Longer than the modern inline window (100 ms by default).
const PAST_THE_WINDOW: Duration = Duration::from_millis(300);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

fn server() -> McpServer {
    McpServer::builder()
        .name("tasks-test")
        .version("1")
        .tool(
            Tool::new("slow", "Takes a while", |_a, _c| async {
                tokio::time::sleep(PAST_THE_WINDOW).await;
                "slow done"
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new("quick", "Answers at once", |_a, _c| async { "quick done" }).task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new(
                "asks_later",
                "Asks for a name once it is a task",
                |_a, ctx: Ctx| async move {
                    if ctx.input_responses().is_none() {
                        tokio::time::sleep(PAST_THE_WINDOW).await;
                    }
                    let name = match ctx.elicit::<Name>("Name?").await? {
                        Elicitation::Accept(n) => n.name,
                        _ => "nobody".into(),
                    };
                    Ok(format!("hello {name}"))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new("forever", "Runs until cancelled", |_a, ctx: Ctx| async move {
                ctx.cancellation().cancelled().await;
                "cancelled"
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            Tool::new("only_task", "Must be a task", |_a, _c| async { "as a task" })
                .task_support(TaskSupport::Required),
        )
        .build()
        .expect("valid server")
}

async fn legacy(server: &McpServer) -> TestClient {
    server
        .test_client()
        .revision(Revision::V2025_11_25)
        .on_elicit(|_| accept(json!({"name": "Ada"})))
        .connect()
        .await
        .unwrap()
}

async fn modern_with_tasks(server: &McpServer) -> TestClient {
    server
        .test_client()
        .modern()
        .tasks_extension()
        .on_elicit(|_| accept(json!({"name": "Ada"})))
        .connect()
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> &str {
    match &r.content[..] {
        [Content::Text { text, .. }] => text,
        other => panic!("one text block expected, got {other:?}"),
    }
}

#[tokio::test]
async fn legacy_core_task_runs_and_its_result_is_the_call_s() {
    let server = server();
    let c = legacy(&server).await;
    let caps = c.initialize_result().unwrap()["capabilities"].clone();
    assert!(caps["tasks"]["requests"]["tools"]["call"].is_object(), "{caps}");
    let ToolCall::Task(task) = c.call_tool_as_task("slow", json!({})).await.unwrap() else {
        panic!("a task expected");
    };
    assert_eq!(task.status, "working");
    assert!(!task.is_terminal());
    assert_eq!(c.get_task(&task.task_id).await.unwrap().task_id, task.task_id);
    let r = c.task_result(&task.task_id).await.unwrap();
    assert_eq!(text(&r), "slow done");
    assert_eq!(c.get_task(&task.task_id).await.unwrap().status, "completed");
}

#[tokio::test]
async fn legacy_task_input_travels_on_the_tasks_result_stream() {
    let server = server();
    let c = legacy(&server).await;
    let task = c.call_tool_as_task("asks_later", json!({})).await.unwrap();
    let task = task.task().expect("a task").clone();
    let r = c.task_result(&task.task_id).await.unwrap();
    assert_eq!(text(&r), "hello Ada");
    let asked = c.take_server_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].method, "elicitation/create");
    assert_eq!(asked[0].params["message"], "Name?");
}

#[tokio::test]
async fn modern_calls_become_tasks_only_past_the_window_and_with_the_extension() {
    let server = server();
    let c = modern_with_tasks(&server).await;
    match c.call_tool_as_task("quick", json!({})).await.unwrap() {
        ToolCall::Done(r) => assert_eq!(text(&r), "quick done"),
        other => panic!("inline expected, got {other:?}"),
    }
    let ToolCall::Task(task) = c.call_tool_as_task("slow", json!({})).await.unwrap() else {
        panic!("a task expected");
    };
    assert_eq!(task.raw["resultType"], "task");
    assert_eq!(text(&c.task_result(&task.task_id).await.unwrap()), "slow done");
    // `call_tool` says what happened rather than failing to decode.
    let e = c.call_tool("slow", json!({})).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Unexpected(m) if m.contains("became task")),
        "{e}"
    );

    // Without the extension the same call is answered inline, however long it takes.
    let plain = TestClient::modern(&server).await.unwrap();
    assert_eq!(text(&plain.call_tool("slow", json!({})).await.unwrap()), "slow done");
    // A tool that must run as a task needs the extension.
    let e = plain.call_tool("only_task", json!({})).await.unwrap_err();
    assert_eq!(e.code(), Some(-32021), "{e}");
}

#[tokio::test]
async fn modern_task_input_is_answered_with_tasks_update() {
    let server = server();
    let c = modern_with_tasks(&server).await;
    let task = c.call_tool_as_task("asks_later", json!({})).await.unwrap();
    let task = task.task().expect("a task").clone();
    let r = c.task_result(&task.task_id).await.unwrap();
    assert_eq!(text(&r), "hello Ada");
    let asked = c.take_server_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].key.as_deref(), Some("elicit-1"));
}

#[tokio::test]
async fn a_cancelled_task_ends_cancelled() {
    let server = server();
    let c = modern_with_tasks(&server).await;
    let ToolCall::Task(task) = c.call_tool_as_task("forever", json!({})).await.unwrap() else {
        panic!("a task expected");
    };
    c.cancel_task(&task.task_id).await.unwrap();
    assert_eq!(c.task_result(&task.task_id).await.unwrap_err(), ClientError::Cancelled);

    let l = legacy(&server).await;
    let task = l
        .call_tool_as_task("forever", json!({}))
        .await
        .unwrap()
        .task()
        .unwrap()
        .clone();
    let cancelled = l.cancel_task(&task.task_id).await.unwrap();
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(l.get_task(&task.task_id).await.unwrap().status, "cancelled");
}

#[tokio::test]
async fn tasks_belong_to_their_principal() {
    let server = server();
    let alice = server
        .test_client()
        .modern()
        .tasks_extension()
        .principal("alice")
        .connect()
        .await
        .unwrap();
    let bob = server
        .test_client()
        .modern()
        .tasks_extension()
        .principal("bob")
        .connect()
        .await
        .unwrap();
    let task = alice
        .call_tool_as_task("slow", json!({}))
        .await
        .unwrap()
        .task()
        .unwrap()
        .clone();
    let e = bob.get_task(&task.task_id).await.unwrap_err();
    assert_eq!(e.code(), Some(-32602), "{e}");
    assert_eq!(text(&alice.task_result(&task.task_id).await.unwrap()), "slow done");
}
