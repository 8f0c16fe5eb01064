"""Python and the `agentmem` command share one store: what one writes the other reads, on
every backend, and concurrent writers (two Python processes and the CLI) lose nothing."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from test_store import CALLS, strip


def test_the_cli_reads_what_python_wrote(store, namespace, cli):
    store.append("chat", CALLS)
    store.store_memory("ada prefers tea", agent="alice")
    shown = json.loads(cli("--store", namespace.url, "--json", "show", "chat").stdout)
    stored = store._native.load("chat")
    assert shown["messages"] == stored["messages"]
    assert [m["content"] for m in shown["messages"]][0] == CALLS[0]["content"]
    listed = cli("--store", namespace.url, "--json", "memories").stdout
    assert "ada prefers tea" in listed
    found = json.loads(cli("--store", namespace.url, "--json", "search", "Oslo").stdout)
    assert any(hit["session"] == "chat" for hit in found)


def test_python_reads_what_the_cli_wrote(store, namespace, cli):
    cli("--store", namespace.url, "append", "chat", "--role", "user", "hello from the CLI")
    cli("--store", namespace.url, "append", "chat", "--role", "assistant", "hello back")
    assert strip(store.load("chat")) == [
        {"role": "user", "content": "hello from the CLI"},
        {"role": "assistant", "content": "hello back"},
    ]
    store.append("chat", [{"role": "user", "content": "and from Python"}])
    shown = json.loads(cli("--store", namespace.url, "--json", "show", "chat").stdout)
    assert [m["content"] for m in shown["messages"]] == [
        "hello from the CLI",
        "hello back",
        "and from Python",
    ]


WRITER = textwrap.dedent(
    """
    import sys
    import agentmem

    url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = agentmem.open(url)
    for i in range(count):
        store.append("shared", [{"role": "user", "content": f"{name}-{i}"}])
    """
)


def test_two_python_processes_and_the_cli_lose_nothing(namespace, cli):
    count = 15
    python = [
        subprocess.Popen([sys.executable, "-c", WRITER, namespace.url, name, str(count)])
        for name in ("py1", "py2")
    ]
    for i in range(count):
        cli("--store", namespace.url, "append", "shared", "--role", "user", f"cli-{i}")
    for process in python:
        assert process.wait(timeout=300) == 0
    loaded = namespace.open().load("shared")
    contents = [m["content"] for m in loaded]
    for name in ("py1", "py2", "cli"):
        assert [c for c in contents if c.startswith(f"{name}-")] == [
            f"{name}-{i}" for i in range(count)
        ]
    assert len(contents) == 3 * count
