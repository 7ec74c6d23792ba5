#!/usr/bin/env node
// Interop client: the official TypeScript MCP SDKs drive the `everything` fixture.
//
//   node client.mjs --sdk v1|v2 (--stdio BINARY | --http BINARY | --url URL)
//                   [--mode legacy|auto] [--progress-calls N] [--timeout SECONDS]
//
// `--sdk v1` is `@modelcontextprotocol/sdk` (1.x), `--sdk v2` is `@modelcontextprotocol/client`
// (2.x), both pinned in package.json. `--stdio BINARY` spawns `BINARY --stdio`; `--http BINARY`
// starts `BINARY --host 127.0.0.1 --port 0`, reads the `listening on URL` line it prints and
// connects over Streamable HTTP; `--url URL` connects to a running server. `--mode` is the v2
// client's version negotiation (`legacy`: the initialize handshake; `auto`: `server/discover`
// first, the 2026-07-28 era against this server); the v1 client always speaks the legacy era.
//
// The checks mirror the essentials of interop/client.py: tools/list holds the fixture tools,
// a few fixture tools answer their documented values, the logging tool's messages arrive (legacy
// era), and `test_tool_with_progress` is called `--progress-calls` times (default 20): every call
// must see exactly its 3 progress notifications (0, 50, 100 of 100) through its progress callback
// *before* its result resolves. These SDKs dispatch a notification one microtask after reading it
// but settle a response at once (dropping the request's progress handler), so a progress
// notification read in the same chunk as its response is lost as "unknown token": the check
// catches a server that lets the two coalesce.
//
// Each check prints `ok NAME` or `FAIL NAME: WHY`; a `progress:` line gives the counts; the last
// line is `N passed, N failed`, and the exit code is 1 if any check failed (2 on bad usage).

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const FIXTURE_TOOLS = [
  "test_simple_text",
  "test_image_content",
  "test_audio_content",
  "test_embedded_resource",
  "test_multiple_content_types",
  "test_tool_with_logging",
  "test_tool_with_progress",
  "test_error_handling",
  "test_sampling",
  "test_elicitation",
  "json_schema_2020_12_tool",
];
const LOG_MESSAGES = ["Tool execution started", "Tool processing data", "Tool execution completed"];
const PROGRESS_VALUES = [0, 50, 100];
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
// How long late notifications may still arrive after a result (as the Python client waits).
const SETTLE_MS = 200;

class CheckFailed extends Error {}

function expect(cond, why) {
  if (!cond) throw new CheckFailed(why);
}

function expectEq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  if (a !== e) throw new CheckFailed(`${what}: expected ${e}, got ${a}`);
}

function usage(why) {
  console.error(`client.mjs: ${why}`);
  console.error(
    "usage: node client.mjs --sdk v1|v2 (--stdio BINARY | --http BINARY | --url URL) " +
      "[--mode legacy|auto] [--progress-calls N] [--timeout SECONDS]",
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { sdk: null, stdio: null, http: null, url: null, mode: "legacy", calls: 20, timeout: 30 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case "--sdk": opts.sdk = value(); break;
      case "--stdio": opts.stdio = value(); break;
      case "--http": opts.http = value(); break;
      case "--url": opts.url = value(); break;
      case "--mode": opts.mode = value(); break;
      case "--progress-calls": opts.calls = Number(value()); break;
      case "--timeout": opts.timeout = Number(value()); break;
      default: usage(`unknown argument ${flag}`);
    }
  }
  if (opts.sdk !== "v1" && opts.sdk !== "v2") usage("--sdk must be v1 or v2");
  if ([opts.stdio, opts.http, opts.url].filter((x) => x !== null).length !== 1) {
    usage("give exactly one of --stdio, --http, --url");
  }
  if (opts.mode !== "legacy" && opts.mode !== "auto") usage("--mode must be legacy or auto");
  if (opts.sdk === "v1" && opts.mode !== "legacy") usage("the v1 SDK has no version negotiation");
  if (!Number.isInteger(opts.calls) || opts.calls < 1) usage("--progress-calls must be a positive integer");
  if (!(opts.timeout > 0)) usage("--timeout must be positive");
  return opts;
}

/** The SDK's classes, behind one shape for both major versions. */
async function loadSdk(sdk) {
  if (sdk === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
    const { LoggingMessageNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    return {
      label: `@modelcontextprotocol/sdk`,
      newClient: (info) => new Client(info, { capabilities: {} }),
      StdioClientTransport,
      StreamableHTTPClientTransport,
      onLog: (client, handler) =>
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => handler(n.params)),
      // v1: callTool(params, resultSchema, options)
      callTool: (client, params, options) => client.callTool(params, undefined, options),
    };
  }
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  return {
    label: `@modelcontextprotocol/client`,
    newClient: (info, mode) => new Client(info, { capabilities: {}, versionNegotiation: { mode } }),
    StdioClientTransport,
    StreamableHTTPClientTransport,
    onLog: (client, handler) => client.setNotificationHandler("notifications/message", (n) => handler(n.params)),
    // v2: callTool(params, options)
    callTool: (client, params, options) => client.callTool(params, options),
  };
}

/** Starts `binary --host 127.0.0.1 --port 0` and resolves with the server and the URL it prints. */
function startHttpServer(binary, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ["--host", "127.0.0.1", "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`${binary} printed no "listening on" line within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${binary}: ${e.message}`));
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${binary} exited before printing its URL (${signal ?? code})`));
    });
    const lines = createInterface({ input: child.stdout });
    lines.once("line", (line) => {
      clearTimeout(timer);
      const url = line.trim().replace(/^listening on /, "");
      if (!url.startsWith("http://127.0.0.1:")) {
        child.kill();
        reject(new Error(`expected "listening on http://127.0.0.1:P/mcp", got ${JSON.stringify(line)}`));
        return;
      }
      child.removeAllListeners("exit");
      // The rest of its stdout is the server's business; keep the pipe drained.
      lines.on("line", () => {});
      resolve({ child, url });
    });
  });
}

/** Rejects after `ms` with a clear message. */
function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new CheckFailed(`${what}: timed out after ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The negotiated protocol version, where the SDK exposes it (v2; v1 over HTTP). */
function negotiated(client, transport) {
  return client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function textOf(result, what) {
  expectEq(result.content.map((c) => c.type), ["text"], `${what} content types`);
  return result.content[0].text;
}

function expectPng(data, what) {
  const raw = Buffer.from(data, "base64");
  expect(raw.subarray(0, 8).equals(PNG_SIGNATURE), `${what}: decoded data is not a PNG`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const sdk = await loadSdk(opts.sdk);
  const timeoutMs = opts.timeout * 1000;
  let passed = 0;
  let failed = 0;
  const check = async (name, body) => {
    try {
      await withTimeout(body(), timeoutMs, name);
      passed++;
      console.log(`ok ${name}`);
    } catch (e) {
      failed++;
      const why = e instanceof CheckFailed ? e.message : `${e?.constructor?.name ?? "Error"}: ${e?.message ?? e}`;
      console.log(`FAIL ${name}: ${why}`);
    }
  };

  let server = null;
  const client = sdk.newClient({ name: `mcp-interop-ts-${opts.sdk}`, version: "0.0.0" }, opts.mode);
  // Errors the SDK reports without failing a request: progress for a request it already settled.
  const lateProgress = [];
  const otherErrors = [];
  client.onerror = (e) => {
    const message = String(e?.message ?? e);
    if (message.includes("progress notification for an unknown token")) lateProgress.push(message);
    else otherErrors.push(message);
  };
  const logs = [];
  sdk.onLog(client, (params) => logs.push(params));

  try {
    let transport;
    if (opts.stdio) {
      transport = new sdk.StdioClientTransport({ command: opts.stdio, args: ["--stdio"], stderr: "inherit" });
    } else {
      let url = opts.url;
      if (opts.http) {
        server = await startHttpServer(opts.http, timeoutMs);
        url = server.url;
      }
      transport = new sdk.StreamableHTTPClientTransport(new URL(url));
    }
    const where = opts.stdio ? `stdio (${opts.stdio} --stdio)` : `Streamable HTTP (${server?.url ?? opts.url})`;
    console.log(`client: ${sdk.label} (${opts.sdk}, mode ${opts.mode}) over ${where}`);

    let connected = false;
    await check("connect", async () => {
      await client.connect(transport);
      connected = true;
      const version = negotiated(client, transport);
      const info = client.getServerVersion();
      expect(Boolean(info?.name), `no serverInfo: ${JSON.stringify(info)}`);
      console.log(`connected: server ${info.name} ${info.version ?? ""}, protocol ${version ?? "(not exposed by the SDK)"}`);
    });
    if (!connected) return { passed, failed };

    await check("tools/list", async () => {
      const names = new Set();
      let cursor;
      for (let page = 0; page < 100; page++) {
        const res = await client.listTools(cursor === undefined ? undefined : { cursor });
        for (const tool of res.tools) {
          names.add(tool.name);
          expectEq(tool.inputSchema?.type, "object", `${tool.name} inputSchema.type`);
        }
        cursor = res.nextCursor;
        if (cursor === undefined) break;
      }
      const missing = FIXTURE_TOOLS.filter((n) => !names.has(n));
      expect(missing.length === 0, `missing tools ${JSON.stringify(missing)}`);
    });

    const call = (name, args = {}, options = {}) => sdk.callTool(client, { name, arguments: args }, options);

    await check("test_simple_text", async () => {
      const res = await call("test_simple_text");
      expect(!res.isError, "isError is set");
      expectEq(textOf(res, "result"), "This is a simple text response for testing.", "text");
    });

    await check("test_image_content", async () => {
      const res = await call("test_image_content");
      expect(!res.isError, "isError is set");
      expectEq(res.content.map((c) => c.type), ["image"], "content types");
      expectEq(res.content[0].mimeType, "image/png", "mimeType");
      expectPng(res.content[0].data, "image data");
    });

    await check("test_multiple_content_types", async () => {
      const res = await call("test_multiple_content_types");
      expect(!res.isError, "isError is set");
      expectEq(res.content.map((c) => c.type), ["text", "image", "resource"], "content types");
      expectEq(res.content[2].resource?.uri, "test://mixed-content-resource", "resource uri");
      expectEq(JSON.parse(res.content[2].resource?.text ?? "null"), { test: "data", value: 123 }, "resource text");
    });

    await check("test_error_handling", async () => {
      const res = await call("test_error_handling");
      expectEq(res.isError, true, "isError");
      expectEq(textOf(res, "result"), "This tool intentionally returns an error for testing", "text");
    });

    // v1 speaks the handshake era only; v2 tells which era it negotiated.
    const legacy = opts.sdk === "v1" || (negotiated(client, transport) ?? "") < "2026";
    if (legacy) {
      await check("test_tool_with_logging", async () => {
        await client.setLoggingLevel("debug");
        logs.length = 0;
        const res = await call("test_tool_with_logging");
        await sleep(SETTLE_MS);
        expect(!res.isError, "isError is set");
        const texts = logs.map((p) => (typeof p.data === "string" ? p.data : (p.data?.message ?? JSON.stringify(p.data))));
        expectEq(texts.filter((t) => LOG_MESSAGES.includes(t)), LOG_MESSAGES, "log messages in order");
      });
    } else {
      console.log("skip test_tool_with_logging (legacy era only here: logging/setLevel)");
    }

    // The point of these clients: every progress notification reaches its callback before the
    // result of its call resolves, call after call.
    const counts = [];
    const problems = [];
    await check(`test_tool_with_progress x${opts.calls}`, async () => {
      for (let i = 0; i < opts.calls; i++) {
        const seen = [];
        const res = await call("test_tool_with_progress", {}, { onprogress: (p) => seen.push(p) });
        const before = seen.slice();
        counts.push(before.length);
        expect(!res.isError, `call ${i + 1}: isError is set`);
        expectEq(textOf(res, `call ${i + 1} result`), "Tool with progress completed", `call ${i + 1} text`);
        const values = before.map((p) => p.progress);
        if (JSON.stringify(values) !== JSON.stringify(PROGRESS_VALUES)) {
          problems.push(`call ${i + 1}: progress before the result ${JSON.stringify(values)}`);
        } else if (before.some((p) => p.total !== 100)) {
          problems.push(`call ${i + 1}: totals ${JSON.stringify(before.map((p) => p.total))}`);
        }
      }
      await sleep(SETTLE_MS);
      const got = counts.reduce((a, b) => a + b, 0);
      const want = opts.calls * PROGRESS_VALUES.length;
      console.log(
        `progress: ${got}/${want} notifications before their result over ${opts.calls} calls` +
          ` (${counts.filter((c) => c !== PROGRESS_VALUES.length).length} calls short,` +
          ` ${lateProgress.length} dropped by the SDK as late)`,
      );
      expect(
        problems.length === 0,
        `${problems.length} of ${opts.calls} calls did not see exactly ${JSON.stringify(PROGRESS_VALUES)} ` +
          `before their result (first: ${problems[0]}); ${lateProgress.length} notifications arrived too late`,
      );
    });

    await check("no client-side errors", async () => {
      expect(otherErrors.length === 0, `the SDK reported ${JSON.stringify(otherErrors.slice(0, 3))}`);
    });
  } finally {
    await client.close().catch(() => {});
    if (server) server.child.kill();
  }
  return { passed, failed };
}

main().then(
  ({ passed, failed }) => {
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed === 0 && passed > 0 ? 0 : 1);
  },
  (e) => {
    console.log(`FAIL client: ${e?.stack ?? e}`);
    process.exit(1);
  },
);
