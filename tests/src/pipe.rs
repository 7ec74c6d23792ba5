//! A JSON-RPC client of the stdio transport over in-process pipes: the engine served by
//! `serve_io` on one end of two duplex streams, the test writing lines to the other.

use std::time::Duration;

use mcp_runtime::Engine;
use mcp_transport_stdio::{StdioConfig, StdioError, serve_io};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

/// How long an answer, or the server's end, may take.
const WAIT: Duration = Duration::from_secs(5);

/// A client of `serve_io` over in-process pipes.
pub struct StdioPipe {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    server: JoinHandle<Result<(), StdioError>>,
}

impl StdioPipe {
    /// Serves `engine` with the default stdio configuration on a new pair of pipes.
    pub fn start(engine: Engine) -> Self {
        let (input, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, output) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(serve_io(engine, StdioConfig::default(), server_in, server_out));
        StdioPipe {
            input: Some(input),
            output: BufReader::new(output).lines(),
            server,
        }
    }

    /// Writes one message as a line.
    pub async fn send(&mut self, message: Value) {
        let line = serde_json::to_vec(&message).expect("a JSON value serializes");
        self.send_line(&line).await;
    }

    /// Writes `text` as it is, then a newline: a message no `Value` can spell (a name given
    /// twice, spacing kept).
    pub async fn send_line(&mut self, text: &[u8]) {
        let input = self.input.as_mut().expect("input open");
        input.write_all(text).await.expect("write");
        input.write_all(b"\n").await.expect("write");
        input.flush().await.expect("flush");
    }

    /// Sends a request and reads the next line, which must be its answer.
    pub async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.answer(id).await
    }

    /// Reads the next line, which must be the answer to request `id`.
    pub async fn answer(&mut self, id: i64) -> Value {
        let answer = self.next().await;
        assert_eq!(answer["id"], json!(id), "{answer}");
        answer
    }

    /// Reads the next line (an answer, a batch's array of answers, a notification).
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.output.next_line())
            .await
            .expect("nothing written in time")
            .expect("read")
            .expect("output closed");
        serde_json::from_str(&line).expect("a JSON line")
    }

    /// Closes stdin and waits for the server to end (every span closed, every session ended).
    pub async fn finish(mut self) {
        self.input = None;
        tokio::time::timeout(WAIT, self.server)
            .await
            .expect("serve_io did not return")
            .expect("no panic")
            .expect("serve_io succeeded");
    }
}
