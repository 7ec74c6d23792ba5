//! `initialize` (legacy era): its params, validated once, and its result.

use serde_json::{Map, Value};

use super::{ClientCapabilities, Implementation};
use crate::error::RpcError;
use crate::revision::{Revision, negotiate_initialize};

/// `initialize` params: what the client asks for and declares. Parsing
/// checks the shape only; the version is negotiated with
/// [`InitializeParams::revision`].
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeParams {
    /// The requested `protocolVersion`, verbatim.
    pub protocol_version: String,
    /// The declared `capabilities`.
    pub capabilities: ClientCapabilities,
    /// The client's `clientInfo` object, verbatim.
    pub client_info: Value,
}

impl InitializeParams {
    /// Parses the params of an `initialize` request. Every failure is
    /// -32602: no params, a `protocolVersion` that is not a string, or a
    /// `capabilities` or `clientInfo` that is not an object.
    pub fn parse(params: Option<&Map<String, Value>>) -> Result<Self, RpcError> {
        let params = params.ok_or_else(|| RpcError::invalid_params("Missing initialize params"))?;
        let protocol_version = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("protocolVersion must be a string"))?;
        let capabilities = params
            .get("capabilities")
            .and_then(Value::as_object)
            .ok_or_else(|| RpcError::invalid_params("capabilities must be an object"))?;
        let client_info = params
            .get("clientInfo")
            .filter(|v| v.is_object())
            .ok_or_else(|| RpcError::invalid_params("clientInfo must be an object"))?;
        Ok(InitializeParams {
            protocol_version: protocol_version.to_owned(),
            capabilities: ClientCapabilities::new(capabilities.clone()),
            client_info: client_info.clone(),
        })
    }

    /// Parses like [`InitializeParams::parse`], and refuses (-32602) a `clientInfo` and
    /// `capabilities` whose JSON together exceeds `max_bytes`: the session keeps them for its
    /// whole life, so their size is bounded.
    pub fn parse_within(params: Option<&Map<String, Value>>, max_bytes: usize) -> Result<Self, RpcError> {
        let parsed = Self::parse(params)?;
        let size = params.map_or(0, |p| {
            json_size(p.get("capabilities")).saturating_add(json_size(p.get("clientInfo")))
        });
        if size > max_bytes {
            return Err(RpcError::invalid_params(format!(
                "clientInfo and capabilities exceed {max_bytes} bytes"
            )));
        }
        Ok(parsed)
    }

    /// The revision the answer carries: the requested one when it is a
    /// legacy revision we serve, else the newest legacy one
    /// ([`negotiate_initialize`]).
    pub fn revision(&self) -> Revision {
        negotiate_initialize(&self.protocol_version)
    }
}

/// The length of a value's compact JSON, counted without building it.
fn json_size(v: Option<&Value>) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    if let Some(v) = v {
        let _ = serde_json::to_writer(&mut c, v);
    }
    c.0
}

/// The `initialize` result, borrowed for rendering.
#[derive(Debug, Clone, Copy)]
pub struct InitializeResult<'a> {
    /// The negotiated revision (`protocolVersion`).
    pub revision: Revision,
    /// The server capabilities, already rendered for `revision`.
    pub capabilities: &'a Value,
    /// The server implementation, rendered for `revision` (`serverInfo`).
    pub server_info: &'a Implementation,
    /// The server's `instructions`, if any.
    pub instructions: Option<&'a str>,
}

impl InitializeResult<'_> {
    /// The result object: `protocolVersion`, `capabilities`, `serverInfo`
    /// and, when set, `instructions`.
    pub fn render(&self) -> Value {
        let mut result = Map::new();
        result.insert("protocolVersion".into(), Value::String(self.revision.as_str().into()));
        result.insert("capabilities".into(), self.capabilities.clone());
        result.insert("serverInfo".into(), self.server_info.render(Some(self.revision)));
        if let Some(i) = self.instructions {
            result.insert("instructions".into(), Value::String(i.to_owned()));
        }
        Value::Object(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<InitializeParams, RpcError> {
        InitializeParams::parse(v.as_object())
    }

    #[test]
    fn stored_client_data_is_bounded() {
        let p = json!({"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
            "clientInfo": {"name": "c", "version": "1", "pad": "x".repeat(100)}});
        assert!(InitializeParams::parse_within(p.as_object(), 1000).is_ok());
        let e = InitializeParams::parse_within(p.as_object(), 100).unwrap_err();
        assert_eq!(e.code, -32602);
        assert_eq!(e.message, "clientInfo and capabilities exceed 100 bytes");
    }

    #[test]
    fn parses_and_negotiates() {
        let p = parse(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "c", "version": "1"}
        }))
        .unwrap();
        assert_eq!(p.protocol_version, "2025-06-18");
        assert_eq!(p.revision(), Revision::V2025_06_18);
        assert!(p.capabilities.roots());
        assert_eq!(p.client_info["name"], "c");

        for requested in ["1999-01-01", "2026-07-28"] {
            let p = parse(json!({"protocolVersion": requested, "capabilities": {}, "clientInfo": {}})).unwrap();
            assert_eq!(p.revision(), Revision::LATEST_LEGACY, "{requested}");
        }
    }

    #[test]
    fn shape_errors() {
        let table = [
            (None, "Missing initialize params"),
            (
                Some(json!({"capabilities": {}, "clientInfo": {}})),
                "protocolVersion must be a string",
            ),
            (
                Some(json!({"protocolVersion": 1, "capabilities": {}, "clientInfo": {}})),
                "protocolVersion must be a string",
            ),
            (
                Some(json!({"protocolVersion": "2025-06-18", "clientInfo": {}})),
                "capabilities must be an object",
            ),
            (
                Some(json!({"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": {}})),
                "capabilities must be an object",
            ),
            (
                Some(json!({"protocolVersion": "2025-06-18", "capabilities": {}})),
                "clientInfo must be an object",
            ),
            (
                Some(json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": "c"})),
                "clientInfo must be an object",
            ),
        ];
        for (params, message) in table {
            let e = InitializeParams::parse(params.as_ref().and_then(Value::as_object)).unwrap_err();
            assert_eq!(e.code, -32602, "{params:?}");
            assert_eq!(e.message, message, "{params:?}");
        }
    }

    #[test]
    fn renders_result() {
        let info = Implementation::new("s", "1").with_title("Server");
        let caps = json!({"tools": {}});
        let mut result = InitializeResult {
            revision: Revision::V2025_06_18,
            capabilities: &caps,
            server_info: &info,
            instructions: Some("Be nice"),
        };
        assert_eq!(
            result.render(),
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1", "title": "Server"},
                "instructions": "Be nice"
            })
        );
        result.revision = Revision::V2025_03_26;
        result.instructions = None;
        let v = result.render();
        assert_eq!(v["protocolVersion"], "2025-03-26");
        assert_eq!(v["serverInfo"], json!({"name": "s", "version": "1"}));
        assert!(v.get("instructions").is_none());
    }
}
