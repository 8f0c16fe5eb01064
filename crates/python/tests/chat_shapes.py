"""Messages in the OpenAI chat-completions shape, as other programs write them to a store."""

from __future__ import annotations

from typing import Any


def calling(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """An assistant message calling one function tool."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }
