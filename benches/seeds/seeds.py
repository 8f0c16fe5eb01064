"""The seeds' own Python implementations, timed at agentmem's job (issue 20, item 5).

Run by ``benches/seeds/run.sh`` inside a throwaway virtualenv holding ``swarms`` and
``praisonaiagents``; never run in CI. One implementation per process (a fresh interpreter, so
no import or cache of one case helps another):

    python seeds.py IMPL --n 10000 --dir DIR [--budget SECONDS] [--repeat R]

prints one JSON object on stdout: the implementation, the package version, and per run the
messages appended, the seconds the appends took, and the seconds the reload took (a new object
reading what the first wrote), with the number of messages the reload gave back.

IMPL is one of:

- ``swarms``: ``swarms.structs.conversation.Conversation(name=..., memory_md_path=...)``, the
  write-through ``MEMORY.md`` of the first seed; ``add("User", text)`` per message (each opens
  ``MEMORY.md`` in append mode and writes one block, no fsync). Reload: a new ``Conversation``
  with the same name and path, which reads the file and injects it as one system message.
- ``swarms-autosave``: ``Conversation(name=..., autosave=True)`` without ``MEMORY.md``: every
  ``add`` rewrites the whole JSON export. Reload: a new ``Conversation`` with the same name,
  which loads the JSON export back into its history.
- ``praisonai``: ``praisonaiagents.session.DefaultSessionStore`` as the agent's auto-save and
  history use it (``get_default_session_store()``: retention ``compact``, active window 100);
  ``add_message(session, "user", text)`` per message (a locked read-modify-write of the
  session's JSON file, atomic by rename, no fsync). Reload: a new store,
  ``get_chat_history(session)`` (the summary plus the last 100).
- ``praisonai-keep-all``: the same store with ``retention="keep_all"``, so the reload gives back
  every message.

``--budget`` stops an implementation's appends once they have taken that many seconds (the
rewriting ones grow with the square of the session); the JSON then says how many messages it
appended. 0 means no budget.
"""

import argparse
import json
import os
import statistics
import sys
import time
from importlib.metadata import version


def text(i):
    """Message ``i``: the text agentmem's bench appends (``agentmem_testkit::bench::message``)."""
    needle = " needle" if i % 100 == 0 else ""
    return f"message {i}: a turn of ordinary length about GCP latency and cost.{needle}"


def appends(add, n, budget):
    """Calls ``add(i)`` for i in 0..n; returns (messages appended, seconds)."""
    start = time.perf_counter()
    done = 0
    for i in range(n):
        add(i)
        done = i + 1
        # Checked every 100 messages so the clock read costs nothing measurable.
        if budget and done % 100 == 0 and time.perf_counter() - start > budget:
            break
    return done, time.perf_counter() - start


def run_swarms(root, n, budget):
    from swarms.structs.conversation import Conversation

    md = os.path.join(root, "agents", "bench", "MEMORY.md")
    conversations = os.path.join(root, "conversations")

    def new():
        return Conversation(
            name="bench", memory_md_path=md, conversations_dir=conversations
        )

    conv = new()
    done, seconds = appends(lambda i: conv.add("User", text(i)), n, budget)
    start = time.perf_counter()
    reloaded = new()
    reload_seconds = time.perf_counter() - start
    # The preload is one system message holding the whole file: count its blocks.
    preload = [
        m["content"]
        for m in reloaded.conversation_history
        if str(m.get("content", "")).startswith("[Persistent Memory")
    ]
    got = preload[0].count("### User — ") if preload else 0
    return done, seconds, reload_seconds, got


def run_swarms_autosave(root, n, budget):
    from swarms.structs.conversation import Conversation

    conversations = os.path.join(root, "conversations")

    def new():
        return Conversation(name="bench", autosave=True, conversations_dir=conversations)

    conv = new()
    done, seconds = appends(lambda i: conv.add("User", text(i)), n, budget)
    start = time.perf_counter()
    reloaded = new()
    reload_seconds = time.perf_counter() - start
    got = sum(1 for m in reloaded.conversation_history if m.get("role") == "User")
    return done, seconds, reload_seconds, got


def run_praisonai(root, n, budget, retention=None):
    from praisonaiagents.session import DefaultSessionStore

    sessions = os.path.join(root, "sessions")
    kwargs = {} if retention is None else {"retention": retention}
    store = DefaultSessionStore(session_dir=sessions, **kwargs)
    done, seconds = appends(
        lambda i: store.add_message("bench", "user", text(i)), n, budget
    )
    start = time.perf_counter()
    reloaded = DefaultSessionStore(session_dir=sessions, **kwargs)
    history = reloaded.get_chat_history("bench")
    reload_seconds = time.perf_counter() - start
    got = sum(1 for m in history if m["role"] == "user")
    return done, seconds, reload_seconds, got


IMPLS = {
    "swarms": ("swarms", run_swarms),
    "swarms-autosave": ("swarms", run_swarms_autosave),
    "praisonai": ("praisonaiagents", run_praisonai),
    "praisonai-keep-all": (
        "praisonaiagents",
        lambda root, n, budget: run_praisonai(root, n, budget, "keep_all"),
    ),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("impl", choices=sorted(IMPLS))
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--budget", type=float, default=0.0)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    package, run = IMPLS[args.impl]
    runs = []
    for r in range(args.repeat):
        root = os.path.join(args.dir, f"{args.impl}-{r}")
        os.makedirs(root)
        done, seconds, reload_seconds, got = run(root, args.n, args.budget)
        runs.append(
            {"appended": done, "append_s": seconds, "reload_s": reload_seconds, "reloaded": got}
        )
        print(
            f"{args.impl} run {r + 1}: {done} appends {seconds:.3f} s, "
            f"reload {reload_seconds * 1000:.1f} ms ({got} user messages back)",
            file=sys.stderr,
        )
        if done < args.n:
            break  # over budget: one run is all it gets
    out = {
        "impl": args.impl,
        "package": f"{package} {version(package)}",
        "n": args.n,
        "runs": runs,
        "append_s": statistics.median(r["append_s"] for r in runs),
        "reload_s": statistics.median(r["reload_s"] for r in runs),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
