"""`agentmem mcp` as MCP clients use it: the official Python client over stdio and streamable
HTTP, on every backend; the nine tools of the reference memory server, agentmem's own tools,
the graph resource, bad input, the HTTP server's checks, and sharing the store with the CLI."""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from mcp_support import Session, agentmem_http, agentmem_stdio, connect

REFERENCE_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}
OWN_TOOLS = {
    "append_messages",
    "load_session",
    "list_sessions",
    "store_memory",
    "search_memory",
    "get_context",
}


@asynccontextmanager
async def served(url: str, transport: str, *extra: str) -> AsyncIterator[Session]:
    if transport == "stdio":
        async with connect(agentmem_stdio(url, *extra)) as session:
            yield session
    else:
        with agentmem_http(url, *extra) as endpoint:
            async with connect(endpoint) as session:
                yield session


@pytest.fixture(params=["stdio", "http"])
def transport(request) -> str:
    return request.param


async def test_the_reference_tools_keep_a_graph(namespace, transport):
    async with served(namespace.url, transport) as mcp:
        tools = await mcp.tools()
        assert REFERENCE_TOOLS | OWN_TOOLS <= set(tools)
        created = await mcp.ok(
            "create_entities",
            {
                "entities": [
                    {"name": "Ada", "entityType": "person", "observations": ["writes code"]},
                    {"name": "Acme", "entityType": "company", "observations": []},
                ]
            },
        )
        assert [e["name"] for e in created["entities"]] == ["Ada", "Acme"]
        again = await mcp.ok(
            "create_entities",
            {"entities": [{"name": "Ada", "entityType": "robot", "observations": []}]},
        )
        assert again == {"entities": []}, "an existing name is skipped"
        relation = {"from": "Ada", "to": "Acme", "relationType": "works_at"}
        assert await mcp.ok("create_relations", {"relations": [relation, relation]}) == {
            "relations": [relation]
        }
        added = await mcp.ok(
            "add_observations",
            {"observations": [{"entityName": "Ada", "contents": ["writes code", "likes tea"]}]},
        )
        assert added == {"results": [{"entityName": "Ada", "addedObservations": ["likes tea"]}]}
        found = await mcp.ok("search_nodes", {"query": "TEA"})
        assert [e["name"] for e in found["entities"]] == ["Ada"]
        assert found["relations"] == [relation]
        opened = await mcp.ok("open_nodes", {"names": ["Acme"]})
        assert [e["name"] for e in opened["entities"]] == ["Acme"]
        assert opened["relations"] == [relation]
        deleted = await mcp.call("delete_entities", {"entityNames": ["Acme"]})
        assert not deleted.is_error
        assert deleted.structured == {"success": True, "message": "Entities deleted successfully"}
        graph = await mcp.graph()
        assert graph == {
            "entities": [
                {
                    "name": "Ada",
                    "entityType": "person",
                    "observations": ["writes code", "likes tea"],
                }
            ],
            "relations": [],
        }, "the relation went with its entity"
        resource = await mcp.client.read_resource("memory://knowledge-graph")
        assert json.loads(resource.contents[0].text) == graph


async def test_agentmem_tools_share_sessions_and_memories_with_the_cli(namespace, transport, cli):
    async with served(namespace.url, transport) as mcp:
        appended = await mcp.ok(
            "append_messages",
            {
                "session_id": "chat",
                "messages": [
                    {"role": "user", "content": "Where does Ada live?"},
                    {"role": "assistant", "content": "In Oslo."},
                ],
            },
        )
        assert appended
        cli("--store", namespace.url, "append", "chat", "--role", "user", "from the CLI")
        loaded = await mcp.ok("load_session", {"session_id": "chat"})
        assert [m["content"] for m in loaded["messages"]] == [
            "Where does Ada live?",
            "In Oslo.",
            "from the CLI",
        ]
        last = await mcp.ok("load_session", {"session_id": "chat", "limit": 1})
        assert [m["content"] for m in last["messages"]] == ["from the CLI"]
        listed = await mcp.ok("list_sessions")
        assert "chat" in json.dumps(listed)
        await mcp.ok("store_memory", {"text": "Ada prefers green tea", "long_term": True})
        hits = await mcp.ok("search_memory", {"query": "tea"})
        assert "Ada prefers green tea" in json.dumps(hits)
        context = await mcp.ok("get_context", {"query": "tea"})
        assert "Ada prefers green tea" in json.dumps(context)
    shown = json.loads(cli("--store", namespace.url, "--json", "show", "chat").stdout)
    assert [m["content"] for m in shown["messages"]][:2] == ["Where does Ada live?", "In Oslo."]
    assert "Ada prefers green tea" in cli("--store", namespace.url, "--json", "memories").stdout


async def test_bad_input_gets_error_results_and_the_server_keeps_serving(tmp_path, transport):
    url = f"sqlite://{tmp_path / 'bad.db'}"
    async with served(url, transport) as mcp:
        bad_calls = [
            ("create_entities", {}),
            ("create_entities", {"entities": "not a list"}),
            (
                "create_entities",
                {"entities": [{"name": 42, "entityType": "x", "observations": []}]},
            ),
            ("add_observations", {"observations": [{"entityName": "Ghost", "contents": ["boo"]}]}),
            (
                "create_entities",
                {"entities": [{"name": "a\u0000b", "entityType": "x", "observations": []}]},
            ),
            (
                "create_entities",
                {"entities": [{"name": "n" * 5000, "entityType": "x", "observations": []}]},
            ),
            ("open_nodes", {"names": [1, 2]}),
            ("append_messages", {"session_id": "../escape", "messages": []}),
            ("load_session", {"session_id": "chat", "limit": "ten"}),
        ]
        for tool, arguments in bad_calls:
            try:
                result = await mcp.call(tool, arguments)
            except Exception as error:  # a JSON-RPC error is an acceptable refusal too
                assert "Invalid" in str(error) or "invalid" in str(error), (tool, error)
                continue
            assert result.is_error, f"{tool}({arguments!r}) was accepted: {result.text}"
        missing = await mcp.call(
            "add_observations", {"observations": [{"entityName": "Ghost", "contents": ["boo"]}]}
        )
        assert missing.text == "Entity with name Ghost not found"
        try:
            unknown = await mcp.call("no_such_tool", {})
            assert unknown.is_error
        except Exception as error:
            assert "no_such_tool" in str(error)
        huge = {"entities": [{"name": "big", "entityType": "x", "observations": ["o" * 70_000]}]}
        assert (await mcp.call("create_entities", huge)).is_error
        extra = {
            "entities": [{"name": "ok", "entityType": "x", "observations": [], "color": "red"}]
        }
        assert (await mcp.ok("create_entities", {**extra, "unknown": 1}))["entities"][0][
            "name"
        ] == "ok"
        assert (await mcp.graph())["entities"] == [
            {"name": "ok", "entityType": "x", "observations": []}
        ], "only the good call wrote anything"


def _post(endpoint: str, headers: dict[str, str], body: bytes | None = None) -> tuple[int, str]:
    payload = (
        body
        or json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    )
    request = urllib.request.Request(
        endpoint,
        data=payload,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-06-18",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _oversized_status(endpoint: str, token: str) -> int:
    """Announces a 16 MiB body and reads the answer before sending it: a server that checks
    the length first refuses it without reading it."""
    parts = urllib.parse.urlsplit(endpoint)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.putrequest("POST", parts.path)
        for name, value in (
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Authorization", f"Bearer {token}"),
            ("Content-Length", str(16 << 20)),
        ):
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


async def test_http_refuses_foreign_origins_hosts_and_missing_tokens(tmp_path):
    url = f"sqlite://{tmp_path / 'http.db'}"
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    with agentmem_http(url, "--token-file", str(token_file)) as endpoint:
        status, body = _post(
            endpoint, {"Authorization": "Bearer s3cret-token", "Origin": "http://evil.example"}
        )
        assert status == 403, body
        status, body = _post(
            endpoint, {"Authorization": "Bearer s3cret-token", "Host": "evil.example"}
        )
        assert status in (403, 421), body
        status, body = _post(endpoint, {})
        assert status == 401, body
        status, body = _post(endpoint, {"Authorization": "Bearer wrong"})
        assert status == 401, body
        assert _oversized_status(endpoint, "s3cret-token") == 413
        status, body = _post(
            endpoint, {"Authorization": "Bearer s3cret-token", "Origin": "http://localhost:3000"}
        )
        assert status != 403 and status != 401, (status, body)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_dead_backend_is_an_error_naming_the_store_and_recovers(tmp_path):
    port = _free_port()
    url = f"redis://:hunter2-secret@127.0.0.1:{port}/?prefix=mcp_dead"
    async with served(url, "stdio") as mcp:
        down = await mcp.call("read_graph")
        assert down.is_error
        assert f"127.0.0.1:{port}" in down.text, down.text
        assert "hunter2-secret" not in down.text, "the password is redacted"
        server = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--requirepass",
                "hunter2-secret",
                "--dir",
                str(tmp_path),
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                result = await mcp.call("read_graph")
                if not result.is_error:
                    break
                await asyncio.sleep(0.1)
            assert not result.is_error, result.text
            await mcp.ok(
                "create_entities",
                {"entities": [{"name": "back", "entityType": "x", "observations": []}]},
            )
        finally:
            server.terminate()
            server.wait()
