"""PraisonAI memory on an agentmem store.

``AgentmemMemory`` is a memory object for ``praisonaiagents.Agent(memory=...)`` (tested with
praisonaiagents 1.7.17). It satisfies both of PraisonAI's runtime-checkable protocols:

- ``AgentMemoryProtocol``: ``get_context(query=None)`` gives the text the agent puts in its
  system prompt, under ``## Memory``, every time it builds the prompt (every turn; PraisonAI
  passes no query); ``save_session(name, conversation_history, metadata)`` replaces session
  ``name`` with the conversation so far;
- ``MemoryProtocol``: ``store_short_term`` / ``store_long_term(text, metadata=None)`` (after
  every turn the agent stores ``"User: …\\nAssistant: …"`` in both),
  ``search_short_term`` / ``search_long_term(query, limit=5)`` (the agent's memory tools and
  PraisonAI's session API call them) and ``get_all_memories()``;

and also ``DeletableMemoryProtocol`` and ``ResettableMemoryProtocol``::

    from praisonaiagents import Agent
    from agentmem.praisonai import AgentmemMemory

    memory = AgentmemMemory("sqlite:///tmp/agent.db", agent="alice", workspace="shop")
    agent = Agent(name="alice", instructions="...", memory=memory, auto_save="alice-chat")
    agent.run("Hi, I'm Ada")   # saves session "alice-chat" after the turn

Scope, as in the Rust agent layer: memory items are stored in the scope of ``agent``,
``workspace`` and ``owner`` (each optional; an agent name that is not a valid scope part, such
as ``"Research Agent!"``, becomes ``agent-`` + the same stable hash the Rust layer uses), and
read from what that scope sees: its own items, its workspace's and owner's, and global ones,
never another agent's. An adapter with no scope at all writes global items and reads every item
in the store.

**Sessions need** ``auto_save`` **and** ``run()`` / ``start()``. PraisonAI calls
``save_session`` only from ``Agent._auto_save_session``, which does nothing unless the agent
has ``auto_save`` set to a session name. ``run()``, ``start()``, ``astart()``,
``iter_stream()`` and the autonomous loops call it after the turn; ``chat()``, ``achat()`` and
``arun()`` never do. A streaming ``start()`` (``stream=True``, the default when stdout is a
terminal) calls it when it returns its generator, before the reply is streamed, so that turn
is saved by the next ``start()``/``run()``: pass ``stream=False`` or use ``iter_stream()`` to
save each turn as it ends. With a memory object, ``auto_save`` is given as
``Agent(..., auto_save="name")`` (a keyword PraisonAI marks deprecated in favour of
``MemoryConfig(auto_save=...)``, which cannot carry a memory object) or set afterwards with
``agent.auto_save = "name"``. An agent built with ``session_id`` saves its turns to
PraisonAI's own JSON session store instead and never calls ``save_session``. PraisonAI
swallows errors raised by ``save_session`` (it logs them at debug level), so an invalid session
name (``/``, ``:``, ``..``, …) loses the save silently: use names the ``agentmem`` command
accepts. ``store_short_term`` / ``store_long_term`` (after every turn) and ``get_context``
need no setting.

Everything lands in the store as the ``agentmem`` command and the Rust library see it: memory
items of kind ``short_term`` / ``long_term`` (``agentmem memories``), and sessions of
ordinary messages (``agentmem show NAME``), labelled with the adapter's owner and with the tags
``agent`` and ``workspace``. A new process opening the same URL with the same scope recalls
them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._agentmem import InvalidInput, Unsupported
from ._store import PathLike, Store, _check_source
from ._store import open as _open

__all__ = ["SHORT_TERM", "LONG_TERM", "AgentmemMemory", "scope_agent_name"]

#: The memory item kind ``store_short_term`` writes.
SHORT_TERM = "short_term"
#: The memory item kind ``store_long_term`` writes.
LONG_TERM = "long_term"

_MAX_NAME_BYTES = 128
_TRUST_RANK = {"untrusted": 0, "trusted": 1, "system": 2}


def _is_valid_name(value: str) -> bool:
    """Whether ``value`` follows agentmem's naming rules (``agentmem_core::validate_name``)."""
    if not value or len(value.encode("utf-8")) > _MAX_NAME_BYTES:
        return False
    if ".." in value or value.startswith(".") or "  " in value:
        return False
    if value.startswith(" ") or value.endswith(" "):
        return False
    return all(c.isalnum() or c in "_-.@+ " for c in value)


def _stable_hash(text: str) -> str:
    """The Rust agent layer's ``stable_hash``: two FNV-1a-style 64-bit hashes, 32 hex digits."""
    prime = 0x0000_0100_0000_01B3
    mask = (1 << 64) - 1
    a = 0xCBF2_9CE4_8422_2325
    b = 0x6C62_272E_07BB_0142
    for byte in text.encode("utf-8"):
        a = ((a ^ byte) * prime) & mask
        rotated = ((byte << 3) | (byte >> 5)) & 0xFF
        b = ((b ^ rotated) * prime) & mask
    return f"{a:016x}{b:016x}"


def scope_agent_name(name: str) -> str:
    """The agent part of a memory scope for the agent ``name``, as the Rust agent layer makes
    it: the name itself when it is a valid scope part, else ``agent-`` + a stable hash."""
    return name if _is_valid_name(name) else f"agent-{_stable_hash(name)}"


def _invalid_input(message: str) -> InvalidInput:
    """The error of bad input, worded as the native module words it."""
    return InvalidInput(f"invalid input: {message}")


def _checked(what: str, value: str | None) -> str | None:
    if value is not None and not _is_valid_name(value):
        raise _invalid_input(
            f"invalid memory scope {what} {value!r}: allowed are letters, "
            "digits, `_ - . @ +` and single interior spaces, 1 to 128 bytes"
        )
    return value


def _json_safe(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Metadata as plain JSON data (values JSON cannot hold are kept as their text)."""
    if not metadata:
        return {}
    return json.loads(json.dumps(dict(metadata), default=str))


def _trust_value(trust: Any) -> str:
    """A ``MemoryTrust`` (or its value) as its value; ``ValueError`` for anything else."""
    value = getattr(trust, "value", trust)
    if value not in _TRUST_RANK:
        raise ValueError(f"{trust!r} is not a valid MemoryTrust")
    return str(value)


def _trust_rank(value: Any) -> int:
    """PraisonAI's ``MemoryTrust.rank``: absent is trusted, an unknown value untrusted."""
    if value is None:
        return _TRUST_RANK["trusted"]
    return _TRUST_RANK.get(getattr(value, "value", value), _TRUST_RANK["untrusted"])


def _text(content: Any) -> tuple[str, Any]:
    """A message's content as text, and the original when it was not text (else ``None``)."""
    if content is None:
        return "", None
    if isinstance(content, str):
        return content, None
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts), _json_safe({"c": list(content)})["c"]
    return json.dumps(content, default=str), _json_safe({"c": content})["c"]


def _chat_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One PraisonAI chat-history item in the shape ``Store.save_session`` takes.

    Multi-part content is stored as its text parts (so the CLI and search see them) with the
    original parts kept in ``content_parts``; tool-call arguments given as objects are stored
    as JSON text, as OpenAI sends them; ``developer`` is stored as ``system``.
    """
    out = dict(message)
    if out.get("role") == "developer":
        out["role"] = "system"
    text, original = _text(out.get("content"))
    out["content"] = text
    if original is not None:
        out.setdefault("content_parts", original)
    calls = out.get("tool_calls")
    if isinstance(calls, list):
        fixed = []
        for call in calls:
            if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                function = dict(call["function"])
                arguments = function.get("arguments")
                if arguments is None:
                    function["arguments"] = ""
                elif not isinstance(arguments, str):
                    function["arguments"] = json.dumps(arguments, default=str)
                call = {**call, "function": function}
            fixed.append(call)
        out["tool_calls"] = fixed
    return out


class AgentmemMemory:
    """PraisonAI memory (``Agent(memory=AgentmemMemory(...))``) on an agentmem store.

    Opens ``url`` (any URL the ``agentmem`` command takes; ``key_file`` for an encrypted
    store), or uses an opened ``store``. Memory items are written in the scope of ``agent``,
    ``workspace`` and ``owner`` and read from what that scope sees (see the module's
    documentation). ``save_session`` needs ``auto_save`` on the agent and ``run()`` /
    ``start()``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        store: Store | None = None,
        agent: str | None = None,
        workspace: str | None = None,
        owner: str | None = None,
        key_file: PathLike | None = None,
    ) -> None:
        _check_source("AgentmemMemory", url, store, key_file, _invalid_input)
        #: The store the memory reads and writes.
        self.store: Store = store if store is not None else _open(url, key_file=key_file)
        #: The agent part of the scope (``scope_agent_name`` of the ``agent`` given).
        self.agent: str | None = scope_agent_name(agent) if agent is not None else None
        #: The workspace part of the scope.
        self.workspace: str | None = _checked("workspace", workspace)
        #: The owner part of the scope; sessions saved are labelled with it.
        self.owner: str | None = _checked("owner", owner)
        self._labelled: set[str] = set()

    def __repr__(self) -> str:
        scope = ", ".join(
            f"{k}={v!r}"
            for k, v in (
                ("agent", self.agent),
                ("workspace", self.workspace),
                ("owner", self.owner),
            )
            if v is not None
        )
        return f"<AgentmemMemory {self.store.url}{' ' + scope if scope else ''}>"

    @property
    def scope(self) -> dict[str, str]:
        """The scope items are stored in: the parts set of agent, workspace and owner."""
        parts = {"agent": self.agent, "workspace": self.workspace, "owner": self.owner}
        return {k: v for k, v in parts.items() if v is not None}

    def _scope_args(self) -> dict[str, str | None]:
        return {"agent": self.agent, "workspace": self.workspace, "owner": self.owner}

    def _sees(self, item: Mapping[str, Any]) -> bool:
        """Whether this memory reads ``item``: everything when unscoped, else an item whose
        every scope part set is this memory's."""
        if not self.scope:
            return True
        item_scope = item.get("scope") or {}
        return all(
            item_scope.get(part) in (None, mine) for part, mine in self._scope_args().items()
        )

    # AgentMemoryProtocol

    def get_context(self, query: str | None = None, **kwargs: Any) -> str:
        """The text for the agent's system prompt: the memory items this scope sees, those
        matching ``query`` first (the 10 best), else the 20 newest, one ``- text`` line each;
        ``""`` when there are none. Other keyword arguments are accepted and ignored."""
        return self.store.get_context(query, **self._scope_args())

    def save_session(
        self,
        name: str,
        conversation_history: Iterable[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Replaces session ``name`` with ``conversation_history`` (PraisonAI chat dicts) and
        its metadata with ``metadata`` (plus ``agent`` and ``workspace`` when scoped).

        The first save of a session through this object labels it with the owner and the
        tags ``agent`` / ``workspace`` (labels survive later saves). Other keyword arguments
        are accepted and ignored.
        """
        messages = [_chat_message(m) for m in (conversation_history or [])]
        meta = _json_safe(metadata)
        for part in ("agent", "workspace"):
            value = getattr(self, part)
            if value is not None:
                meta.setdefault(part, value)
        self.store.save_session(name, messages, meta)
        if name not in self._labelled:
            tags = {k: v for k, v in (("agent", self.agent), ("workspace", self.workspace)) if v}
            if tags or self.owner is not None:
                try:
                    self.store.tag(name, tags or None, owner=self.owner)
                except Unsupported:
                    pass  # a store without labels still keeps the session
            self._labelled.add(name)

    # MemoryProtocol

    def _store(
        self, text: str, kind: str, metadata: Mapping[str, Any] | None, **kwargs: Any
    ) -> str:
        meta = _json_safe(metadata)
        if kwargs.get("trust") is not None:
            meta["trust"] = _trust_value(kwargs["trust"])
        if kwargs.get("origin") is not None:
            meta["origin"] = str(kwargs["origin"])
        item = self.store.store_memory(text, kind=kind, metadata=meta or None, **self._scope_args())
        return str(item["id"])

    def store_short_term(
        self, text: str, metadata: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> str:
        """Stores ``text`` as a ``short_term`` memory item in this scope; returns its id.

        ``trust`` (a ``MemoryTrust`` or its value) and ``origin`` are recorded in the item's
        metadata as PraisonAI's own memory records them; other keyword arguments are ignored.
        """
        return self._store(text, SHORT_TERM, metadata, **kwargs)

    def store_long_term(
        self, text: str, metadata: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> str:
        """Stores ``text`` as a ``long_term`` memory item in this scope; returns its id
        (``trust`` and ``origin`` as in ``store_short_term``)."""
        return self._store(text, LONG_TERM, metadata, **kwargs)

    @staticmethod
    def _record(item: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": item["id"],
            "text": item["text"],
            "metadata": dict(item.get("metadata") or {}),
        }

    def _search(
        self, kind: str, query: str, limit: int, kwargs: dict[str, Any]
    ) -> list[dict[str, Any]]:
        if limit == 0:
            return []
        wanted: dict[str, Any] = dict(kwargs.get("metadata_filter") or {})
        if kwargs.get("user_id") is not None:
            wanted["user_id"] = kwargs["user_id"]
        min_trust = kwargs.get("min_trust")
        threshold = _trust_rank(_trust_value(min_trust)) if min_trust is not None else None
        cutoff = float(kwargs.get("relevance_cutoff") or 0.0)
        min_quality = float(kwargs.get("min_quality") or 0.0)
        filtered = bool(wanted) or threshold is not None or min_quality > 0
        unbounded = limit < 0
        if not (query or "").strip():
            items = self.store.memories(
                kind, limit=None if unbounded or filtered else limit, **self._scope_args()
            )
            hits = [(item, 0.0) for item in reversed(items)]  # newest first
        else:
            if unbounded:
                fetch = max(1, len(self.store.memories(kind, **self._scope_args())))
            else:
                fetch = limit * 10 if filtered else limit
            found = self.store.search_memories(query, fetch, kind=kind, **self._scope_args())
            hits = [(hit["item"], float(hit["score"])) for hit in found]
        results = []
        for item, score in hits:
            record = self._record(item)
            meta = record["metadata"]
            if any(meta.get(k) != v for k, v in wanted.items()):
                continue
            if threshold is not None and _trust_rank(meta.get("trust")) < threshold:
                continue
            if min_quality > 0 and float(meta.get("quality", 0.0) or 0.0) < min_quality:
                continue
            if score < cutoff:
                continue
            record["score"] = score
            results.append(record)
        return results if unbounded else results[:limit]

    def search_short_term(self, query: str, limit: int = 5, **kwargs: Any) -> list[dict[str, Any]]:
        """The ``short_term`` items this scope sees matching ``query``, best first, as
        PraisonAI's ``Memory`` returns them: ``{"id", "text", "metadata", "score"}``.

        An empty query lists the newest items (score ``0.0``); a negative ``limit`` means no
        limit. Honours PraisonAI's ``metadata_filter``, ``user_id`` (matched against the
        items' metadata), ``min_trust``, ``relevance_cutoff`` and ``min_quality``; other
        keyword arguments are ignored.
        """
        return self._search(SHORT_TERM, query, limit, kwargs)

    def search_long_term(self, query: str, limit: int = 5, **kwargs: Any) -> list[dict[str, Any]]:
        """The ``long_term`` items this scope sees matching ``query``, best first (as
        ``search_short_term``)."""
        return self._search(LONG_TERM, query, limit, kwargs)

    def get_all_memories(self, **kwargs: Any) -> list[dict[str, Any]]:
        """Every item this scope sees, short-term then long-term, oldest first, as PraisonAI's
        ``Memory`` lists them: ``{"id", "text", "metadata", "created_at", "type"}``."""
        out = []
        for kind in (SHORT_TERM, LONG_TERM):
            for item in self.store.memories(kind, **self._scope_args()):
                record = self._record(item)
                record["created_at"] = item.get("created_at")
                record["type"] = kind
                out.append(record)
        return out

    # DeletableMemoryProtocol and ResettableMemoryProtocol

    def delete_memory(self, memory_id: str, memory_type: str | None = None, **kwargs: Any) -> bool:
        """Deletes the item ``memory_id`` if this scope sees it (and it is of kind
        ``memory_type`` when given); whether it did."""
        item = self.store.get_memory(memory_id)
        if item is None or not self._sees(item):
            return False
        if memory_type is not None and item.get("kind") != memory_type:
            return False
        return self.store.delete_memory(memory_id)

    def delete_memories(self, memory_ids: Iterable[str]) -> int:
        """Deletes each item of ``memory_ids`` this scope sees; how many it deleted."""
        return sum(1 for memory_id in memory_ids if self.delete_memory(memory_id))

    def _reset(self, kind: str) -> None:
        for item in self.store.memories(kind, exact=True, **self._scope_args()):
            self.store.delete_memory(item["id"])

    def reset_short_term(self) -> None:
        """Deletes the ``short_term`` items stored in exactly this scope (not the global or
        workspace-wide ones it also sees)."""
        self._reset(SHORT_TERM)

    def reset_long_term(self) -> None:
        """Deletes the ``long_term`` items stored in exactly this scope."""
        self._reset(LONG_TERM)
