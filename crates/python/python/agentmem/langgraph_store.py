"""LangGraph's long-term memory store on an agentmem store: ``AgentmemStore``.

LangGraph's ``BaseStore`` (``store.put``, ``get``, ``search``, ``list_namespaces``, used by
graphs through ``builder.compile(store=...)``) over agentmem memory items, on every backend
agentmem has, shared by several processes, encrypted at rest when the store is::

    from agentmem.langgraph import AgentmemStore

    store = AgentmemStore("sqlite:///tmp/graphs.db")
    store.put(("users", "ada"), "prefs", {"theme": "dark", "size": 12})
    store.search(("users",), filter={"size": {"$gte": 10}})

It behaves as LangGraph's reference ``InMemoryStore`` does (see the README for the few
places where a persistent store cannot or should not). How items are kept:

- Each item is one agentmem memory item of kind ``long_term`` in the scope
  ``{"agent": "langgraph-store"}`` (``SCOPE``), marked by a ``langgraph_store`` entry in its
  metadata holding the namespace (a list of strings) and the key. Items of other tools, even
  in that scope, are not store items, and store items are visible only from that scope, so
  they stay out of other agents' context.
- The value is the item's text: the value's JSON, as given (key order, numbers; read back
  with ``json.loads``, so filters compare numbers as numbers), and what a ``query`` searches.
- Namespace and key become the item's key, the canonical JSON of ``[namespace, key]`` (so
  labels may hold any text: ``.``, ``:``, ``/``, spaces, non-ASCII), or ``sha256:`` and its
  hash when that is too long or holds control characters; the item's id is derived from it
  too (``lgstore-`` and the hash), so ``get`` and ``delete`` are one lookup and a put is an
  upsert by key that keeps ``created_at``.
- ``ttl`` (minutes) becomes the item's expiry, counted from the put: an expired item is gone
  for every reader at once (``Store.purge`` removes it from disk). Reads do not extend it.
- With an ``index`` (``dims``, ``embed``, ``fields``, as LangGraph's), a put embeds the
  value's fields with ``embed`` and keeps the vectors in the item's mark (``vectors``: each
  field path's vector, little-endian float64, base64), so they live, expire and are deleted
  with the item and are encrypted with it; a ``query`` then ranks by cosine similarity, as
  ``InMemoryStore`` does.

Every method has a sync and an async form (``abatch`` runs ``batch`` on a worker thread; the
native code releases the GIL): one store serves ``graph.invoke`` and ``graph.ainvoke``, from
any thread.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import math
import re
import struct
from collections.abc import Iterable, Mapping
from datetime import datetime
from numbers import Real
from typing import Any, Literal

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from ._agentmem import CorruptData, InvalidInput, Unsupported
from ._store import PathLike, Store, _check_source, _OnStore
from ._store import open as _open

__all__ = ["KIND", "SCOPE", "AgentmemStore"]

#: The memory kind of every store item.
KIND = "long_term"
#: The memory scope of every store item.
SCOPE: Mapping[str, str] = {"agent": "langgraph-store"}
#: The metadata entry that marks a store item: ``{"namespace": [...], "key": "..."}``.
MARK = "langgraph_store"

_ID_PREFIX = "lgstore-"
_HASHED_KEY_PREFIX = "sha256:"
_MAX_KEY_BYTES = 256
# What agentmem refuses in a memory key (Unicode category Cc, Rust's `char::is_control`).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_FRACTION = re.compile(r"\.(\d+)")

Namespace = tuple[str, ...]


# Encoding


def _path(namespace: Namespace, key: str) -> str:
    """``[namespace, key]`` as canonical JSON: distinct items never share it."""
    return json.dumps([list(namespace), key], ensure_ascii=False, separators=(",", ":"))


def _digest(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def _item_id(path: str) -> str:
    """The memory id of the item at ``path``."""
    return _ID_PREFIX + _digest(path)


def _item_key(path: str) -> str:
    """The memory key of the item at ``path``: the path itself when agentmem takes it as a key
    (at most 256 bytes, no control characters), else its hash. A path starts with ``[``, so
    the two forms never meet."""
    if len(path.encode("utf-8")) <= _MAX_KEY_BYTES and not _CONTROL.search(path):
        return path
    return _HASHED_KEY_PREFIX + _digest(path)


def _is_text(value: Any) -> bool:
    """Whether ``value`` is a string agentmem can hold (UTF-8: no lone surrogates)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _namespace(namespace: Any, what: str = "namespace") -> Namespace:
    """``namespace`` checked: a tuple (or list) of strings."""
    if not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(
            f"a {what} is a tuple of strings, got {type(namespace).__name__}"
        )
    for label in namespace:
        if not _is_text(label):
            raise InvalidNamespaceError(
                f"invalid {what} label {label!r} in {tuple(namespace)!r}: labels are strings"
                " (UTF-8)"
            )
    return tuple(namespace)


def _key(key: Any) -> str:
    if not _is_text(key):
        raise InvalidInput(f"invalid input: an item key is a string (UTF-8), got {key!r}")
    return key


def _value_text(value: Any) -> str:
    """The value as JSON text, as given; ``InvalidInput`` when JSON cannot hold it exactly."""
    if not isinstance(value, Mapping):
        raise InvalidInput(
            f"invalid input: an item value is a dict (or None to delete), got"
            f" {type(value).__name__}"
        )
    value = dict(value)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidInput(f"invalid input: an item value must be JSON: {error}") from None
    # JSON would turn other keys into strings: refuse them rather than change the value.
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for name, inner in node.items():
                if not isinstance(name, str):
                    raise InvalidInput(
                        f"invalid input: an item value's keys must be strings, got {name!r}"
                    )
                stack.append(inner)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate: JSON escapes it, and reads it back as it was.
        text = json.dumps(value, allow_nan=False)
    return text


def _minutes(ttl: Any) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, Real) or not math.isfinite(ttl) or ttl < 0:
        raise InvalidInput(f"invalid input: ttl is a number of minutes, zero or more, got {ttl!r}")
    return float(ttl)


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"invalid input: {what} is an integer, got {value!r}")
    return value


def _check_filter(filter: Any) -> None:
    """A search filter: a dict of field to value, or to ``{"$op": value}``."""
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidInput(f"invalid input: a search filter is a dict, got {filter!r}")
    stack = list(filter.values())
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for name, inner in node.items():
                if isinstance(name, str) and name.startswith("$") and name not in _OPERATORS:
                    raise InvalidInput(
                        f"invalid input: unsupported filter operator {name!r} (supported:"
                        f" {', '.join(sorted(_OPERATORS))})"
                    )
                stack.append(inner)
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


def _check(op: Any) -> Any:
    """``op`` checked before anything runs (a bad op writes nothing); a put comes back with its
    value as JSON text and its ttl in minutes."""
    if isinstance(op, GetOp):
        _namespace(op.namespace)
        _key(op.key)
    elif isinstance(op, SearchOp):
        _namespace(op.namespace_prefix, "namespace prefix")
        _check_filter(op.filter)
        _count(op.limit, "limit")
        _count(op.offset, "offset")
        if op.query is not None and not _is_text(op.query):
            raise InvalidInput(f"invalid input: a search query is a string, got {op.query!r}")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if not isinstance(condition, MatchCondition) or condition.match_type not in (
                "prefix",
                "suffix",
            ):
                raise InvalidInput(f"invalid input: unsupported match condition {condition!r}")
            _namespace(condition.path, "namespace path")
        if op.max_depth is not None:
            _count(op.max_depth, "max_depth")
        _count(op.limit, "limit")
        _count(op.offset, "offset")
    elif isinstance(op, PutOp):
        namespace, key = _namespace(op.namespace), _key(op.key)
        text = _value_text(op.value) if op.value is not None else None
        if op.index is not None and op.index is not False:
            _paths(op.index, "a put's index")
        return namespace, key, text, _minutes(op.ttl)
    else:
        raise InvalidInput(f"invalid input: unknown store operation {type(op).__name__}")
    return None


# The index (semantic search)

#: A put's embedded texts: each field path and its text.
_Texts = list[tuple[str, str]]
#: An item's vectors: each field path's.
_Vectors = dict[str, list[float]]


class _Index:
    """An ``index`` configuration, checked: the embeddings, the dimensions every vector has,
    and the fields a put embeds unless it names its own."""

    def __init__(self, config: IndexConfig) -> None:
        if not isinstance(config, Mapping):
            raise InvalidInput(f"invalid input: index is a dict (an IndexConfig), got {config!r}")
        dims = config.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims <= 0:
            raise InvalidInput(f"invalid input: index dims is a positive integer, got {dims!r}")
        #: How many numbers each vector has.
        self.dims: int = dims
        #: What embeds the texts (LangGraph's wrapping of ``embed``).
        self.embeddings = ensure_embeddings(config.get("embed"))
        fields = config.get("fields") or ["$"]
        #: The field paths a put embeds by default, each with its parsed form.
        self.fields = [(path, tokenize_path(path)) for path in _paths(fields, "index fields")]

    def texts(self, value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> _Texts:
        """What a put of ``value`` embeds (``index``: the put's own fields, or ``False``): as
        ``InMemoryStore`` chooses, a field holding several texts giving ``path.0``, ``path.1``."""
        if index is False:
            return []
        fields = self.fields if index is None else [(p, tokenize_path(p)) for p in index]
        found: _Texts = []
        for path, tokens in fields:
            texts = get_text_at_path(value, tokens)
            if len(texts) > 1:
                found.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
            elif texts:
                found.append((path, texts[0]))
        return found

    def checked(self, vectors: Any, count: int) -> list[list[float]]:
        """What ``embed`` returned for ``count`` texts, checked: ``count`` vectors of ``dims``
        finite numbers each (anything else would be stored and ranked wrongly)."""
        try:
            vectors = [list(vector) for vector in vectors]
        except TypeError:
            raise InvalidInput(
                "invalid input: the index's embed did not return a list of vectors"
            ) from None
        if len(vectors) != count:
            raise InvalidInput(
                f"invalid input: the index's embed returned {len(vectors)} vectors for"
                f" {count} texts"
            )
        for vector in vectors:
            if len(vector) != self.dims or not all(
                isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(x) for x in vector
            ):
                raise InvalidInput(
                    f"invalid input: the index's embed returned a vector that is not"
                    f" {self.dims} finite numbers (index dims)"
                )
        return [[float(x) for x in vector] for vector in vectors]


def _paths(paths: Any, what: str) -> list[str]:
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise InvalidInput(f"invalid input: {what} is a list of field paths, got {paths!r}")
    for path in paths:
        if not _is_text(path) or not path:
            raise InvalidInput(f"invalid input: {what} holds a field path that is not text")
    return list(paths)


def _encode_vector(vector: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vector)}d", *vector)).decode("ascii")


def _decode_vectors(raw: Mapping[str, Any]) -> _Vectors:
    """The vectors an item's mark holds (none when it was put without an index)."""
    stored = raw["metadata"][MARK].get("vectors")
    if stored is None:
        return {}
    if not isinstance(stored, dict):
        raise _corrupt(raw, "its vectors are not a map of field path to vector")
    vectors: _Vectors = {}
    for path, text in stored.items():
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise _corrupt(raw, f"the vector of {path!r} is not base64") from None
        if not data or len(data) % 8:
            raise _corrupt(raw, f"the vector of {path!r} is not a list of float64")
        vectors[path] = list(struct.unpack(f"<{len(data) // 8}d", data))
    return vectors


def _cosine(query: list[float], query_norm: float, vector: list[float]) -> float:
    """Cosine similarity, 0 when either vector is zero (as ``InMemoryStore`` scores)."""
    dot = sum(a * b for a, b in zip(query, vector))
    norms = query_norm * math.sqrt(sum(b * b for b in vector))
    return dot / norms if norms > 0 else 0.0


def _ranked(
    candidates: list[tuple[SearchItem, _Vectors]], query: list[float], offset: int, limit: int
) -> list[SearchItem]:
    """``candidates`` ranked as ``InMemoryStore`` ranks them: by each item's best-scoring vector
    (ties in store order), the page ``offset``/``limit`` of those, then, while the page is not
    full, items without vectors (put with ``index=False``, or before the index) unscored. A
    vector of other dimensions (another embedding model) does not score."""
    query_norm = math.sqrt(sum(a * a for a in query))
    scored = sorted(
        (
            (_cosine(query, query_norm, vector), position)
            for position, (_, vectors) in enumerate(candidates)
            for vector in vectors.values()
            if len(vector) == len(query)
        ),
        key=lambda hit: hit[0],
        reverse=True,
    )
    seen: set[int] = set()
    kept: list[SearchItem] = []
    for score, position in scored:
        if position in seen:
            continue
        rank = len(seen)
        seen.add(position)
        if rank >= offset + limit:
            break
        if rank >= offset:
            kept.append(_with_score(candidates[position][0], score))
    if len(kept) < limit:
        unscored = [item for i, (item, _) in enumerate(candidates) if i not in seen]
        kept.extend(_with_score(item, None) for item in unscored[: limit - len(kept)])
    return kept


def _with_score(item: SearchItem, score: float | None) -> SearchItem:
    return SearchItem(score=score, **_fields(item))


def _fields(item: Item) -> dict[str, Any]:
    """What an item is besides its score."""
    return {
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": item.created_at,
        "updated_at": item.updated_at,
    }


# Decoding


def _time(text: str) -> datetime:
    """An RFC 3339 time from the store (``Z`` and any number of fraction digits included,
    which ``fromisoformat`` takes only from Python 3.11)."""
    text = text.replace("Z", "+00:00")
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    return datetime.fromisoformat(text)


def _corrupt(raw: Mapping[str, Any], why: str) -> CorruptData:
    return CorruptData(f"corrupt data: store item {raw.get('id')!r}: {why}")


def _decode(raw: Mapping[str, Any], score: float | None = None) -> SearchItem | None:
    """The store item a memory item holds, or ``None`` when it is not one (another tool's)."""
    mark = (raw.get("metadata") or {}).get(MARK)
    if raw.get("kind") != KIND or raw.get("scope") != SCOPE or not isinstance(mark, dict):
        return None
    namespace, key = mark.get("namespace"), mark.get("key")
    if not isinstance(namespace, list) or not all(isinstance(n, str) for n in namespace):
        raise _corrupt(raw, "its namespace is not a list of strings")
    if not isinstance(key, str):
        raise _corrupt(raw, "its key is not a string")
    path = _path(tuple(namespace), key)
    if raw.get("id") != _item_id(path) or raw.get("key") != _item_key(path):
        return None
    try:
        value = json.loads(raw["text"])
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise _corrupt(raw, "its value is not a JSON object")
    return SearchItem(
        namespace=tuple(namespace),
        key=key,
        value=value,
        created_at=_time(raw["created_at"]),
        updated_at=_time(raw["updated_at"]),
        score=score,
    )


def _plain(item: SearchItem) -> Item:
    """A search result as the plain ``Item`` that ``get`` returns."""
    return Item(**_fields(item))


# Matching, as `langgraph.store.memory.InMemoryStore` does


def _compare_values(item_value: Any, filter_value: Any) -> bool:
    """Whether a value matches a filter value (nested dicts and lists field by field)."""
    if isinstance(filter_value, dict):
        if any(k.startswith("$") for k in filter_value):
            return all(
                _apply_operator(item_value, op_key, op_value)
                for op_key, op_value in filter_value.items()
            )
        if not isinstance(item_value, dict):
            return False
        return all(_compare_values(item_value.get(k), v) for k, v in filter_value.items())
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare_values(iv, fv) for iv, fv in zip(item_value, filter_value))
        )
    return item_value == filter_value


def _apply_operator(value: Any, operator: str, op_value: Any) -> bool:
    """One operator, as the reference applies it (order operators compare as numbers); where
    the reference would fail (a missing field, a text that is no number), no match, except
    two texts, which compare as texts."""
    if operator == "$eq":
        return value == op_value
    if operator == "$ne":
        return value != op_value
    try:
        left, right = float(value), float(op_value)
    except (TypeError, ValueError):
        if isinstance(value, str) and isinstance(op_value, str):
            left, right = value, op_value  # type: ignore[assignment]
        else:
            return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    if operator == "$lte":
        return left <= right
    raise InvalidInput(f"invalid input: unsupported filter operator {operator!r}")


def _matches(item: Item, filter: Mapping[str, Any] | None) -> bool:
    if not filter:
        return True
    return all(_compare_values(item.value.get(k), v) for k, v in filter.items())


def _does_match(condition: MatchCondition, namespace: Namespace) -> bool:
    """Whether a namespace meets a prefix or suffix condition (``*`` matches any label)."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path)
    else:
        pairs = zip(reversed(namespace), reversed(path))
    return all(p == "*" or k == p for k, p in pairs)


class _Snapshot:
    """Every store item, read once per batch when a search or a listing needs them: in the
    reference's order (namespaces in the order their oldest item was stored, each one's
    items oldest first)."""

    def __init__(self, store: AgentmemStore) -> None:
        self._store = store
        # Each item with the memory item it was decoded from.
        self._read: list[tuple[SearchItem, Mapping[str, Any]]] | None = None
        self._items: list[SearchItem] | None = None
        self._with_vectors: list[tuple[SearchItem, _Vectors]] | None = None
        #: How many memory items the store's kind and scope hold (other tools' included).
        self.held = 0

    def _entries(self) -> list[tuple[SearchItem, Mapping[str, Any]]]:
        if self._read is None:
            raws = self._store.store._native.memories(KIND, dict(SCOPE), True, None)
            self.held = len(raws)
            read = [
                (item, raw)
                for item, raw in ((_decode(raw), raw) for raw in raws)
                if item is not None
            ]
            first: dict[Namespace, int] = {}
            for index, (item, _) in enumerate(read):
                first.setdefault(item.namespace, index)
            read.sort(key=lambda entry: first[entry[0].namespace])
            self._read = read
        return self._read

    def items(self) -> list[SearchItem]:
        if self._items is None:
            self._items = [item for item, _ in self._entries()]
        return self._items

    def with_vectors(self) -> list[tuple[SearchItem, _Vectors]]:
        """The items, each with its vectors: decoded only when a search ranks by meaning."""
        if self._with_vectors is None:
            self._with_vectors = [(item, _decode_vectors(raw)) for item, raw in self._entries()]
        return self._with_vectors


class _Plan:
    """A batch checked before anything runs (a bad op, or a failing ``embed``, writes
    nothing): its puts, the last of each (namespace, key) winning, and, with an index, the
    texts to embed for them and the queries to embed for its searches."""

    def __init__(self, store: AgentmemStore, ops: Iterable[Op]) -> None:
        #: The ops, in order.
        self.ops = list(ops)
        checked = [_check(op) for op in self.ops]
        #: Each put's value as JSON text (``None``: a delete) and ttl in minutes.
        self.writes: dict[tuple[Namespace, str], tuple[str | None, float | None]] = {}
        put_ops: dict[tuple[Namespace, str], PutOp] = {}
        for op, put in zip(self.ops, checked):
            if isinstance(op, PutOp):
                namespace, key, text, ttl = put
                self.writes[(namespace, key)] = (text, ttl)
                put_ops[(namespace, key)] = op
        self._index = store._index
        # Each put's embedded field paths and texts; the distinct texts are embedded once.
        self._put_texts: dict[tuple[Namespace, str], _Texts] = {}
        if self._index is not None:
            for at, op in put_ops.items():
                if op.value is not None:
                    self._put_texts[at] = self._index.texts(op.value, op.index)
        #: The distinct texts the puts embed.
        self.texts = list(dict.fromkeys(t for texts in self._put_texts.values() for _, t in texts))
        #: The distinct queries the searches embed.
        self.queries = (
            list(
                dict.fromkeys(op.query for op in self.ops if isinstance(op, SearchOp) and op.query)
            )
            if self._index is not None
            else []
        )
        #: Each put's vectors, by field path (after ``embed``/``aembed``).
        self.put_vectors: dict[tuple[Namespace, str], _Vectors] = {}
        #: Each query's vector (after ``embed``/``aembed``).
        self.query_vectors: dict[str, list[float]] = {}

    def embed(self) -> None:
        """Embeds ``texts`` and ``queries`` (with an index) by the sync methods."""
        if self._index is not None:
            embeddings = self._index.embeddings
            self._embedded(
                self._index,
                embeddings.embed_documents(self.texts) if self.texts else [],
                [embeddings.embed_query(query) for query in self.queries],
            )

    async def aembed(self) -> None:
        """Embeds ``texts`` and ``queries`` (with an index) by the async methods."""
        if self._index is not None:
            embeddings = self._index.embeddings
            documents = await embeddings.aembed_documents(self.texts) if self.texts else []
            queries = await asyncio.gather(*map(embeddings.aembed_query, self.queries))
            self._embedded(self._index, documents, list(queries))

    def _embedded(self, index: _Index, documents: Any, queries: list[Any]) -> None:
        """Takes what ``embed`` returned for ``texts`` and ``queries``, checked."""
        by_text = dict(zip(self.texts, index.checked(documents, len(self.texts))))
        self.query_vectors = dict(zip(self.queries, index.checked(queries, len(self.queries))))
        self.put_vectors = {
            at: {path: by_text[text] for path, text in texts}
            for at, texts in self._put_texts.items()
        }


class AgentmemStore(_OnStore, BaseStore):
    """A LangGraph store on the agentmem store ``url`` names (or an opened ``store``).

    ``key_file`` opens an encrypted store (see ``agentmem.open``). ``ttl`` (a LangGraph
    ``TTLConfig``) sets ``default_ttl`` (minutes) for puts that give none; reads never
    extend a ttl, so ``refresh_on_read=True`` is refused.

    Without ``index``, a ``query`` searches the values' text (agentmem's word search): the
    items holding at least one of its words, best first, with a score. With ``index`` (a
    LangGraph ``IndexConfig``: ``dims``, ``embed``, ``fields``), puts embed their fields and
    a ``query`` ranks by meaning, as ``InMemoryStore`` does (see the module docs); ``embed``
    returning anything but one vector of ``dims`` finite numbers per text is
    ``agentmem.InvalidInput``, and the put is not written.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        url: str | None = None,
        *,
        store: Store | None = None,
        key_file: PathLike | None = None,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        _check_source("AgentmemStore", url, store, key_file)
        self._index = _Index(index) if index is not None else None
        #: The index configuration as given (``None``: a query searches words).
        self.index_config: IndexConfig | None = index
        ttl_config = dict(ttl or {})
        if ttl_config.get("refresh_on_read"):
            raise Unsupported(
                "unsupported: AgentmemStore counts a ttl from the item's last put; reads do not"
                " refresh it (set refresh_on_read=False)"
            )
        ttl_config["refresh_on_read"] = False
        _minutes(ttl_config.get("default_ttl"))
        #: What the store does with ttls: ``default_ttl`` for puts without one; no refresh.
        self.ttl_config: TTLConfig = ttl_config  # type: ignore[assignment]
        #: The agentmem store the items live in.
        self.store: Store = store if store is not None else _open(url, key_file=key_file)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"<AgentmemStore {self.store.url}>"

    # The batch

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs ``ops`` as LangGraph's ``InMemoryStore`` does: every op is checked first (bad
        input raises and writes nothing); reads see the store as it was before the batch's
        puts, which are applied last, the last put of each (namespace, key) winning. Each put
        is atomic; the batch as a whole is not a transaction."""
        plan = _Plan(self, ops)
        plan.embed()
        return self._run(plan)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread, embedding (with an ``index``) by the async methods."""
        plan = _Plan(self, ops)
        await plan.aembed()
        return await asyncio.to_thread(self._run, plan)

    def _run(self, plan: _Plan) -> list[Result]:
        snapshot = _Snapshot(self)
        results: list[Result] = []
        for op in plan.ops:
            if isinstance(op, GetOp):
                results.append(self._get(tuple(op.namespace), op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, snapshot, plan.query_vectors))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, snapshot))
            else:
                results.append(None)
        for (namespace, key), (text, ttl) in plan.writes.items():
            self._put(namespace, key, text, ttl, plan.put_vectors.get((namespace, key)))
        return results

    # The operations

    def _get(self, namespace: Namespace, key: str) -> Item | None:
        raw = self.store._native.get_memory(_item_id(_path(namespace, key)))
        item = _decode(raw) if raw is not None else None
        if item is None or item.namespace != namespace or item.key != key:
            return None
        return _plain(item)

    def _search(
        self, op: SearchOp, snapshot: _Snapshot, query_vectors: Mapping[str, list[float]]
    ) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        n = len(prefix)

        def wanted(item: SearchItem) -> bool:
            return item.namespace[:n] == prefix and _matches(item, op.filter)

        if op.query and op.query in query_vectors:
            candidates_with_vectors = [pair for pair in snapshot.with_vectors() if wanted(pair[0])]
            return _ranked(candidates_with_vectors, query_vectors[op.query], op.offset, op.limit)
        if op.query:
            # Every hit, so that the prefix and filter choose among all of them.
            snapshot.items()
            hits = self.store._native.search_memories(
                op.query, max(snapshot.held, 1), KIND, dict(SCOPE), True
            )
            candidates = [
                item
                for item in (_decode(hit["item"], float(hit["score"])) for hit in hits)
                if item is not None
            ]
        else:
            candidates = snapshot.items()
        found = [item for item in candidates if wanted(item)]
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp, snapshot: _Snapshot) -> list[Namespace]:
        namespaces: Iterable[Namespace] = {item.namespace for item in snapshot.items()}
        if op.match_conditions:
            namespaces = [
                ns
                for ns in namespaces
                if all(_does_match(condition, ns) for condition in op.match_conditions)
            ]
        if op.max_depth is not None:
            listed = sorted({ns[: op.max_depth] for ns in namespaces})
        else:
            listed = sorted(namespaces)
        return listed[op.offset : op.offset + op.limit]

    def _put(
        self,
        namespace: Namespace,
        key: str,
        text: str | None,
        ttl: Any,
        vectors: _Vectors | None,
    ) -> None:
        path = _path(namespace, key)
        if text is None:
            self.store._native.delete_memory(_item_id(path))
            return
        mark: dict[str, Any] = {"namespace": list(namespace), "key": key}
        if vectors:
            mark["vectors"] = {field: _encode_vector(v) for field, v in vectors.items()}
        self.store._native.put_memory(
            text,
            KIND,
            dict(SCOPE),
            _item_key(path),
            {MARK: mark},
            ttl * 60 if ttl is not None else None,
            _item_id(path),
        )
