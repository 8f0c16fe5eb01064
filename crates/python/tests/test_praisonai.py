"""`agentmem.praisonai.AgentmemMemory` with the real praisonaiagents package, on every backend.

No test reaches the network: the model is scripted at PraisonAI's LLM boundary
(`OpenAIClient.create_completion` / `acreate_completion`), telemetry is off, and every socket
connection to anything but the local servers fails the test.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import subprocess
import sys
import textwrap
import warnings
from typing import Any

import pytest

os.environ.setdefault("PRAISONAI_TELEMETRY_DISABLED", "true")

if os.environ.get("AGENTMEM_REQUIRE_SERVICES"):
    import praisonaiagents  # noqa: F401  (CI runs against the real package)
else:
    pytest.importorskip("praisonaiagents")

from chat_shapes import calling  # noqa: E402
from praisonaiagents import Agent  # noqa: E402
from praisonaiagents.llm.openai_client import OpenAIClient  # noqa: E402
from praisonaiagents.memory.protocols import (  # noqa: E402
    AgentMemoryProtocol,
    DeletableMemoryProtocol,
    MemoryProtocol,
    MemoryTrust,
    ResettableMemoryProtocol,
)

import agentmem  # noqa: E402
from agentmem.praisonai import AgentmemMemory, scope_agent_name  # noqa: E402

RECORD_KEYS = {"id", "text", "metadata", "score"}


def texts(records: list[dict[str, Any]]) -> list[str]:
    return [r["text"] for r in records]


def contents(store: agentmem.Store, session_id: str) -> list[str]:
    """The contents of the session's messages, in order."""
    return [m["content"] for m in store.load(session_id)]


# Protocol conformance


def assert_compatible(protocol: type, implementation: object, name: str) -> None:
    """Every call the protocol's signature allows, the implementation's accepts alike."""
    wanted = inspect.signature(getattr(protocol, name))
    given = inspect.signature(getattr(implementation, name))
    wanted_params = [p for p in wanted.parameters.values() if p.name != "self"]
    given_params = list(given.parameters.values())
    kinds = inspect.Parameter
    if any(p.kind == kinds.VAR_KEYWORD for p in wanted_params):
        assert any(p.kind == kinds.VAR_KEYWORD for p in given_params), name
    positional = [p for p in given_params if p.kind == kinds.POSITIONAL_OR_KEYWORD]
    for index, param in enumerate(wanted_params):
        if param.kind == kinds.VAR_KEYWORD:
            continue
        if param.kind == kinds.POSITIONAL_OR_KEYWORD:
            assert positional[index].name == param.name, (name, param.name)
        mine = given.parameters.get(param.name)
        assert mine is not None, (name, param.name)
        if param.default is not inspect.Parameter.empty:
            assert mine.default is not inspect.Parameter.empty, (name, param.name)
    required = {
        p.name
        for p in given_params
        if p.default is inspect.Parameter.empty and p.kind not in (kinds.VAR_KEYWORD,)
    }
    assert required <= {p.name for p in wanted_params}, (name, required)


def test_satisfies_praisonai_memory_protocols(namespace):
    memory = AgentmemMemory(namespace.url, agent="alice", workspace="shop")
    protocols = {
        AgentMemoryProtocol: ["get_context", "save_session"],
        MemoryProtocol: [
            "store_short_term",
            "search_short_term",
            "store_long_term",
            "search_long_term",
            "get_all_memories",
        ],
        DeletableMemoryProtocol: ["delete_memory", "delete_memories"],
        ResettableMemoryProtocol: ["reset_short_term", "reset_long_term"],
    }
    for protocol, methods in protocols.items():
        assert isinstance(memory, protocol), protocol.__name__
        for name in methods:
            assert_compatible(protocol, memory, name)


def test_opens_a_url_or_takes_a_store(namespace):
    store = namespace.open()
    memory = AgentmemMemory(store=store, agent="alice")
    assert memory.store is store
    with pytest.raises(agentmem.InvalidInput):
        AgentmemMemory()
    with pytest.raises(agentmem.InvalidInput):
        AgentmemMemory(namespace.url, store=store)
    with pytest.raises(agentmem.InvalidInput):
        AgentmemMemory(namespace.url, workspace="a/b")


# Scope


def test_context_is_scoped_per_agent_and_workspace(namespace):
    alice = AgentmemMemory(namespace.url, agent="alice", workspace="shop")
    bob = AgentmemMemory(namespace.url, agent="bob", workspace="shop")
    elsewhere = AgentmemMemory(namespace.url, agent="alice", workspace="lab")
    shared = AgentmemMemory(namespace.url)
    alice.store_long_term("Ada prefers green tea")
    alice.store_short_term("Ada is choosing a teapot")
    bob.store_long_term("Bo drinks black coffee")
    shared.store_long_term("The shop opens at nine")
    namespace.open().store_memory("Shop stock counts run on Mondays", workspace="shop")

    seen_by_alice = alice.get_context()
    assert "Ada prefers green tea" in seen_by_alice
    assert "Ada is choosing a teapot" in seen_by_alice
    assert "The shop opens at nine" in seen_by_alice
    assert "Shop stock counts run on Mondays" in seen_by_alice
    assert "coffee" not in seen_by_alice

    seen_by_bob = bob.get_context()
    assert "Bo drinks black coffee" in seen_by_bob
    assert "The shop opens at nine" in seen_by_bob
    assert "tea" not in seen_by_bob

    # The same agent in another workspace sees only the global items.
    assert elsewhere.get_context() == "- The shop opens at nine"

    # With a query: the matching items this scope sees, never another agent's.
    assert "green tea" in alice.get_context("tea")
    assert bob.get_context("tea") == ""
    assert "coffee" not in alice.get_context("coffee")

    # Searches and listings are scoped the same way.
    assert texts(bob.search_long_term("tea")) == []
    assert "Ada prefers green tea" in texts(alice.search_long_term("tea"))
    assert "Bo drinks black coffee" not in texts(alice.get_all_memories())

    # Items land in the scope the Rust agent layer uses, as the store shows.
    items = namespace.open().memories(agent="alice", workspace="shop", exact=True)
    assert {i["text"] for i in items} == {"Ada prefers green tea", "Ada is choosing a teapot"}
    assert all(i["scope"] == {"agent": "alice", "workspace": "shop"} for i in items)


def test_free_text_agent_names_get_the_rust_layers_scope(namespace):
    assert scope_agent_name("alice") == "alice"
    hashed = scope_agent_name("Research Agent!")
    assert hashed.startswith("agent-") and len(hashed) == len("agent-") + 32
    assert hashed == scope_agent_name("Research Agent!")
    assert hashed != scope_agent_name("Research Agent?")
    memory = AgentmemMemory(namespace.url, agent="Research Agent!")
    memory.store_long_term("found three papers")
    assert [i["scope"] for i in namespace.open().memories()] == [{"agent": hashed}]
    assert "found three papers" in memory.get_context()


def test_owner_scopes_items(namespace):
    ada = AgentmemMemory(namespace.url, agent="alice", owner="ada")
    bo = AgentmemMemory(namespace.url, agent="alice", owner="bo")
    ada.store_long_term("Ada's birthday is in May")
    assert "May" in ada.get_context()
    assert bo.get_context() == ""


# Sessions


def test_save_session_replaces_the_session(namespace):
    memory = AgentmemMemory(namespace.url, agent="alice", workspace="shop", owner="ada")
    first = [
        {"role": "user", "content": "Hi, I'm Ada"},
        {"role": "assistant", "content": "Hello Ada"},
        {"role": "user", "content": "What's the weather?"},
        calling("call_1", "weather", {"city": "Oslo"}),
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "assistant", "content": "Sunny in Oslo."},
    ]
    assert memory.save_session("ada-chat", first, {"agent_name": "alice", "user_id": "ada"}) is None
    store = namespace.open()
    loaded = store.load("ada-chat")
    assert [m["role"] for m in loaded] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert loaded[3]["tool_calls"][0]["function"] == {
        "name": "weather",
        "arguments": '{"city": "Oslo"}',
    }
    assert loaded[4]["content"] == "sunny"

    second = [
        {"role": "user", "content": "Start over"},
        {"role": "assistant", "content": "Sure"},
    ]
    memory.save_session("ada-chat", conversation_history=second, metadata={"user_id": "ada"})
    loaded = store.load("ada-chat")
    assert [(m["role"], m["content"]) for m in loaded] == [
        ("user", "Start over"),
        ("assistant", "Sure"),
    ]
    info = store.session("ada-chat")
    assert info["message_count"] == 2
    assert info["owner"] == "ada"
    assert info["tags"] == {"agent": "alice", "workspace": "shop"}
    document = store.export("ada-chat")
    assert document["metadata"] == {
        "user_id": "ada",
        "agent": "alice",
        "workspace": "shop",
    }
    assert [s["id"] for s in store.find_sessions(owner="ada", tags={"agent": "alice"})] == [
        "ada-chat"
    ]

    memory.save_session("ada-chat", [])
    assert store.load("ada-chat") == []


def test_save_session_keeps_multi_part_content(namespace):
    memory = AgentmemMemory(namespace.url)
    parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    memory.save_session("pictures", [{"role": "user", "content": parts}], None)
    [message] = namespace.open().load("pictures")
    assert message["content"] == "What is in this picture?"
    assert message["content_parts"] == parts
    assert namespace.open().search("picture")[0]["session"] == "pictures"


def test_an_invalid_session_name_is_refused(namespace):
    with pytest.raises(agentmem.InvalidInput):
        AgentmemMemory(namespace.url).save_session("../escape", [], None)


# Short- and long-term memory


def test_store_and_search_return_praisonais_shapes(namespace):
    memory = AgentmemMemory(namespace.url, agent="alice")
    short_id = memory.store_short_term("Ada is planning a trip to Lisbon", {"turn": 1})
    long_id = memory.store_long_term("Ada is vegetarian", metadata={"source": "chat"})
    assert isinstance(short_id, str) and isinstance(long_id, str) and short_id != long_id

    [short] = memory.search_short_term("Lisbon")
    assert set(short) == RECORD_KEYS
    assert short["id"] == short_id
    assert short["text"] == "Ada is planning a trip to Lisbon"
    assert short["metadata"] == {"turn": 1}
    assert isinstance(short["score"], float)

    [long] = memory.search_long_term("vegetarian", limit=3)
    assert set(long) == RECORD_KEYS
    assert (long["id"], long["metadata"]) == (long_id, {"source": "chat"})

    # Each tier searches its own kind only.
    assert memory.search_long_term("Lisbon") == []
    assert memory.search_short_term("vegetarian") == []

    kinds = {i["id"]: i["kind"] for i in namespace.open().memories()}
    assert kinds == {short_id: "short_term", long_id: "long_term"}

    everything = memory.get_all_memories()
    assert [(r["id"], r["type"]) for r in everything] == [
        (short_id, "short_term"),
        (long_id, "long_term"),
    ]
    assert all(set(r) == {"id", "text", "metadata", "created_at", "type"} for r in everything)


def test_search_limits_and_empty_queries(namespace):
    memory = AgentmemMemory(namespace.url, agent="alice")
    for i in range(7):
        memory.store_long_term(f"note {i} about tea")
    assert len(memory.search_long_term("tea")) == 5  # PraisonAI's default limit
    assert len(memory.search_long_term("tea", 2)) == 2
    assert len(memory.search_long_term("tea", limit=-1)) == 7
    assert memory.search_long_term("tea", limit=0) == []
    newest = memory.search_long_term("", limit=2)
    assert texts(newest) == ["note 6 about tea", "note 5 about tea"]
    assert len(memory.search_long_term("", limit=-1)) == 7


def test_trust_and_metadata_filters(namespace):
    memory = AgentmemMemory(namespace.url, agent="alice")
    memory.store_long_term("Tea from the operator", {"user_id": "ada"})
    memory.store_long_term(
        "Tea from a group chat", {"user_id": "ada"}, trust=MemoryTrust.UNTRUSTED, origin="tg"
    )
    memory.store_long_term("Tea for Bo", {"user_id": "bo", "session_id": "s2"})
    untrusted = [r for r in memory.search_long_term("tea", 10) if "group" in r["text"]]
    assert untrusted[0]["metadata"] == {"user_id": "ada", "trust": "untrusted", "origin": "tg"}
    trusted = memory.search_long_term("tea", 10, min_trust=MemoryTrust.TRUSTED)
    assert "Tea from a group chat" not in texts(trusted)
    assert len(trusted) == 2
    assert texts(memory.search_long_term("tea", 10, user_id="bo")) == ["Tea for Bo"]
    assert texts(memory.search_long_term("tea", 10, metadata_filter={"session_id": "s2"})) == [
        "Tea for Bo"
    ]
    assert sorted(
        texts(memory.search_long_term("tea", 10, user_id="ada", min_trust="trusted"))
    ) == ["Tea from the operator"]
    with pytest.raises(ValueError):
        memory.store_short_term("x", trust="very")
    # Keyword arguments PraisonAI passes and this store has no use for are ignored.
    memory.store_short_term("Tea time", None, quality_score=0.5, completeness=1.0)
    assert texts(memory.search_short_term("tea", 5, rerank=True, session_id="s1")) == ["Tea time"]


def test_delete_and_reset_stay_in_scope(namespace):
    alice = AgentmemMemory(namespace.url, agent="alice")
    bob = AgentmemMemory(namespace.url, agent="bob")
    shared = AgentmemMemory(namespace.url)
    mine = alice.store_short_term("alice's scratch note")
    kept = alice.store_long_term("alice's long note")
    theirs = bob.store_short_term("bob's scratch note")
    common = shared.store_short_term("a shared note")
    assert alice.delete_memory(theirs) is False
    assert alice.delete_memory(kept, memory_type="short_term") is False
    assert alice.delete_memories([mine, theirs, "no-such-id"]) == 1
    other = alice.store_short_term("another note")
    alice.reset_short_term()
    left = {i["id"] for i in namespace.open().memories()}
    assert left == {kept, theirs, common}
    assert other not in left
    alice.reset_long_term()
    assert {i["id"] for i in namespace.open().memories()} == {theirs, common}


# Other processes and the CLI


RECALL = textwrap.dedent(
    """
    import json, sys
    from agentmem.praisonai import AgentmemMemory

    memory = AgentmemMemory(sys.argv[1], agent="alice", workspace="shop")
    print(json.dumps({
        "context": memory.get_context(),
        "found": [r["text"] for r in memory.search_long_term("tea")],
        "session": [m["content"] for m in memory.store.load("ada-chat")],
    }))
    """
)


def test_a_new_agent_process_on_the_same_url_recalls_it(namespace):
    memory = AgentmemMemory(namespace.url, agent="alice", workspace="shop")
    memory.store_long_term("Ada prefers green tea")
    memory.save_session(
        "ada-chat",
        [{"role": "user", "content": "Hi, I'm Ada"}, {"role": "assistant", "content": "Hello"}],
        {"agent_name": "alice"},
    )
    AgentmemMemory(namespace.url, agent="bob", workspace="shop").store_long_term("Bo: tea too")
    ran = subprocess.run(
        [sys.executable, "-c", RECALL, namespace.url],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    recalled = json.loads(ran.stdout)
    assert recalled == {
        "context": "- Ada prefers green tea",
        "found": ["Ada prefers green tea"],
        "session": ["Hi, I'm Ada", "Hello"],
    }


def test_the_cli_shows_what_it_stored(namespace, cli):
    memory = AgentmemMemory(namespace.url, agent="alice", workspace="shop", owner="ada")
    memory.store_long_term("Ada prefers green tea")
    memory.save_session("ada-chat", [{"role": "user", "content": "Hi, I'm Ada"}], {})
    listed = json.loads(
        cli(
            "--store",
            namespace.url,
            "--json",
            "memories",
            "--agent",
            "alice",
            "--workspace",
            "shop",
            "--owner",
            "ada",
        ).stdout
    )
    assert "Ada prefers green tea" in json.dumps(listed)
    shown = json.loads(cli("--store", namespace.url, "--json", "show", "ada-chat").stdout)
    assert [m["content"] for m in shown["messages"]] == ["Hi, I'm Ada"]
    sessions = cli("--store", namespace.url, "--json", "sessions").stdout
    assert "ada-chat" in sessions and "ada" in sessions


# A real praisonaiagents.Agent, offline


@pytest.fixture
def offline(monkeypatch):
    """No network: a scripted model at PraisonAI's LLM boundary (its ``OpenAIClient`` and, for
    streaming, the OpenAI SDK's ``Completions.create`` it calls directly), and every socket
    connection to anything but this machine recorded and refused. Yields the message lists the
    model got."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    from openai.resources.chat.completions import Completions
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    requests: list[list[dict[str, Any]]] = []
    refused: list[Any] = []
    connect = socket.socket.connect

    def guarded(self, address, *args):
        host = address[0] if isinstance(address, tuple) else address
        if self.family == socket.AF_UNIX or host in ("127.0.0.1", "::1", "localhost"):
            return connect(self, address, *args)
        refused.append(address)
        raise OSError(f"test tried to reach the network: {address}")

    def chunk(delta: dict[str, Any], finish: str | None) -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate(
            {
                "id": f"chatcmpl-{len(requests)}",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    def reply(messages: list[dict[str, Any]], stream: bool = False) -> Any:
        requests.append([dict(m) for m in messages])
        text = f"Reply to: {messages[-1].get('content')}"
        if stream:
            return iter([chunk({"role": "assistant", "content": text}, None), chunk({}, "stop")])
        return ChatCompletion.model_validate(
            {
                "id": f"chatcmpl-{len(requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    def create_completion(self, messages, *args, stream=False, **kwargs):
        return reply(messages, stream)

    async def acreate_completion(self, messages, *args, stream=False, **kwargs):
        assert not stream
        return reply(messages)

    def sdk_create(self, *, messages, stream=False, **kwargs):
        return reply(messages, bool(stream))

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(OpenAIClient, "create_completion", create_completion)
    monkeypatch.setattr(OpenAIClient, "acreate_completion", acreate_completion)
    monkeypatch.setattr(Completions, "create", sdk_create)
    yield requests
    assert refused == []


def make_agent(memory: AgentmemMemory, **kwargs: Any) -> Agent:
    """An agent on ``memory``; ``auto_save=`` is PraisonAI's deprecated keyword, still the one
    way to give it with a memory object at construction."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return Agent(
            name="alice",
            instructions="You help Ada shop for tea.",
            model="gpt-4o-mini",
            memory=memory,
            output="silent",
            **kwargs,
        )


def system_prompt(request: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in request if m["role"] == "system")


def test_an_agent_builds_its_prompt_from_the_store_offline(namespace, offline):
    memory = AgentmemMemory(namespace.url, agent="alice", workspace="shop")
    memory.store_long_term("Ada prefers green tea")
    AgentmemMemory(namespace.url, agent="bob", workspace="shop").store_long_term("Bo: coffee")
    agent = Agent(name="alice", instructions="You help Ada.", model="gpt-4o-mini", memory=memory)
    assert agent._memory_instance is memory
    assert agent.get_memory_context() == "- Ada prefers green tea"
    prompt = agent._build_system_prompt()
    assert "## Memory (Information you remember about the user)\n- Ada prefers green tea" in prompt
    assert "coffee" not in prompt


def test_an_agent_run_stores_turns_and_saves_its_session(namespace, offline):
    memory = AgentmemMemory(namespace.url, agent="alice", workspace="shop", owner="ada")
    memory.store_long_term("Ada prefers green tea")
    agent = make_agent(memory, auto_save="ada-chat")
    assert agent.auto_save == "ada-chat"

    assert agent.start("Hi, I'm Ada", stream=False) == "Reply to: Hi, I'm Ada"
    assert "- Ada prefers green tea" in system_prompt(offline[0])
    store = namespace.open()
    assert [(m["role"], m["content"]) for m in store.load("ada-chat")] == [
        ("user", "Hi, I'm Ada"),
        ("assistant", "Reply to: Hi, I'm Ada"),
    ]
    turn = "User: Hi, I'm Ada\nAssistant: Reply to: Hi, I'm Ada"
    items = store.memories(agent="alice", workspace="shop", owner="ada", exact=True)
    assert sorted((i["kind"], i["text"]) for i in items if i["text"] == turn) == [
        ("long_term", turn),
        ("short_term", turn),
    ]

    assert agent.run("Which tea do I like?") == "Reply to: Which tea do I like?"
    # The second turn's prompt holds the first turn, recalled from the store.
    assert "User: Hi, I'm Ada" in system_prompt(offline[1])
    assert contents(store, "ada-chat") == [
        "Hi, I'm Ada",
        "Reply to: Hi, I'm Ada",
        "Which tea do I like?",
        "Reply to: Which tea do I like?",
    ]
    info = store.session("ada-chat")
    assert (info["owner"], info["tags"]) == ("ada", {"agent": "alice", "workspace": "shop"})

    # A new agent on the same URL and scope starts with what the first one stored.
    # (auto_save may also be set after construction.)
    again = make_agent(AgentmemMemory(namespace.url, agent="alice", workspace="shop", owner="ada"))
    again.auto_save = "ada-chat-2"
    again.start("Hello again", stream=False)
    assert "Which tea do I like?" in system_prompt(offline[2])
    assert "Ada prefers green tea" in system_prompt(offline[2])
    assert contents(store, "ada-chat-2") == [
        "Hello again",
        "Reply to: Hello again",
    ]


def test_chat_stores_turns_but_saves_no_session(namespace, offline):
    memory = AgentmemMemory(namespace.url, agent="alice")
    agent = make_agent(memory, auto_save="never-saved")
    assert agent.chat("Hi") == "Reply to: Hi"
    store = namespace.open()
    assert store.load("never-saved") is None  # chat() does not auto-save; start()/run() do
    assert {i["kind"] for i in store.memories()} == {"short_term", "long_term"}
    # Without auto_save, start() saves nothing either.
    quiet = Agent(
        name="alice", instructions="x", model="gpt-4o-mini", memory=memory, output="silent"
    )
    quiet.start("Hello", stream=False)
    assert store.sessions() == []


def test_a_streaming_start_saves_its_turn_at_the_next_save(namespace, offline):
    memory = AgentmemMemory(namespace.url, agent="alice")
    agent = make_agent(memory, auto_save="streamed")
    store = namespace.open()
    chunks = agent.start("one", stream=True)
    # start() saved when it returned the generator: before the turn, so nothing yet.
    assert "".join(chunks) == "Reply to: one"
    assert store.load("streamed") is None
    # iter_stream() saves after its turn, the streamed one included.
    assert "".join(agent.iter_stream("two")) == "Reply to: two"
    assert contents(store, "streamed") == [
        "one",
        "Reply to: one",
        "two",
        "Reply to: two",
    ]
