//! `mcp_runtime::uri_template`: arbitrary templates matched against arbitrary URIs.
//!
//! Input: a template, a newline, a URI. Checks that parsing and matching never panic, that a
//! match binds only variables the template names, each to a non-empty value, and that a
//! template without variables matches exactly its own text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_fuzz::split_line;
use mcp_runtime::uri_template::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let (template, uri) = split_line(data);
    let template = String::from_utf8_lossy(template);
    let uri = String::from_utf8_lossy(uri);
    let Ok(parsed) = UriTemplate::parse(&template) else {
        return;
    };
    let Some(vars) = parsed.matches(&uri) else { return };
    for (name, value) in &vars {
        let named = template.contains(&format!("{{{name}}}")) || template.contains(&format!("{{+{name}}}"));
        assert!(named, "{name:?} is not a variable of {template:?}");
        assert!(value.as_str().is_some_and(|v| !v.is_empty()), "{name} = {value:?}");
    }
    if !template.contains('{') {
        assert!(vars.is_empty());
        assert_eq!(uri, template, "a literal template matched another URI");
    }
});
