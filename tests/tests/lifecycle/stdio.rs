//! A line client for the stdio transport over in-memory pipes, served by `serve_io_until`.

use mcp_runtime::Engine;
use mcp_server::StdioConfig;
use mcp_transport_stdio::{StdioError, serve_io_until};
use serde_json::{Value, json};
use std::future::Future;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

use crate::fixture::WAIT;

/// The client's ends of a stdio server's pipes.
pub(crate) struct Pipe {
    input: DuplexStream,
    output: Lines<BufReader<DuplexStream>>,
    serving: JoinHandle<Result<(), StdioError>>,
}

impl Pipe {
    /// Serves `engine` on fresh pipes until their input ends or `shutdown` completes.
    pub(crate) fn start(
        engine: Engine,
        config: StdioConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Pipe {
        let (input, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, output) = tokio::io::duplex(1 << 16);
        let serving = tokio::spawn(serve_io_until(engine, config, server_in, server_out, shutdown));
        Pipe {
            input,
            output: BufReader::new(output).lines(),
            serving,
        }
    }

    /// Writes one message.
    pub(crate) async fn send(&mut self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.input.write_all(&line).await.expect("write");
    }

    /// The next message written (at most [`WAIT`]); `None` at the end of the output.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("a message in time")
            .expect("read")?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    /// The answer to request `id`, skipping notifications.
    pub(crate) async fn answer(&mut self, id: Value) -> Value {
        loop {
            let m = self.next().await.expect("an answer before the end");
            if m.get("method").is_none() && m["id"] == id {
                return m;
            }
        }
    }

    /// A legacy `initialize` (then `notifications/initialized`) asking for `version`.
    pub(crate) async fn initialize(&mut self, version: &str) {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "lifecycle", "version": "1"}
        }});
        self.send(&init).await;
        let answer = self.answer(json!(0)).await;
        assert_eq!(answer["result"]["protocolVersion"], version, "{answer}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
    }

    /// Everything written until the output ends, and how serving ended. The input stays open:
    /// serving must end on its own (a shutdown).
    pub(crate) async fn finish(mut self) -> (Vec<Value>, Result<(), StdioError>) {
        let mut rest = Vec::new();
        while let Some(line) = self.output.next_line().await.expect("read") {
            rest.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")));
        }
        let served = self.serving.await.expect("serve task");
        drop(self.input);
        (rest, served)
    }
}
