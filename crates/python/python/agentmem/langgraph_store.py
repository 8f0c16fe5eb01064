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

Every method has a sync and an async form (``abatch`` runs ``batch`` on a worker thread; the
native code releases the GIL): one store serves ``graph.invoke`` and ``graph.ainvoke``, from
any thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from numbers import Real
from typing import Any

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
        return namespace, key, text, _minutes(op.ttl)
    else:
        raise InvalidInput(f"invalid input: unknown store operation {type(op).__name__}")
    return None


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
    return Item(
        value=item.value,
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


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
        self._items: list[SearchItem] | None = None
        #: How many memory items the store's kind and scope hold (other tools' included).
        self.held = 0

    def items(self) -> list[SearchItem]:
        if self._items is None:
            raws = self._store.store._native.memories(KIND, dict(SCOPE), True, None)
            self.held = len(raws)
            items = [item for item in map(_decode, raws) if item is not None]
            first: dict[Namespace, int] = {}
            for index, item in enumerate(items):
                first.setdefault(item.namespace, index)
            items.sort(key=lambda item: first[item.namespace])
            self._items = items
        return self._items


class AgentmemStore(_OnStore, BaseStore):
    """A LangGraph store on the agentmem store ``url`` names (or an opened ``store``).

    ``key_file`` opens an encrypted store (see ``agentmem.open``). ``ttl`` (a LangGraph
    ``TTLConfig``) sets ``default_ttl`` (minutes) for puts that give none; reads never
    extend a ttl, so ``refresh_on_read=True`` is refused. ``index`` (semantic search) is not
    supported yet: giving one raises ``agentmem.Unsupported``. A ``query`` searches the
    values' text (agentmem's word search): the items holding at least one of its words, best
    first, with a score.
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
        if index is not None:
            raise Unsupported(
                "unsupported: AgentmemStore has no semantic search (index) yet; leave index"
                " unset: a query then searches the values' words"
            )
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
        ops = list(ops)
        checked = [_check(op) for op in ops]
        snapshot = _Snapshot(self)
        results: list[Result] = []
        writes: dict[tuple[Namespace, str], Any] = {}
        for op, put in zip(ops, checked):
            if isinstance(op, GetOp):
                results.append(self._get(tuple(op.namespace), op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, snapshot))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, snapshot))
            else:
                writes[(put[0], put[1])] = put
                results.append(None)
        for namespace, key, text, ttl in writes.values():
            self._put(namespace, key, text, ttl)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    # The operations

    def _get(self, namespace: Namespace, key: str) -> Item | None:
        raw = self.store._native.get_memory(_item_id(_path(namespace, key)))
        item = _decode(raw) if raw is not None else None
        if item is None or item.namespace != namespace or item.key != key:
            return None
        return _plain(item)

    def _search(self, op: SearchOp, snapshot: _Snapshot) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        n = len(prefix)
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
        found = [
            item
            for item in candidates
            if item.namespace[:n] == prefix and _matches(item, op.filter)
        ]
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

    def _put(self, namespace: Namespace, key: str, text: str | None, ttl: Any) -> None:
        path = _path(namespace, key)
        if text is None:
            self.store._native.delete_memory(_item_id(path))
            return
        self.store._native.put_memory(
            text,
            KIND,
            dict(SCOPE),
            _item_key(path),
            {MARK: {"namespace": list(namespace), "key": key}},
            ttl * 60 if ttl is not None else None,
            _item_id(path),
        )
