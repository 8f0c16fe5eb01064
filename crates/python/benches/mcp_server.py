"""`agentmem mcp` against the reference memory server (@modelcontextprotocol/server-memory), as
a client sees them: latency of one tool call over stdio, through the official Python client.

Not a test: it prints a markdown table (and JSON lines with ``--json``). Run it with a release
build of the command and the reference server from npm:

    cargo build --release -p agentmem-cli
    npm install --prefix /tmp/mcp-ref @modelcontextprotocol/server-memory@2026.8.31
    export AGENTMEM_CLI=target/release/agentmem
    ref=/tmp/mcp-ref/node_modules/@modelcontextprotocol/server-memory
    export AGENTMEM_MCP_REFERENCE=$ref/dist/index.js
    python crates/python/benches/mcp_server.py            # 1,000 and 10,000 entities
    python crates/python/benches/mcp_server.py --quick    # 100 entities: checks that all works

Each server starts on a graph of N entities (3 observations each) and N relations, written as
the reference server's JSONL file (agentmem imports it with ``import --format mcp-memory``).
Then, per call, median and 95th percentile of:
- ``add_observations``: one new observation to one entity (the reference rewrites its whole file);
- ``search_nodes``: a query matching about ten entities.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from mcp_support import agentmem_stdio, connect, reference_stdio  # noqa: E402


def graph_file(path: Path, entities: int) -> None:
    lines = [
        json.dumps(
            {
                "type": "entity",
                "name": f"entity-{i}",
                "entityType": f"kind-{i % 10}",
                "observations": [f"fact {j} about entity {i}" for j in range(3)]
                + ([f"needle {i}"] if i % (entities // 10) == 0 else []),
            },
            separators=(",", ":"),
        )
        for i in range(entities)
    ]
    lines += [
        json.dumps(
            {
                "type": "relation",
                "from": f"entity-{i}",
                "to": f"entity-{(i * 7 + 1) % entities}",
                "relationType": "links",
            },
            separators=(",", ":"),
        )
        for i in range(entities)
    ]
    path.write_text("\n".join(lines))


async def measure(server, entities: int, calls: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"add_observations": [], "search_nodes": []}
    async with connect(server) as mcp:
        await mcp.ok("read_graph")
        for i in range(calls):
            addition = {"entityName": f"entity-{(i * 37) % entities}", "contents": [f"new {i}"]}
            start = time.perf_counter()
            result = await mcp.call("add_observations", {"observations": [addition]})
            timings["add_observations"].append(time.perf_counter() - start)
            assert not result.is_error, result.text
            start = time.perf_counter()
            found = await mcp.call("search_nodes", {"query": "NEEDLE"})
            timings["search_nodes"].append(time.perf_counter() - start)
            assert len(found.structured["entities"]) >= 10, found.text[:200]
    return timings


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1e3, ordered[int(len(ordered) * 0.95) - 1] * 1e3


async def run(sizes: list[int], calls: int, as_json: bool) -> None:
    cli = os.environ.get("AGENTMEM_CLI", "agentmem")
    rows = []
    for entities in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "memory.jsonl"
            graph_file(source, entities)
            servers: dict[str, Any] = {"reference (JSONL file)": reference_stdio(str(source))}
            for backend, url in (
                ("agentmem file://", f"file://{tmp}/store"),
                ("agentmem sqlite://", f"sqlite://{tmp}/store.db"),
            ):
                subprocess.run(
                    [cli, "--store", url, "import", "--format", "mcp-memory", str(source)],
                    check=True,
                    capture_output=True,
                )
                servers[backend] = agentmem_stdio(url)
            for name, server in servers.items():
                timings = await measure(server, entities, calls)
                for tool, samples in timings.items():
                    median, p95 = summary(samples)
                    rows.append((entities, tool, name, median, p95))
                    if as_json:
                        print(
                            json.dumps(
                                {
                                    "entities": entities,
                                    "tool": tool,
                                    "server": name,
                                    "median_ms": median,
                                    "p95_ms": p95,
                                }
                            )
                        )
    if as_json:
        return
    print("| entities | tool | server | median ms | p95 ms | reference / this (median) |")
    print("|---:|---|---|---:|---:|---:|")
    for entities, tool, name, median, p95 in rows:
        reference = next(
            r[3] for r in rows if r[0] == entities and r[1] == tool and r[2].startswith("reference")
        )
        ratio = reference / median
        print(f"| {entities:,} | {tool} | {name} | {median:.2f} | {p95:.2f} | {ratio:.1f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 entities, 20 calls")
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args()
    sizes, calls = ([100], 20) if args.quick else ([1_000, 10_000], 200)
    asyncio.run(run(sizes, calls, args.json))


if __name__ == "__main__":
    main()
