//! Unit tests of typed input.

use super::*;
use crate::api::run::Run;
use mcp_protocol::model::{Content, Role};
use serde::Deserialize;

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
enum Colour {
    Red,
    Green,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
enum Size {
    /// Small one
    Small,
    /// Large one
    Large,
}

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct Everything {
    /// The name
    name: String,
    #[schemars(email)]
    email: Option<String>,
    #[schemars(url)]
    site: Option<String>,
    #[schemars(length(min = 2, max = 5))]
    code: String,
    #[schemars(range(min = 1, max = 9))]
    count: u32,
    ratio: f64,
    ok: bool,
    colour: Colour,
    size: Option<Size>,
    tags: Vec<Colour>,
    #[serde(default = "five")]
    five: i64,
    #[serde(default)]
    maybe: Option<bool>,
}

fn five() -> i64 {
    5
}

#[test]
fn flat_primitives_become_the_restricted_form() {
    let s = form_schema::<Everything>().expect("flat");
    assert_eq!(s["type"], "object");
    assert!(s.get("$schema").is_none() && s.get("title").is_none() && s.get("$defs").is_none());
    let p = &s["properties"];
    assert_eq!(p["name"], json!({"type": "string", "description": "The name"}));
    assert_eq!(p["email"], json!({"type": "string", "format": "email"}));
    assert_eq!(p["site"], json!({"type": "string", "format": "uri"}));
    assert_eq!(p["code"], json!({"type": "string", "minLength": 2, "maxLength": 5}));
    assert_eq!(p["count"], json!({"type": "integer", "minimum": 1, "maximum": 9}));
    assert_eq!(p["ratio"], json!({"type": "number"}));
    assert_eq!(p["ok"], json!({"type": "boolean"}));
    assert_eq!(p["colour"], json!({"type": "string", "enum": ["Red", "Green"]}));
    assert_eq!(
        p["size"],
        json!({"type": "string", "oneOf": [
            {"const": "Small", "title": "Small one"},
            {"const": "Large", "title": "Large one"}
        ]})
    );
    assert_eq!(
        p["tags"],
        json!({"type": "array", "items": {"type": "string", "enum": ["Red", "Green"]}})
    );
    assert_eq!(p["five"]["default"], 5);
    assert_eq!(p["maybe"], json!({"type": "boolean"}));
    let required: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["name", "code", "count", "ratio", "ok", "colour", "tags"]);
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Inner {
    a: u8,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Nested {
    inner: Inner,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct ListOfNumbers {
    numbers: Vec<u32>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Map_ {
    m: std::collections::HashMap<String, String>,
}

#[test]
fn anything_else_is_refused_with_the_field_named() {
    let e = form_schema::<Nested>().unwrap_err();
    assert!(e.reason().contains("\"inner\"") && e.reason().contains("nested"), "{e}");
    assert!(e.to_string().contains("Nested"), "{e}");
    let e = form_schema::<ListOfNumbers>().unwrap_err();
    assert!(e.reason().contains("\"numbers\""), "{e}");
    assert!(form_schema::<Map_>().is_err());
    assert!(form_schema::<u32>().is_err());
    assert!(form_schema::<Colour>().is_err());
}

#[test]
fn elicit_results_are_read_by_action() {
    #[derive(Debug, PartialEq, Deserialize)]
    struct Name {
        name: String,
    }
    let ok = read_elicitation::<Name>("k", json!({"action": "accept", "content": {"name": "Ada"}}));
    assert_eq!(ok.ok(), Some(Elicitation::Accept(Name { name: "Ada".into() })));
    let d = read_elicitation::<Name>("k", json!({"action": "decline"}));
    assert_eq!(d.ok(), Some(Elicitation::Decline));
    let c = read_elicitation::<Name>("k", json!({"action": "cancel"}));
    assert_eq!(c.ok(), Some(Elicitation::Cancel));
    let bad = read_elicitation::<Name>("k", json!({"action": "accept", "content": {"name": 3}}));
    assert!(matches!(bad, Err(HandlerError::Tool(m)) if m.contains("(k)")));
    let weird = read_elicitation::<Name>("k", json!({"action": "maybe"}));
    assert!(matches!(weird, Err(HandlerError::Rpc(e)) if e.code == -32602));
}

#[test]
fn counted_keys_per_kind() {
    let run = Run::default();
    assert_eq!(run.next_key("elicit"), "elicit-1");
    assert_eq!(run.next_key("sample"), "sample-1");
    assert_eq!(run.next_key("elicit"), "elicit-2");
    assert_eq!(run.next_key("roots"), "roots-1");
}

#[test]
fn sampling_params_and_replies() {
    let p = Sampling::new()
        .user("hi")
        .assistant("hello")
        .message(Role::User, Content::image("AA==", "image/png"))
        .stop_sequence("END")
        .priorities(Some(0.5), None, Some(1.0))
        .model_hint("a")
        .metadata(json!({"x": 1}))
        .params();
    assert_eq!(p["maxTokens"], 1024);
    assert_eq!(
        p["messages"][1],
        json!({"role": "assistant", "content": {"type": "text", "text": "hello"}})
    );
    assert_eq!(
        p["messages"][2]["content"],
        json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
    );
    assert_eq!(
        p["modelPreferences"],
        json!({"costPriority": 0.5, "intelligencePriority": 1.0, "hints": [{"name": "a"}]})
    );
    assert_eq!(p["stopSequences"], json!(["END"]));
    assert!(p.get("systemPrompt").is_none() && p.get("temperature").is_none());
    let many: SamplingReply = serde_json::from_value(json!({
            "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "a"}, {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, {"type": "text", "text": "b"}]
        }))
        .unwrap();
    assert_eq!((many.text().as_str(), many.content.len()), ("ab", 3));
    assert!(serde_json::from_value::<SamplingReply>(json!({"role": "assistant"})).is_err());
}
