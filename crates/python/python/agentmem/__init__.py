"""agentmem: durable, compactable, workspace-scoped memory for AI agents.

The same store as the Rust library and the ``agentmem`` command, on files, SQLite, Redis,
PostgreSQL or MongoDB::

    import agentmem

    store = agentmem.open("sqlite:///tmp/agent.db")
    store.append("chat", [{"role": "user", "content": "Hi, I'm Ada"}])
    print(store.load("chat"))

Adapters: ``agentmem.openai_agents`` (OpenAI Agents SDK sessions) and ``agentmem.praisonai``
(PraisonAI memory).
"""

from ._agentmem import (
    Backend,
    Conflict,
    CorruptData,
    Error,
    InvalidInput,
    NotFound,
    Unavailable,
    Unsupported,
    __version__,
)
from ._aio import AsyncStore, open_async
from ._store import SearchMode, Store, open

__all__ = [
    "AsyncStore",
    "Backend",
    "Conflict",
    "CorruptData",
    "Error",
    "InvalidInput",
    "NotFound",
    "SearchMode",
    "Store",
    "Unavailable",
    "Unsupported",
    "__version__",
    "open",
    "open_async",
]
