//! The Events extension's catalog changing at run time (`Events::add_type`,
//! `Events::remove_type`): the declaration says `listChanged`, every open push stream is sent
//! `notifications/events/list_changed` (tagged with its subscription id) when a type comes or
//! goes, `events/list` follows, and a withdrawn type's streams end with `terminated` and their
//! final result while the others stay open.

use std::time::Duration;

use mcp_protocol::RpcError;
use mcp_server::McpServer;
use mcp_server::events::{DeliveryMode, EventType, Events, EventsError};
use mcp_transport_http::HttpConfig;
use serde_json::{Value, json};

use super::support::{Server, Sse, bounded, modern};

fn push(name: &str) -> EventType {
    EventType::new(name, "A test type")
        .delivery(&[DeliveryMode::Poll, DeliveryMode::Push])
        .expect("a delivery")
}

async fn request(s: &Server, id: i64, method: &str, params: Value) -> super::support::Resp {
    s.post(modern(id, method, params))
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .send()
        .await
}

async fn listed(s: &Server) -> Vec<String> {
    let answer = request(s, 90, "events/list", json!({})).await.json().await;
    answer["result"]["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|d| d["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The next message of `stream` that is not a heartbeat.
async fn next(stream: &mut Sse) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(5), stream.message())
            .await
            .expect("a message in time")
            .expect("the stream is open");
        if m["method"] != "notifications/events/heartbeat" {
            return m;
        }
    }
}

#[tokio::test]
async fn types_come_and_go_and_open_streams_are_told() {
    bounded(async {
        let events = Events::builder().event(push("build.finished")).build().expect("events");
        let server = McpServer::builder()
            .name("events-catalog")
            .version("1")
            .events(&events)
            .build()
            .expect("server");
        let s = Server::serve_engine(server.engine().clone(), HttpConfig::default()).await;
        let discovered = request(&s, 1, "server/discover", json!({})).await.json().await;
        assert_eq!(
            discovered["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/events"],
            json!({"listChanged": true}),
            "{discovered}"
        );
        let open = |id: i64, name: &str| {
            request(
                &s,
                id,
                "events/stream",
                json!({"name": name, "arguments": {}, "cursor": null}),
            )
        };
        let mut builds = open(2, "build.finished").await.sse();
        assert_eq!(next(&mut builds).await["method"], "notifications/events/active");

        // A type added: listed, and the open stream is told (tagged with its own id).
        events.add_type(push("deploy.done")).expect("added");
        let told = next(&mut builds).await;
        assert_eq!(told["method"], "notifications/events/list_changed", "{told}");
        assert_eq!(told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 2);
        assert_eq!(listed(&s).await, ["build.finished", "deploy.done"]);
        assert_eq!(
            events.add_type(push("deploy.done")),
            Err(EventsError::Duplicate("deploy.done".into()))
        );
        let webhook = EventType::new("hook.only", "A webhook type")
            .delivery(&[DeliveryMode::Webhook])
            .expect("a delivery");
        assert_eq!(
            events.add_type(webhook),
            Err(EventsError::WebhooksOff("hook.only".into())),
            "built without webhooks"
        );

        // A type withdrawn: its own streams end, the others are told, polls get -32011.
        let mut deploys = open(3, "deploy.done").await.sse();
        assert_eq!(next(&mut deploys).await["method"], "notifications/events/active");
        let withdrawn = RpcError::new(-32011, "Withdrawn");
        events.remove_type("deploy.done", withdrawn).await.expect("removed");
        let ended = next(&mut deploys).await;
        assert_eq!(ended["method"], "notifications/events/terminated", "{ended}");
        assert_eq!(ended["params"]["error"]["code"], -32011);
        let last = next(&mut deploys).await;
        assert_eq!(last["id"], 3, "the final result: {last}");
        assert_eq!(next(&mut builds).await["method"], "notifications/events/list_changed");
        assert_eq!(listed(&s).await, ["build.finished"]);
        let poll = json!({"name": "deploy.done", "arguments": {}, "cursor": null, "timeoutMs": 0});
        let refused = request(&s, 4, "events/poll", poll).await.json().await;
        assert_eq!(refused["error"]["code"], -32011, "{refused}");
        assert!(matches!(
            events.remove_type("deploy.done", RpcError::internal()).await,
            Err(EventsError::Unknown(_))
        ));

        // The remaining type's stream still carries its occurrences.
        events
            .emit("build.finished", json!({"ok": true}))
            .await
            .expect("emitted");
        let event = next(&mut builds).await;
        assert_eq!(event["method"], "notifications/events/event", "{event}");
    })
    .await;
}
