// A minimal MCP Apps host page (bundled for the browser by run.mjs): the official TypeScript
// client connects to the server over Streamable HTTP, the official ext-apps `AppBridge` connects
// the server's view, rendered in a sandboxed iframe, to it. What it saw goes to `window.hostState`
// for run.mjs to check.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  buildAllowAttribute,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const EXTENSION = "io.modelcontextprotocol/ui";
const state = (window.hostState = { done: false, error: null, log: [] });
const log = (line) => {
  state.log.push(line);
  document.getElementById("log").textContent = state.log.join("\n");
};

// The CSP a host builds from the resource's `_meta.ui.csp` (the specification's construction).
function contentSecurityPolicy(csp = {}) {
  const list = (domains, fallback = "") => (domains && domains.length ? domains.join(" ") : fallback);
  const res = list(csp.resourceDomains);
  return [
    "default-src 'none'",
    `script-src 'self' 'unsafe-inline' ${res}`,
    `style-src 'self' 'unsafe-inline' ${res}`,
    `connect-src 'self' ${list(csp.connectDomains)}`,
    `img-src 'self' data: ${res}`,
    `font-src 'self' ${res}`,
    `media-src 'self' data: ${res}`,
    `frame-src ${list(csp.frameDomains, "'none'")}`,
    "object-src 'none'",
    `base-uri ${list(csp.baseUriDomains, "'self'")}`,
  ].join("; ");
}

async function main() {
  const params = new URLSearchParams(location.search);
  const mode = params.get("mode");
  const client = new Client(
    { name: "apps-interop-host", version: "0.0.0" },
    {
      capabilities: { extensions: { [EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
      versionNegotiation: { mode },
    },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(params.get("mcp"))));
  state.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
  state.declared = client.getServerCapabilities()?.extensions?.[EXTENSION] ?? null;
  log(`connected (${mode}, ${state.protocolVersion}); ${EXTENSION}: ${JSON.stringify(state.declared)}`);

  const { tools } = await client.listTools();
  state.serverTools = tools.map((t) => ({ name: t.name, ui: t._meta?.ui ?? null }));
  state.modelTools = tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name);
  log(`the model sees: ${state.modelTools.join(", ")}`);
  const tool = tools.find((t) => getToolUiResourceUri(t) && !isToolVisibilityAppOnly(t));
  if (!tool) throw new Error("no tool with a UI for the model");

  // The model calls the tool; the host renders its UI resource with the result.
  const result = await client.callTool({ name: tool.name, arguments: {} });
  state.toolResult = result.structuredContent ?? null;
  const uri = getToolUiResourceUri(tool);
  const { contents } = await client.readResource({ uri });
  const content = contents[0];
  state.resource = { uri: content.uri, mimeType: content.mimeType, meta: content._meta?.ui ?? null };
  if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`${uri} has MIME type ${content.mimeType}`);
  const html = content.text ?? atob(content.blob);
  state.csp = contentSecurityPolicy(content._meta?.ui?.csp);
  log(`rendering ${uri} (${html.length} bytes) with CSP: ${state.csp}`);

  // An opaque-origin sandbox (scripts only: no same-origin access to this page), the CSP as the
  // document's first element, the permissions it asked for as `allow`.
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("allow", buildAllowAttribute(content._meta?.ui?.permissions));
  iframe.title = tool.title ?? tool.name;
  document.getElementById("app").appendChild(iframe);

  const bridge = new AppBridge(
    client,
    { name: "apps-interop-host", version: "0.0.0" },
    { serverTools: {}, logging: {} },
    { hostContext: { theme: "light", displayMode: "inline", platform: "web" } },
  );
  const initialized = new Promise((resolve) => {
    bridge.oninitialized = resolve;
  });
  bridge.onsizechange = ({ height }) => {
    if (height) iframe.style.height = `${height}px`;
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  const csp = `<meta http-equiv="Content-Security-Policy" content="${state.csp}">`;
  iframe.srcdoc = html.replace(/<head[^>]*>/i, (head) => head + csp);
  await initialized;
  state.appInfo = bridge.getAppVersion?.() ?? null;
  log(`view initialized: ${JSON.stringify(state.appInfo)}`);
  await bridge.sendToolInput({ arguments: {} });
  await bridge.sendToolResult(result);
  state.done = true;
  log("tool result sent to the view");
}

main().catch((e) => {
  state.error = String(e && e.stack ? e.stack : e);
  log(`error: ${state.error}`);
});
