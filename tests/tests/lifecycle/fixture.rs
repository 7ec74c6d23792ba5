//! The server of the lifecycle suite: tools that hold their call until cancelled (then clean
//! up), ignore cancellation, or outlive their deadline; each reports to the test's probe.

use std::future::Future;
use std::time::Duration;

use mcp_server::{CallToolResult, Ctx, McpServer, TaskSupport, Tool};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

/// The bound on any one wait of the suite.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// Fails a test that runs longer than a minute (the old shutdown hung for good).
pub(crate) async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("test timed out")
}

/// What the tools report: `"<tool> started"`, `"<tool> cleaned up"`.
pub(crate) struct Probe(mpsc::UnboundedReceiver<String>);

impl Probe {
    /// Waits (at most [`WAIT`]) for `what` to be reported; `false` if it was not.
    pub(crate) async fn saw(&mut self, what: &str) -> bool {
        tokio::time::timeout(WAIT, async {
            while let Some(seen) = self.0.recv().await {
                if seen == what {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false)
    }
}

/// How long `hold` takes to clean up once cancelled: well inside the default 1 s grace.
const CLEANUP: Duration = Duration::from_millis(200);

/// The suite's server and the probe its tools report to.
///
/// - `hold`: reports "hold started", sends a progress notification when the call has a
///   token, then waits for its cancellation; then cleans up (200 ms) and reports
///   "hold cleaned up".
/// - `stubborn`: ignores cancellation and sleeps for 10 minutes.
/// - `sleepy`: sleeps 30 s, with a deadline of its own of 300 ms (`Tool::timeout`).
/// - `sleepy_task`: the same, and may run as a task.
pub(crate) fn server() -> (McpServer, Probe) {
    let (tx, rx) = mpsc::unbounded_channel();
    let hold = {
        let tx = tx.clone();
        Tool::new(
            "hold",
            "Holds the call until it is cancelled",
            move |_: Map<String, Value>, ctx: Ctx| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send("hold started".to_owned());
                    ctx.progress(1.0, None, None).await;
                    ctx.cancellation().cancelled().await;
                    // Cleanup after the token fired: it must run (behaviour invariant 13).
                    tokio::time::sleep(CLEANUP).await;
                    let _ = tx.send("hold cleaned up".to_owned());
                    CallToolResult::text("released")
                }
            },
        )
    };
    let stubborn = Tool::new(
        "stubborn",
        "Ignores its cancellation",
        move |_: Map<String, Value>, _ctx: Ctx| async move {
            tokio::time::sleep(Duration::from_secs(600)).await;
            CallToolResult::text("finally")
        },
    );
    let sleepy = |name: &str| {
        Tool::new(
            name,
            "Sleeps past its own deadline",
            |_: Map<String, Value>, _ctx: Ctx| async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                CallToolResult::text("woke up")
            },
        )
        .timeout(Duration::from_millis(300))
    };
    let server = McpServer::builder()
        .name("lifecycle")
        .version("1")
        .tool(hold)
        .tool(stubborn)
        .tool(sleepy("sleepy"))
        .tool(sleepy("sleepy_task").task_support(TaskSupport::Optional))
        .build()
        .expect("server");
    (server, Probe(rx))
}

/// A legacy `tools/call`, with a progress token when `progress`.
pub(crate) fn call(id: i64, name: &str, progress: bool) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if progress {
        params["_meta"] = json!({"progressToken": format!("p{id}")});
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A legacy `notifications/cancelled` naming `id`.
pub(crate) fn cancel(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
}
