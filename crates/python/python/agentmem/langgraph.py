"""LangGraph on an agentmem store: checkpoints (``AgentmemSaver``) and long-term memory
(``AgentmemStore``, see ``agentmem.langgraph_store``).

One saver for every backend agentmem has (files, SQLite, Redis, PostgreSQL, MongoDB), safe
with several processes writing one store, encrypted at rest when the store is::

    from agentmem.langgraph import AgentmemSaver

    saver = AgentmemSaver("sqlite:///tmp/graphs.db")
    graph = builder.compile(checkpointer=saver)
    graph.invoke(inputs, {"configurable": {"thread_id": "user-42"}})

It follows LangGraph's own savers (``InMemorySaver``, ``PostgresSaver``): the checkpoint is
stored without its channel values, which go to one blob per (channel, version), written only
when the version changes; pending writes are kept per (task, index), the special ones
(error, interrupt, resume) replaced. The saver hands agentmem only what its serializer made
(``serde``, LangGraph's ``JsonPlusSerializer`` by default): agentmem stores those bytes as
they are. Metadata is kept as JSON so ``list(filter=...)`` runs in the store; with an
encrypted store the checkpoint, channel values and writes are encrypted, the metadata, ids
and versions are not.

Every method has a sync and an async form (the async ones run the sync ones on a worker
thread; the native code releases the GIL), so one saver serves ``graph.invoke`` and
``graph.ainvoke``, from any thread.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ._agentmem import NotFound
from ._store import PathLike, Store, _check_source, _OnStore
from ._store import open as _open
from .langgraph_store import AgentmemStore

if TYPE_CHECKING:
    from typing_extensions import Concatenate, ParamSpec

    _P = ParamSpec("_P")

__all__ = ["AgentmemSaver", "AgentmemStore"]

_EMPTY = "empty"
_R = TypeVar("_R")
_S = TypeVar("_S")


def _json_safe(value: Any) -> Any:
    """Metadata as JSON values: what JSON cannot hold is stored as its text."""
    return json.loads(json.dumps(value, default=str))


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _async_form(run: Callable[..., Any], method: Callable[..., Any]) -> None:
    """Names ``run`` as the async form of ``method`` (``aput`` of ``put``), with its
    parameters (``inspect.signature`` follows ``__wrapped__``) and documentation."""
    functools.update_wrapper(run, method)
    run.__name__ = f"a{method.__name__}"
    run.__qualname__ = f"{method.__qualname__.rpartition('.')[0]}.{run.__name__}"


def _on_thread(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _R]]:
    """A coroutine that runs the method of ``method``'s name (a subclass's override
    included) on a worker thread."""

    async def run(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return await asyncio.to_thread(getattr(self, method.__name__), *args, **kwargs)

    _async_form(run, method)
    return run


def _iterated_on_thread(
    method: Callable[Concatenate[_S, _P], Iterator[_R]],
) -> Callable[Concatenate[_S, _P], AsyncIterator[_R]]:
    """An async iterator over what the method of ``method``'s name yields, all of it read on
    a worker thread."""

    async def run(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> AsyncIterator[_R]:
        read = getattr(self, method.__name__)
        for item in await asyncio.to_thread(lambda: list(read(*args, **kwargs))):
            yield item

    _async_form(run, method)
    return run


class AgentmemSaver(_OnStore, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on the agentmem store ``url`` names (or an opened ``store``).

    ``key_file`` opens an encrypted store (see ``agentmem.open``); ``serde`` replaces the
    serializer of the checkpoint, channel values and writes.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        store: Store | None = None,
        key_file: PathLike | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        _check_source("AgentmemSaver", url, store, key_file)
        #: The store the saver reads and writes.
        self.store: Store = store if store is not None else _open(url, key_file=key_file)
        self._native = self.store._native.checkpoints()

    # Reading

    def _tuple(self, row: tuple[Any, ...]) -> CheckpointTuple:
        thread, ns, cid, parent, body, _, metadata, _, blobs, writes = row
        checkpoint: Checkpoint = self.serde.loads_typed(body)
        checkpoint["channel_values"] = {
            channel: self.serde.loads_typed((tag, data))
            for channel, _, tag, data in blobs
            if tag is not None and tag != _EMPTY
        }
        return CheckpointTuple(
            config=_config(thread, ns, cid),
            checkpoint=checkpoint,
            metadata=metadata,
            parent_config=_config(thread, ns, parent) if parent else None,
            pending_writes=[
                (task_id, channel, self.serde.loads_typed((tag, data)))
                for task_id, _, channel, tag, data, _ in writes
            ],
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``), or its thread's latest."""
        configurable = config["configurable"]
        row = self._native.get(
            str(configurable["thread_id"]),
            configurable.get("checkpoint_ns", ""),
            get_checkpoint_id(config),
        )
        return self._tuple(row) if row is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, when it names
        one), or of every thread; ``filter`` (metadata equality) and ``before`` applied in the
        store before ``limit``."""
        configurable = config["configurable"] if config else {}
        thread = configurable.get("thread_id")
        rows = self._native.list(
            thread=str(thread) if thread is not None else None,
            ns=configurable.get("checkpoint_ns"),
            id=get_checkpoint_id(config) if config else None,
            before=get_checkpoint_id(before) if before else None,
            metadata=_json_safe(filter) if filter else None,
            limit=limit,
        )
        for row in rows:
            yield self._tuple(row)

    # Writing

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Stores ``checkpoint`` (the values of the channels in ``new_versions`` as blobs) and
        returns the config that names it."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
        parent = configurable.get("checkpoint_id")
        body = checkpoint.copy()
        values: dict[str, Any] = body.pop("channel_values", {})  # type: ignore[misc]
        blobs = []
        for channel, version in new_versions.items():
            if channel in values:
                tag, data = self.serde.dumps_typed(values[channel])
                blobs.append((channel, str(version), tag, data))
            else:
                blobs.append((channel, str(version), None, None))
        body_tag, body_data = self.serde.dumps_typed(body)
        self._native.put(
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            parent,
            body_tag,
            body_data,
            {channel: str(v) for channel, v in checkpoint["channel_versions"].items()},
            _json_safe(get_serializable_checkpoint_metadata(config, metadata)),
            blobs,
        )
        return _config(thread_id, checkpoint_ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Stores the writes of task ``task_id`` made after the checkpoint ``config`` names."""
        configurable = config["configurable"]
        rows = []
        for idx, (channel, value) in enumerate(writes):
            tag, data = self.serde.dumps_typed(value)
            rows.append((task_id, WRITES_IDX_MAP.get(channel, idx), channel, tag, data, task_path))
        self._native.put_writes(
            str(configurable["thread_id"]),
            configurable.get("checkpoint_ns", ""),
            configurable["checkpoint_id"],
            rows,
        )

    def delete_thread(self, thread_id: str) -> None:
        """Deletes every checkpoint, write and channel value of a thread."""
        self._native.delete_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Deletes the checkpoints (and their writes) of these runs, in every thread."""
        self._native.delete_runs([str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copies every checkpoint of a thread (all namespaces, writes and values) into a
        thread that holds none; a source without checkpoints copies nothing."""
        try:
            self._native.copy_thread(str(source_thread_id), str(target_thread_id))
        except NotFound:
            pass

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keeps only the latest checkpoint of each namespace (``"keep_latest"``), or deletes
        the threads (``"delete"``)."""
        self._native.prune([str(t) for t in thread_ids], strategy)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The next version of a channel, as LangGraph's own savers make it: a counter that
        sorts as text, and a random part."""
        if current is None:
            current_v = 0
        elif isinstance(current, int):
            current_v = current
        else:
            current_v = int(current.split(".")[0])
        return f"{current_v + 1:032}.{random.random():016}"

    # The same as coroutines, on a worker thread each.

    aget_tuple = _on_thread(get_tuple)
    alist = _iterated_on_thread(list)
    aput = _on_thread(put)
    aput_writes = _on_thread(put_writes)
    adelete_thread = _on_thread(delete_thread)
    adelete_for_runs = _on_thread(delete_for_runs)
    acopy_thread = _on_thread(copy_thread)
    aprune = _on_thread(prune)
