"""Search by meaning: `search(mode=…)`, `search_memories(mode=…)`, `reindex` and `index_lag`,
with an OpenAI-compatible embeddings server started here (no real model needed)."""

from __future__ import annotations

import json
import math
import re
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import quote

import pytest

import agentmem

DIMENSIONS = 8
# Words that share a dimension: what the test model "knows" mean the same.
TOPICS = {
    **dict.fromkeys(("puppy", "dog", "canine"), 0),
    **dict.fromkeys(("invoice", "bill", "payment"), 1),
}

MESSAGES = [
    {"role": "user", "content": "I adopted a puppy"},
    {"role": "assistant", "content": "Please settle the invoice by Friday"},
    {"role": "user", "content": "The weather is nice today"},
]


def embed(text: str) -> list[float]:
    """A bag-of-words vector: topic words on their dimension, other words hashed into 2-7."""
    vector = [0.0] * DIMENSIONS
    for word in re.findall(r"[a-z]+", text.lower()):
        dimension = TOPICS.get(word)
        if dimension is None:
            dimension = 2 + zlib.crc32(word.encode()) % (DIMENSIONS - 2)
        vector[dimension] += 1.0
    return vector


class _Embeddings(BaseHTTPRequestHandler):
    """`POST /v1/embeddings` as OpenAI answers it."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        if self.path != "/v1/embeddings":
            self.send_error(404)
            return
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = request["input"]
        texts = [texts] if isinstance(texts, str) else texts
        body = json.dumps(
            {
                "object": "list",
                "model": request["model"],
                "data": [
                    {"object": "embedding", "index": i, "embedding": embed(text)}
                    for i, text in enumerate(texts)
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet: pytest shows failures, not every request."""


@pytest.fixture(scope="module")
def embed_server() -> Iterator[str]:
    """The base URL of an embeddings server on 127.0.0.1 (an ephemeral port)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["file", "sqlite"])
def recall_url(request, tmp_path, embed_server) -> Callable[..., str]:
    """Store URLs naming the test embedder, on the file and SQLite backends."""

    def url(messages: bool = True) -> str:
        base = f"file://{tmp_path / 'store'}" if request.param == "file" else None
        base = base or f"sqlite://{tmp_path / 'agent.db'}"
        options = f"embedder=http&embed_url={quote(embed_server, safe='')}&embed_model=test"
        return f"{base}?{options}" + ("&embed=messages" if messages else "")

    return url


def contents(hits: list[dict]) -> list[str]:
    return [h["message"]["content"] for h in hits]


def cosine(a: str, b: str) -> float:
    """The similarity the store should report between two texts under the test model."""
    u, v = embed(a), embed(b)
    dot = sum(x * y for x, y in zip(u, v))
    return dot / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))


def test_the_test_model_puts_synonyms_together():
    assert embed("canine")[0] == embed("puppy")[0] == 1.0
    assert embed("bill")[1] == 1.0 and embed("bill")[0] == 0.0


def test_reindex_then_semantic_search_finds_by_meaning(recall_url):
    store = agentmem.open(recall_url())
    store.append("pets", MESSAGES)
    store.append("other", [{"role": "user", "content": "my dog barks"}])
    assert store.search("canine", mode="keyword") == []
    # Nothing embedded yet: search by meaning finds nothing.
    assert store.search("canine", mode="semantic") == []
    assert store.reindex() == {"texts": 4, "embedded": 4}
    hits = store.search("canine", mode="semantic", session_id="pets")
    assert contents(hits)[0] == "I adopted a puppy"
    best = hits[0]
    assert best["session"] == "pets"
    assert (best["keyword_rank"], best["semantic_rank"]) == (None, 1)
    assert best["similarity"] == pytest.approx(cosine("canine", "I adopted a puppy"), rel=1e-5)
    assert best["score"] > 0
    # The message comes back in the OpenAI chat shape, as `load` gives it.
    assert best["message"]["role"] == "user" and best["message"]["id"]
    # Scoped to a session, limited.
    other = store.search("canine", mode="semantic", session_id="other")
    assert contents(other) == ["my dog barks"]
    assert len(store.search("canine", limit=1, mode="semantic")) == 1


def test_hybrid_fuses_keyword_and_meaning_and_is_the_default(recall_url):
    store = agentmem.open(recall_url())
    store.append("pets", MESSAGES)
    store.reindex()
    hits = store.search("invoice", mode="hybrid")
    assert contents(hits)[0] == "Please settle the invoice by Friday"
    assert (hits[0]["keyword_rank"], hits[0]["semantic_rank"]) == (1, 1)
    # Found by meaning alone: no keyword rank.
    by_meaning = store.search("canine")
    assert contents(by_meaning)[0] == "I adopted a puppy"
    assert by_meaning[0]["keyword_rank"] is None
    # A message appended since the last reindex is found by keyword all the same.
    store.append("pets", [{"role": "user", "content": "an unembedded zebra"}])
    hits = store.search("zebra", mode="hybrid")
    zebra = hits[contents(hits).index("an unembedded zebra")]
    assert (zebra["keyword_rank"], zebra["semantic_rank"]) == (1, None)


def test_memory_items_are_searched_by_meaning(recall_url):
    store = agentmem.open(recall_url(messages=False))
    store.store_memory("Ada's dog is called Rex", agent="ada")
    store.store_memory("The payment is due on Monday", agent="ada")
    store.store_memory("Bob owns a puppy", agent="bob")
    assert store.reindex() == {"texts": 3, "embedded": 3}
    hits = store.search_memories("canine", agent="ada", exact=True, mode="semantic")
    assert hits[0]["item"]["text"] == "Ada's dog is called Rex"
    assert all(h["item"]["scope"]["agent"] == "ada" for h in hits)
    assert {"keyword_rank", "semantic_rank", "similarity", "score"} <= hits[0].keys()
    # Hybrid by default when the URL names an embedder.
    (bill,) = store.search_memories("bill", limit=1)
    assert bill["item"]["text"] == "The payment is due on Monday"
    assert bill["semantic_rank"] == 1


def test_keyword_mode_keeps_the_usual_shapes(recall_url):
    store = agentmem.open(recall_url())
    store.append("pets", MESSAGES)
    store.store_memory("likes green tea")
    store.reindex()
    (hit,) = store.search("puppy", mode="keyword")
    assert hit.keys() == {"session", "message", "score"}
    (memory,) = store.search_memories("tea", mode="keyword")
    assert memory.keys() == {"item", "score"}


def test_index_lag_and_reindex_embed_only_what_is_missing(recall_url):
    store = agentmem.open(recall_url())
    store.append("pets", MESSAGES)
    assert store.index_lag() == {"texts": 3, "pending": 3, "model": None}
    assert store.reindex() == {"texts": 3, "embedded": 3}
    lag = store.index_lag()
    assert (lag["texts"], lag["pending"]) == (3, 0)
    assert lag["model"]["id"] == "test" and lag["model"]["dimensions"] == DIMENSIONS
    assert store.reindex() == {"texts": 3, "embedded": 0}
    store.store_memory("a new memory item")
    assert store.index_lag()["pending"] == 1
    assert store.reindex() == {"texts": 4, "embedded": 1}
    assert store.reindex(all=True) == {"texts": 4, "embedded": 4}
    # The same store reopened sees the vectors.
    again = agentmem.open(recall_url())
    assert again.index_lag()["pending"] == 0
    assert contents(again.search("canine", mode="semantic"))[0] == "I adopted a puppy"


def test_meaning_without_an_embedder_is_invalid_input(tmp_path):
    store = agentmem.open(f"sqlite://{tmp_path / 'plain.db'}")
    store.append("pets", MESSAGES)
    store.store_memory("likes green tea")
    for call in (
        lambda: store.search("canine", mode="semantic"),
        lambda: store.search("canine", mode="hybrid"),
        lambda: store.search_memories("tea", mode="semantic"),
        store.reindex,
        store.index_lag,
    ):
        with pytest.raises(agentmem.InvalidInput, match="embedder=local"):
            call()
    # Keyword search is the default there and works as always.
    assert contents(store.search("puppy")) == ["I adopted a puppy"]
    assert store.search_memories("tea")[0].keys() == {"item", "score"}


def test_messages_by_meaning_need_embed_messages(recall_url):
    store = agentmem.open(recall_url(messages=False))
    store.append("pets", MESSAGES)
    with pytest.raises(agentmem.InvalidInput, match="embed=messages"):
        store.search("canine", mode="semantic")
    # Messages are searched by keyword by default then; memory items by meaning.
    assert store.search("puppy")[0].keys() == {"session", "message", "score"}
    assert store.reindex() == {"texts": 0, "embedded": 0}


def test_an_unknown_mode_is_invalid_input(recall_url):
    store = agentmem.open(recall_url())
    with pytest.raises(
        agentmem.InvalidInput,
        match="unknown search mode .*valid values are keyword, semantic, hybrid",
    ):
        store.search("x", mode="fuzzy")  # type: ignore[arg-type]


async def test_async_store_searches_by_meaning(recall_url):
    store = await agentmem.open_async(recall_url())
    async with store:
        await store.append("pets", MESSAGES)
        assert (await store.index_lag())["pending"] == 3
        assert await store.reindex() == {"texts": 3, "embedded": 3}
        assert await store.reindex() == {"texts": 3, "embedded": 0}
        hits = await store.search("canine", mode="semantic")
        assert contents(hits)[0] == "I adopted a puppy"
        assert await store.search("canine", mode="keyword") == []
        await store.store_memory("Ada's dog is called Rex")
        assert (await store.reindex(all=True))["embedded"] == 4
        memories = await store.search_memories("canine", mode="hybrid")
        assert memories[0]["item"]["text"] == "Ada's dog is called Rex"


def test_a_missing_local_model_fails_only_the_calls_that_need_it(tmp_path):
    url = f"sqlite://{tmp_path / 'agent.db'}?embedder=local&model_dir={tmp_path / 'no-model'}"
    store = agentmem.open(url)
    store.append("pets", MESSAGES)
    assert contents(store.search("puppy", mode="keyword")) == ["I adopted a puppy"]
    for call in (store.reindex, lambda: store.search_memories("tea")):
        with pytest.raises(agentmem.NotFound, match="install-model"):
            call()
