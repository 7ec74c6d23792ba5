#!/usr/bin/env python3
"""Chaos client: starts many tasks on a logical MCP server with the Python SDK and follows each
to its end, while `cargo xtask chaos` kills and restarts the workers running them.

    chaos.py --url URL --out FILE --resumable N --plain M
             [--steps S --step-ms MS --plain-seconds SECS] [--timeout SECS]

Half of each kind of task is started by a 2025-11-25 client (`mcp.Client(mode="legacy")`: a
task-augmented `tools/call`, then `tasks/get` and `tasks/result`), half by a 2026-07-28 client
that declares the `io.modelcontextprotocol/tasks` extension (`tools/call`, then `tasks/get`,
which inlines the result). The resumable tasks call the fixture's `test_resumable_count`
(`steps`, `step_ms`: a checkpoint per step), the others `slow_compute` (`seconds`).

mcp==2.3.0 has the task types but no task methods, and checks a `tools/call` result as a
`CallToolResult`: the tasks' requests go through its session's raw request (the same
transport, negotiation, session and headers as its typed calls).

Prints `started N` once every task is created, writes one JSON line per task to `--out` once
every task ended (`{"era", "kind", "id", "status", "message", "text", "updated"}`), then prints
`done N`. Exits 1 if a task did not end within `--timeout`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from typing import Any

import anyio
from mcp import Client
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}
# How many requests one client has in flight at once.
CONCURRENCY = 16


class Driver:
    """One SDK client (one era) and the raw requests of its session."""

    def __init__(self, client: Client, era: str) -> None:
        self.client = client
        self.era = era
        self.limit = anyio.Semaphore(CONCURRENCY)

    async def request(self, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        session = self.client.session
        data: dict[str, Any] = {"method": method, "params": params}
        opts: dict[str, Any] = {}
        if self.era == "modern":
            # The 2026-07-28 `_meta` and headers, as the SDK stamps its own requests.
            opts["headers"] = {"mcp-name": name} if name else {}
            session._stamp(data, opts)
        async with self.limit:
            return await session._dispatcher.send_raw_request(method, data["params"], opts)

    async def start(self, tool: str, arguments: dict[str, Any]) -> str:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if self.era == "legacy":
            params["task"] = {}
            created = await self.request("tools/call", params)
            return created["task"]["taskId"]
        created = await self.request("tools/call", params, tool)
        if created.get("resultType") != "task":
            raise RuntimeError(f"the call was not made a task: {created}")
        return created["taskId"]

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self.request("tasks/get", {"taskId": task_id}, task_id)

    async def text(self, task_id: str, ended: dict[str, Any]) -> str | None:
        if self.era == "legacy":
            if ended["status"] != "completed":
                return None
            result = await self.request("tasks/result", {"taskId": task_id})
        else:
            result = ended.get("result") or {}
        content = result.get("content") or [{}]
        return content[0].get("text")


async def follow(driver: Driver, kind: str, task_id: str, deadline: float, out: list[dict[str, Any]]) -> None:
    """Polls one task until it ends (or the deadline passes) and records how it ended."""
    while True:
        try:
            state = await driver.get(task_id)
        except Exception as e:  # a front restarting, a balancer retrying: poll again
            state = {"status": "unknown", "error": str(e)}
        if state.get("status") in TERMINAL:
            break
        if time.monotonic() > deadline:
            out.append({"era": driver.era, "kind": kind, "id": task_id, "status": "timeout"})
            return
        await anyio.sleep(0.5)
    text = await driver.text(task_id, state)
    out.append(
        {
            "era": driver.era,
            "kind": kind,
            "id": task_id,
            "status": state["status"],
            "message": state.get("statusMessage"),
            "text": text,
            "updated": state.get("lastUpdatedAt"),
        }
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--resumable", type=int, default=300)
    parser.add_argument("--plain", type=int, default=60)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--step-ms", type=int, default=200)
    parser.add_argument("--plain-seconds", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()

    legacy = Client(args.url, mode="legacy")
    modern = Client(args.url, mode="2026-07-28", extensions=[advertise(TASKS_EXTENSION)])
    async with legacy, modern:
        drivers = [Driver(legacy, "legacy"), Driver(modern, "modern")]
        work: list[tuple[Driver, str, str, dict[str, Any]]] = []
        counting = {"steps": args.steps, "step_ms": args.step_ms}
        for n in range(args.resumable):
            work.append((drivers[n % 2], "resumable", "test_resumable_count", counting))
        for n in range(args.plain):
            arguments = {"seconds": args.plain_seconds, "label": f"plain-{n}"}
            work.append((drivers[n % 2], "plain", "slow_compute", arguments))
        started: list[tuple[Driver, str, str]] = []

        async def start(driver: Driver, kind: str, tool: str, arguments: dict[str, Any]) -> None:
            started.append((driver, kind, await driver.start(tool, arguments)))

        async with anyio.create_task_group() as group:
            for item in work:
                group.start_soon(start, *item)
        print(f"started {len(started)}", flush=True)

        ended: list[dict[str, Any]] = []
        deadline = time.monotonic() + args.timeout
        async with anyio.create_task_group() as group:
            for driver, kind, task_id in started:
                group.start_soon(follow, driver, kind, task_id, deadline, ended)
        with open(args.out, "w", encoding="utf-8") as out:
            for record in ended:
                out.write(json.dumps(record) + "\n")
        print(f"done {len(ended)}", flush=True)
        return 1 if any(r["status"] == "timeout" for r in ended) else 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
