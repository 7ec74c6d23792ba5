use super::*;
use crate::extension::ExtensionError;
use crate::extension::check_id;

/// The JSON Schema the official `@modelcontextprotocol/ext-apps` package ships (see
/// `mcp-protocol/vendor/ext-apps/README.md` for its origin).
const SCHEMA: &str = include_str!("../../vendor/ext-apps/schema.json");

/// A validator of `$defs/<name>` of the official schema.
fn official(name: &str) -> jsonschema::Validator {
    let mut doc: Value = serde_json::from_str(SCHEMA).expect("the vendored schema is JSON");
    assert!(doc["$defs"].get(name).is_some(), "the official schema has no {name}");
    doc["$ref"] = Value::String(format!("#/$defs/{name}"));
    jsonschema::validator_for(&doc).expect("the official schema compiles")
}

fn assert_valid(name: &str, instance: &Value) {
    let v = official(name);
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{instance} is not a valid {name}: {errors:?}");
}

fn assert_invalid(name: &str, instance: &Value) {
    assert!(
        !official(name).is_valid(instance),
        "{instance} should not be a valid {name}"
    );
}

fn full_resource_ui() -> ResourceUi {
    ResourceUi::new()
        .csp(
            Csp::new()
                .connect("https://api.example.com")
                .resource("https://*.cdn.example.com")
                .frame("https://www.youtube.com")
                .base_uri("https://cdn.example.com"),
        )
        .permissions(Permissions::new().camera().microphone().geolocation().clipboard_write())
        .domain("a904794854a047f6.claudemcpcontent.com")
        .prefers_border(true)
}

#[test]
fn resource_meta_matches_the_official_schema() {
    for ui in [
        ResourceUi::new(),
        ResourceUi::new().prefers_border(false),
        ResourceUi::new().csp(Csp::new()),
        ResourceUi::new().permissions(Permissions::new().clipboard_write()),
        full_resource_ui(),
    ] {
        let meta = ui.to_meta();
        assert_valid("McpUiResourceMeta", &meta["ui"]);
        assert_valid("McpUiResourceCsp", &meta["ui"].get("csp").cloned().unwrap_or(json!({})));
        assert_eq!(serde_json::from_value::<ResourceUi>(meta["ui"].clone()).ok(), Some(ui));
    }
    assert_eq!(
        full_resource_ui().to_meta(),
        json!({"ui": {
            "csp": {
                "connectDomains": ["https://api.example.com"],
                "resourceDomains": ["https://*.cdn.example.com"],
                "frameDomains": ["https://www.youtube.com"],
                "baseUriDomains": ["https://cdn.example.com"]
            },
            "permissions": {"camera": {}, "microphone": {}, "geolocation": {}, "clipboardWrite": {}},
            "domain": "a904794854a047f6.claudemcpcontent.com",
            "prefersBorder": true
        }})
    );
    // The schema is strict where we are: an unknown field fails both.
    let unknown = json!({"csp": {"scriptDomains": ["https://x"]}});
    assert_invalid("McpUiResourceMeta", &unknown);
    assert!(serde_json::from_value::<ResourceUi>(unknown).is_err());
    assert!(serde_json::from_value::<Permissions>(json!({"camera": true})).is_err());
    assert!(serde_json::from_value::<Permissions>(json!({"usb": {}})).is_err());
}

#[test]
fn tool_meta_matches_the_official_schema() {
    let uri = "ui://weather/view.html";
    let table = [
        (ToolUi::new(uri), json!({"resourceUri": uri})),
        (
            ToolUi::new(uri).map(ToolUi::app_only),
            json!({"resourceUri": uri, "visibility": ["app"]}),
        ),
        (
            ToolUi::new(uri).map(ToolUi::model_only),
            json!({"resourceUri": uri, "visibility": ["model"]}),
        ),
        (
            ToolUi::new(uri).map(|t| t.visibility([ToolVisibility::Model, ToolVisibility::App, ToolVisibility::Model])),
            json!({"resourceUri": uri, "visibility": ["model", "app"]}),
        ),
        (
            Ok(ToolUi::without_resource().app_only()),
            json!({"visibility": ["app"]}),
        ),
    ];
    for (ui, want) in table {
        let ui = ui.expect("a ui:// URI");
        let meta = ui.merge_into(Some(json!({"com.example/keep": 1})));
        assert_eq!(meta["ui"], want);
        assert_eq!(meta["com.example/keep"], 1);
        assert_eq!(
            meta.get(LEGACY_RESOURCE_URI_KEY).and_then(Value::as_str),
            ui.resource_uri.as_deref()
        );
        assert_valid("McpUiToolMeta", &meta["ui"]);
        assert_eq!(check_tool_meta("t", Some(&meta)), Ok(Some(ui)));
    }
    assert_invalid("McpUiToolMeta", &json!({"visibility": ["agent"]}));
    assert_invalid("McpUiToolMeta", &json!({"csp": {}}));
}

#[test]
fn visibility_defaults_to_both() {
    let ui = ToolUi::new("ui://a").expect("a ui:// URI");
    assert!(ui.visible_to(ToolVisibility::Model) && ui.visible_to(ToolVisibility::App));
    let app = ui.clone().app_only();
    assert!(!app.visible_to(ToolVisibility::Model) && app.visible_to(ToolVisibility::App));
    let model = ui.model_only();
    assert!(model.visible_to(ToolVisibility::Model) && !model.visible_to(ToolVisibility::App));
}

#[test]
fn uris_and_mime_types() {
    for bad in ["https://x/y", "ui:/x", "ui://", "UI://x", "ui://a b", ""] {
        assert_eq!(check_uri(bad), Err(AppsError::NotUiUri(bad.to_owned())), "{bad}");
        assert!(ToolUi::new(bad).is_err(), "{bad}");
    }
    assert_eq!(check_uri("ui://weather/view.html"), Ok(()));
    assert_eq!(check_resource("ui://v", Some(MIME_TYPE)), Ok(()));
    assert_eq!(check_resource("file:///x", Some("text/plain")), Ok(()));
    assert_eq!(check_resource("file:///x", None), Ok(()));
    for wrong in [
        None,
        Some("text/html"),
        Some("text/html; profile=mcp-app"),
        Some("application/json"),
    ] {
        assert_eq!(
            check_resource("ui://v", wrong),
            Err(AppsError::WrongMimeType {
                uri: "ui://v".into(),
                found: wrong.map(str::to_owned)
            })
        );
    }
    let e = check_resource("ui://v", Some("text/html")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ui:// resource \"ui://v\" must have MIME type \"text/html;profile=mcp-app\", not \"text/html\""
    );
    let none = check_resource("ui://v", None).unwrap_err();
    assert!(none.to_string().ends_with(", not none"), "{none}");
}

#[test]
fn hostile_tool_metas_are_refused() {
    let check = |meta: Value| check_tool_meta("t", Some(&meta));
    assert_eq!(check(json!({"other": 1})), Ok(None));
    assert_eq!(check_tool_meta("t", None), Ok(None));
    assert!(matches!(
        check(json!({"ui": {"resourceUri": "https://evil.example/x"}})),
        Err(AppsError::NotUiUri(_))
    ));
    assert!(matches!(
        check(json!({"ui/resourceUri": "javascript:alert(1)"})),
        Err(AppsError::NotUiUri(_))
    ));
    assert!(matches!(
        check(json!({"ui": {"resourceUri": "ui://a"}, "ui/resourceUri": "ui://b"})),
        Err(AppsError::InvalidToolMeta { .. })
    ));
    assert!(matches!(
        check(json!({"ui": {"visibility": ["agent"]}})),
        Err(AppsError::InvalidToolMeta { .. })
    ));
    assert!(matches!(
        check(json!({"ui": {"resourceUri": "ui://a", "csp": {}}})),
        Err(AppsError::InvalidToolMeta { .. })
    ));
    assert!(matches!(
        check(json!({"ui": "ui://a"})),
        Err(AppsError::InvalidToolMeta { .. })
    ));
    assert!(matches!(
        check(json!({"ui/resourceUri": 7})),
        Err(AppsError::InvalidToolMeta { .. })
    ));
    assert_eq!(
        check(json!({"ui": {"resourceUri": "ui://a", "visibility": []}})),
        Err(AppsError::EmptyVisibility("t".into()))
    );
    // The deprecated flat key alone still links the tool.
    assert_eq!(
        check(json!({"ui/resourceUri": "ui://a"})),
        Ok(Some(ToolUi::new("ui://a").expect("a ui:// URI")))
    );
}

#[test]
fn declaration_and_client_support() {
    let d = declaration();
    assert_eq!(d.id, EXTENSION_ID);
    assert!(d.legacy);
    assert!(
        d.settings.is_empty(),
        "the server declares no settings: {:?}",
        d.settings
    );
    // The runtime declares it; a server cannot declare it by hand.
    assert_eq!(
        check_id(EXTENSION_ID),
        Err(ExtensionError::Builtin(EXTENSION_ID.into()))
    );

    let caps = |v: Value| ClientCapabilities::new(v.as_object().cloned().unwrap_or_default());
    assert!(client_supports(&caps(
        json!({"extensions": {EXTENSION_ID: {"mimeTypes": ["text/plain", MIME_TYPE]}}})
    )));
    assert!(!client_supports(&caps(json!({"extensions": {EXTENSION_ID: {}}}))));
    assert!(!client_supports(&caps(
        json!({"extensions": {EXTENSION_ID: {"mimeTypes": ["text/html"]}}})
    )));
    assert!(!client_supports(&caps(json!({}))));
}

/// Declared among the server's extensions, in both eras (beside the tasks extension in the
/// modern one).
#[test]
fn declared_in_the_capabilities_of_both_eras() {
    use crate::model::{ServerFeatures, server_capabilities};
    use crate::revision::Revision;
    let f = ServerFeatures {
        tasks: true,
        ..ServerFeatures::default()
    };
    let ui = json!({});
    let v = server_capabilities(&f, Some(Revision::V2026_07_28), &[declaration()]);
    assert_eq!(
        v["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}, EXTENSION_ID: ui})
    );
    let v = server_capabilities(&f, Some(Revision::V2025_06_18), &[declaration()]);
    assert_eq!(v["extensions"], json!({EXTENSION_ID: ui}));
}
