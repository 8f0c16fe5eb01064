"""`agentmem.Store` on every backend: the operations, the OpenAI chat shape, and errors."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

import agentmem

CALLS = [
    {"role": "user", "content": "Weather and time in Oslo?"},
    {
        "role": "assistant",
        "content": "Let me check both.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "clock", "arguments": '{"tz": "Europe/Oslo"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 °C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "12:00"},
    {"role": "assistant", "content": "Sunny and noon."},
]


def strip(messages):
    """Messages without the fields `load` adds."""
    return [{k: v for k, v in m.items() if k not in ("id", "timestamp")} for m in messages]


def test_append_then_load_round_trips_the_openai_shape(store):
    store.append("chat", CALLS)
    loaded = store.load("chat")
    assert strip(loaded) == CALLS
    for message in loaded:
        assert message["id"]
        datetime.fromisoformat(message["timestamp"].replace("Z", "+00:00"))
    assert store.load("missing") is None


def test_tool_calls_are_agentmem_tool_messages(store, namespace):
    store.append("chat", CALLS)
    raw = store._native.load("chat")["messages"]
    calls = [m for m in raw if m["role"] == "assistant" and m.get("tool_call_id")]
    assert [(m["tool_call_id"], m["tool_name"], m["content"]) for m in calls] == [
        ("call_1", "weather", '{"city": "Oslo"}'),
        ("call_2", "clock", '{"tz": "Europe/Oslo"}'),
    ]
    results = [m for m in raw if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == ["call_1", "call_2"]
    # A window never keeps a result without its call.
    window = store.load("chat", limit=2)
    ids = {c["id"] for m in window for c in m.get("tool_calls", [])}
    assert all(m["tool_call_id"] in ids for m in window if m["role"] == "tool")


def test_text_metadata_and_names_are_kept(store):
    messages = [
        {"role": "user", "content": "hi", "name": "ada", "metadata": {"lang": "en", "n": [1, 2]}},
        {"role": "system", "content": ""},
        {"role": "ResearchAgent", "content": "an agent speaking under its own name"},
    ]
    store.append("s", messages)
    assert strip(store.load("s")) == messages


def test_explicit_ids_and_times_are_kept(store):
    at = "2024-05-01T10:11:12.123456Z"
    store.append("s", [{"role": "user", "content": "x", "id": "m-1", "timestamp": at}])
    (loaded,) = store.load("s")
    assert loaded["id"] == "m-1"
    assert loaded["timestamp"] == at


def test_sessions_find_and_labels(store):
    store.append("b", [{"role": "user", "content": "x"}])
    store.append("a", [{"role": "user", "content": "y"}])
    assert store.sessions() == ["a", "b"]
    info = store.tag("a", {"project": "kyoto"}, title="Trip", owner="ada")
    assert (info["title"], info["owner"], info["tags"]) == ("Trip", "ada", {"project": "kyoto"})
    found = store.find_sessions(owner="ada", tags={"project": "kyoto"})
    assert [s["id"] for s in found] == ["a"]
    assert found[0]["message_count"] == 1
    assert store.find_sessions(owner="nobody") == []
    since = datetime.now(timezone.utc) - timedelta(hours=1)
    assert len(store.find_sessions(updated_since=since)) == 2
    info = store.tag("a", untag=["project"], clear=["title"])
    assert (info["title"], info["tags"]) == (None, {})
    assert store.session("a")["owner"] == "ada"
    assert store.session("nope") is None


def test_search_finds_messages(store):
    store.append("s1", [{"role": "user", "content": "I adopted a cat named Miso"}])
    store.append("s2", [{"role": "user", "content": "Nothing about pets here"}])
    hits = store.search("Miso cat", limit=5)
    assert hits and hits[0]["session"] == "s1"
    assert hits[0]["message"]["content"] == "I adopted a cat named Miso"
    assert isinstance(hits[0]["score"], float)
    assert store.search("Miso", session_id="s2") == []


def test_fork_rewind_delete(store):
    store.append("main", [{"role": "user", "content": str(i)} for i in range(5)])
    second = store.load("main")[1]["id"]
    info = store.fork("main", "what-if", at=second)
    assert info["message_count"] == 2
    assert [m["content"] for m in store.load("what-if")] == ["0", "1"]
    removed = store.rewind("main", 2)
    assert [m["content"] for m in removed] == ["3", "4"]
    removed = store.rewind("main", after=second)
    assert [m["content"] for m in removed] == ["2"]
    assert [m["content"] for m in store.load("main")] == ["0", "1"]
    assert store.delete("main") is True
    assert store.delete("main") is False
    with pytest.raises(agentmem.NotFound):
        store.fork("main", "copy")


def test_compact_archives_and_summarises(store):
    store.append("s", [{"role": "user", "content": f"fact {i}"} for i in range(4)])
    result = store.compact("s", "four facts")
    assert result["archive"]["message_count"] == 4
    (summary,) = store.load("s")
    assert summary["role"] == "system" and "four facts" in summary["content"]
    assert [a["message_count"] for a in store.archives("s")] == [4]
    auto = store.compact("s")
    assert auto["summary"]["role"] == "system"
    with pytest.raises(agentmem.NotFound):
        store.compact("missing")


def test_expiry_and_purge(store):
    store.append("old", [{"role": "user", "content": "x"}])
    store.append("keep", [{"role": "user", "content": "y"}])
    info = store.expire("keep", timedelta(hours=1))
    assert info["expires_at"] is not None
    assert store.expire("keep", persist=True)["expires_at"] is None
    store.expire("old", at=datetime.now(timezone.utc) - timedelta(seconds=1))
    assert store.load("old") is None
    report = store.purge(keep=10)
    assert set(report) >= {"sessions_deleted", "memories_deleted"}
    assert store.sessions() == ["keep"]
    with pytest.raises(agentmem.InvalidInput):
        store.expire("keep", 5, persist=True)


def test_memory_items_are_scoped(store):
    store.store_memory("alice likes tea", agent="alice")
    store.store_memory("bob likes coffee", agent="bob")
    store.store_memory("the office is in Oslo")
    short = store.store_memory("working on the report", long_term=False, agent="alice")
    assert short["kind"] == "short_term"
    alice = store.get_context(agent="alice")
    assert "alice likes tea" in alice and "Oslo" in alice and "coffee" not in alice
    bob = store.get_context(agent="bob")
    assert "coffee" in bob and "tea" not in bob
    assert {m["text"] for m in store.memories(agent="alice", exact=True)} == {
        "alice likes tea",
        "working on the report",
    }
    assert len(store.memories()) == 4
    hits = store.search_memories("tea", agent="bob")
    assert all("tea" not in h["item"]["text"] for h in hits)
    keyed = store.store_memory("v1", key="pref", agent="alice")
    again = store.store_memory("v2", key="pref", agent="alice")
    assert again["id"] == keyed["id"]
    assert store.get_memory(keyed["id"])["text"] == "v2"
    assert store.delete_memory(keyed["id"]) is True
    assert store.get_memory(keyed["id"]) is None


def test_export_import_and_migrate(store, namespace, tmp_path):
    store.append("s", CALLS)
    store.store_memory("a fact", agent="alice")
    path = tmp_path / "export.json"
    document = store.export(path=path)
    assert json.loads(path.read_text()) == document
    assert [s["id"] for s in document["sessions"]] == ["s"]

    target = agentmem.open(f"sqlite://{tmp_path / 'copy.db'}")
    report = target.import_(path)
    assert (report["sessions_created"], report["memories_written"]) == (1, 1)
    assert target.import_(document)["sessions_created"] == 0
    assert strip(target.load("s")) == CALLS
    with pytest.raises(agentmem.Conflict):
        target.append("s", [{"role": "user", "content": "diverged"}])
        target.import_(document)

    events = []
    migrated = store.migrate(f"file://{tmp_path / 'migrated'}", progress=events.append)
    assert migrated["verified"] is True
    assert [e["event"] for e in events] == ["start", "session", "finish"]
    assert events[1]["session"] == "s"
    copy = agentmem.open(f"file://{tmp_path / 'migrated'}")
    assert strip(copy.load("s")) == CALLS
    assert [m["text"] for m in copy.memories()] == ["a fact"]


def test_a_progress_callback_that_raises_fails_the_migration(store, tmp_path):
    store.append("s", [{"role": "user", "content": "x"}])

    def boom(event):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        store.migrate(f"file://{tmp_path / 'm'}", progress=boom)


@pytest.mark.parametrize(
    "messages",
    [
        [{"content": "no role"}],
        [{"role": "", "content": "x"}],
        [{"role": "user", "content": 42}],
        [{"role": "user", "content": "x", "metadata": "not a dict"}],
        [{"role": "user", "content": "x", "id": ""}],
        [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}],
        [{"role": "user", "content": "x\u0000", "id": "bad\nid"}],
        "not a list",
    ],
)
def test_bad_messages_are_invalid_input_and_write_nothing(store, messages):
    store.append("s", [{"role": "user", "content": "kept"}])
    with pytest.raises(agentmem.InvalidInput):
        store.append("s", messages)
    assert strip(store.load("s")) == [{"role": "user", "content": "kept"}]


@pytest.mark.parametrize("session_id", ["", "../escape", "a/b", "x" * 300, "nul\u0000"])
def test_unsafe_session_ids_are_refused(store, session_id):
    with pytest.raises(agentmem.InvalidInput):
        store.append(session_id, [{"role": "user", "content": "x"}])


def test_errors_share_one_base_class():
    for kind in (
        agentmem.InvalidInput,
        agentmem.NotFound,
        agentmem.Conflict,
        agentmem.Unavailable,
        agentmem.CorruptData,
        agentmem.Unsupported,
        agentmem.Backend,
    ):
        assert issubclass(kind, agentmem.Error)
        assert issubclass(kind, Exception)
    assert agentmem.Error.__module__ == "agentmem"


def test_urls_are_checked_and_passwords_never_shown():
    with pytest.raises(agentmem.InvalidInput):
        agentmem.open("mysql://h/db")
    with pytest.raises(agentmem.Error) as caught:
        agentmem.open("postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=1")
    assert "hunter2" not in str(caught.value)
    store = agentmem.open("file:///tmp/agentmem-python-repr")
    assert "file://" in repr(store)
