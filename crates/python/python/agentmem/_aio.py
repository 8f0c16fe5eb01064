"""`AsyncStore`: the store's methods as coroutines.

Each call runs the blocking method on a worker thread (``asyncio.to_thread``, as the OpenAI
Agents SDK's ``SQLiteSession`` does); the native code releases the GIL while it works, so the
event loop keeps running even while a SQLite writer waits on a lock or a server is slow.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import Any, Callable, TypeVar

from ._store import PathLike, Store, _Opened
from ._store import open as _open

T = TypeVar("T")
Message = dict[str, Any]


async def open_async(url: str, *, key_file: PathLike | None = None) -> AsyncStore:
    """Opens the store ``url`` names (see ``agentmem.open``) without blocking the loop."""
    store = await asyncio.to_thread(_open, url, key_file=key_file)
    return AsyncStore(store)


class AsyncStore(_Opened):
    """An opened store whose methods are coroutines; wraps a `Store` (``.sync``)."""

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._native = store._native

    def __repr__(self) -> str:
        return f"<agentmem.AsyncStore {self.sync.url}>"

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.sync.close()

    async def _run(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(method, *args, **kwargs)

    async def append(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> None:
        """See `Store.append`."""
        await self._run(self.sync.append, session_id, list(messages))

    async def save_session(
        self,
        session_id: str,
        messages: Iterable[Mapping[str, Any]],
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """See `Store.save_session`."""
        await self._run(self.sync.save_session, session_id, list(messages), metadata)

    async def load(self, session_id: str, limit: int | None = None) -> list[Message] | None:
        """See `Store.load`."""
        return await self._run(self.sync.load, session_id, limit)

    async def session(self, session_id: str) -> dict[str, Any] | None:
        """See `Store.session`."""
        return await self._run(self.sync.session, session_id)

    async def sessions(self) -> list[str]:
        """See `Store.sessions`."""
        return await self._run(self.sync.sessions)

    async def find_sessions(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """See `Store.find_sessions`."""
        return await self._run(self.sync.find_sessions, *args, **kwargs)

    async def search(self, query: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """See `Store.search`."""
        return await self._run(self.sync.search, query, *args, **kwargs)

    async def fork(self, source: str, target: str, at: str | None = None) -> dict[str, Any]:
        """See `Store.fork`."""
        return await self._run(self.sync.fork, source, target, at)

    async def rewind(
        self, session_id: str, last: int | None = None, **kwargs: Any
    ) -> list[Message]:
        """See `Store.rewind`."""
        return await self._run(self.sync.rewind, session_id, last, **kwargs)

    async def delete(self, session_id: str) -> bool:
        """See `Store.delete`."""
        return await self._run(self.sync.delete, session_id)

    async def compact(self, session_id: str, summary: str | None = None) -> dict[str, Any]:
        """See `Store.compact`."""
        return await self._run(self.sync.compact, session_id, summary)

    async def archives(self, session_id: str) -> list[dict[str, Any]]:
        """See `Store.archives`."""
        return await self._run(self.sync.archives, session_id)

    async def tag(self, session_id: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """See `Store.tag`."""
        return await self._run(self.sync.tag, session_id, *args, **kwargs)

    async def expire(self, session_id: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """See `Store.expire`."""
        return await self._run(self.sync.expire, session_id, *args, **kwargs)

    async def purge(self, **kwargs: Any) -> dict[str, int]:
        """See `Store.purge`."""
        return await self._run(self.sync.purge, **kwargs)

    async def store_memory(self, text: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """See `Store.store_memory`."""
        return await self._run(self.sync.store_memory, text, *args, **kwargs)

    async def memories(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """See `Store.memories`."""
        return await self._run(self.sync.memories, *args, **kwargs)

    async def search_memories(self, query: str, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """See `Store.search_memories`."""
        return await self._run(self.sync.search_memories, query, *args, **kwargs)

    async def reindex(self, *, all: bool = False) -> dict[str, int]:  # noqa: A002
        """See `Store.reindex`."""
        return await self._run(self.sync.reindex, all=all)

    async def index_lag(self) -> dict[str, Any]:
        """See `Store.index_lag`."""
        return await self._run(self.sync.index_lag)

    async def get_memory(self, memory_id: str) -> dict[str, Any] | None:
        """See `Store.get_memory`."""
        return await self._run(self.sync.get_memory, memory_id)

    async def delete_memory(self, memory_id: str) -> bool:
        """See `Store.delete_memory`."""
        return await self._run(self.sync.delete_memory, memory_id)

    async def get_context(self, query: str | None = None, **kwargs: Any) -> str:
        """See `Store.get_context`."""
        return await self._run(self.sync.get_context, query, **kwargs)

    async def export(self, session_id: str | None = None, **kwargs: Any) -> dict[str, Any]:
        """See `Store.export`."""
        return await self._run(self.sync.export, session_id, **kwargs)

    async def import_(self, document: Mapping[str, Any] | os.PathLike[str] | str) -> dict[str, Any]:
        """See `Store.import_`."""
        return await self._run(self.sync.import_, document)

    async def migrate(self, to: str, **kwargs: Any) -> dict[str, Any]:
        """See `Store.migrate`."""
        return await self._run(self.sync.migrate, to, **kwargs)
