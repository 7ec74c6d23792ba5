// MCP Apps in a real host: bundles host.js (the official ext-apps app bridge and TypeScript
// client) with esbuild, serves it on a loopback port of its own, and drives headless Chromium
// through puppeteer-core: the host connects to the apps example over Streamable HTTP, renders its
// view, and the view's button calls the app-only tool back through the bridge.
//
//   node run.mjs --url http://127.0.0.1:P/mcp --chromium /usr/bin/chromium --out DIR --mode legacy|auto
//
// Exits 0 when every check passed; saves DIR/apps-<mode>.png either way.
import { createServer } from "node:http";
import { mkdtempSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import puppeteer from "puppeteer-core";

const TIMEOUT_MS = 30_000;
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

function args() {
  const opts = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (!flag.startsWith("--") || value === undefined) throw new Error(`usage: ${flag} needs a value`);
    opts[flag.slice(2)] = value;
  }
  for (const need of ["url", "chromium", "out", "mode"]) {
    if (!opts[need]) throw new Error(`--${need} is required`);
  }
  return opts;
}

const failures = [];
function expect(ok, what) {
  console.log(`${ok ? "ok" : "FAILED"}: ${what}`);
  if (!ok) failures.push(what);
}

async function main() {
  const opts = args();
  const here = dirname(fileURLToPath(import.meta.url));
  mkdirSync(opts.out, { recursive: true });
  const bundle = await build({
    entryPoints: [join(here, "host.js")],
    bundle: true,
    format: "iife",
    platform: "browser",
    write: false,
    logLevel: "warning",
  });
  const script = bundle.outputFiles[0].contents;
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>MCP Apps host</title>
<style>body{font-family:sans-serif;margin:12px} iframe{width:420px;height:260px;border:1px solid #888}
pre{font-size:11px;white-space:pre-wrap}</style></head>
<body><h3>MCP Apps interop host</h3><div id="app"></div><pre id="log"></pre><script src="/host.js"></script></body></html>`;
  const http = createServer((req, res) => {
    const path = new URL(req.url, "http://x").pathname;
    if (path === "/favicon.ico") {
      res.writeHead(204).end();
    } else if (path === "/") {
      res.writeHead(200, { "content-type": "text/html" }).end(page);
    } else if (path === "/host.js") {
      res.writeHead(200, { "content-type": "text/javascript" }).end(script);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => http.listen(0, "127.0.0.1", resolve));
  const hostUrl = `http://127.0.0.1:${http.address().port}/?mcp=${encodeURIComponent(opts.url)}&mode=${opts.mode}`;

  const profile = mkdtempSync(join(opts.out, "profile-"));
  const browser = await puppeteer.launch({
    executablePath: opts.chromium,
    headless: false, // --headless is in the flags, as given
    args: [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`],
  });
  const screenshot = join(opts.out, `apps-${opts.mode}.png`);
  let tab;
  try {
    tab = await browser.newPage();
    // The SDK's debug chatter stays out; warnings and errors are shown.
    tab.on("console", (m) => ["error", "warn"].includes(m.type()) && console.log(`browser: ${m.text()}`));
    tab.on("pageerror", (e) => console.log(`browser error: ${e.message}`));
    await tab.goto(hostUrl);
    await tab.waitForFunction(() => window.hostState && (window.hostState.done || window.hostState.error), {
      timeout: TIMEOUT_MS,
    });
    const host = await tab.evaluate(() => window.hostState);
    for (const line of host.log) console.log(`host: ${line}`);
    if (host.error) throw new Error(`the host failed: ${host.error}`);

    // What the server offered, as the host saw it.
    expect(
      JSON.stringify(host.declared) === JSON.stringify({}),
      `the server declares io.modelcontextprotocol/ui with no settings (${JSON.stringify(host.declared)})`,
    );
    const increment = host.serverTools.find((t) => t.name === "counter_increment");
    expect(
      JSON.stringify(increment?.ui?.visibility) === '["app"]',
      "the server lists counter_increment with visibility [\"app\"]",
    );
    expect(
      host.modelTools.includes("counter_show") && !host.modelTools.includes("counter_increment"),
      `the model's list keeps the app-only tool out (${host.modelTools.join(", ")})`,
    );
    expect(host.resource.mimeType === "text/html;profile=mcp-app", "the view is text/html;profile=mcp-app");
    expect(host.resource.meta?.prefersBorder === true, "the view's _meta.ui reaches the host");
    expect(host.appInfo?.name === "counter-view", "the view completed ui/initialize through the bridge");

    // The view, in its sandboxed iframe.
    const handle = await tab.waitForSelector("#app iframe", { timeout: TIMEOUT_MS });
    const view = await handle.contentFrame();
    const start = host.toolResult.count;
    const count = () => view.$eval("#count", (e) => e.textContent);
    await view.waitForFunction((n) => document.getElementById("count").textContent === String(n), { timeout: TIMEOUT_MS }, start);
    expect(true, `the view renders the tool result (count ${start})`);
    const sandboxed = await view.evaluate(() => {
      try {
        return window.parent.document === undefined;
      } catch {
        return true;
      }
    });
    expect(sandboxed, "the view cannot reach the host page's DOM (opaque-origin sandbox)");
    for (const n of [start + 1, start + 2]) {
      await view.waitForFunction(() => !document.getElementById("increment").disabled, { timeout: TIMEOUT_MS });
      await view.click("#increment");
      await view.waitForFunction(
        (want) => document.getElementById("count").textContent === String(want),
        { timeout: TIMEOUT_MS },
        n,
      );
      const status = await view.$eval("#status", (e) => e.textContent);
      expect(
        status === "updated by the server",
        `the button called counter_increment through the bridge: count ${await count()} (${status})`,
      );
    }
  } finally {
    if (tab) await tab.screenshot({ path: screenshot, fullPage: true }).catch(() => {});
    console.log(`screenshot: ${screenshot}`);
    await browser.close();
    http.close();
    rmSync(profile, { recursive: true, force: true });
  }
  if (failures.length) throw new Error(`${failures.length} check(s) failed`);
  console.log(`apps interop (${opts.mode}): all checks passed`);
}

main().catch((e) => {
  console.error(`apps interop: ${e.stack ?? e}`);
  process.exit(1);
});
