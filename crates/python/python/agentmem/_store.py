"""`Store`: an agentmem store with Python names and plain data."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any, Callable, Literal, TypeVar, Union

from . import _agentmem
from ._messages import flatten_info, from_stored, to_stored

Message = dict[str, Any]
PathLike = Union[str, "os.PathLike[str]"]
#: How a search ranks: ``"keyword"`` (the store's BM25), ``"semantic"`` (cosine similarity of
#: the embedder's vectors) or ``"hybrid"`` (both, fused by reciprocal rank).
SearchMode = Literal["keyword", "semantic", "hybrid"]
_Self = TypeVar("_Self", bound="_Closes")


def _time(value: datetime | str | None) -> str | None:
    """A time for the native module: RFC 3339; a naive datetime is taken as UTC."""
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.isoformat()


def _seconds(value: Any) -> float | None:
    """Seconds from a number or a `timedelta`."""
    if value is None:
        return None
    total = getattr(value, "total_seconds", None)
    return float(total() if callable(total) else value)


def _scope(agent: str | None, workspace: str | None, owner: str | None) -> dict[str, str] | None:
    """A memory scope for the native module: `None` when no part is given."""
    parts = {"agent": agent, "workspace": workspace, "owner": owner}
    scope = {name: value for name, value in parts.items() if value is not None}
    return scope or None


def open(url: str, *, key_file: PathLike | None = None) -> Store:  # noqa: A001
    """Opens the store ``url`` names: every URL the ``agentmem`` command takes.

    ``file:///path``, ``sqlite:///path/agent.db``, ``redis://…``, ``redis+cluster://…``,
    ``postgres://…``, ``mongodb://…`` (TLS options as in the README). An encrypted store
    needs its key: ``key_file`` (a file readable by its owner only), else the
    ``AGENTMEM_ENCRYPTION_KEY`` environment variable, or the URL's own ``key_file=`` option.
    """
    native = _agentmem.open(url, os.fspath(key_file) if key_file is not None else None)
    return Store(native)


class _Opened:
    """What every handle on an opened store tells about it."""

    _native: _agentmem.NativeStore

    @property
    def backend(self) -> str:
        """The backend's name: ``file``, ``sqlite``, ``redis``, ``postgres`` or ``mongodb``."""
        return self._native.backend

    @property
    def url(self) -> str:
        """The store URL with any password hidden."""
        return self._native.url


class _Closes:
    """A context manager that is its own value and calls ``close`` on the way out."""

    def close(self) -> None:
        """Releases what the object holds."""

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Store(_Opened, _Closes):
    """One opened store. Thread-safe; every call releases the GIL while Rust works.

    Messages go in and come out in the OpenAI chat shape (``role``, ``content``, optional
    ``tool_calls``, ``tool_call_id``, ``metadata``); ``load`` adds ``id`` and ``timestamp``.
    """

    def __init__(self, native: _agentmem.NativeStore) -> None:
        self._native = native

    def __repr__(self) -> str:
        return f"<agentmem.Store {self._native.url}>"

    def close(self) -> None:
        """Nothing to release early: connections close when the store is dropped."""

    def capabilities(self) -> dict[str, bool]:
        """What the backend can do natively, by name."""
        return dict(self._native.capabilities())

    # Sessions

    def append(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        """Appends messages to a session (created if new), all or nothing."""
        self._native.append(session_id, to_stored(messages))

    def save_session(
        self,
        session_id: str,
        messages: Iterable[Mapping[str, Any]],
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Replaces a session's messages (and metadata) with these."""
        self._native.save_session(session_id, to_stored(messages), dict(metadata or {}))

    def load(self, session_id: str, limit: int | None = None) -> list[Message] | None:
        """The session's messages, oldest first, or ``None`` when it does not exist.

        ``limit`` keeps the last ``limit`` stored messages, widened so that a tool result
        never loses its call (the CLI's window).
        """
        session = self._native.load(session_id, limit)
        if session is None:
            return None
        return from_stored(session["messages"])

    def session(self, session_id: str) -> dict[str, Any] | None:
        """The session's summary (counts, times, title, owner, tags, expiry), or ``None``."""
        session = self._native.load(session_id, 0)
        if session is None:
            return None
        session["message_count"] = session.pop("total_messages")
        return flatten_info(session)

    def sessions(self) -> list[str]:
        """Every session's id, sorted."""
        return list(self._native.sessions())

    def find_sessions(
        self,
        owner: str | None = None,
        tags: Mapping[str, str] | None = None,
        *,
        updated_since: datetime | str | None = None,
        updated_before: datetime | str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Summaries of the sessions with this owner and these tags, ordered by id."""
        found: list[dict[str, Any]] = []
        after: str | None = None
        while limit is None or len(found) < limit:
            page_size = 1000 if limit is None else min(1000, limit - len(found))
            query = {
                "owner": owner,
                "tags": dict(tags or {}),
                "updated_since": _time(updated_since),
                "updated_before": _time(updated_before),
                "after": after,
                "limit": page_size,
            }
            page = self._native.find_sessions(query)
            found.extend(flatten_info(info) for info in page["sessions"])
            after = page.get("next")
            if after is None:
                break
        return found

    def search(
        self,
        query: str,
        limit: int = 10,
        *,
        session_id: str | None = None,
        mode: SearchMode | None = None,
    ) -> list[dict[str, Any]]:
        """Messages matching ``query``, best first: ``{"session", "message", "score"}``.

        ``mode`` ``"semantic"`` or ``"hybrid"`` searches by meaning with the embedder the store
        URL names (``embedder=…&embed=messages``; see ``reindex``), and each hit also tells
        ``keyword_rank`` and ``semantic_rank`` (from 1, ``None`` when that ranking missed it)
        and ``similarity``. The default is ``"hybrid"`` when the URL embeds messages, else
        ``"keyword"``; meaning without an embedder raises ``InvalidInput``.
        """
        hits = self._native.search(query, limit, session_id, mode)
        return [{**h, "message": from_stored([h["message"]])[0]} for h in hits]

    def fork(self, source: str, target: str, at: str | None = None) -> dict[str, Any]:
        """Copies ``source`` into the new session ``target``: whole, or up to and including
        message ``at`` (an ``id`` from ``load``). Returns the new session's summary."""
        return flatten_info(self._native.fork(source, target, at))

    def rewind(
        self, session_id: str, last: int | None = None, *, after: str | None = None
    ) -> list[Message]:
        """Removes the last ``last`` stored messages, or every message after message ``after``;
        returns the removed ones, oldest first."""
        return from_stored(self._native.rewind(session_id, last, after))

    def delete(self, session_id: str) -> bool:
        """Deletes a session and its archives; whether it existed."""
        return bool(self._native.delete(session_id))

    def compact(self, session_id: str, summary: str | None = None) -> dict[str, Any]:
        """Archives the session and replaces it with one summary message (an extractive
        summary when ``summary`` is ``None``): ``{"archive", "summary"}``."""
        result = self._native.compact(session_id, summary)
        return {"archive": result["archive"], "summary": from_stored([result["summary"]])[0]}

    def archives(self, session_id: str) -> list[dict[str, Any]]:
        """The session's archives (made by ``compact``), oldest first."""
        return list(self._native.archives(session_id))

    def tag(
        self,
        session_id: str,
        tags: Mapping[str, str] | None = None,
        *,
        title: str | None = None,
        owner: str | None = None,
        untag: Iterable[str] = (),
        clear: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Sets tags, ``title`` and ``owner``, removes the tags named in ``untag`` and the
        labels named in ``clear`` (``"title"``, ``"owner"``); returns the summary."""
        info = self._native.tag(
            session_id, title, owner, dict(tags) if tags else None, list(untag), list(clear)
        )
        return flatten_info(info)

    def expire(
        self,
        session_id: str,
        seconds: Any = None,
        *,
        at: datetime | str | None = None,
        persist: bool = False,
    ) -> dict[str, Any]:
        """Makes the session expire ``seconds`` (a number or ``timedelta``) from now, or
        ``at`` a time, or never (``persist=True``); returns the summary."""
        return flatten_info(self._native.expire(session_id, _seconds(seconds), _time(at), persist))

    def purge(
        self,
        *,
        older_than: Any = None,
        keep: int | None = None,
        memories_older_than: Any = None,
    ) -> dict[str, int]:
        """Deletes sessions not written for ``older_than`` (seconds or ``timedelta``), all but
        the ``keep`` most recent, old memory items, and everything expired."""
        return dict(self._native.purge(_seconds(older_than), keep, _seconds(memories_older_than)))

    # Memory items

    def store_memory(
        self,
        text: str,
        long_term: bool = True,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        owner: str | None = None,
        key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        ttl: Any = None,
        kind: str | None = None,
    ) -> dict[str, Any]:
        """Stores a memory item in the scope of ``agent``, ``workspace`` and ``owner``
        (global when none); ``key`` replaces the item stored under the same key."""
        kind = kind or ("long_term" if long_term else "short_term")
        return dict(
            self._native.put_memory(
                text,
                kind,
                _scope(agent, workspace, owner),
                key,
                dict(metadata) if metadata is not None else None,
                _seconds(ttl),
            )
        )

    def memories(
        self,
        kind: str | None = None,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        owner: str | None = None,
        exact: bool = False,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Memory items, oldest first: all of them, or those an agent in the given scope sees
        (its own, its workspace's, its owner's and global ones; only that scope's with
        ``exact=True``)."""
        return list(self._native.memories(kind, _scope(agent, workspace, owner), exact, limit))

    def search_memories(
        self,
        query: str,
        limit: int = 10,
        *,
        kind: str | None = None,
        agent: str | None = None,
        workspace: str | None = None,
        owner: str | None = None,
        exact: bool = False,
        mode: SearchMode | None = None,
    ) -> list[dict[str, Any]]:
        """Memory items matching ``query``, best first: ``{"item", "score"}``.

        ``mode`` as in ``search``: ``"semantic"`` and ``"hybrid"`` (the default when the store
        URL names an embedder) add ``keyword_rank``, ``semantic_rank`` and ``similarity``.
        """
        scope = _scope(agent, workspace, owner)
        return list(self._native.search_memories(query, limit, kind, scope, exact, mode))

    def reindex(self, *, all: bool = False) -> dict[str, int]:  # noqa: A002
        """Embeds the texts that have no vector yet (memory items, and messages when the store
        URL says ``embed=messages``) with the embedder the URL names: what search by meaning
        finds. ``all=True``, or vectors from another model than the URL's, embeds every text
        anew. Returns ``{"texts": indexed, "embedded": by this call}``."""
        return dict(self._native.reindex(all))

    def index_lag(self) -> dict[str, Any]:
        """How far the vectors lag behind the texts: ``{"texts", "pending", "model"}``
        (``model``: ``{"id", "dimensions", "normalized"}`` of the stored vectors, ``None``
        before the first ``reindex``)."""
        return dict(self._native.index_lag())

    def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        """One memory item by id, or ``None``."""
        return self._native.get_memory(memory_id)

    def delete_memory(self, memory_id: str) -> bool:
        """Deletes a memory item; whether it existed."""
        return bool(self._native.delete_memory(memory_id))

    def get_context(
        self,
        query: str | None = None,
        *,
        agent: str | None = None,
        workspace: str | None = None,
        owner: str | None = None,
    ) -> str:
        """The context text for an agent's system prompt: the memory items that agent sees
        (every item when no scope is given), most relevant to ``query`` first."""
        return self._native.get_context(query, _scope(agent, workspace, owner))

    # Moving data

    def export(
        self, session_id: str | None = None, *, path: PathLike | None = None
    ) -> dict[str, Any]:
        """The store (or one session) as the JSON document ``agentmem export`` writes;
        written to ``path`` as well when given."""
        document = self._native.export(session_id)
        if path is not None:
            with builtins.open(path, "w", encoding="utf-8") as out:
                json.dump(document, out, ensure_ascii=False, indent=2)
                out.write("\n")
        return document

    def import_(self, document: Mapping[str, Any] | PathLike) -> dict[str, Any]:
        """Imports an export document (a dict, or the path of its JSON file): adds what the
        store lacks, skips what it holds, and refuses a conflict whole (nothing written)."""
        if not isinstance(document, Mapping):
            with builtins.open(document, encoding="utf-8") as source:
                document = json.load(source)
        return dict(self._native.import_document(document))

    def migrate(
        self,
        to: str,
        *,
        progress: Callable[[dict[str, Any]], None] | None = None,
        key_file: PathLike | None = None,
        batch: int = 1000,
        dry_run: bool = False,
        plaintext: bool = False,
    ) -> dict[str, Any]:
        """Copies every session, archive, memory item, checkpoint and the knowledge graph into
        the store at ``to`` and verifies the copy. From an encrypted store the destination
        must be encrypted too (``key_file``, or its URL's ``key_file=``) unless
        ``plaintext=True`` asks for a decrypted copy. ``progress(event)`` hears each step:
        ``{"event": "start", "sessions": n}``, ``{"event": "session", "session": id,
        "messages": n, "written": {...}}``, ``{"event": "graph", "entities": n,
        "entities_created": n, ...}``, ``{"event": "finish"}`` (called from a worker
        thread)."""
        return dict(
            self._native.migrate(
                to,
                os.fspath(key_file) if key_file is not None else None,
                progress,
                batch,
                dry_run,
                plaintext,
            )
        )


class _OnStore(_Closes):
    """An adapter on an opened store (``store``): ``with`` and ``async with`` close it."""

    store: Store

    async def __aenter__(self: _Self) -> _Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the store (connections, file handles); the adapter is unusable afterwards."""
        self.store.close()


def _check_source(
    adapter: str,
    url: str | None,
    store: Store | None,
    key_file: PathLike | None,
    error: Callable[[str], Exception] = ValueError,
) -> None:
    """Refuses the arguments of an adapter that opens ``url`` or works on an opened ``store``
    when it has both or neither, or ``key_file`` with ``store``: ``error(message)`` raised."""
    if (url is None) == (store is None):
        raise error(f"{adapter} needs either url or store")
    if store is not None and key_file is not None:
        raise error("key_file goes with url, not with an opened store")
