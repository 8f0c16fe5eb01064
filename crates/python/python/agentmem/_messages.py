"""Messages between the OpenAI chat shape and agentmem's stored shape.

An assistant message's ``tool_calls`` become one agentmem tool-call message each (the call's
arguments as content, ``tool_call_id`` and ``tool_name`` set), so the CLI, search and history
windows see them; text sent alongside is its own assistant message. All of them carry the same
group marker in their metadata, and ``load`` joins a group back into one OpenAI message.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from ._agentmem import InvalidInput

#: Metadata key holding the id of the OpenAI message a stored message came from.
GROUP = "openai_message"
#: Metadata key holding a message's keys that agentmem has no field for (kept losslessly).
EXTRA = "openai_extra"
#: Metadata key holding a tool call's own extra keys (other than id, type, function).
CALL_EXTRA = "openai_call"

_KNOWN = {"role", "content", "id", "timestamp", "tool_call_id", "tool_calls", "metadata", "name"}

Message = dict[str, Any]


def _text(message: Mapping[str, Any], index: int) -> str:
    content = message.get("content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise InvalidInput(
            f"invalid input: message {index}: content must be a string, "
            f"not {type(content).__name__}"
        )
    return content


def to_stored(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """OpenAI-shaped messages as agentmem stores them (validated again by the store)."""
    if isinstance(messages, (str, bytes)) or isinstance(messages, Mapping):
        raise InvalidInput("invalid input: messages must be a list of dicts")
    stored: list[Message] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidInput(f"invalid input: message {index} is not a dict")
        if "role" not in message:
            raise InvalidInput(f"invalid input: message {index} has no role")
        stored.extend(_split(message, index))
    return stored


def _base(message: Mapping[str, Any], index: int) -> Message:
    metadata = message.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InvalidInput(f"invalid input: message {index}: metadata must be a dict")
    out: Message = {"role": message["role"], "content": _text(message, index)}
    meta = dict(metadata or {})
    extra = {k: v for k, v in message.items() if k not in _KNOWN}
    if "name" in message and message["role"] != "tool":
        extra["name"] = message["name"]
    if extra:
        meta[EXTRA] = extra
    if meta:
        out["metadata"] = meta
    for key in ("id", "timestamp"):
        if message.get(key) is not None:
            out[key] = message[key]
    return out


def _split(message: Mapping[str, Any], index: int) -> list[Message]:
    calls = message.get("tool_calls")
    if message["role"] == "tool":
        out = _base(message, index)
        out["tool_call_id"] = message.get("tool_call_id")
        if message.get("name") is not None:
            out["tool_name"] = message["name"]
        return [out]
    if not calls:
        out = _base(message, index)
        if message.get("tool_call_id") is not None:
            out["tool_call_id"] = message["tool_call_id"]
        return [out]
    if not isinstance(calls, list):
        raise InvalidInput(f"invalid input: message {index}: tool_calls must be a list")
    group = str(message.get("id") or uuid.uuid4().hex)
    out_messages: list[Message] = []
    text = _text(message, index)
    head = _base(message, index)
    head.setdefault("metadata", {})[GROUP] = group
    if text:
        out_messages.append(head)
    for position, call in enumerate(calls):
        if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
            raise InvalidInput(
                f"invalid input: message {index}: tool call {position} needs "
                "an id and a function with a name and arguments"
            )
        function = call["function"]
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            raise InvalidInput(
                f"invalid input: message {index}: tool call {position}: "
                "arguments must be a string (JSON text, as OpenAI sends them)"
            )
        meta: dict[str, Any] = {GROUP: group}
        call_extra = {k: v for k, v in call.items() if k not in ("id", "type", "function")}
        function_extra = {k: v for k, v in function.items() if k not in ("name", "arguments")}
        if call.get("type", "function") != "function":
            call_extra["type"] = call["type"]
        if function_extra:
            call_extra["function"] = function_extra
        if call_extra:
            meta[CALL_EXTRA] = call_extra
        if not text and position == 0 and head.get("metadata"):
            # No text message carries the group's own metadata: the first call does.
            meta = {**head["metadata"], **meta}
        stored: Message = {
            "role": message["role"],
            "content": arguments,
            "tool_call_id": call.get("id"),
            "tool_name": function.get("name"),
            "metadata": meta,
        }
        if position == 0 and not text:
            for key in ("id", "timestamp"):
                if key in head:
                    stored[key] = head[key]
        elif "timestamp" in head:
            stored["timestamp"] = head["timestamp"]
        out_messages.append(stored)
    return out_messages


def _plain(message: Mapping[str, Any]) -> Message:
    """One stored message in OpenAI shape, before grouping."""
    out: Message = {
        "id": message["id"],
        "role": message["role"],
        "content": message["content"],
        "timestamp": message["timestamp"],
    }
    meta = dict(message.get("metadata") or {})
    meta.pop(GROUP, None)
    meta.pop(CALL_EXTRA, None)
    extra = meta.pop(EXTRA, None)
    if isinstance(extra, Mapping):
        for key, value in extra.items():
            out.setdefault(key, value)
    if message["role"] == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
        if message.get("tool_name") is not None:
            out["name"] = message["tool_name"]
    elif message.get("tool_call_id") is not None:
        out["tool_call_id"] = message["tool_call_id"]
    if meta:
        out["metadata"] = meta
    return out


def _call(message: Mapping[str, Any]) -> dict[str, Any]:
    extra = dict((message.get("metadata") or {}).get(CALL_EXTRA) or {})
    function: dict[str, Any] = {"name": message.get("tool_name"), "arguments": message["content"]}
    function.update(extra.pop("function", None) or {})
    call: dict[str, Any] = {"id": message["tool_call_id"], "type": "function", "function": function}
    call.update(extra)
    return call


def _is_call(message: Mapping[str, Any]) -> bool:
    return message["role"] != "tool" and message.get("tool_call_id") is not None


def _group_of(message: Mapping[str, Any]) -> str | None:
    group = (message.get("metadata") or {}).get(GROUP)
    return group if isinstance(group, str) else None


def from_stored(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Stored messages in OpenAI shape: each group (and each run of unmarked tool calls from
    one speaker) joined into one message with ``tool_calls``."""
    out: list[Message] = []
    current: Message | None = None
    current_key: tuple | None = None
    for message in messages:
        group = _group_of(message)
        calls = _is_call(message)
        if group is None and not calls:
            current, current_key = None, None
            out.append(_plain(message))
            continue
        key = ("group", group) if group is not None else ("calls", message["role"])
        if current is None or key != current_key:
            current = _plain(message)
            current_key = key
            if calls:
                current["content"] = None
                current.pop("tool_call_id", None)
                current["tool_calls"] = []
            out.append(current)
        elif not calls:
            # Text sent alongside calls that were stored first (not written by this package).
            current["content"] = (current.get("content") or "") + message["content"]
        if calls:
            current.setdefault("tool_calls", []).append(_call(message))
    return out


def flatten_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """A session summary with its labels (title, owner, tags) at the top level."""
    labels = info.get("labels") or {}
    return {
        "id": info["id"],
        "message_count": info["message_count"],
        "created_at": info["created_at"],
        "updated_at": info["updated_at"],
        "title": labels.get("title"),
        "owner": labels.get("owner"),
        "tags": dict(labels.get("tags") or {}),
        "expires_at": info.get("expires_at"),
    }
