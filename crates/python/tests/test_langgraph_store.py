"""`AgentmemStore`: the same operations give what LangGraph's `InMemoryStore` gives, on every
backend; hostile namespaces, keys and values; filters; ttl; text search; a second process; items
of other tools; bad input; a graph using the store from sync and async code."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import os
import struct
import subprocess
import sys
import textwrap
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.config import get_store  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import (  # noqa: E402
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

import agentmem  # noqa: E402
from agentmem.langgraph import AgentmemStore  # noqa: E402
from agentmem.langgraph_store import KIND, SCOPE  # noqa: E402


def plain(result: Any) -> Any:
    """A batch result without times: what two stores must agree on."""
    if isinstance(result, SearchItem):
        return ("search", result.namespace, result.key, result.value, result.score)
    if isinstance(result, Item):
        return ("item", result.namespace, result.key, result.value)
    if isinstance(result, list):
        return [plain(r) for r in result]
    return result


class Twins:
    """The reference and the store under test, driven with the same calls."""

    def __init__(self, store: agentmem.Store) -> None:
        self.reference = InMemoryStore()
        self.subject = AgentmemStore(store=store)

    def same(self, method: str, *args: Any, **kwargs: Any) -> Any:
        expected = getattr(self.reference, method)(*args, **kwargs)
        got = getattr(self.subject, method)(*args, **kwargs)
        assert plain(got) == plain(expected), (method, args, kwargs)
        return got

    async def asame(self, method: str, *args: Any, **kwargs: Any) -> Any:
        expected = await getattr(self.reference, method)(*args, **kwargs)
        got = await getattr(self.subject, method)(*args, **kwargs)
        assert plain(got) == plain(expected), (method, args, kwargs)
        return got


DOCS_A, DOCS_B = ("docs", "a"), ("docs", "b")
PREFS_1, PREFS_2 = ("users", "u1", "prefs"), ("users", "u2", "prefs")

FILTERS = [
    None,
    {"s": "x"},
    {"n": {"$gt": 1}},
    {"n": {"$gte": 2.5, "$lt": 10}},
    {"n": {"$lte": 2.5}},
    {"n": {"$ne": 2.5}},
    {"n": {"$eq": 10}},
    {"n": "3"},
    {"n": 3},
    {"n": 10.0},
    {"nested": {"k": 1}},
    {"tags": ["a", "b"]},
    {"tags": ["b", "a"]},
    {"dark": True},
    {"s": "x", "n": {"$lt": 3}},
]
PAGES = [(10, 0), (1, 0), (2, 1), (5, 3), (3, 100)]
LISTINGS = [
    {},
    {"prefix": ("users",)},
    {"prefix": ("users", "*", "prefs")},
    {"suffix": ("prefs",)},
    {"suffix": ("*", "a")},
    {"prefix": ("docs",), "suffix": ("b",)},
    {"max_depth": 1},
    {"max_depth": 2},
    {"prefix": ("users",), "max_depth": 2},
    {"limit": 2, "offset": 1},
    {"prefix": ("nothing",)},
]


def compare_reads(twins: Twins) -> None:
    for prefix in [(), ("docs",), DOCS_A, ("users",), PREFS_2, ("missing",)]:
        for filter in FILTERS:
            twins.same("search", prefix, filter=filter)
        for limit, offset in PAGES:
            twins.same("search", prefix, limit=limit, offset=offset)
    for listing in LISTINGS:
        twins.same("list_namespaces", **listing)


def test_the_same_operations_give_what_in_memory_store_gives(store):
    twins = Twins(store)
    twins.same("put", DOCS_A, "1", {"n": 1, "s": "x", "tags": ["a", "b"], "nested": {"k": 1}})
    twins.same("put", DOCS_B, "1", {"n": 2.5, "s": "y"})
    twins.same("put", DOCS_A, "2", {"n": "3", "s": "x"})
    twins.same("put", PREFS_1, "theme", {"dark": True, "n": 10})
    twins.same("put", PREFS_2, "theme", {"dark": False, "n": -1})
    twins.same("put", DOCS_B, "2", {"n": 3, "s": "z"})
    twins.same("put", DOCS_A, "4", {"n": 4, "s": "x"})
    compare_reads(twins)
    # An update keeps the item's place; a delete and a new put move it to its namespace's end.
    # (Namespaces come in the order of their oldest item: where the reference keeps a
    # namespace's place after its first item is deleted, this store moves it.)
    twins.same("put", DOCS_A, "1", {"n": 7, "s": "x", "tags": ["b", "a"], "nested": {"k": 2}})
    twins.same("delete", DOCS_A, "2")
    twins.same("put", DOCS_A, "2", {"n": 5, "s": "y"})
    compare_reads(twins)
    for namespace, key in [(DOCS_A, "1"), (DOCS_A, "2"), (DOCS_B, "9"), (PREFS_1, "theme")]:
        twins.same("get", namespace, key)
    # A batch reads the store as it was before its puts; the last put of a key wins.
    batch = [
        PutOp(DOCS_A, "3", {"n": 1, "s": "first"}),
        GetOp(DOCS_A, "3"),
        SearchOp(("docs",), {"s": "x"}),
        PutOp(DOCS_A, "3", {"n": 2, "s": "second"}),
        PutOp(DOCS_A, "2", None),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("docs",)),)),
        GetOp(DOCS_A, "2"),
    ]
    twins.same("batch", batch)
    twins.same("batch", [GetOp(DOCS_A, "3"), GetOp(DOCS_A, "2"), SearchOp(DOCS_A)])
    compare_reads(twins)
    # The reference keeps emptied (and merely read) namespaces listed; this store lists the
    # namespaces that hold an item.
    twins.same("delete", PREFS_2, "theme")
    assert PREFS_2 not in twins.subject.list_namespaces()
    assert twins.subject.search(PREFS_2) == twins.reference.search(PREFS_2) == []


async def test_the_async_methods_give_what_in_memory_store_gives(store):
    twins = Twins(store)
    await twins.asame("aput", DOCS_A, "1", {"n": 1, "s": "x"})
    await twins.asame("aput", DOCS_A, "2", {"n": 3, "s": "x"})
    await twins.asame("aput", DOCS_B, "1", {"n": 2, "s": "y"})
    await twins.asame("aput", PREFS_1, "theme", {"dark": True, "n": 10})
    await twins.asame("aget", DOCS_A, "1")
    await twins.asame("asearch", ("docs",), filter={"n": {"$gte": 2}})
    await twins.asame("alist_namespaces", prefix=("docs",))
    await twins.asame("adelete", DOCS_A, "1")
    await twins.asame("aget", DOCS_A, "1")
    await twins.asame("abatch", [GetOp(DOCS_B, "1"), SearchOp(()), ListNamespacesOp()])


HOSTILE_LABELS = [
    "a:b",
    "a/b",
    "a.b",
    "..",
    "*",
    "?",
    "[x]",
    "$where",
    "%2F",
    "\\",
    '"quoted"',
    " spaced  out ",
    "ünïcødé ✓",
    "日本語",
    "emoji 🙂",
    "tab\there",
    "new\nline",
    "nul\0byte",
    "del\x7f",
    "c1\x85",
    "",
    "l" * 300,
    '["json"]',
]


def hostile_items() -> list[tuple[tuple[str, ...], str]]:
    items = [((label,), "k") for label in HOSTILE_LABELS]
    items += [(("ns",), label) for label in HOSTILE_LABELS]
    # Pairs that a naive join would confuse.
    items += [
        (("a", "b"), "c"),
        (("a:b",), "c"),
        (("a", "b:c"), ""),
        (("a",), "b/c"),
        (("a/b",), "c"),
        (("a.b", "c"), "d"),
        (("a", "b.c"), "d"),
        ((), "root"),
        (("ns",) * 20, "deep"),
    ]
    return items


def test_hostile_namespaces_and_keys_are_kept_apart_and_given_back(store):
    subject = AgentmemStore(store=store)
    items = hostile_items()
    subject.batch(
        [PutOp(ns, key, {"i": i, "ns": list(ns), "key": key}) for i, (ns, key) in enumerate(items)]
    )
    got = subject.batch([GetOp(ns, key) for ns, key in items])
    for i, ((ns, key), item) in enumerate(zip(items, got)):
        assert item is not None, (ns, key)
        assert (item.namespace, item.key, item.value["i"]) == (ns, key, i)
    everything = subject.search((), limit=1000)
    assert sorted((i.namespace, i.key) for i in everything) == sorted(items)
    namespaces = subject.list_namespaces(limit=1000)
    assert namespaces == sorted({ns for ns, _ in items})
    assert subject.list_namespaces(prefix=("a",)) == [
        ("a",),
        ("a", "b"),
        ("a", "b.c"),
        ("a", "b:c"),
    ]
    assert [i.key for i in subject.search(("a", "b"))] == ["c"]
    subject.batch([PutOp(ns, key, None) for ns, key in items])
    assert subject.search((), limit=1000) == []
    assert subject.list_namespaces() == []


def test_values_round_trip_exactly(store):
    subject = AgentmemStore(store=store)
    value = {
        "z": 1,
        "a": 1.0,
        "neg zero": -0.0,
        "big": 2**70,
        "small": -(2**63),
        "tiny": 5e-324,
        "huge": 1.7976931348623157e308,
        "tenth": 0.1,
        "bool": True,
        "null": None,
        "text": "nul\0 ünï \U0001f642 \x7f \u2028",
        "surrogate": "\ud800",
        "nested": {"list": [1, [2, {"3": [None, False]}]], "empty": {}},
        "$op": "dollar",
        "dotted.key": "dot",
        "": "empty key",
    }
    subject.put(("values",), "v", value)
    got = subject.get(("values",), "v")
    assert got is not None
    assert got.value == value
    assert json.dumps(got.value) == json.dumps(value), "key order and number types kept"
    assert math.copysign(1, got.value["neg zero"]) == -1
    assert subject.search(("values",))[0].value == value


def test_filters_compare_numbers_as_numbers_and_texts_as_texts(store):
    subject = AgentmemStore(store=store)
    rows = {"i": 10, "f": 10.0, "s": "10", "big": 2**60, "neg": -3.5, "t": "b", "none": None}
    for key, n in rows.items():
        subject.put(("f",), key, {"n": n})
    subject.put(("f",), "missing", {"other": 1})

    def keys(filter: dict[str, Any]) -> list[str]:
        return sorted(i.key for i in subject.search(("f",), filter=filter, limit=100))

    assert keys({"n": 10}) == ["f", "i"], "10 == 10.0, never the text '10'"
    assert keys({"n": "10"}) == ["s"]
    assert keys({"n": {"$eq": 10.0}}) == ["f", "i"]
    assert keys({"n": {"$ne": 10}}) == ["big", "missing", "neg", "none", "s", "t"]
    # Order operators compare as numbers (a text holding a number counts, as in the
    # reference); a missing field or a text that is no number matches none.
    assert keys({"n": {"$gt": 9.5}}) == ["big", "f", "i", "s"]
    assert keys({"n": {"$gte": 10, "$lt": 2**60}}) == ["f", "i", "s"]
    assert keys({"n": {"$lte": -3.5}}) == ["neg"]
    assert keys({"n": {"$gt": 2**59}}) == ["big"]
    # Two texts compare as texts.
    assert keys({"n": {"$gt": "a"}}) == ["t"]
    assert keys({"n": {"$lt": "a"}}) == ["s"]
    assert keys({"n": None}) == ["missing", "none"], "a missing field reads as None"


def test_a_put_keeps_created_at_and_moves_updated_at(store):
    subject = AgentmemStore(store=store)
    subject.put(("t",), "k", {"v": 1})
    first = subject.get(("t",), "k")
    time.sleep(0.01)
    subject.put(("t",), "k", {"v": 2})
    second = subject.get(("t",), "k")
    assert first is not None and second is not None
    assert first.created_at.tzinfo is not None
    assert second.value == {"v": 2}
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert len(subject.search(("t",))) == 1
    # After a delete the key starts afresh.
    subject.delete(("t",), "k")
    assert subject.get(("t",), "k") is None
    subject.put(("t",), "k", {"v": 3})
    third = subject.get(("t",), "k")
    assert third is not None and third.created_at > first.created_at


def _raw(store: agentmem.Store, namespace: tuple[str, ...], key: str) -> dict[str, Any]:
    (raw,) = [
        m
        for m in store.memories(KIND, **SCOPE, exact=True)
        if (m["metadata"]["langgraph_store"]["namespace"], m["metadata"]["langgraph_store"]["key"])
        == (list(namespace), key)
    ]
    return raw


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_ttl_becomes_the_items_expiry(store):
    subject = AgentmemStore(store=store)
    assert subject.supports_ttl
    subject.put(("ttl",), "hour", {"v": 1}, ttl=60)
    raw = _raw(store, ("ttl",), "hour")
    assert _time(raw["expires_at"]) - _time(raw["updated_at"]) == timedelta(minutes=60)
    # A put without a ttl makes the item last.
    subject.put(("ttl",), "hour", {"v": 2})
    assert "expires_at" not in _raw(store, ("ttl",), "hour")
    # A ttl of zero: gone at once, for every read.
    subject.put(("ttl",), "now", {"v": 3}, ttl=0)
    assert subject.get(("ttl",), "now") is None
    assert [i.key for i in subject.search(("ttl",))] == ["hour"]
    subject.put(("gone",), "now", {"v": 4}, ttl=0)
    assert subject.list_namespaces() == [("ttl",)]
    # A live item expires when its time comes.
    subject.put(("ttl",), "soon", {"v": 5}, ttl=0.005)
    expires = _time(_raw(store, ("ttl",), "soon")["expires_at"])
    while datetime.now(timezone.utc) <= expires:
        time.sleep(0.05)
    assert subject.get(("ttl",), "soon") is None
    assert [i.key for i in subject.search(("ttl",))] == ["hour"]


def test_the_ttl_config_gives_a_default_and_refuses_refresh_on_read(store):
    subject = AgentmemStore(store=store, ttl={"default_ttl": 30})
    assert subject.ttl_config["refresh_on_read"] is False
    subject.put(("ttl",), "default", {"v": 1})
    raw = _raw(store, ("ttl",), "default")
    assert _time(raw["expires_at"]) - _time(raw["updated_at"]) == timedelta(minutes=30)
    subject.put(("ttl",), "none", {"v": 1}, ttl=None)
    assert "expires_at" not in _raw(store, ("ttl",), "none")
    with pytest.raises(agentmem.Unsupported):
        AgentmemStore(store=store, ttl={"refresh_on_read": True})
    with pytest.raises(agentmem.InvalidInput):
        AgentmemStore(store=store, ttl={"default_ttl": -1})


def test_a_query_ranks_items_by_agentmem_text_search(store):
    subject = AgentmemStore(store=store)
    subject.put(("docs", "db"), "pg", {"text": "PostgreSQL keeps rows; postgresql is fast"})
    subject.put(("docs", "db"), "redis", {"text": "Redis keeps keys in memory"})
    subject.put(("docs", "db"), "both", {"text": "Redis next to PostgreSQL", "n": 2})
    subject.put(("docs", "lang"), "rust", {"text": "Rust and PostgreSQL drivers"})
    subject.put(("other",), "pg", {"text": "postgresql elsewhere"})
    hits = subject.search(("docs",), query="postgresql", limit=10)
    assert sorted(h.key for h in hits) == ["both", "pg", "rust"]
    assert all(isinstance(h.score, float) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].key == "pg", "the item naming it twice ranks first"
    assert [h.key for h in subject.search(("docs",), query="postgresql", limit=1)] == ["pg"]
    offset = subject.search(("docs",), query="postgresql", offset=1, limit=10)
    assert [h.key for h in offset] == [h.key for h in hits[1:]]
    filtered = subject.search(("docs", "db"), query="postgresql", filter={"n": 2})
    assert [h.key for h in filtered] == ["both"]
    assert subject.search((), query="no such word") == []
    assert subject.search((), query="?!") == []


# Semantic search (index): a deterministic embedding, each dimension a word's count, so
# that rankings are exact and the reference and the store must agree on every score.
VOCABULARY = ["cat", "dog", "pet", "car", "road", "fast", "food", "red"]


def embed_words(texts: Any) -> list[list[float]]:
    """Counts of the vocabulary's words in each text (the embedding both stores get)."""
    vectors = []
    for text in texts:
        words = [w.strip(".,!?").lower() for w in text.split()]
        vectors.append([float(words.count(word)) for word in VOCABULARY])
    return vectors


INDEX = {"dims": len(VOCABULARY), "embed": embed_words, "fields": ["text", "tags[*]"]}


def scored(result: Any) -> Any:
    """`plain`, with scores rounded (numpy and plain Python may differ in the last bit)."""
    if isinstance(result, list):
        return [scored(r) for r in result]
    if isinstance(result, SearchItem):
        score = None if result.score is None else round(result.score, 9)
        return ("search", result.namespace, result.key, result.value, score)
    return plain(result)


def test_an_index_ranks_by_meaning_as_in_memory_store_does(store):
    reference = InMemoryStore(index=INDEX)  # type: ignore[arg-type]
    subject = AgentmemStore(store=store, index=INDEX)  # type: ignore[arg-type]
    puts: list[tuple[Any, ...]] = [
        (("pets",), "1", {"text": "a cat is a pet", "n": 1}, None),
        (("pets",), "2", {"text": "dog food", "tags": ["pet", "food"], "n": 2}, None),
        (("pets", "old"), "3", {"text": "red cat red dog", "n": 3}, None),
        (("cars",), "4", {"text": "a fast red car", "tags": ["road"], "n": 4}, None),
        (("cars",), "5", {"text": "no vector here: cat", "n": 5}, False),
        (("cars",), "6", {"text": "ignored", "title": "fast road", "n": 6}, ["title"]),
        (("pets",), "7", {"other": "no field to embed", "n": 7}, None),
    ]
    for namespace, key, value, index in puts:
        reference.put(namespace, key, value, index=index)
        subject.put(namespace, key, value, index=index)
    queries = ["cat", "red dog", "fast car on the road", "pet food", "a cat or a car"]
    for query in queries:
        for prefix in [(), ("pets",), ("cars",)]:
            for filter in [None, {"n": {"$gte": 3}}]:
                for limit, offset in [(10, 0), (2, 0), (2, 1), (1, 3)]:
                    args = (prefix,)
                    kwargs = dict(query=query, filter=filter, limit=limit, offset=offset)
                    expected = reference.search(*args, **kwargs)
                    got = subject.search(*args, **kwargs)
                    assert scored(got) == scored(expected), (query, prefix, filter, limit, offset)
    hits = subject.search((), query="red dog")
    # "red cat red dog" (cat 1, dog 1, red 2) against "red dog" (dog 1, red 1): 3 / sqrt(6 * 2).
    assert (hits[0].key, hits[0].score) == ("3", pytest.approx(3 / math.sqrt(12)))
    assert [h.score for h in hits if h.key in ("5", "7")] == [None, None], "no vectors: unscored"
    # A search without a query, gets and deletes are as without an index.
    assert scored(subject.search(("pets",))) == scored(reference.search(("pets",)))
    for store_ in (reference, subject):
        store_.delete(("pets",), "1")
    assert scored(subject.search((), query="cat")) == scored(reference.search((), query="cat"))


async def test_an_async_embed_function_serves_the_async_methods(store):
    calls: list[int] = []

    async def aembed(texts: Any) -> list[list[float]]:
        calls.append(len(texts))
        return embed_words(texts)

    index = {"dims": len(VOCABULARY), "embed": aembed, "fields": ["text"]}
    reference = InMemoryStore(index=index)  # type: ignore[arg-type]
    subject = AgentmemStore(store=store, index=index)  # type: ignore[arg-type]
    for key, text in [("1", "cat and dog"), ("2", "fast car"), ("3", "red road")]:
        await reference.aput(("a",), key, {"text": text})
        await subject.aput(("a",), key, {"text": text})
    for query in ["car", "dog", "red road"]:
        got = await subject.asearch(("a",), query=query)
        assert scored(got) == scored(await reference.asearch(("a",), query=query)), query
    ops = [SearchOp(("a",), query="cat"), PutOp(("a",), "4", {"text": "cat cat"})]
    assert scored(await subject.abatch(ops)) == scored(await reference.abatch(ops))
    assert [h.key for h in await subject.asearch(("a",), query="cat")] == ["4", "1", "2", "3"]
    assert calls, "the async function embedded"


def test_vectors_are_stored_with_the_item_and_not_embedded_again(store):
    embedded: list[str] = []

    def counting(texts: Any) -> list[list[float]]:
        embedded.extend(texts)
        return embed_words(texts)

    index = {"dims": len(VOCABULARY), "embed": counting, "fields": ["text"]}
    writer = AgentmemStore(store=store, index=index)  # type: ignore[arg-type]
    writer.put(("n",), "pet", {"text": "cat and dog"})
    writer.put(("n",), "car", {"text": "fast car"})
    assert embedded == ["cat and dog", "fast car"]
    # Another store object on the same store reads the stored vectors: only queries embed.
    reader = AgentmemStore(store=store, index=index)  # type: ignore[arg-type]
    assert [h.key for h in reader.search(("n",), query="dog")] == ["pet", "car"]
    assert embedded[2:] == ["dog"]
    raw = _raw(store, ("n",), "pet")
    vectors = raw["metadata"]["langgraph_store"]["vectors"]
    assert list(vectors) == ["text"]
    assert len(base64.b64decode(vectors["text"])) == 8 * len(VOCABULARY)
    # A put replaces the vectors; a put with index=False drops them.
    writer.put(("n",), "pet", {"text": "fast fast car"})
    assert [h.key for h in reader.search(("n",), query="fast")] == ["pet", "car"]
    writer.put(("n",), "pet", {"text": "fast fast car"}, index=False)
    assert "vectors" not in _raw(store, ("n",), "pet")["metadata"]["langgraph_store"]
    assert [(h.key, h.score is None) for h in reader.search(("n",), query="fast")] == [
        ("car", False),
        ("pet", True),
    ]
    # A store without an index searches words, whatever vectors the items hold.
    plain_store = AgentmemStore(store=store)
    assert sorted(h.key for h in plain_store.search(("n",), query="car")) == ["car", "pet"]


def test_a_bad_embedding_raises_and_writes_nothing(store):
    def answers(vectors: Any) -> Any:
        return {"dims": 2, "embed": lambda texts: vectors, "fields": ["text"]}

    good = PutOp(("bad",), "ok", {"text": "fine"})
    for vectors in [
        [],
        [[1.0, 2.0]],
        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
        [[1.0], [2.0]],
        [[1.0, float("nan")], [1.0, 2.0]],
        [[1.0, "2"], [1.0, 2.0]],
        [[True, 1.0], [1.0, 2.0]],
        None,
        [1.0, 2.0],
    ]:
        subject = AgentmemStore(store=store, index=answers(vectors))
        with pytest.raises(agentmem.InvalidInput):
            subject.batch([good, PutOp(("bad",), "k", {"text": "two texts"})])
        assert subject.get(("bad",), "ok") is None, vectors
    subject = AgentmemStore(store=store, index=answers([[1.0, 0.0]]))
    with pytest.raises(agentmem.InvalidInput):
        subject.put(("bad",), "k", {"text": "x"}, index="text")  # type: ignore[arg-type]
    subject.put(("bad",), "k", {"text": "x"})
    assert subject.get(("bad",), "k") is not None


def test_items_of_other_tools_are_not_store_items_and_the_reverse(store):
    subject = AgentmemStore(store=store)
    subject.put(("users",), "ada", {"name": "Ada"})
    # Another tool's items: global, in the store's scope, even with the store's mark.
    store.store_memory("global fact about Ada", kind="fact")
    store.store_memory("an item of the agent", key="ada", **SCOPE)
    store.store_memory(
        '{"name": "Eve"}',
        key='[["users"],"eve"]',
        metadata={"langgraph_store": {"namespace": ["users"], "key": "eve"}},
        **SCOPE,
    )
    assert [i.key for i in subject.search((), query="ada eve")] == ["ada"]
    assert [i.key for i in subject.search(())] == ["ada"]
    assert subject.get(("users",), "eve") is None
    assert subject.list_namespaces() == [("users",)]
    # Another agent does not see the store's items.
    seen = store.memories(agent="alice")
    assert [m["text"] for m in seen] == ["global fact about Ada"]
    assert store.get_context("ada", agent="alice") == "- global fact about Ada"


_PROCESS = textwrap.dedent(
    """
    import json, sys
    from agentmem.langgraph import AgentmemStore
    store = AgentmemStore(sys.argv[1])
    got = store.get(("from", "parent"), "k")
    seen = {
        "get": got.value if got else None,
        "search": [[list(i.namespace), i.key, i.value] for i in store.search(("from",))],
        "namespaces": [list(ns) for ns in store.list_namespaces()],
    }
    store.put(("from", "child"), "k", {"n": 2, "text": "written by the child"})
    print(json.dumps(seen))
    """
)


def test_a_second_process_sees_the_items(namespace):
    subject = AgentmemStore(namespace.url)
    subject.put(("from", "parent"), "k", {"n": 1, "text": "written by the parent"})
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS, namespace.url],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["get"] == {"n": 1, "text": "written by the parent"}
    assert seen["search"] == [[["from", "parent"], "k", {"n": 1, "text": "written by the parent"}]]
    assert seen["namespaces"] == [["from", "parent"]]
    child = subject.get(("from", "child"), "k")
    assert child is not None and child.value == {"n": 2, "text": "written by the child"}


def test_an_encrypted_store_keeps_the_items(namespace, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(os.urandom(32)).decode())
    key_file.chmod(0o600)
    subject = AgentmemStore(namespace.url, key_file=key_file)
    subject.put(("secret", "ns"), "k", {"text": "the launch code is swordfish"})
    subject.put(("secret", "ns"), "k", {"text": "the launch code is marlin", "v": 2})
    got = subject.get(("secret", "ns"), "k")
    assert got is not None and got.value == {"text": "the launch code is marlin", "v": 2}
    assert [i.key for i in subject.search(("secret",), query="marlin")] == ["k"]
    assert subject.list_namespaces() == [("secret", "ns")]
    again = AgentmemStore(namespace.url, key_file=key_file)
    assert again.get(("secret", "ns"), "k") == got
    # Vectors are sealed with the item (an embedding can be inverted into its text).
    indexed = AgentmemStore(namespace.url, key_file=key_file, index=INDEX)  # type: ignore[arg-type]
    indexed.put(("secret", "pets"), "cat", {"text": "a red cat"})
    hits = indexed.search(("secret",), query="cat")
    assert [(h.key, h.score is not None) for h in hits] == [("cat", True), ("k", False)]
    if namespace.url.startswith("file://"):
        vector = embed_words(["a red cat"])[0]
        sealed = base64.b64encode(struct.pack(f"<{len(vector)}d", *vector))
        root = namespace.url.removeprefix("file://").split("?")[0]
        files = [p for p in Path(root).rglob("*") if p.is_file()]
        assert files, root
        for path in files:
            assert sealed not in path.read_bytes(), path


def test_bad_input_raises_typed_errors_and_writes_nothing(store):
    subject = AgentmemStore(store=store)
    good = PutOp(("ok",), "k", {"v": 1})
    bad_ops: list[tuple[Any, type[Exception]]] = [
        (PutOp(("ok",), "k2", {"v": object()}), agentmem.InvalidInput),
        (PutOp(("ok",), "k2", {"v": float("nan")}), agentmem.InvalidInput),
        (PutOp(("ok",), "k2", {1: "int key"}), agentmem.InvalidInput),
        (PutOp(("ok",), "k2", {"a": {None: 1}}), agentmem.InvalidInput),
        (PutOp(("ok",), "k2", ["not", "a", "dict"]), agentmem.InvalidInput),
        (PutOp(("ok",), 7, {"v": 1}), agentmem.InvalidInput),
        (PutOp(("ok",), "\ud800", {"v": 1}), agentmem.InvalidInput),
        (PutOp(("ok",), "k2", {"v": 1}, ttl=-1), agentmem.InvalidInput),
        (PutOp(("ok",), "k2", {"v": 1}, ttl=float("inf")), agentmem.InvalidInput),
        (PutOp(("ok", 1), "k2", {"v": 1}), InvalidNamespaceError),
        (PutOp("ok", "k2", {"v": 1}), InvalidNamespaceError),
        (GetOp(("ok", None), "k"), InvalidNamespaceError),
        (SearchOp(("ok",), {"v": {"$regex": "x"}}), agentmem.InvalidInput),
        (SearchOp(("ok",), limit="10"), agentmem.InvalidInput),
        (
            ListNamespacesOp(match_conditions=(MatchCondition("infix", ("a",)),)),
            agentmem.InvalidInput,
        ),
        ("not an op", agentmem.InvalidInput),
    ]
    circular: dict[str, Any] = {}
    circular["self"] = circular
    bad_ops.append((PutOp(("ok",), "k2", circular), agentmem.InvalidInput))
    for bad, error in bad_ops:
        with pytest.raises(error):
            subject.batch([good, bad])
        assert subject.get(("ok",), "k") is None, f"{bad!r} refused the whole batch"
    # LangGraph's own checks run in its methods.
    with pytest.raises(InvalidNamespaceError):
        subject.put(("a.b",), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        subject.put(("langgraph",), "k", {"v": 1})
    for index in [
        {"dims": 0, "embed": lambda texts: [[0.0] for _ in texts]},
        {"dims": True, "embed": lambda texts: [[0.0] for _ in texts]},
        {"dims": 1, "embed": lambda texts: [[0.0] for _ in texts], "fields": "text"},
        ["dims"],
    ]:
        with pytest.raises(agentmem.InvalidInput):
            AgentmemStore(store=store, index=index)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        AgentmemStore()
    with pytest.raises(ValueError):
        AgentmemStore("sqlite:///tmp/x.db", store=store)
    assert subject.search(()) == [] and subject.list_namespaces() == []


def test_threads_and_coroutines_share_one_store(store):
    subject = AgentmemStore(store=store)

    def write(n: int) -> None:
        subject.put(("threads",), f"k{n % 10}", {"n": n})
        subject.put(("threads", "own"), f"k{n}", {"n": n})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(40)))

    async def many() -> None:
        await asyncio.gather(*(subject.aput(("async",), f"k{n}", {"n": n}) for n in range(20)))

    asyncio.run(many())
    assert len(subject.search(("threads",), limit=100)) == 50
    shared = subject.search(("threads",), filter={"n": {"$lt": 1000}}, limit=100)
    assert len({(i.namespace, i.key) for i in shared}) == 50, "one item per key"
    assert sorted(i.value["n"] for i in subject.search(("async",), limit=100)) == list(range(20))


class State(TypedDict):
    user: str
    seen: list[str]


def _remember(state: State) -> dict[str, Any]:
    store = get_store()
    namespace = ("memories", state["user"])
    store.put(namespace, str(uuid.uuid4()), {"text": f"visit by {state['user']}"})
    return {"seen": [i.value["text"] for i in store.search(namespace)]}


async def _aremember(state: State) -> dict[str, Any]:
    store = get_store()
    namespace = ("memories", state["user"])
    await store.aput(namespace, str(uuid.uuid4()), {"text": f"async visit by {state['user']}"})
    return {"seen": [i.value["text"] for i in await store.asearch(namespace)]}


def _graph(node: Any, store: AgentmemStore) -> Any:
    builder = StateGraph(State)
    builder.add_node("remember", node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder.compile(store=store)


async def test_a_graph_uses_the_store_from_sync_and_async_code(store):
    subject = AgentmemStore(store=store)
    first = await asyncio.to_thread(
        _graph(_remember, subject).invoke, {"user": "ada:1", "seen": []}
    )
    assert first["seen"] == ["visit by ada:1"]
    second = await _graph(_aremember, subject).ainvoke({"user": "ada:1", "seen": []})
    assert second["seen"] == ["visit by ada:1", "async visit by ada:1"]
