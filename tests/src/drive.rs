//! Drives one request through an engine as a transport would, for the suites that test
//! the dispatcher itself: the reply (an answer the engine gave at once, parsed back into a
//! result or an error), its HTTP status, and the session an `initialize` minted.

use std::time::Duration;

use mcp_protocol::{Request, RpcError};
use mcp_runtime::{Engine, Peer, Reply, SessionHandle, Sink, Step};
use serde_json::Value;

/// What became of a request.
#[derive(Debug)]
pub struct Driven {
    /// The reply.
    pub reply: Reply,
    /// The HTTP status it would be answered with.
    pub status: u16,
    /// The session an `initialize` minted (kept where the peer keeps sessions).
    pub session: Option<SessionHandle>,
}

/// Runs `req` from `peer` with `sink` for what the handler emits (bounded in time).
pub async fn request(engine: &Engine, peer: &Peer<'_>, req: Request, sink: Sink) -> Driven {
    let run = async {
        match engine.request(peer, req).await {
            Step::Answer(a) => Driven {
                reply: parse(&a.frame),
                status: a.status,
                session: a.session,
            },
            Step::Call(call) => {
                let done = call.run(sink).await;
                Driven {
                    status: done.status(),
                    reply: done.reply,
                    session: None,
                }
            }
            Step::Listen(_) => panic!("a listen stream opened where a reply was expected"),
        }
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("answered in time")
}

/// An encoded response, back into a reply.
fn parse(frame: &[u8]) -> Reply {
    let v: Value = serde_json::from_slice(frame).expect("a JSON-RPC response");
    match v.get("error") {
        Some(e) => Reply::Error(serde_json::from_value::<RpcError>(e.clone()).expect("a JSON-RPC error")),
        None => Reply::Result(v.get("result").cloned().unwrap_or(Value::Null)),
    }
}
