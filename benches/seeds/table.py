"""Prints the markdown table of a ``benches/seeds/run.sh`` run from its JSON lines.

    python table.py results.jsonl

Each line is one implementation (from ``seeds.py`` or the ``seeds`` bench): ``impl``,
``package``, ``n`` (messages asked for), ``runs`` (each with ``appended``), and the median
``append_s`` and ``reload_s``. Ratios are per appended message (and per reload) against the
``swarms`` row, the seed's write-through ``MEMORY.md``. Standard library only.
"""

import json
import sys

ORDER = ["floor", "agentmem", "swarms", "praisonai"]


def duration(seconds):
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def per_message(seconds, count):
    us = seconds / count * 1e6
    return f"{us:.1f}" if us < 100 else f"{us:,.0f}"


def ratio(value, base, at_least):
    if not base:
        return ""
    r = value / base
    text = f"{r:.2f}" if r < 10 else f"{r:,.0f}"
    return f"≥ {text}" if at_least else text


def main():
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    rows.sort(key=lambda r: next(i for i, p in enumerate(ORDER + [""]) if r["impl"].startswith(p)))
    base = next((r for r in rows if r["impl"] == "swarms"), None)
    base_append = base and base["append_s"] / base["runs"][0]["appended"]
    base_reload = base and base["reload_s"]

    print(
        "| implementation | appends | total | µs / message | append ÷ Swarms "
        "| reload (new object) | reload ÷ Swarms |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        appended = r["runs"][0]["appended"]
        stopped = appended < r["n"]
        count = f"{appended:,}" + (f" of {r['n']:,} (stopped)" if stopped else "")
        runs = len(r["runs"])
        total = duration(r["append_s"]) + (f" (median of {runs})" if runs > 1 else "")
        print(
            f"| {r['impl']} | {count} | {total} | {per_message(r['append_s'], appended)} "
            f"| {ratio(r['append_s'] / appended, base_append, stopped)} "
            # A stopped row reloads a smaller session: no ratio to Swarms' 10,000.
            f"| {duration(r['reload_s'])}{f' ({appended:,})' if stopped else ''} "
            f"| {'' if stopped else ratio(r['reload_s'], base_reload, False)} |"
        )


if __name__ == "__main__":
    main()
