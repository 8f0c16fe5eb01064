"""Type stubs of the native module (Rust, PyO3). Use the package's public API instead."""

from collections.abc import Mapping, Sequence
from typing import Any, Callable

__version__: str

class Error(Exception):
    """Every error agentmem raises; the subclass is its kind, the message is redacted."""

class InvalidInput(Error): ...
class NotFound(Error): ...
class Conflict(Error): ...
class Unavailable(Error): ...
class CorruptData(Error): ...
class Unsupported(Error): ...
class Backend(Error): ...

StoredMessage = dict[str, Any]
#: A memory scope: any of `agent`, `workspace` and `owner` (global when empty).
Scope = Mapping[str, str]

def open(url: str, key_file: str | None = None) -> NativeStore: ...

class NativeStore:
    @property
    def backend(self) -> str: ...
    @property
    def url(self) -> str: ...
    def capabilities(self) -> dict[str, bool]: ...
    def checkpoints(self) -> NativeCheckpoints: ...
    def append(self, session: str, messages: Sequence[Mapping[str, Any]]) -> None: ...
    def save_session(
        self,
        session: str,
        messages: Sequence[Mapping[str, Any]],
        metadata: Mapping[str, Any] | None = None,
    ) -> None: ...
    def load(self, session: str, limit: int | None = None) -> dict[str, Any] | None: ...
    def sessions(self) -> list[str]: ...
    def list_sessions(self) -> list[dict[str, Any]]: ...
    def find_sessions(self, query: Mapping[str, Any]) -> dict[str, Any]: ...
    def search(
        self,
        query: str,
        limit: int = 10,
        session: str | None = None,
        mode: str | None = None,
    ) -> list[dict[str, Any]]: ...
    def reindex(self, all: bool = False) -> dict[str, int]: ...
    def index_lag(self) -> dict[str, Any]: ...
    def fork(self, source: str, target: str, at: str | None = None) -> dict[str, Any]: ...
    def rewind(
        self, session: str, last: int | None = None, after: str | None = None
    ) -> list[StoredMessage]: ...
    def delete(self, session: str) -> bool: ...
    def compact(self, session: str, summary: str | None = None) -> dict[str, Any]: ...
    def archives(self, session: str) -> list[dict[str, Any]]: ...
    def tag(
        self,
        session: str,
        title: str | None = None,
        owner: str | None = None,
        tags: Mapping[str, str] | None = None,
        untag: Sequence[str] = ...,
        clear: Sequence[str] = ...,
    ) -> dict[str, Any]: ...
    def expire(
        self,
        session: str,
        seconds: float | None = None,
        at: str | None = None,
        persist: bool = False,
    ) -> dict[str, Any]: ...
    def purge(
        self,
        older_than: float | None = None,
        keep: int | None = None,
        memories_older_than: float | None = None,
    ) -> dict[str, int]: ...
    def put_memory(
        self,
        text: str,
        kind: str = "long_term",
        scope: Scope | None = None,
        key: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        ttl: float | None = None,
        id: str | None = None,
    ) -> dict[str, Any]: ...
    def get_memory(self, id: str) -> dict[str, Any] | None: ...
    def memories(
        self,
        kind: str | None = None,
        scope: Scope | None = None,
        exact: bool = False,
        limit: int | None = None,
    ) -> list[dict[str, Any]]: ...
    def search_memories(
        self,
        query: str,
        limit: int = 10,
        kind: str | None = None,
        scope: Scope | None = None,
        exact: bool = False,
        mode: str | None = None,
    ) -> list[dict[str, Any]]: ...
    def delete_memory(self, id: str) -> bool: ...
    def get_context(self, query: str | None = None, scope: Scope | None = None) -> str: ...
    def export(self, session: str | None = None) -> dict[str, Any]: ...
    def import_document(self, document: Mapping[str, Any]) -> dict[str, Any]: ...
    def migrate(
        self,
        to: str,
        key_file: str | None = None,
        progress: Callable[[dict[str, Any]], None] | None = None,
        batch: int = 1000,
        dry_run: bool = False,
        plaintext: bool = False,
    ) -> dict[str, Any]: ...

# (channel, version, type, bytes); type and bytes None for a channel emptied at that version.
Blob = tuple[str, str, str | None, bytes | None]
# (task_id, idx, channel, type, bytes, task_path)
Write = tuple[str, int, str, str, bytes, str]
# (thread, ns, id, parent, (type, bytes), channel_versions, metadata, created_at, blobs, writes)
CheckpointRow = tuple[
    str,
    str,
    str,
    str | None,
    tuple[str, bytes],
    dict[str, str],
    dict[str, Any],
    str,
    list[Blob],
    list[Write],
]

class NativeCheckpoints:
    def put(
        self,
        thread: str,
        ns: str,
        id: str,
        parent: str | None,
        body_type: str,
        body: bytes,
        channel_versions: Mapping[str, str],
        metadata: Mapping[str, Any] | None,
        blobs: Sequence[Blob],
    ) -> None: ...
    def put_writes(self, thread: str, ns: str, id: str, writes: Sequence[Write]) -> None: ...
    def get(self, thread: str, ns: str, id: str | None = None) -> CheckpointRow | None: ...
    def list(
        self,
        thread: str | None = None,
        ns: str | None = None,
        id: str | None = None,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRow]: ...
    def threads(self) -> list[dict[str, Any]]: ...
    def delete_thread(self, thread: str) -> bool: ...
    def delete_runs(self, run_ids: Sequence[str]) -> int: ...
    def copy_thread(self, source: str, target: str) -> int: ...
    def prune(self, threads: Sequence[str], strategy: str) -> int: ...
