"""OpenAI Agents SDK sessions on an agentmem store.

``AgentmemSession`` implements the SDK's ``Session`` protocol (``agents.memory.Session``) with
the semantics of the SDK's own ``SQLiteSession``, on any agentmem store (file, SQLite, Redis,
PostgreSQL, MongoDB; shared with the ``agentmem`` command and the Rust library)::

    from agents import Agent, Runner
    from agentmem.openai_agents import AgentmemSession

    session = AgentmemSession("chat-42", "sqlite:///tmp/agent.db")
    result = await Runner.run(agent, "Hi, I'm Ada", session=session)

One session item is one stored message, so counts, ``limit`` and ``pop_item`` are exact.
Every item is kept whole, as JSON text, in the stored message's metadata (``openai_item``)
and comes back as equal JSON. The stored message itself is what the rest of agentmem sees:

- ``function_call`` (and every other item with a ``call_id`` whose type does not end in
  ``_output``: ``custom_tool_call``, ``computer_call``, ``shell_call``, …) is an agentmem tool
  call: role ``assistant``, ``tool_call_id`` = the item's ``call_id``, ``tool_name`` = its
  ``name`` (or its type without ``_call``), content = its ``arguments`` (or ``input``);
- ``function_call_output`` (and every ``…_output`` item with a ``call_id``) is that call's
  result: role ``tool``, the same ``tool_call_id``, content = its output as text;
- a message keeps its role (``developer`` is stored as ``system``) with its text as content,
  the parts of a multi-part content joined by newlines;
- any other item (reasoning, web search, MCP, …) is an ``assistant`` message whose content is
  a readable text form (``[reasoning] …``), so search finds it.

Messages in the session that this module did not write (from the CLI or ``Store.append``)
are read as items too: chat messages as ``{"role", "content"}``, tool calls and results as
``function_call`` / ``function_call_output``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

try:
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "agentmem.openai_agents needs the OpenAI Agents SDK: pip install openai-agents"
    ) from error

from ._agentmem import InvalidInput, NotFound
from ._aio import AsyncStore
from ._store import PathLike, Store
from ._store import open as _open

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
else:
    TResponseInputItem = dict[str, Any]

__all__ = ["ITEM_KEY", "AgentmemSession"]

#: Metadata key of a stored message holding its whole session item as JSON text.
ITEM_KEY = "openai_item"

T = TypeVar("T")
StoredMessage = dict[str, Any]

# Message roles as agentmem stores them (the Responses API's `developer` is a system prompt).
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
# The longest tool call id or tool name every store takes: 256 bytes, 139 when encrypted (the
# envelope is longer than the value). Longer ones, or ones with control characters, keep their
# item but are not stored as a tool call.
_MAX_REF_BYTES = 139
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Fields whose text makes the readable form of an item that is neither a message nor a call.
_TEXT_FIELDS = (
    "summary",
    "content",
    "queries",
    "query",
    "action",
    "arguments",
    "input",
    "output",
    "result",
    "code",
    "error",
)


class AgentmemSession:
    """An OpenAI Agents SDK session (``agents.memory.Session``) stored in agentmem.

    Give the store as a URL (every URL ``agentmem.open`` takes; ``key_file`` for an encrypted
    store) or as an opened ``agentmem.Store`` / ``agentmem.AsyncStore`` (``store=``), which
    many sessions may share. ``session_id`` must be a valid agentmem session id (letters,
    digits, ``_ - . @ +`` and single interior spaces); the store raises
    ``agentmem.InvalidInput`` on first use otherwise.

    The semantics are ``SQLiteSession``'s: ``get_items(limit)`` returns exactly the latest
    ``limit`` items (``session_settings.limit`` when ``limit`` is ``None``; all items when both
    are ``None``), oldest first, even when that separates a function call from its output;
    ``pop_item`` removes and returns the newest item (``None`` when there is none);
    ``add_items`` appends its items in one atomic write; ``clear_session`` deletes the session.
    Every call runs the store on a worker thread, so the event loop never blocks.
    """

    session_id: str
    session_settings: SessionSettings | None

    def __init__(
        self,
        session_id: str,
        url: str | None = None,
        *,
        store: Store | AsyncStore | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
        key_file: PathLike | None = None,
    ) -> None:
        """Opens the session ``session_id`` on the store at ``url``, or on ``store``.

        ``session_settings`` (a ``SessionSettings`` or a dict such as ``{"limit": 20}``)
        defaults to ``SessionSettings()``, as ``SQLiteSession`` does. Opening by URL connects
        at once (as ``SQLiteSession`` opens its database); to open without blocking an event
        loop, pass ``store=await agentmem.open_async(url)``.
        """
        if (url is None) == (store is None):
            raise InvalidInput("invalid input: give exactly one of `url` and `store`")
        if key_file is not None and store is not None:
            raise InvalidInput("invalid input: `key_file` goes with `url`, not with `store`")
        if isinstance(store, AsyncStore):
            sync = store.sync
        elif isinstance(store, Store):
            sync = store
        elif store is not None:
            raise InvalidInput(
                "invalid input: `store` must be an agentmem.Store or agentmem.AsyncStore"
            )
        else:
            sync = _open(str(url), key_file=key_file)
        if session_settings is None:
            session_settings = SessionSettings()
        elif isinstance(session_settings, Mapping):
            session_settings = coerce_session_settings(dict(session_settings))
        self.session_id = session_id
        self.session_settings = session_settings
        #: The store the session lives in (a ``Store``: its ``load`` and ``search`` see the
        #: session's items as chat messages and tool calls).
        self.store: Store = sync
        self._native = sync._native
        self._closed = False

    def __repr__(self) -> str:
        return f"<AgentmemSession {self.session_id!r} on {self.store.url}>"

    # The Session protocol

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first: the latest ``limit`` of them (exactly
        ``min(limit, total)``), or ``session_settings.limit`` of them when ``limit`` is
        ``None``, or all of them when both are ``None``. ``limit=0`` gives ``[]``; a negative
        limit gives all items (as SQLite's ``LIMIT -1`` does for ``SQLiteSession``)."""
        self._check_not_closed()
        session_limit = resolve_session_limit(limit, self.session_settings)
        if session_limit == 0:
            return []
        if session_limit is not None and session_limit < 0:
            session_limit = None
        return await asyncio.to_thread(self._get_items_sync, session_limit)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends ``items`` in one atomic write (one ``Store.append``); nothing for ``[]``."""
        self._check_not_closed()
        if not items:
            return
        await _await_mutation(asyncio.to_thread(self._add_items_sync, list(items)))

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes and returns the newest item, or ``None`` when the session has none."""
        self._check_not_closed()
        return await _await_mutation(asyncio.to_thread(self._pop_item_sync))

    async def clear_session(self) -> None:
        """Deletes every item of the session (the agentmem session, with its archives)."""
        self._check_not_closed()
        await _await_mutation(asyncio.to_thread(self._native.delete, self.session_id))

    def close(self) -> None:
        """Marks the session closed: later calls raise ``RuntimeError``, as on
        ``SQLiteSession``. The store itself stays usable by whoever else holds it."""
        self._closed = True

    # Work on the worker thread

    def _check_not_closed(self) -> None:
        if self._closed:
            raise RuntimeError("AgentmemSession is closed")

    def _get_items_sync(self, limit: int | None) -> list[TResponseInputItem]:
        messages = self._load_tail(limit)
        return [item_of(message) for message in messages]

    def _load_tail(self, limit: int | None) -> list[StoredMessage]:
        """The last ``limit`` stored messages exactly (all when ``None``).

        The store's window never starts on a tool result whose call it left out (it drops
        such results from its front), so it may hold fewer than asked; a wider window, then
        the whole session, gives the exact count."""
        if limit is None:
            session = self._native.load(self.session_id, None)
            return session["messages"] if session is not None else []
        window = limit
        while True:
            session = self._native.load(self.session_id, window)
            if session is None:
                return []
            messages: list[StoredMessage] = session["messages"]
            total = int(session["total_messages"])
            if len(messages) >= limit or len(messages) >= total:
                return messages[-limit:]
            if window >= total:
                session = self._native.load(self.session_id, None)
                return session["messages"][-limit:] if session is not None else []
            window = min(window * 4, total)

    def _add_items_sync(self, items: list[TResponseInputItem]) -> None:
        stored = stored_messages(items)
        try:
            self._native.append(self.session_id, stored)
        except InvalidInput:
            # Text Rust cannot hold (lone surrogates) is refused before anything is written:
            # store a replaced readable form and ASCII-escaped item JSON instead, once.
            safe = stored_messages(items, safe=True)
            if safe == stored:
                raise
            self._native.append(self.session_id, safe)

    def _pop_item_sync(self) -> TResponseInputItem | None:
        try:
            removed = self._native.rewind(self.session_id, 1, None)
        except NotFound:
            return None
        if not removed:
            return None
        return item_of(removed[-1])


async def _await_mutation(awaitable: Awaitable[T]) -> T:
    """Waits for a write to finish even when the caller is cancelled meanwhile (and then
    re-raises the cancellation), so a caller never loses track of a write that happened;
    as the SDK's own sessions do."""
    task = asyncio.ensure_future(awaitable)
    cancellation: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            if cancellation is None:
                cancellation = exc
    try:
        result = task.result()
    except BaseException:
        if cancellation is not None:
            raise cancellation from None
        raise
    if cancellation is not None:
        raise cancellation from None
    return result


# Items to stored messages


def stored_messages(
    items: Sequence[Mapping[str, Any]], *, safe: bool = False
) -> list[StoredMessage]:
    """Session items as agentmem stored messages, one each, in the native module's shape.

    ``safe`` replaces what UTF-8 cannot hold (lone surrogates) in the readable content and
    writes the item JSON ASCII-escaped, so any JSON-serializable item is accepted."""
    names: dict[str, str] = {}
    return [stored_message(item, names, safe=safe) for item in items]


def stored_message(
    item: Mapping[str, Any], names: dict[str, str] | None = None, *, safe: bool = False
) -> StoredMessage:
    """One session item as one stored message (see the module's docstring).

    ``names`` maps the call ids seen so far in the batch to their tool names, so a result
    stored with its call gets the tool's name too."""
    data = json.dumps(item, ensure_ascii=safe)
    if not isinstance(item, Mapping):
        # Not an item the SDK makes, but `SQLiteSession` keeps any JSON value: so does this.
        content = text_of(item) or "[item]"
        if safe:
            content = content.encode("utf-8", "replace").decode("utf-8")
        return {"role": "assistant", "content": content, "metadata": {ITEM_KEY: data}}
    if names is None:
        names = {}
    kind = item.get("type")
    kind = kind if isinstance(kind, str) else None
    role: str
    content: str
    stored: StoredMessage = {}
    call_id = item.get("call_id")
    if "role" in item and kind in (None, "message"):
        role = _ROLES.get(str(item["role"]).lower(), "assistant")
        content = text_of(item.get("content"))
    elif isinstance(call_id, str) and _is_ref(call_id):
        stored["tool_call_id"] = call_id
        if kind is not None and kind.endswith("_output"):
            role = "tool"
            content = text_of(item.get("output"))
            name = names.get(call_id)
        else:
            role = "assistant"
            content = _call_content(item)
            name = item.get("name")
            if not (isinstance(name, str) and _is_ref(name)):
                name = (kind or "").removesuffix("_call")
                name = name if _is_ref(name) else "tool"
            names[call_id] = name
        if name is not None:
            stored["tool_name"] = name
    else:
        role = "tool" if kind is not None and kind.endswith("_output") else "assistant"
        content = _readable(item, kind)
    if safe:
        content = content.encode("utf-8", "replace").decode("utf-8")
    stored["role"] = role
    stored["content"] = content
    stored["metadata"] = {ITEM_KEY: data}
    return stored


def _is_ref(value: str) -> bool:
    """Whether agentmem takes ``value`` as a tool call id or tool name."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return False
    return 0 < size <= _MAX_REF_BYTES and not _CONTROL.search(value)


def _call_content(item: Mapping[str, Any]) -> str:
    """A call's content: its arguments (or input) as sent, else its readable form."""
    for key in ("arguments", "input"):
        value = item.get(key)
        if isinstance(value, str):
            return value
    return _readable(item, None)


def text_of(value: Any) -> str:
    """The text of a message content, an output or a part list: strings as they are, the
    text of each part joined by newlines, ``[type]`` for parts without text (images,
    files)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(text for text in (text_of(part) for part in value) if text)
    if isinstance(value, Mapping):
        for key in ("text", "refusal", "transcript", "query", "command", "output"):
            if isinstance(value.get(key), str):
                return value[key]
        for key in ("queries", "commands"):
            if isinstance(value.get(key), (list, tuple)):
                return text_of(value[key])
        if isinstance(value.get("filename"), str):
            return f"[file {value['filename']}]"
        if isinstance(value.get("type"), str):
            return f"[{value['type']}]"
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, bool):
        return json.dumps(value)
    return str(value)


def _readable(item: Mapping[str, Any], kind: str | None) -> str:
    """The readable form of an item that is neither a message nor a call: ``[type]``
    followed by the text of its summary, content, queries, action, output and the like."""
    texts = [text_of(item[key]) for key in _TEXT_FIELDS if key in item]
    body = "\n".join(text for text in texts if text)
    label = f"[{kind}]" if kind else "[item]"
    return f"{label} {body}" if body else label


# Stored messages to items


def item_of(message: Mapping[str, Any]) -> TResponseInputItem:
    """The session item a stored message holds: the item this module wrote, equal as JSON,
    or, for a message written otherwise, its item form (a chat message, a
    ``function_call`` or a ``function_call_output``)."""
    metadata = message.get("metadata") or {}
    raw = metadata.get(ITEM_KEY)
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    elif isinstance(raw, Mapping):
        return dict(raw)
    role = message.get("role")
    content = message.get("content") or ""
    call_id = message.get("tool_call_id")
    if role == "tool" and call_id is not None:
        return {"type": "function_call_output", "call_id": call_id, "output": content}
    if role != "tool" and call_id is not None:
        return {
            "type": "function_call",
            "call_id": call_id,
            "name": message.get("tool_name") or "",
            "arguments": content,
        }
    if role in ("user", "assistant", "system"):
        return {"role": role, "content": content}
    if role == "tool":
        return {"role": "user", "content": content}
    return {"role": "assistant", "content": content}
