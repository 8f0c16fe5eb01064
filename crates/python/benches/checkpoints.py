"""`AgentmemSaver` against LangGraph's own savers on their own backends, in one run.

Not a test: it prints a markdown table (and JSON lines with ``--json``). Run it with a
release build of the package and the savers it is measured against:

    pip install ./crates/python langgraph-checkpoint-sqlite langgraph-checkpoint-postgres \\
        "psycopg[binary,pool]"
    python crates/python/benches/checkpoints.py            # a 1,000-step thread
    python crates/python/benches/checkpoints.py --quick    # 100 steps: checks that all works

Each saver grows one thread step by step as a graph does (``aput`` of a checkpoint whose
``messages`` channel changed, then ``aput_writes`` of the step's task), then reads it back:
``aget_tuple`` of the latest checkpoint, ``alist(limit=10)``, and one whole ``alist``. Per
call, median of the runs. PostgreSQL is ``$DATABASE_URL`` (default
``postgresql://root@127.0.0.1:5432/test``), each saver in a schema of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Callable

from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6

from agentmem.langgraph import AgentmemSaver

DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://root@127.0.0.1:5432/test")


async def grow(saver: BaseCheckpointSaver, steps: int) -> tuple[dict[str, Any], float]:
    """Puts `steps` checkpoints (and one write each) on a new thread; µs per step."""
    config: dict[str, Any] = {
        "configurable": {"thread_id": f"bench-{uuid.uuid4()}", "checkpoint_ns": ""}
    }
    version = None
    messages: list[dict[str, str]] = []
    started = time.perf_counter()
    for step in range(steps):
        messages = [*messages[-9:], {"role": "user", "content": f"message {step} " * 8}]
        version = saver.get_next_version(version, None)
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=-1))
        checkpoint["channel_values"] = {"messages": messages, "step": step}
        checkpoint["channel_versions"] = {"messages": version, "step": version}
        metadata = {"source": "loop", "step": step}
        config = await saver.aput(
            config, checkpoint, metadata, {"messages": version, "step": version}
        )
        await saver.aput_writes(config, [("messages", messages[-1])], f"task-{step}")
    return config, (time.perf_counter() - started) / steps * 1e6


async def per_call(times: int, call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    for _ in range(times):
        await call()
    return (time.perf_counter() - started) / times * 1e6


async def measure(saver: BaseCheckpointSaver, steps: int) -> dict[str, float]:
    config, put = await grow(saver, steps)
    thread = {"configurable": {"thread_id": config["configurable"]["thread_id"]}}

    async def latest() -> None:
        assert await saver.aget_tuple(thread) is not None

    async def ten() -> None:
        assert len([t async for t in saver.alist(thread, limit=10)]) == 10

    async def whole() -> None:
        assert len([t async for t in saver.alist(thread)]) == steps

    return {
        "put_step": put,
        "get_tuple": await per_call(200, latest),
        "list_10": await per_call(100, ten),
        "list_all": await per_call(3, whole),
    }


@asynccontextmanager
async def agentmem_saver(url: str) -> AsyncIterator[BaseCheckpointSaver]:
    saver = AgentmemSaver(url)
    try:
        yield saver
    finally:
        saver.close()


@asynccontextmanager
async def agentmem_postgres(schema: str) -> AsyncIterator[BaseCheckpointSaver]:
    import psycopg

    try:
        async with agentmem_saver(f"{DATABASE_URL}?schema={schema}") as saver:
            yield saver
    finally:
        async with await psycopg.AsyncConnection.connect(DATABASE_URL, autocommit=True) as admin:
            await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@asynccontextmanager
async def sqlite_saver(path: Path) -> AsyncIterator[BaseCheckpointSaver]:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
        yield saver


@asynccontextmanager
async def postgres_saver(schema: str) -> AsyncIterator[BaseCheckpointSaver]:
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with await psycopg.AsyncConnection.connect(DATABASE_URL, autocommit=True) as admin:
        await admin.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{DATABASE_URL}?options=-csearch_path%3D{schema}"
    try:
        async with AsyncPostgresSaver.from_conn_string(url) as saver:
            await saver.setup()
            yield saver
    finally:
        async with await psycopg.AsyncConnection.connect(DATABASE_URL, autocommit=True) as admin:
            await admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 steps, one run")
    parser.add_argument("--json", action="store_true", help="also print JSON lines")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    steps, runs = (100, 1) if args.quick else (1_000, args.runs)
    tmp = Path(tempfile.mkdtemp(prefix="agentmem-checkpoint-bench-"))
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    cases: list[tuple[str, str, Callable[[int], Any]]] = [
        ("LangGraph AsyncSqliteSaver", "sqlite", lambda r: sqlite_saver(tmp / f"lg-{r}.db")),
        (
            "AgentmemSaver sqlite",
            "sqlite",
            lambda r: agentmem_saver(f"sqlite://{tmp / f'am-{r}.db'}"),
        ),
        ("AgentmemSaver file", "file", lambda r: agentmem_saver(f"file://{tmp / f'am-{r}'}")),
        ("LangGraph AsyncPostgresSaver", "postgres", lambda r: postgres_saver(f"{schema}_{r}")),
        (
            "AgentmemSaver postgres",
            "postgres",
            lambda r: agentmem_postgres(f"am_{schema}_{r}"),
        ),
    ]
    rows = []
    for name, backend, make in cases:
        results = []
        for run in range(runs):
            async with make(run) as saver:
                results.append(await measure(saver, steps))
        row = {"case": name, "backend": backend, "steps": steps}
        for key in results[0]:
            row[key] = statistics.median(r[key] for r in results)
        rows.append(row)
        if args.json:
            print(json.dumps(row))
    print("| case | steps | put step µs | get_tuple µs | list(limit=10) µs | list all ms |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['case']} | {r['steps']:,} | {r['put_step']:.0f} | {r['get_tuple']:.0f} "
            f"| {r['list_10']:.0f} | {r['list_all'] / 1000:.1f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
