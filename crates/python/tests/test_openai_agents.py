"""`agentmem.openai_agents.AgentmemSession` against the SDK's own `SQLiteSession`, on every
backend: the same calls give the same results, every item type round-trips as equal JSON,
tool calls are agentmem tool calls, and an offline `Runner.run` stores the same items."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.items import ModelResponse, TResponseInputItem  # noqa: E402
from agents.memory import Session, SessionSettings  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from chat_shapes import calling  # noqa: E402
from openai.types.responses import (  # noqa: E402
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseUsage,
)
from openai.types.responses.response_reasoning_item import Summary  # noqa: E402
from openai.types.responses.response_usage import (  # noqa: E402
    InputTokensDetails,
    OutputTokensDetails,
)

import agentmem  # noqa: E402
from agentmem.openai_agents import ITEM_KEY, AgentmemSession  # noqa: E402

set_tracing_disabled(True)


def _session_id() -> str:
    return f"oa-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def reference() -> Iterator[SQLiteSession]:
    """The SDK's own session, in memory."""
    session = SQLiteSession("reference")
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def session(namespace) -> AgentmemSession:
    """An agentmem session on each backend in turn."""
    return AgentmemSession(_session_id(), namespace.url)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def reply(text: str, item_id: str = "msg_1") -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


CONVERSATION: list[dict[str, Any]] = [
    user("What is the weather in Oslo and Kyoto?"),
    call("c1", "weather", '{"city": "Oslo"}'),
    call("c2", "weather", '{"city": "Kyoto"}'),
    output("c1", "sunny, 21 C"),
    output("c2", "rain, 14 C"),
    reply("Sunny in Oslo, rain in Kyoto.", "msg_a"),
    user("And in Lima?"),
    call("c3", "weather", '{"city": "Lima"}'),
    output("c3", "cloudy, 18 C"),
    reply("Cloudy in Lima.", "msg_b"),
]

EVERY_ITEM: list[Any] = [
    {"role": "system", "content": "You are terse."},
    {"role": "developer", "content": "Use metric units."},
    user("plain text from the user"),
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is in this picture?"},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
            {"type": "input_file", "file_id": "file_1", "filename": "notes.pdf"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The user wants a forecast."}],
        "content": [{"type": "reasoning_text", "text": "Call the weather tool."}],
        "encrypted_content": None,
    },
    call("call_x", "weather", '{"city": "Zürich", "units": ["C", "F"]}'),
    {
        "type": "function_call_output",
        "call_id": "call_x",
        "output": [
            {"type": "input_text", "text": "snow, -2 C"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        ],
    },
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "Zürich avalanche warning"},
    },
    {
        "type": "file_search_call",
        "id": "fs_1",
        "queries": ["ski passes", "opening hours"],
        "status": "completed",
        "results": None,
    },
    {
        "type": "custom_tool_call",
        "call_id": "ct_1",
        "name": "grammar",
        "input": "SELECT 1",
    },
    {"type": "custom_tool_call_output", "call_id": "ct_1", "output": "1"},
    {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "cc_1",
        "action": {"type": "click", "x": 10, "y": 20, "button": "left"},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {
        "type": "computer_call_output",
        "call_id": "cc_1",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA"},
    },
    {"type": "item_reference", "id": "msg_old"},
    {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "arguments": "{}",
        "name": "deploy",
        "server_label": "ops",
    },
    {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False},
    reply("Snow in Zürich ❄ — 雪", "msg_z"),
    {
        "type": "a_future_item_type",
        "nested": {"deep": [1, 2.5, -3, True, None, {"x": "y"}]},
        "big": 2**70,
        "tiny": 1e-300,
        "text": "kept as is",
    },
    {"type": "function_call", "call_id": "x" * 300, "name": "long id", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "bad\nid", "output": "control character"},
    {"type": "t" * 300 + "_call", "call_id": "long_type", "name": 7},
    {"role": "tool", "content": "an odd role"},
    {"role": "user", "content": "NUL \x00 and a lone surrogate \ud800 inside"},
    {"content": "no role, no type"},
    ["a list", "is not an item, but SQLiteSession keeps it"],
    "a bare string",
]


async def same(a: Any, b: Any) -> None:
    """Awaits two calls and checks their results are equal."""
    left, right = await asyncio.gather(a, b)
    assert left == right
    return left


# The protocol


async def test_it_is_an_sdk_session(namespace):
    store = namespace.open()
    by_url = AgentmemSession(_session_id(), namespace.url)
    by_store = AgentmemSession(_session_id(), store=store)
    by_async_store = AgentmemSession(_session_id(), store=agentmem.AsyncStore(store))
    for session in (by_url, by_store, by_async_store):
        assert isinstance(session, Session)
        assert session.session_settings == SessionSettings()
        assert await session.get_items() == []
    assert AgentmemSession("s", store=store, session_settings={"limit": 3}).session_settings == (
        SessionSettings(limit=3)
    )
    with pytest.raises(agentmem.InvalidInput):
        AgentmemSession("s")
    with pytest.raises(agentmem.InvalidInput):
        AgentmemSession("s", namespace.url, store=store)


async def test_calls_give_what_sqlite_session_gives(session, reference):
    await same(session.get_items(), reference.get_items())
    assert await same(session.pop_item(), reference.pop_item()) is None
    await same(session.add_items([]), reference.add_items([]))
    assert await session.get_items() == []

    await same(session.add_items(CONVERSATION[:6]), reference.add_items(CONVERSATION[:6]))
    await same(session.add_items(CONVERSATION[6:]), reference.add_items(CONVERSATION[6:]))
    assert await same(session.get_items(), reference.get_items()) == CONVERSATION
    # Exact counts, even where the cut separates calls from their outputs (limit 2 starts on
    # an output, 6 on the second call of a parallel pair).
    for limit in [*range(0, len(CONVERSATION) + 3), -1]:
        items = await same(session.get_items(limit), reference.get_items(limit))
        expected = CONVERSATION[-limit:] if limit > 0 else ([] if limit == 0 else CONVERSATION)
        assert items == expected, limit

    assert await same(session.pop_item(), reference.pop_item()) == CONVERSATION[-1]
    assert await same(session.pop_item(), reference.pop_item()) == CONVERSATION[-2]
    assert await same(session.get_items(2), reference.get_items(2)) == CONVERSATION[-4:-2]
    await same(session.add_items([reply("again")]), reference.add_items([reply("again")]))
    await same(session.get_items(), reference.get_items())

    await same(session.clear_session(), reference.clear_session())
    assert await same(session.get_items(), reference.get_items()) == []
    assert await same(session.get_items(3), reference.get_items(3)) == []
    assert await same(session.pop_item(), reference.pop_item()) is None
    await same(session.clear_session(), reference.clear_session())
    await same(session.add_items([user("fresh")]), reference.add_items([user("fresh")]))
    assert await same(session.get_items(), reference.get_items()) == [user("fresh")]


async def test_every_limit_on_a_long_session_with_tool_calls(session, reference):
    items: list[dict[str, Any]] = []
    for turn in range(12):
        items += [user(f"question {turn}"), call(f"t{turn}", "lookup", "{}")]
        items += [output(f"t{turn}", f"answer {turn}"), reply(f"done {turn}", f"m{turn}")]
    await same(session.add_items(items), reference.add_items(items))
    for limit in range(0, len(items) + 2):
        got = await same(session.get_items(limit), reference.get_items(limit))
        assert len(got) == min(limit, len(items))


async def test_session_settings_limit_is_the_default(namespace):
    for settings in (SessionSettings(limit=3), {"limit": 3}):
        session = AgentmemSession(_session_id(), namespace.url, session_settings=settings)
        reference = SQLiteSession("reference", session_settings=settings)
        try:
            await same(session.add_items(CONVERSATION), reference.add_items(CONVERSATION))
            assert await same(session.get_items(), reference.get_items()) == CONVERSATION[-3:]
            assert await same(session.get_items(5), reference.get_items(5)) == CONVERSATION[-5:]
            assert await same(session.get_items(0), reference.get_items(0)) == []
        finally:
            reference.close()
    unlimited = AgentmemSession(_session_id(), namespace.url, session_settings=SessionSettings())
    await unlimited.add_items(CONVERSATION)
    assert await unlimited.get_items() == CONVERSATION


# Items


async def test_every_item_round_trips_as_equal_json(session, reference):
    expected = json.loads(json.dumps(EVERY_ITEM))
    await same(session.add_items(EVERY_ITEM), reference.add_items(EVERY_ITEM))
    items = await same(session.get_items(), reference.get_items())
    assert items == expected
    assert json.dumps(items) == json.dumps(expected)
    # A second session on the same store reads them the same way.
    again = AgentmemSession(session.session_id, store=session.store)
    assert await again.get_items() == expected
    for item in reversed(expected):
        assert await same(session.pop_item(), reference.pop_item()) == item
    assert await session.pop_item() is None


async def test_one_add_items_call_is_one_atomic_append(session):
    native = session._native
    appends: list[int] = []

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(native, name)

        def append(self, session_id: str, messages: list[dict[str, Any]]) -> None:
            appends.append(len(messages))
            native.append(session_id, messages)

    session._native = Counting()
    await session.add_items(CONVERSATION)
    await session.add_items([])
    assert appends == [len(CONVERSATION)]
    with pytest.raises(TypeError):
        await session.add_items([user("kept?"), object()])  # type: ignore[list-item]
    assert await session.get_items() == CONVERSATION
    assert appends == [len(CONVERSATION)]


async def test_tool_calls_are_agentmem_tool_calls(session):
    await session.add_items(CONVERSATION)
    store = session.store
    raw = store._native.load(session.session_id, None)["messages"]
    assert len(raw) == len(CONVERSATION)
    first_call, first_output = raw[1], raw[3]
    assert first_call["role"] == "assistant"
    assert first_call["tool_call_id"] == "c1"
    assert first_call["tool_name"] == "weather"
    assert first_call["content"] == '{"city": "Oslo"}'
    assert first_output["role"] == "tool"
    assert first_output["tool_call_id"] == "c1"
    assert first_output["tool_name"] == "weather"
    assert first_output["content"] == "sunny, 21 C"
    assert raw[5]["content"] == "Sunny in Oslo, rain in Kyoto."
    assert all(ITEM_KEY in m["metadata"] for m in raw)

    loaded = store.load(session.session_id)
    assert [m["role"] for m in loaded] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    calls = loaded[1]["tool_calls"]
    assert [c["id"] for c in calls] == ["c1", "c2"]
    assert calls[1]["function"] == {"name": "weather", "arguments": '{"city": "Kyoto"}'}
    assert loaded[2]["tool_call_id"] == "c1" and loaded[2]["content"] == "sunny, 21 C"
    # The store's own windows never keep an output without its call (get_items does).
    assert [m["content"] for m in store.load(session.session_id, limit=2)] == ["Cloudy in Lima."]
    window = store.load(session.session_id, limit=3)
    assert window[0]["role"] == "assistant" and window[0]["tool_calls"][0]["id"] == "c3"

    hits = store.search("Kyoto", session_id=session.session_id)
    assert {h["message"]["content"] for h in hits} >= {"Sunny in Oslo, rain in Kyoto."}
    assert store.search("cloudy", session_id=session.session_id)[0]["message"]["role"] == "tool"


async def test_other_items_are_readable_to_the_store(session):
    await session.add_items(EVERY_ITEM)
    raw = session.store._native.load(session.session_id, None)["messages"]
    by_type = {json.loads(m["metadata"][ITEM_KEY]).get("type", "?"): m for m in raw[4:-7]}
    assert raw[1]["role"] == "system"
    assert raw[3]["content"] == "What is in this picture?\n[input_image]\n[file notes.pdf]"
    assert by_type["reasoning"]["content"] == (
        "[reasoning] The user wants a forecast.\nCall the weather tool."
    )
    assert by_type["web_search_call"]["content"] == "[web_search_call] Zürich avalanche warning"
    assert by_type["function_call_output"]["content"] == "snow, -2 C\n[input_image]"
    assert by_type["custom_tool_call"]["tool_name"] == "grammar"
    assert by_type["custom_tool_call_output"]["tool_call_id"] == "ct_1"
    assert by_type["computer_call"]["tool_name"] == "computer"
    hits = session.store.search("avalanche", session_id=session.session_id)
    assert hits and hits[0]["message"]["content"].startswith("[web_search_call]")
    # An id the store cannot hold as a tool call id keeps the item, not the pairing.
    assert "tool_call_id" not in raw[-8] and "tool_call_id" not in raw[-7]
    assert raw[-6]["tool_call_id"] == "long_type" and raw[-6]["tool_name"] == "tool"


async def test_messages_written_by_others_read_as_items(session):
    session.store.append(
        session.session_id,
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "weather?"},
            calling("k1", "weather", "{}"),
            {"role": "tool", "tool_call_id": "k1", "content": "sunny"},
            {"role": "Planner", "content": "an agent's note"},
        ],
    )
    await session.add_items([user("thanks")])
    assert await session.get_items() == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": "k1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "k1", "output": "sunny"},
        {"role": "assistant", "content": "an agent's note"},
        user("thanks"),
    ]


async def test_the_cli_sees_tool_calls_and_python_sees_cli_messages(session, namespace, cli):
    await session.add_items(CONVERSATION[:6])
    shown = json.loads(cli("--store", namespace.url, "--json", "show", session.session_id).stdout)
    assert len(shown["messages"]) == 6
    assert shown["messages"][1]["tool_call_id"] == "c1"
    assert shown["messages"][1]["tool_name"] == "weather"
    assert shown["messages"][3]["role"] == "tool"
    cli("--store", namespace.url, "append", session.session_id, "--role", "user", "from the CLI")
    items = await session.get_items()
    assert items == [*CONVERSATION[:6], {"role": "user", "content": "from the CLI"}]


async def test_an_encrypted_store_keeps_every_item(namespace, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(base64.b64encode(os.urandom(32)).decode())
    key_file.chmod(0o600)
    session = AgentmemSession(_session_id(), namespace.url, key_file=key_file)
    long_ids = [
        call("y" * 139, "weather", "{}"),
        output("y" * 139, "ok"),
        call("z" * 200, "weather", "{}"),
        output("z" * 200, "ok"),
    ]
    await session.add_items([*EVERY_ITEM, *long_ids])
    assert await session.get_items() == json.loads(json.dumps([*EVERY_ITEM, *long_ids]))
    assert await session.get_items(3) == long_ids[1:]
    assert await session.pop_item() == long_ids[-1]
    with pytest.raises(agentmem.InvalidInput):
        await AgentmemSession(session.session_id, namespace.url).get_items()


async def test_sessions_writing_at_once_lose_nothing(namespace):
    session_id = _session_id()
    writers = [AgentmemSession(session_id, namespace.url) for _ in range(4)]

    async def write(n: int, session: AgentmemSession) -> None:
        for turn in range(5):
            await session.add_items([user(f"{n}-{turn}"), reply(f"ok {n}-{turn}")])

    await asyncio.gather(*(write(n, s) for n, s in enumerate(writers)))
    items = await writers[0].get_items()
    assert len(items) == 40
    assert sorted(i["content"] for i in items if i.get("role") == "user") == sorted(
        f"{n}-{t}" for n in range(4) for t in range(5)
    )


async def test_a_closed_session_refuses_calls(session):
    session.close()
    with pytest.raises(RuntimeError):
        await session.get_items()


# The Runner, offline


def _usage() -> ResponseUsage:
    return ResponseUsage(
        input_tokens=1,
        output_tokens=1,
        total_tokens=2,
        input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )


class ScriptedWeatherModel(Model):
    """Calls `get_weather` for each new user message, then answers with what it returned.

    Deterministic (ids derive from the turn), so two runs on two sessions store equal items.
    It records the input of every call, which includes the session's history."""

    def __init__(self) -> None:
        self.inputs: list[list[TResponseInputItem]] = []

    def _output(self, input: str | list[TResponseInputItem]) -> list[Any]:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append(copy.deepcopy(list(items)))
        turn = sum(1 for i in items if i.get("role") == "user")
        last = items[-1]
        if last.get("type") == "function_call_output":
            return [
                ResponseOutputMessage(
                    id=f"msg_{turn}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[
                        ResponseOutputText(
                            type="output_text",
                            text=f"Turn {turn}: {last['output']}",
                            annotations=[],
                        )
                    ],
                )
            ]
        city = str(last.get("content"))
        return [
            ResponseReasoningItem(
                id=f"rs_{turn}",
                type="reasoning",
                summary=[Summary(type="summary_text", text=f"look up {city}")],
            ),
            ResponseFunctionToolCall(
                id=f"fc_{turn}",
                type="function_call",
                call_id=f"call_{turn}",
                name="get_weather",
                arguments=json.dumps({"city": city}),
                status="completed",
            ),
        ]

    # The runner passes every argument by name; only ``input`` matters here.
    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *_: Any,
        **__: Any,
    ) -> ModelResponse:
        return ModelResponse(output=self._output(input), usage=Usage(), response_id=None)

    # The runner passes every argument by name; only ``input`` matters here.
    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *_: Any,
        **__: Any,
    ) -> AsyncIterator[Any]:
        response = Response(
            id="scripted",
            created_at=0,
            model="scripted",
            object="response",
            output=self._output(input),
            tool_choice="auto",
            tools=[],
            top_p=None,
            parallel_tool_calls=False,
            status="completed",
            usage=_usage(),
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=0
        )


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


async def _two_turns(session: Session, *, streamed: bool) -> tuple[list[str], ScriptedWeatherModel]:
    model = ScriptedWeatherModel()
    agent = Agent(
        name="forecaster", instructions="Answer briefly.", model=model, tools=[get_weather]
    )
    outputs = []
    for city in ("Oslo", "Kyoto"):
        if streamed:
            result = Runner.run_streamed(agent, city, session=session)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, city, session=session)
        outputs.append(result.final_output)
    return outputs, model


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_runner_stores_what_it_stores_in_sqlite_session(session, reference, streamed):
    ours, our_model = await _two_turns(session, streamed=streamed)
    theirs, their_model = await _two_turns(reference, streamed=streamed)
    assert ours == theirs == ["Turn 1: Oslo: sunny", "Turn 2: Kyoto: sunny"]
    # The model saw the same history, the first turn's included.
    assert our_model.inputs == their_model.inputs
    assert any(i.get("content") == "Oslo" for i in our_model.inputs[-1])
    items = await session.get_items()
    assert items == await reference.get_items()
    assert [i.get("type", "message") for i in items] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ] * 2
    loaded = session.store.load(session.session_id)
    assert loaded[2]["tool_calls"][0]["function"]["name"] == "get_weather"
    result = {k: loaded[3][k] for k in ("role", "tool_call_id", "name", "content")}
    assert result == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "get_weather",
        "content": "Oslo: sunny",
    }
