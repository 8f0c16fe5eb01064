"""agentmem's Python package against what a Python user would otherwise pick, in one run.

Not a test: it prints a markdown table (and JSON lines with ``--json``). Run it with a
release build of the package (``pip install ./crates/python``, which builds in release):

    python crates/python/benches/sessions.py            # 1,000 and 10,000 items
    python crates/python/benches/sessions.py --quick    # 200 items: checks that all works
    python crates/python/benches/sessions.py --rust     # also the Rust library's append

Cases:
- OpenAI Agents SDK sessions: ``AgentmemSession`` on ``file://`` and ``sqlite://`` against the
  SDK's own ``SQLiteSession`` (a file database), each growing one session by ``add_items`` of
  one item per call (user and assistant messages, function calls and their outputs), then
  ``get_items(limit=20)`` repeated. Per call, median of the runs.
- The binding's own cost: ``Store.append`` of one message per call from Python, against the
  Rust library doing the same job (``benches/seeds/agentmem.rs`` through ``cargo bench``, with
  ``--rust``) on the same URLs: the difference per call is what the binding adds.
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
from typing import Any, Callable

import agentmem
from agentmem.openai_agents import AgentmemSession

ROOT = Path(__file__).resolve().parents[3]


def item(i: int) -> dict[str, Any]:
    """The SDK's items in the order a tool-using turn makes them."""
    kind = i % 4
    if kind == 0:
        return {"role": "user", "content": f"message {i}: what is the latency of GCP today?"}
    if kind == 1:
        return {
            "type": "function_call",
            "call_id": f"call_{i}",
            "name": "latency",
            "arguments": json.dumps({"cloud": "gcp", "n": i}),
        }
    if kind == 2:
        return {"type": "function_call_output", "call_id": f"call_{i - 1}", "output": "42 ms"}
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{i}",
        "status": "completed",
        "content": [{"type": "output_text", "text": f"answer {i}: 42 ms", "annotations": []}],
    }


async def session_case(make: Callable[[str], Any], n: int, reads: int) -> tuple[float, float]:
    """Per-call seconds of add_items (one item a call, n calls) and get_items(limit=20)."""
    session = make(f"bench-{n}")
    started = time.perf_counter()
    for i in range(n):
        await session.add_items([item(i)])
    add = (time.perf_counter() - started) / n
    started = time.perf_counter()
    for _ in range(reads):
        got = await session.get_items(limit=20)
    get = (time.perf_counter() - started) / reads
    assert len(got) == 20, len(got)
    return add, get


def sessions(n: int, runs: int, reads: int, workdir: Path) -> list[dict[str, Any]]:
    from agents.memory import SQLiteSession

    makers: dict[str, Callable[[Path], Callable[[str], Any]]] = {
        "SDK SQLiteSession (file)": lambda d: lambda sid: SQLiteSession(sid, str(d / "sdk.db")),
        "AgentmemSession file": lambda d: lambda sid: AgentmemSession(sid, f"file://{d / 'f'}"),
        "AgentmemSession sqlite": lambda d: (
            lambda sid: AgentmemSession(sid, f"sqlite://{d / 'a.db'}")
        ),
    }
    rows = []
    for name, maker in makers.items():
        adds, gets = [], []
        for run in range(runs):
            folder = workdir / f"{name.split()[0]}-{n}-{run}-{len(rows)}"
            folder.mkdir(parents=True)
            add, get = asyncio.run(session_case(maker(folder), n, reads))
            adds.append(add)
            gets.append(get)
        rows.append(
            {
                "case": name,
                "n": n,
                "add_items_us": statistics.median(adds) * 1e6,
                "get_items_20_us": statistics.median(gets) * 1e6,
            }
        )
    return rows


def python_appends(url: str, n: int) -> float:
    """Per-call seconds of Store.append of one short user message, n calls."""
    store = agentmem.open(url)
    started = time.perf_counter()
    for i in range(n):
        text = f"message {i}: a turn of ordinary length about GCP latency and cost."
        store.append("seeds", [{"role": "user", "content": text}])
    return (time.perf_counter() - started) / n


RUST_CASES = {
    "file durability=buffered": lambda d: f"file://{d}?durability=buffered",
    "sqlite synchronous=normal": lambda d: f"sqlite://{d}/agent.db?synchronous=normal",
}


def rust_appends(n: int) -> dict[str, float]:
    """Per-call seconds of the Rust library's append for the RUST_CASES (the seeds bench)."""
    env = dict(
        os.environ,
        SEEDS_N=str(n),
        SEEDS_REPEAT="1",
        SEEDS_CASES=",".join(f"agentmem {c}" for c in RUST_CASES),
    )
    out = subprocess.run(
        ["cargo", "bench", "--quiet", "--features", "sqlite,encryption", "--bench", "seeds"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    result = {}
    for line in out.splitlines():
        if line.startswith("{"):
            case = json.loads(line)
            for name in RUST_CASES:
                if case["impl"].endswith(name):
                    result[name] = case["append_s"] / case["n"]
    return result


def binding(n: int, runs: int, rust: bool, workdir: Path) -> list[dict[str, Any]]:
    rust_times = rust_appends(n) if rust else {}
    rows = []
    for name, url in RUST_CASES.items():
        times = []
        for run in range(runs):
            folder = workdir / f"bind-{name.split()[0]}-{n}-{run}"
            folder.mkdir(parents=True)
            times.append(python_appends(url(folder), n))
        row: dict[str, Any] = {
            "case": f"Store.append {name}",
            "n": n,
            "python_us": statistics.median(times) * 1e6,
        }
        if name in rust_times:
            row["rust_us"] = rust_times[name] * 1e6
            row["binding_us"] = row["python_us"] - row["rust_us"]
        rows.append(row)
    return rows


def table(session_rows: list[dict[str, Any]], binding_rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | items | add_items µs/call | ratio | get_items(20) µs/call | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for row in session_rows:
        base = next(r for r in session_rows if r["n"] == row["n"] and r["case"].startswith("SDK"))
        lines.append(
            f"| {row['case']} | {row['n']:,} | {row['add_items_us']:.1f} | "
            f"{row['add_items_us'] / base['add_items_us']:.2f} | "
            f"{row['get_items_20_us']:.1f} | "
            f"{row['get_items_20_us'] / base['get_items_20_us']:.2f} |"
        )
    lines += [
        "",
        "| case | appends | Python µs/call | Rust µs/call | binding µs/call |",
        "|---|---|---|---|---|",
    ]
    for row in binding_rows:
        rust = f"{row['rust_us']:.1f}" if "rust_us" in row else "-"
        diff = f"{row['binding_us']:.1f}" if "binding_us" in row else "-"
        lines.append(f"| {row['case']} | {row['n']:,} | {row['python_us']:.1f} | {rust} | {diff} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 items, one run")
    parser.add_argument("--rust", action="store_true", help="also time the Rust library")
    parser.add_argument("--json", action="store_true", help="JSON lines, not a table")
    args = parser.parse_args()
    sizes, runs, reads = ([200], 1, 50) if args.quick else ([1000, 10000], 3, 500)
    with tempfile.TemporaryDirectory(prefix="agentmem-py-bench-") as tmp:
        workdir = Path(tmp)
        session_rows = [row for n in sizes for row in sessions(n, runs, reads, workdir)]
        binding_rows = [row for n in sizes for row in binding(n, runs, args.rust, workdir)]
    if args.json:
        for row in session_rows + binding_rows:
            print(json.dumps(row))
    else:
        print(table(session_rows, binding_rows))
        print(
            f"\n{sys.version.split()[0]}, agentmem {agentmem.__version__}, {os.cpu_count()} cores"
        )


if __name__ == "__main__":
    main()
