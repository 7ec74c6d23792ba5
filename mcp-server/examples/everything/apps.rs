//! MCP Apps (SEP-1865) in the fixture: a tool whose `_meta.ui.resourceUri` names a readable
//! `ui://` resource of type `text/html;profile=mcp-app`, in both eras. With it the server
//! declares `io.modelcontextprotocol/ui` (`{}`) in `initialize` and `server/discover`.

use mcp_server::apps::{AppResource, AppsError, Csp, ToolUi};
use mcp_server::prelude::*;

use super::empty_schema;

/// The view's URI.
pub(crate) const VIEW: &str = "ui://everything/app";

/// A self-contained page: it greets and shows the text of the tool result the host sends it.
const PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>everything app</title></head>
<body><p id="result">waiting for the tool result</p>
<script>
const host = window.parent;
window.addEventListener("message", (e) => {
  const m = e.data;
  if (e.source !== host || !m || m.jsonrpc !== "2.0") return;
  if (m.id === 1 && m.result) host.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }, "*");
  if (m.method === "ui/notifications/tool-result") {
    document.getElementById("result").textContent = (m.params.content || []).map((c) => c.text).join(" ");
  }
});
host.postMessage({ jsonrpc: "2.0", id: 1, method: "ui/initialize",
  params: { appInfo: { name: "everything-app", version: "1.0.0" }, appCapabilities: {}, protocolVersion: "2026-01-26" } }, "*");
</script></body></html>
"#;

/// The `ui://` resource and the tool that names it.
pub(crate) fn app_tools(b: mcp_server::McpServerBuilder) -> Result<mcp_server::McpServerBuilder, AppsError> {
    let view = AppResource::html(VIEW, "everything-app", PAGE)?
        .description("An MCP App view (text/html;profile=mcp-app)")
        .csp(Csp::new())
        .prefers_border(true);
    let tool = Tool::new(
        "test_app_ui",
        "Returns text an MCP App host also renders in its view",
        |_, _| async { "This tool's result is rendered by ui://everything/app." },
    )
    .input_schema(empty_schema())
    .ui(ToolUi::new(VIEW)?);
    Ok(b.resource(view).tool(tool))
}
