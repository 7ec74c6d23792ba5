#!/usr/bin/env python3
"""Interop client: checks the `everything` fixture of an MCP server with the Python SDK.

Drives a server with `mcp==2.3.0` (the Python SDK's `mcp.Client`) over stdio, Streamable HTTP or
the 2024-11-05 HTTP+SSE transport (`mcp.client.sse.sse_client`) in one negotiation mode and checks, at value level, every fixture item of
`reference/conformance.md` §5.2-§5.4: tools, resources, the resource template, prompts and
completions, plus the negotiated protocol version, progress and log notifications,
sampling/elicitation answered by client callbacks, and the list-changed notifications of the
fixture's trigger tools (on a `subscriptions/listen` stream in the modern modes, as session
notifications in legacy mode).

    client.py (--stdio "CMD ARGS" | --url URL | --sse URL) --mode legacy|auto|2026-07-28
              [--bearer TOKEN | --api-key KEY | --mint-hs256 SECRET --audience AUD [--issuer ISS]]

`--sse URL` names the SSE path of an HTTP+SSE server (e.g. `everything --sse-pair`: `/sse`); the
transport serves the handshake era only, so run it with `--mode legacy`.

Over Streamable HTTP the client can authenticate: `--bearer TOKEN` sends `Authorization: Bearer TOKEN`,
`--api-key KEY` sends `X-API-Key: KEY`, and `--mint-hs256 SECRET --audience AUD` mints a
short-lived HS256 JWT itself (stdlib `hmac`) and sends it as a bearer token. The headers go on
every request of the Streamable HTTP transport (an httpx2 client with default headers), and an
extra check makes sure that the same endpoint refuses a request without them (401 with a
`WWW-Authenticate` challenge). Credentials are never printed.

Each check prints `ok <name>`, `FAIL <name>: <why>` or `skip <name> (<reason>)`; the last line
is `N passed, N failed` and the exit code is 1 if any check failed. Every request is bounded by a
timeout (`--timeout`, default 30 s) so a hang fails instead of blocking CI.

Run by `cargo xtask interop` with the venv at `target/interop/venv`.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import hashlib
import hmac
import json
import os
import shlex
import sys
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters, types
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import PromptsListChanged, Subscription, SubscriptionLost, ToolsListChanged
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

# ping, logging/setLevel and resources/(un)subscribe are deprecated or removed in 2026-07-28; the
# SDK warns on every use. They are still exercised in legacy mode on purpose.
warnings.simplefilter("ignore", MCPDeprecationWarning)

MODES = ("legacy", "auto", "2026-07-28")
EXPECTED_PROTOCOL = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}

# Checks of methods that 2026-07-28 removed: they run in legacy mode only.
LEGACY_ONLY = {
    "ping",
    "resources/subscribe+unsubscribe",
    "notifications/tools+prompts list_changed",
}
# Checks of methods that 2026-07-28 added: they run in the modern modes only.
MODERN_ONLY = {
    "subscriptions/listen tools+prompts list_changed",
}

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

FIXTURE_TOOLS = (
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
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
)
FIXTURE_PROMPTS = (
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
)

SAMPLING_PROMPT = "Test prompt for sampling"
SAMPLING_REPLY = "This is a test response from the client"
ELICITATION_MESSAGE = "Please provide your information"
ELICITATION_ANSWER = {
    "username": "testuser",
    "email": "test@example.com",
    "name": "Interop",
    "color": "teal",
    "context": "interop context",
}
LOG_MESSAGES = ("Tool execution started", "Tool processing data", "Tool execution completed")

# The list-change fixture: each call of a trigger tool adds or removes its dynamic item.
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
# How long a list-changed notification may take to arrive after the trigger call returned, and how
# long the client waits to be sure that none arrives.
NOTIFICATION_WAIT = 5.0
QUIET_WAIT = 0.5


class CheckFailed(Exception):
    """A fixture value differs from the documented one."""


def expect(cond: bool, why: str) -> None:
    if not cond:
        raise CheckFailed(why)


def expect_eq(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise CheckFailed(f"{what}: expected {expected!r}, got {actual!r}")


def decode_base64(data: str, what: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as e:
        raise CheckFailed(f"{what}: not valid base64 ({e})") from None


def expect_png(data: str, what: str) -> None:
    raw = decode_base64(data, what)
    expect(raw.startswith(PNG_SIGNATURE), f"{what}: decoded data is not a PNG (starts {raw[:8]!r})")


def expect_wav(data: str, what: str) -> None:
    raw = decode_base64(data, what)
    expect(raw[:4] == b"RIFF" and raw[8:12] == b"WAVE", f"{what}: decoded data is not a WAV (starts {raw[:12]!r})")


def expect_json_text(text: str, expected: Any, what: str) -> None:
    """JSON texts are compared as values: whitespace and key order do not matter."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise CheckFailed(f"{what}: not JSON ({e}): {text!r}") from None
    expect_eq(value, expected, what)


def expect_not_error(res: Any) -> None:
    if res.is_error:
        texts = [getattr(c, "text", c.type) for c in res.content]
        raise CheckFailed(f"isError is set: {texts!r}")


def content_types(content: list[Any]) -> list[str]:
    return [c.type for c in content]


def expect_text_content(content: list[Any], expected: str, what: str) -> None:
    expect_eq(content_types(content), ["text"], f"{what} content types")
    expect_eq(content[0].text, expected, f"{what} text")


def expect_single_text(content: list[Any], what: str) -> str:
    expect_eq(content_types(content), ["text"], f"{what} content types")
    return content[0].text


def expect_embedded_text(block: Any, uri: str, mime: str, what: str) -> str:
    expect_eq(block.type, "resource", f"{what} type")
    res = block.resource
    expect_eq(str(res.uri), uri, f"{what} uri")
    expect_eq(res.mime_type, mime, f"{what} mimeType")
    expect(isinstance(res, types.TextResourceContents), f"{what}: expected text contents, got {type(res).__name__}")
    return res.text


def message_texts(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m.role, m.content.type) for m in messages]


def log_text(data: Any) -> str:
    """The text of a `notifications/message` payload: a string, or an object with a message field."""
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        for key in ("message", "msg", "text"):
            if isinstance(data.get(key), str):
                return data[key]
    return json.dumps(data)


def fill_from_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An `accept` answer for an elicitation form: defaults first, then the first allowed value."""
    answer: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if name in ELICITATION_ANSWER:
            answer[name] = ELICITATION_ANSWER[name]
        elif "default" in prop:
            answer[name] = prop["default"]
        elif prop.get("enum"):
            answer[name] = prop["enum"][0]
        elif prop.get("oneOf"):
            answer[name] = prop["oneOf"][0]["const"]
        elif prop.get("type") == "array":
            items = prop.get("items") or {}
            if items.get("enum"):
                answer[name] = [items["enum"][0]]
            elif items.get("anyOf"):
                answer[name] = [items["anyOf"][0]["const"]]
            else:
                answer[name] = ["interop"]
        elif prop.get("type") == "integer":
            answer[name] = 7
        elif prop.get("type") == "number":
            answer[name] = 1.5
        elif prop.get("type") == "boolean":
            answer[name] = True
        else:
            answer[name] = f"interop-{name}"
    return answer


class Recorder:
    """What the client callbacks saw: log messages and server-to-client requests."""

    def __init__(self) -> None:
        self.logs: list[types.LoggingMessageNotificationParams] = []
        self.sampling: list[types.CreateMessageRequestParams] = []
        self.elicitations: list[Any] = []
        self.elicitation_answers: list[dict[str, Any]] = []
        # Every server notification the session surfaced (its message handler), in arrival order.
        self.notifications: list[Any] = []
        self._notified = anyio.Event()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_sampling(self, _ctx: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.sampling.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLING_REPLY),
            model="interop-client",
            stop_reason="endTurn",
        )

    async def on_elicitation(self, _ctx: Any, params: Any) -> types.ElicitResult:
        self.elicitations.append(params)
        schema = getattr(params, "requested_schema", None) or {}
        answer = fill_from_schema(schema)
        self.elicitation_answers.append(answer)
        return types.ElicitResult(action="accept", content=answer)

    async def on_list_roots(self, _ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///tmp/interop", name="interop")])

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            return  # a transport fault: the call it breaks fails its check
        self.notifications.append(message)
        wake, self._notified = self._notified, anyio.Event()
        wake.set()

    def since(self, start: int, *methods: str) -> list[Any]:
        """The notifications of `methods` recorded from index `start` on."""
        return [n for n in self.notifications[start:] if n.method in methods]

    async def wait_notifications(self, start: int, count: int, *methods: str) -> list[Any]:
        """The first `count` notifications of `methods` recorded from index `start` on, waiting for them."""
        with anyio.move_on_after(NOTIFICATION_WAIT):
            while True:
                # Take the wake event before looking so a notification landing in between is not missed.
                wake = self._notified
                if len(found := self.since(start, *methods)) >= count:
                    return found[:count]
                await wake.wait()
        seen = [n.method for n in self.notifications[start:]]
        raise CheckFailed(f"not {count} of {methods} within {NOTIFICATION_WAIT:g} s (notifications seen: {seen!r})")


class Runner:
    def __init__(self, mode: str, timeout: float) -> None:
        self.mode = mode
        self.timeout = timeout
        self.passed = 0
        self.failed = 0

    def ok(self, name: str) -> None:
        self.passed += 1
        print(f"ok {name}", flush=True)

    def fail(self, name: str, why: str) -> None:
        self.failed += 1
        print(f"FAIL {name}: {why}", flush=True)

    async def check(self, name: str, body: Callable[[], Awaitable[None]]) -> None:
        if self.mode != "legacy" and name in LEGACY_ONLY:
            print(f"skip {name} (legacy only: removed in 2026-07-28)", flush=True)
            return
        if self.mode == "legacy" and name in MODERN_ONLY:
            print(f"skip {name} (2026-07-28 only: not in the handshake era)", flush=True)
            return
        try:
            with anyio.fail_after(self.timeout):
                await body()
        except CheckFailed as e:
            self.fail(name, str(e))
        except TimeoutError:
            self.fail(name, f"timed out after {self.timeout:g} s")
        except MCPError as e:
            self.fail(name, f"JSON-RPC error {e.code}: {e}")
        except Exception as e:  # any client-side error is a failed check, never a crash
            self.fail(name, f"{type(e).__name__}: {e}")
        else:
            self.ok(name)


async def list_all(fetch: Callable[..., Awaitable[Any]], field: str) -> list[Any]:
    """Every page of a paginated list."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            return items
    raise CheckFailed(f"{field}: more than 100 pages")


def tool_checks(run: Runner, client: Client, rec: Recorder) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    async def tools_list() -> None:
        tools = {t.name: t for t in await list_all(client.list_tools, "tools")}
        missing = [n for n in FIXTURE_TOOLS if n not in tools]
        expect(not missing, f"missing tools {missing}")
        for name in FIXTURE_TOOLS:
            tool = tools[name]
            expect(bool(tool.description), f"{name}: no description")
            expect_eq(tool.input_schema.get("type"), "object", f"{name} inputSchema.type")
        for name, arg in (("test_sampling", "prompt"), ("test_elicitation", "message")):
            schema = tools[name].input_schema
            expect(arg in (schema.get("required") or []), f"{name}: {arg!r} is not required")
            expect_eq((schema.get("properties") or {}).get(arg, {}).get("type"), "string", f"{name}.{arg} type")

    async def json_schema_tool() -> None:
        tools = {t.name: t for t in await list_all(client.list_tools, "tools")}
        expect("json_schema_2020_12_tool" in tools, "json_schema_2020_12_tool not listed")
        schema = tools["json_schema_2020_12_tool"].input_schema
        expect_eq(schema.get("$schema"), "https://json-schema.org/draft/2020-12/schema", "$schema")
        address = (schema.get("$defs") or {}).get("address")
        expect(isinstance(address, dict), f"$defs.address missing: {schema.get('$defs')!r}")
        expect_eq(address.get("type"), "object", "$defs.address.type")
        expect_eq(
            address.get("properties"),
            {"street": {"type": "string"}, "city": {"type": "string"}},
            "$defs.address.properties",
        )
        expect_eq(schema.get("additionalProperties"), False, "additionalProperties")
        props = schema.get("properties") or {}
        expect_eq(props.get("name"), {"type": "string"}, "properties.name")
        expect_eq(props.get("address"), {"$ref": "#/$defs/address"}, "properties.address")

    async def simple_text() -> None:
        res = await client.call_tool("test_simple_text")  # no `arguments` key on the wire
        expect_not_error(res)
        expect_text_content(res.content, "This is a simple text response for testing.", "result")

    async def image() -> None:
        res = await client.call_tool("test_image_content", {})
        expect_not_error(res)
        expect_eq(content_types(res.content), ["image"], "content types")
        expect_eq(res.content[0].mime_type, "image/png", "mimeType")
        expect_png(res.content[0].data, "image data")

    async def audio() -> None:
        res = await client.call_tool("test_audio_content", {})
        expect_not_error(res)
        expect_eq(content_types(res.content), ["audio"], "content types")
        expect_eq(res.content[0].mime_type, "audio/wav", "mimeType")
        expect_wav(res.content[0].data, "audio data")

    async def embedded() -> None:
        res = await client.call_tool("test_embedded_resource", {})
        expect_not_error(res)
        expect_eq(content_types(res.content), ["resource"], "content types")
        text = expect_embedded_text(res.content[0], "test://embedded-resource", "text/plain", "resource")
        expect_eq(text, "This is an embedded resource content.", "resource text")

    async def mixed() -> None:
        res = await client.call_tool("test_multiple_content_types", {})
        expect_not_error(res)
        expect_eq(content_types(res.content), ["text", "image", "resource"], "content types")
        expect_eq(res.content[0].text, "Multiple content types test:", "text")
        expect_eq(res.content[1].mime_type, "image/png", "image mimeType")
        expect_png(res.content[1].data, "image data")
        text = expect_embedded_text(res.content[2], "test://mixed-content-resource", "application/json", "resource")
        expect_json_text(text, {"test": "data", "value": 123}, "resource text")

    async def logging_tool() -> None:
        if run.mode == "legacy":
            # Handshake era: delivery is governed by logging/setLevel (the conformance scenario's way).
            await client.set_logging_level("debug")
        # Modern era: the Client's `log_level="debug"` stamps `_meta` logLevel on every request.
        rec.logs.clear()
        res = await client.call_tool("test_tool_with_logging", {})
        await anyio.sleep(0.2)  # as the conformance scenario does: late notifications still count
        expect_not_error(res)
        expect_single_text(res.content, "result")
        texts = [log_text(p.data) for p in rec.logs]
        expect(len(texts) >= 3, f"expected >= 3 log messages, got {len(texts)}: {texts!r}")
        ours = [t for t in texts if t in LOG_MESSAGES]
        expect_eq(ours, list(LOG_MESSAGES), "log messages in order")
        levels = {log_text(p.data): p.level for p in rec.logs}
        for text in LOG_MESSAGES:
            expect_eq(levels[text], "info", f"level of {text!r}")

    async def progress_tool() -> None:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        res = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        await anyio.sleep(0.2)
        expect_not_error(res)
        expect_single_text(res.content, "result")
        expect(len(seen) >= 3, f"expected >= 3 progress notifications, got {len(seen)}: {seen!r}")
        values = [p for p, _, _ in seen]
        expect(values == sorted(values), f"progress decreases: {values!r}")
        expect_eq([t for _, t, _ in seen], [100] * len(seen), "totals")
        expect_eq(values[0], 0, "first progress")
        expect_eq(values[-1], 100, "last progress")

    async def error_tool() -> None:
        res = await client.call_tool("test_error_handling", {})
        expect_eq(res.is_error, True, "isError")
        expect(bool(res.content), "no content")
        expect_eq(res.content[0].type, "text", "content[0].type")
        expect_eq(res.content[0].text, "This tool intentionally returns an error for testing", "content[0].text")

    async def sampling_tool() -> None:
        rec.sampling.clear()
        res = await client.call_tool("test_sampling", {"prompt": SAMPLING_PROMPT})
        expect_not_error(res)
        expect_text_content(res.content, f"LLM response: {SAMPLING_REPLY}", "result")
        expect_eq(len(rec.sampling), 1, "sampling/createMessage requests")
        req = rec.sampling[0]
        expect_eq(req.max_tokens, 100, "maxTokens")
        expect_eq(message_texts(req.messages), [("user", "text")], "messages")
        expect_eq(req.messages[0].content.text, SAMPLING_PROMPT, "message text")

    async def elicit(tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """Call an eliciting tool; the schema it sent and the result text."""
        rec.elicitations.clear()
        rec.elicitation_answers.clear()
        res = await client.call_tool(tool, args)
        expect_not_error(res)
        text = expect_single_text(res.content, "result")
        expect_eq(len(rec.elicitations), 1, "elicitation/create requests")
        expect("accept" in text, f"result does not report the accept action: {text!r}")
        # The answer must reach the tool: every string we sent shows in its result.
        for key, value in rec.elicitation_answers[0].items():
            if isinstance(value, str):
                expect(value in text, f"result lacks the answered {key}={value!r}: {text!r}")
        schema = rec.elicitations[0].requested_schema
        expect_eq(schema.get("type"), "object", "requestedSchema.type")
        return schema, text

    async def elicitation_tool() -> None:
        schema, text = await elicit("test_elicitation", {"message": ELICITATION_MESSAGE})
        expect_eq(rec.elicitations[0].message, ELICITATION_MESSAGE, "elicitation message")
        expect(text.startswith("User response:"), f"result text: {text!r}")
        expect(bool(schema.get("properties")), "requestedSchema has no properties")

    async def sep1034() -> None:
        schema, _ = await elicit("test_elicitation_sep1034_defaults", {})
        props = schema.get("properties") or {}
        for name, typ, default in (
            ("name", "string", "John Doe"),
            ("age", "integer", 30),
            ("score", "number", 95.5),
            ("status", "string", "active"),
            ("verified", "boolean", True),
        ):
            prop = props.get(name)
            expect(isinstance(prop, dict), f"property {name!r} missing")
            expect_eq(prop.get("type"), typ, f"{name}.type")
            expect_eq(prop.get("default"), default, f"{name}.default")
        expect("active" in (props["status"].get("enum") or []), f"status.enum: {props['status'].get('enum')!r}")

    async def multi_round() -> None:
        # Two questions, one per round: MRTR retries in the modern era, two
        # server-to-client requests inside one call in the legacy era.
        rec.elicitations.clear()
        res = await client.call_tool("test_input_required_result_multi_round", {})
        expect_not_error(res)
        want = f"Hello {ELICITATION_ANSWER['name']}, your favorite color is {ELICITATION_ANSWER['color']}"
        expect_text_content(res.content, want, "result")
        messages = [e.message for e in rec.elicitations]
        expect_eq(messages, ["Step 1: What is your name?", "Step 2: What is your favorite color?"], "elicitations")

    async def multiple_inputs() -> None:
        rec.elicitations.clear()
        rec.sampling.clear()
        res = await client.call_tool("test_input_required_result_multiple_inputs", {})
        expect_not_error(res)
        text = expect_single_text(res.content, "result")
        for part in (ELICITATION_ANSWER["name"], SAMPLING_REPLY, "file:///tmp/interop"):
            expect(part in text, f"result lacks {part!r}: {text!r}")
        expect_eq((len(rec.elicitations), len(rec.sampling)), (1, 1), "(elicitations, samplings)")

    async def sep1330() -> None:
        schema, _ = await elicit("test_elicitation_sep1330_enums", {})
        props = schema.get("properties") or {}
        for name in ("untitledSingle", "titledSingle", "legacyEnum", "untitledMulti", "titledMulti"):
            expect(isinstance(props.get(name), dict), f"property {name!r} missing")

        def const_titles(options: Any, what: str) -> None:
            expect(isinstance(options, list) and options, f"{what}: not a non-empty list")
            for o in options:
                expect(isinstance(o.get("const"), str) and isinstance(o.get("title"), str), f"{what}: bad {o!r}")

        p = props["untitledSingle"]
        expect_eq(p.get("type"), "string", "untitledSingle.type")
        expect(bool(p.get("enum")), "untitledSingle.enum missing")
        expect("oneOf" not in p and "enumNames" not in p, "untitledSingle has oneOf/enumNames")
        p = props["titledSingle"]
        expect_eq(p.get("type"), "string", "titledSingle.type")
        const_titles(p.get("oneOf"), "titledSingle.oneOf")
        expect("enum" not in p, "titledSingle has enum")
        p = props["legacyEnum"]
        expect_eq(p.get("type"), "string", "legacyEnum.type")
        expect(bool(p.get("enum")), "legacyEnum.enum missing")
        expect_eq(len(p.get("enumNames") or []), len(p["enum"]), "legacyEnum.enumNames length")
        p = props["untitledMulti"]
        expect_eq(p.get("type"), "array", "untitledMulti.type")
        items = p.get("items") or {}
        expect_eq(items.get("type"), "string", "untitledMulti.items.type")
        expect(bool(items.get("enum")), "untitledMulti.items.enum missing")
        expect("anyOf" not in items, "untitledMulti.items has anyOf")
        p = props["titledMulti"]
        expect_eq(p.get("type"), "array", "titledMulti.type")
        items = p.get("items") or {}
        const_titles(items.get("anyOf"), "titledMulti.items.anyOf")
        expect("enum" not in items, "titledMulti.items has enum")

    return [
        ("tools/list", tools_list),
        ("tools/list json_schema_2020_12_tool", json_schema_tool),
        ("test_simple_text", simple_text),
        ("test_image_content", image),
        ("test_audio_content", audio),
        ("test_embedded_resource", embedded),
        ("test_multiple_content_types", mixed),
        ("test_tool_with_logging", logging_tool),
        ("test_tool_with_progress", progress_tool),
        ("test_error_handling", error_tool),
        ("test_sampling", sampling_tool),
        ("test_elicitation", elicitation_tool),
        ("test_elicitation_sep1034_defaults", sep1034),
        ("test_elicitation_sep1330_enums", sep1330),
        ("test_input_required_result_multi_round", multi_round),
        ("test_input_required_result_multiple_inputs", multiple_inputs),
    ]


def resource_checks(client: Client) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    async def resources_list() -> None:
        resources = {str(r.uri): r for r in await list_all(client.list_resources, "resources")}
        for uri in ("test://static-text", "test://static-binary", "test://watched-resource"):
            expect(uri in resources, f"{uri} not listed (listed: {sorted(resources)})")
            expect(bool(resources[uri].name), f"{uri}: no name")
        expect(bool(resources["test://static-text"].description), "test://static-text: no description")

    async def templates_list() -> None:
        templates = {t.uri_template: t for t in await list_all(client.list_resource_templates, "resource_templates")}
        uri = "test://template/{id}/data"
        expect(uri in templates, f"{uri} not listed (listed: {sorted(templates)})")
        expect(bool(templates[uri].name), f"{uri}: no name")

    async def read_one(uri: str) -> Any:
        res = await client.read_resource(uri)
        expect_eq(len(res.contents), 1, "number of contents")
        contents = res.contents[0]
        expect_eq(str(contents.uri), uri, "uri")
        return contents

    async def static_text() -> None:
        c = await read_one("test://static-text")
        expect_eq(c.mime_type, "text/plain", "mimeType")
        expect(isinstance(c, types.TextResourceContents), f"expected text contents, got {type(c).__name__}")
        expect_eq(c.text, "This is the content of the static text resource.", "text")

    async def static_binary() -> None:
        c = await read_one("test://static-binary")
        expect_eq(c.mime_type, "image/png", "mimeType")
        expect(isinstance(c, types.BlobResourceContents), f"expected blob contents, got {type(c).__name__}")
        expect_png(c.blob, "blob")

    async def template_read() -> None:
        c = await read_one("test://template/123/data")
        expect_eq(c.mime_type, "application/json", "mimeType")
        expect(isinstance(c, types.TextResourceContents), f"expected text contents, got {type(c).__name__}")
        expect_json_text(c.text, {"id": "123", "templateTest": True, "data": "Data for ID: 123"}, "text")

    async def watched() -> None:
        c = await read_one("test://watched-resource")
        expect(isinstance(c, types.TextResourceContents), f"expected text contents, got {type(c).__name__}")
        expect_eq(c.text, "Watched resource content", "text")

    async def subscribe() -> None:
        await client.subscribe_resource("test://watched-resource")
        await client.unsubscribe_resource("test://watched-resource")

    return [
        ("resources/list", resources_list),
        ("resources/templates/list", templates_list),
        ("resources/read test://static-text", static_text),
        ("resources/read test://static-binary", static_binary),
        ("resources/read test://template/123/data", template_read),
        ("resources/read test://watched-resource", watched),
        ("resources/subscribe+unsubscribe", subscribe),
    ]


def prompt_checks(client: Client) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    async def prompts_list() -> None:
        prompts = {p.name: p for p in await list_all(client.list_prompts, "prompts")}
        missing = [n for n in FIXTURE_PROMPTS if n not in prompts]
        expect(not missing, f"missing prompts {missing}")
        for name in FIXTURE_PROMPTS:
            expect(bool(prompts[name].description), f"{name}: no description")
        for name, expected in (
            ("test_simple_prompt", []),
            ("test_prompt_with_arguments", [("arg1", True), ("arg2", True)]),
            ("test_prompt_with_embedded_resource", [("resourceUri", True)]),
            ("test_prompt_with_image", []),
        ):
            args = [(a.name, bool(a.required)) for a in prompts[name].arguments or []]
            expect_eq(args, expected, f"{name} arguments (name, required)")

    async def simple() -> None:
        res = await client.get_prompt("test_simple_prompt")
        expect_eq(message_texts(res.messages), [("user", "text")], "messages (role, type)")
        expect_eq(res.messages[0].content.text, "This is a simple prompt for testing.", "text")

    async def with_args() -> None:
        res = await client.get_prompt("test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
        expect_eq(message_texts(res.messages), [("user", "text")], "messages (role, type)")
        expect_eq(res.messages[0].content.text, "Prompt with arguments: arg1='testValue1', arg2='testValue2'", "text")

    async def with_resource() -> None:
        res = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"})
        expect_eq(message_texts(res.messages), [("user", "resource"), ("user", "text")], "messages (role, type)")
        text = expect_embedded_text(res.messages[0].content, "test://example-resource", "text/plain", "resource")
        expect_eq(text, "Embedded resource content for testing.", "resource text")
        expect_eq(res.messages[1].content.text, "Please process the embedded resource above.", "text")

    async def with_image() -> None:
        res = await client.get_prompt("test_prompt_with_image")
        expect_eq(message_texts(res.messages), [("user", "image"), ("user", "text")], "messages (role, type)")
        expect_eq(res.messages[0].content.mime_type, "image/png", "image mimeType")
        expect_png(res.messages[0].content.data, "image data")
        expect_eq(res.messages[1].content.text, "Please analyze the image above.", "text")

    async def completion() -> None:
        ref = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        res = await client.complete(ref, {"name": "arg1", "value": "test"})
        values = res.completion.values
        expect(isinstance(values, list), f"completion.values is not a list: {values!r}")
        expect(all(isinstance(v, str) for v in values), f"completion.values are not strings: {values!r}")
        expect(len(values) <= 100, f"more than 100 completion values: {len(values)}")

    return [
        ("prompts/list", prompts_list),
        ("prompts/get test_simple_prompt", simple),
        ("prompts/get test_prompt_with_arguments", with_args),
        ("prompts/get test_prompt_with_embedded_resource", with_resource),
        ("prompts/get test_prompt_with_image", with_image),
        ("completion/complete test_prompt_with_arguments arg1", completion),
    ]


def list_change_checks(run: Runner, client: Client, rec: Recorder) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
    """The trigger tools: each call adds or removes a dynamic tool (prompt) and the server says so."""

    async def tool_names() -> set[str]:
        return {t.name for t in await list_all(client.list_tools, "tools")}

    async def prompt_names() -> set[str]:
        return {p.name for p in await list_all(client.list_prompts, "prompts")}

    # (trigger tool, the item it toggles, the list holding it, notification method, listen event)
    kinds: tuple[tuple[str, str, Callable[[], Awaitable[set[str]]], str, Any], ...] = (
        ("test_trigger_tool_change", "test_dynamic_tool", tool_names, TOOLS_LIST_CHANGED, ToolsListChanged()),
        ("test_trigger_prompt_change", "test_dynamic_prompt", prompt_names, PROMPTS_LIST_CHANGED, PromptsListChanged()),
    )

    def expect_list_changed_capability() -> None:
        if run.mode == "2026-07-28":
            return  # adopted without server/discover: the client holds no server capabilities
        caps = client.server_capabilities
        for what, cap in (("tools", caps.tools), ("prompts", caps.prompts)):
            expect(cap is not None and cap.list_changed is True, f"capabilities.{what}.listChanged is not true: {cap}")

    async def trigger(tool: str) -> None:
        res = await client.call_tool(tool, {})
        expect_not_error(res)
        expect_single_text(res.content, f"{tool} result")

    async def expect_toggled(item: str, names: Callable[[], Awaitable[set[str]]], had: bool, tool: str) -> None:
        listed = item in await names()
        expect(listed != had, f"{item} is {'still' if had else 'not'} listed after {tool}")

    async def next_event(sub: Subscription, method: str) -> Any:
        with anyio.move_on_after(NOTIFICATION_WAIT):
            try:
                return await anext(sub)
            except StopAsyncIteration:
                raise CheckFailed(f"the listen stream ended before {method}") from None
            except SubscriptionLost as e:
                raise CheckFailed(f"the listen stream dropped before {method}: {e}") from None
        raise CheckFailed(f"no {method} on the listen stream within {NOTIFICATION_WAIT:g} s")

    async def listen_changes() -> None:
        expect_list_changed_capability()
        start = len(rec.notifications)
        events = 0
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            honored = (sub.honored.tools_list_changed, sub.honored.prompts_list_changed)
            expect_eq(honored, (True, True), "acknowledged (toolsListChanged, promptsListChanged)")
            for tool, item, names, method, event in kinds:
                for _ in range(2):  # add then remove (or the reverse): the fixture ends as it began
                    had = item in await names()
                    await trigger(tool)
                    got = await next_event(sub, method)
                    expect_eq(got, event, f"listen event after {tool}")
                    events += 1
                    await expect_toggled(item, names, had, tool)
        # The session also tees the stream's notifications to the message handler (from a task of
        # its own, so they may land a little later): each names the stream.
        teed = await rec.wait_notifications(start, events, TOOLS_LIST_CHANGED, PROMPTS_LIST_CHANGED)
        for n in teed:
            meta = (n.params.meta if n.params else None) or {}
            expect_eq(meta.get(SUBSCRIPTION_ID_KEY), sub.subscription_id, f"{n.method} _meta subscriptionId")
        # Closed: the server sends nothing more for it, and no list change reaches a modern client
        # outside a listen stream.
        closed = len(rec.notifications)
        tool, item, names, _, _ = kinds[0]
        for _ in range(2):
            had = item in await names()
            await trigger(tool)
            await expect_toggled(item, names, had, tool)
        await anyio.sleep(QUIET_WAIT)
        late = rec.since(closed, TOOLS_LIST_CHANGED, PROMPTS_LIST_CHANGED)
        expect(not late, f"list changes after the listen stream closed: {late!r}")

    async def session_changes() -> None:
        # Handshake era: the session's unsolicited notifications (the GET stream over HTTP, stdout
        # over stdio) reach the client's message handler.
        expect_list_changed_capability()
        for tool, item, names, method, _ in kinds:
            for _ in range(2):  # add then remove (or the reverse): the fixture ends as it began
                had = item in await names()
                start = len(rec.notifications)
                await trigger(tool)
                await rec.wait_notifications(start, 1, method)
                await expect_toggled(item, names, had, tool)

    return [
        ("subscriptions/listen tools+prompts list_changed", listen_changes),
        ("notifications/tools+prompts list_changed", session_changes),
    ]


async def run_checks(target: Any, run: Runner) -> None:
    rec = Recorder()
    client = Client(
        target,
        mode=run.mode,
        read_timeout_seconds=run.timeout,
        sampling_callback=rec.on_sampling,
        elicitation_callback=rec.on_elicitation,
        list_roots_callback=rec.on_list_roots,
        logging_callback=rec.on_log,
        message_handler=rec.on_message,
        # Modern era: logs only arrive for requests whose `_meta` carries a log level; this stamps
        # `io.modelcontextprotocol/logLevel` on every request. No effect in legacy mode.
        log_level="debug",
        # Always ask the server: the checks are about its answers, not the client cache.
        cache=None,
    )
    async with client:
        await run.check("protocol version", lambda: protocol_version(client, run.mode))

        async def ping() -> None:
            await client.send_ping()

        checks = [("ping", ping)]
        checks += tool_checks(run, client, rec)
        checks += resource_checks(client)
        checks += prompt_checks(client)
        checks += list_change_checks(run, client, rec)
        for name, body in checks:
            await run.check(name, body)


async def protocol_version(client: Client, mode: str) -> None:
    expect_eq(client.protocol_version, EXPECTED_PROTOCOL[mode], "negotiated protocol version")


def mint_hs256(secret: str, audience: str, issuer: str | None, subject: str = "interop") -> str:
    """An HS256 JWT for `subject`, valid for ten minutes (RFC 7519, signed with stdlib hmac)."""

    def b64url(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    now = int(time.time())
    claims: dict[str, Any] = {"sub": subject, "aud": audience, "iat": now, "exp": now + 600}
    if issuer:
        claims["iss"] = issuer
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = hmac.new(secret.encode(), signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


def auth_headers(args: argparse.Namespace) -> dict[str, str]:
    """The credential headers the options ask for (empty without credentials)."""
    if args.mint_hs256:
        return {"Authorization": f"Bearer {mint_hs256(args.mint_hs256, args.audience, args.issuer)}"}
    if args.bearer:
        return {"Authorization": f"Bearer {args.bearer}"}
    if args.api_key:
        return {"X-API-Key": args.api_key}
    return {}


async def refused_without_credentials(url: str, bearer: bool) -> None:
    """The endpoint refuses an `initialize` that carries no credentials: 401 with a challenge."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "interop-no-credentials", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient(timeout=10.0) as http:
        resp = await http.post(url, json=body, headers=headers)
    expect_eq(resp.status_code, 401, "status without credentials")
    challenge = resp.headers.get("www-authenticate", "")
    expect(challenge != "", "a 401 carries a WWW-Authenticate challenge")
    if bearer:
        expect(challenge.startswith("Bearer "), f"a bearer challenge: {challenge!r}")
        expect("resource_metadata=" in challenge, f"the challenge names the metadata document: {challenge!r}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--stdio", metavar="CMD", help="server command line (split like a shell)")
    target.add_argument("--url", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    target.add_argument("--sse", metavar="URL", help="HTTP+SSE (2024-11-05) stream, e.g. http://127.0.0.1:PORT/sse")
    p.add_argument("--mode", choices=MODES, required=True, help="version negotiation of mcp.Client")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per check (default 30)")
    p.add_argument("--total-timeout", type=float, default=300.0, help="seconds for the whole run (default 300)")
    creds = p.add_mutually_exclusive_group()
    creds.add_argument("--bearer", metavar="TOKEN", help="HTTP: send Authorization: Bearer TOKEN")
    creds.add_argument("--api-key", metavar="KEY", help="HTTP: send X-API-Key: KEY")
    creds.add_argument("--mint-hs256", metavar="SECRET", help="HTTP: mint an HS256 JWT (needs --audience)")
    p.add_argument("--audience", help="the aud claim of a minted token")
    p.add_argument("--issuer", help="the iss claim of a minted token (none by default)")
    args = p.parse_args(argv)
    if args.mint_hs256 and not args.audience:
        p.error("--mint-hs256 needs --audience")
    if (args.stdio or args.sse) and (args.bearer or args.api_key or args.mint_hs256):
        p.error("credentials apply to --url only")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.stdio:
        cmd = shlex.split(args.stdio)
        if not cmd:
            print("--stdio: empty command", file=sys.stderr)
            return 2
        # Pass the whole environment (the SDK's default keeps only a few variables): RUST_LOG etc.
        target: Any = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        where = f"stdio {args.stdio}"
    elif args.sse:
        target = sse_client(args.sse)
        where = f"HTTP+SSE {args.sse}"
    else:
        target = args.url
        where = args.url
    headers = auth_headers(args)
    if headers:
        where += f" with {'a bearer token' if 'Authorization' in headers else 'an API key'}"
    print(f"interop: mcp.Client mode={args.mode} against {where}", flush=True)

    run = Runner(args.mode, args.timeout)

    # Last resort: a hang in the transport teardown must not block CI either.
    def watchdog() -> None:
        print(f"FAIL watchdog: no exit after {args.total_timeout + 30:g} s", flush=True)
        print(f"{run.passed} passed, {run.failed + 1} failed", flush=True)
        os._exit(1)

    timer = threading.Timer(args.total_timeout + 30, watchdog)
    timer.daemon = True
    timer.start()

    async def body() -> None:
        started = time.monotonic()
        try:
            with anyio.fail_after(args.total_timeout):
                if not headers:
                    await run_checks(target, run)
                    return
                bearer = "Authorization" in headers

                async def refused() -> None:
                    await refused_without_credentials(args.url, bearer)

                await run.check("auth: refused without credentials", refused)
                # The SDK's transport takes a ready httpx2 client: ours carries the credentials.
                async with create_mcp_http_client(headers=headers) as http:
                    await run_checks(streamable_http_client(args.url, http_client=http), run)
        except TimeoutError:
            run.fail("run", f"timed out after {time.monotonic() - started:.0f} s")
        except BaseException as e:  # connection or teardown failure: report it as a failed check
            if isinstance(e, KeyboardInterrupt):
                raise
            run.fail("connect/run", describe(e))

    anyio.run(body)
    timer.cancel()
    print(f"{run.passed} passed, {run.failed} failed", flush=True)
    return 1 if run.failed else 0


def describe(e: BaseException) -> str:
    """One line for an exception, unwrapping exception groups from task groups."""
    if isinstance(e, BaseExceptionGroup) and e.exceptions:
        return "; ".join(describe(x) for x in e.exceptions)
    if isinstance(e, MCPError):
        return f"JSON-RPC error {e.code}: {e}"
    return f"{type(e).__name__}: {e}"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
