"""Many writers: three `agentmem mcp` processes on one store, each taking 100 concurrent calls,
lose no write, and concurrent creates of one name leave exactly one entity. (The reference
server keeps 2 of 100 concurrent writes in one process and 3-10 of 300 across three.)"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

from mcp_support import Session, agentmem_stdio, connect

SERVERS = 3
CALLS_EACH = 100


async def _servers(stack: AsyncExitStack, url: str) -> list[Session]:
    return [await stack.enter_async_context(connect(agentmem_stdio(url))) for _ in range(SERVERS)]


def _entity(name: str, observations: list[str] | None = None) -> dict:
    return {"entities": [{"name": name, "entityType": "node", "observations": observations or []}]}


async def test_three_servers_keep_every_concurrent_write(namespace):
    async with AsyncExitStack() as stack:
        servers = await _servers(stack, namespace.url)
        await servers[0].ok("create_entities", _entity("hub"))

        async def writes(server: Session, s: int) -> None:
            calls = []
            for i in range(CALLS_EACH):
                if i % 2:
                    calls.append(server.ok("create_entities", _entity(f"s{s}-{i}")))
                else:
                    addition = {"entityName": "hub", "contents": [f"s{s}-{i}"]}
                    calls.append(server.ok("add_observations", {"observations": [addition]}))
            # Reads race the writes and must never fail.
            calls += [server.ok("search_nodes", {"query": f"s{s}"}) for _ in range(5)]
            await asyncio.gather(*calls)

        await asyncio.gather(*(writes(server, s) for s, server in enumerate(servers)))
        for server in servers:
            graph = await server.graph()
            names = {e["name"] for e in graph["entities"]}
            assert len(names) == 1 + SERVERS * CALLS_EACH // 2, "every created entity"
            hub = next(e for e in graph["entities"] if e["name"] == "hub")
            assert len(hub["observations"]) == SERVERS * CALLS_EACH // 2, "every observation"
            assert len(set(hub["observations"])) == len(hub["observations"])


async def test_concurrent_creates_of_one_name_across_servers_leave_one_entity(namespace):
    async with AsyncExitStack() as stack:
        servers = await _servers(stack, namespace.url)
        calls = [
            server.ok("create_entities", _entity("contested", [f"from {s}-{i}"]))
            for s, server in enumerate(servers)
            for i in range(20)
        ]
        results = await asyncio.gather(*calls)
        winners = [e for r in results for e in r["entities"]]
        assert len(winners) == 1, winners
        graph = await servers[2].graph()
        assert graph["entities"] == winners
