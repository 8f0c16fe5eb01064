"""Driving MCP memory servers as clients do: `agentmem mcp` (over stdio or streamable HTTP) and
the reference server `@modelcontextprotocol/server-memory` (over stdio, with Node), through the
official Python `mcp` client.

The reference server is found through ``AGENTMEM_MCP_REFERENCE`` (the path of its
``dist/index.js``, installed from npm: CI does it); without it the tests that need it are
skipped, unless ``AGENTMEM_REQUIRE_SERVICES`` is set, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

REFERENCE_ENV = "AGENTMEM_MCP_REFERENCE"


def agentmem_binary() -> str:
    binary = os.environ.get("AGENTMEM_CLI") or shutil.which("agentmem")
    if binary is None:
        if os.environ.get("AGENTMEM_REQUIRE_SERVICES"):
            pytest.fail("the agentmem command is required: set AGENTMEM_CLI")
        pytest.skip("no agentmem command (set AGENTMEM_CLI)")
    return binary


def reference_script() -> str:
    script = os.environ.get(REFERENCE_ENV)
    node = shutil.which("node")
    if script and node and os.path.exists(script):
        return script
    why = f"the reference memory server is required: set {REFERENCE_ENV} (and install node)"
    if os.environ.get("AGENTMEM_REQUIRE_SERVICES"):
        pytest.fail(why)
    pytest.skip(why)


def agentmem_stdio(url: str, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=agentmem_binary(), args=["--store", url, "mcp", *extra])


def reference_stdio(memory_file: str) -> StdioServerParameters:
    return StdioServerParameters(
        command="node", args=[reference_script()], env={"MEMORY_FILE_PATH": memory_file}
    )


@contextmanager
def agentmem_http(url: str, *extra: str) -> Iterator[str]:
    """Starts `agentmem mcp --http 127.0.0.1:0` on the store `url`; yields its endpoint."""
    process = subprocess.Popen(
        [agentmem_binary(), "--store", url, "mcp", "--http", "127.0.0.1:0", *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            found = re.search(r"(http://\S+/mcp)", line)
            if found:
                yield found.group(1)
                break
        else:
            raise AssertionError(f"the server did not say where it listens: {''.join(seen)}")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class ToolResult:
    """What a tool call returned, as plain data."""

    structured: Any
    text: str
    is_error: bool


def plain(result: Any) -> ToolResult:
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return ToolResult(
        structured=result.structured_content,
        text="\n".join(texts),
        is_error=bool(result.is_error),
    )


class Session:
    """A connected client with calls that return plain data."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        return plain(await self.client.call_tool(tool, arguments or {}))

    async def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        result = await self.call(tool, arguments)
        assert not result.is_error, f"{tool} failed: {result.text}"
        if not tool.startswith("delete_"):
            # The text is the result as JSON (the structured content, or its one field), or
            # the one text field itself (`get_context`).
            try:
                shown = json.loads(result.text)
            except ValueError:
                shown = result.text
            values = list(result.structured.values())
            assert shown == result.structured or [shown] == values, (
                f"{tool}: text and structure differ"
            )
        return result.structured

    async def graph(self) -> dict[str, Any]:
        return await self.ok("read_graph")

    async def tools(self) -> dict[str, Any]:
        listed = await self.client.list_tools()
        return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in listed.tools}


@asynccontextmanager
async def connect(server: StdioServerParameters | str) -> AsyncIterator[Session]:
    # No response cache: every read must reach the server (other processes write).
    async with Client(server, cache=None) as client:
        yield Session(client)
