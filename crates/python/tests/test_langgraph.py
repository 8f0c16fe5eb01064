"""`AgentmemSaver`: LangGraph's own conformance suite on every backend, graphs run side by side
with LangGraph's `InMemorySaver`, an interrupt resumed in another process, subgraphs, and
several processes writing one thread."""

from __future__ import annotations

import json
import operator
import os
import subprocess
import sys
import textwrap
import uuid
from typing import Annotated, Any

import pytest

pytest.importorskip("langgraph")

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.conformance import checkpointer_test, validate  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402
from typing_extensions import TypedDict  # noqa: E402

import agentmem  # noqa: E402
from agentmem.langgraph import AgentmemSaver  # noqa: E402


class SyncDriven(AgentmemSaver):
    """The saver driven through its sync methods only: each coroutine the suite awaits calls
    the sync twin on the loop's thread, so the suite checks the sync methods as they are."""

    async def aget_tuple(self, config):
        return self.get_tuple(config)

    async def alist(self, config, *, filter=None, before=None, limit=None):
        for t in self.list(config, filter=filter, before=before, limit=limit):
            yield t

    async def aput(self, config, checkpoint, metadata, new_versions):
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config, writes, task_id, task_path=""):
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id):
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids):
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id, target_thread_id):
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids, *, strategy="keep_latest"):
        self.prune(thread_ids, strategy=strategy)


@pytest.mark.parametrize("saver_class", [AgentmemSaver, SyncDriven])
async def test_langgraph_conformance_suite_passes(namespace, saver_class):
    @checkpointer_test(name=f"{saver_class.__name__}[{namespace.backend}]")
    async def factory():
        saver = saver_class(namespace.url)
        yield saver
        saver.close()

    report = await validate(factory)
    failures = {
        name: result.failures
        for name, result in report.results.items()
        if result.passed is not True or result.tests_failed
    }
    assert not failures, json.dumps(failures, indent=1)
    passed = {name: result.tests_passed for name, result in report.results.items()}
    base = ["put", "put_writes", "get_tuple", "list", "delete_thread"]
    extended = ["delete_for_runs", "copy_thread", "prune"]
    assert sum(passed[c] for c in base) == 58, passed
    assert sum(passed[c] for c in extended) == 23, passed


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(checkpointer, *, ask: bool = False):
    def first(state: State) -> dict[str, Any]:
        return {"steps": ["first"]}

    def review(state: State) -> dict[str, Any]:
        answer = interrupt({"question": "approve?", "seen": list(state["steps"])})
        return {"steps": [f"review:{answer}"]}

    def last(state: State) -> dict[str, Any]:
        return {"steps": ["last"]}

    builder = StateGraph(State)
    builder.add_node("first", first)
    builder.add_node("last", last)
    builder.add_edge(START, "first")
    if ask:
        builder.add_node("review", review)
        builder.add_edge("first", "review")
        builder.add_edge("review", "last")
    else:
        builder.add_edge("first", "last")
    builder.add_edge("last", END)
    return builder.compile(checkpointer=checkpointer)


def _history(graph, config) -> list[tuple[Any, ...]]:
    return [
        (s.values, s.next, s.metadata.get("step"), s.metadata.get("source"))
        for s in graph.get_state_history(config)
    ]


def test_a_graph_keeps_the_same_history_as_with_in_memory_saver(store):
    saver = AgentmemSaver(store=store)
    config = {"configurable": {"thread_id": f"side-{uuid.uuid4()}"}}
    ours, theirs = _graph(saver), _graph(InMemorySaver())
    for graph in (ours, theirs):
        graph.invoke({"steps": ["start"]}, config)
        graph.invoke({"steps": ["again"]}, config)
    assert ours.get_state(config).values == theirs.get_state(config).values
    assert _history(ours, config) == _history(theirs, config)


async def test_the_async_api_runs_a_graph(store):
    saver = AgentmemSaver(store=store)
    graph = _graph(saver, ask=True)
    config = {"configurable": {"thread_id": f"async-{uuid.uuid4()}"}}
    await graph.ainvoke({"steps": []}, config)
    state = await graph.aget_state(config)
    assert state.next == ("review",)
    await graph.ainvoke(Command(resume="yes"), config)
    final = await graph.aget_state(config)
    assert final.values["steps"] == ["first", "review:yes", "last"]


_PROCESS = textwrap.dedent(
    """
    import json, operator, sys
    from typing import Annotated, Any
    from typing_extensions import TypedDict
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt
    from agentmem.langgraph import AgentmemSaver

    class State(TypedDict):
        steps: Annotated[list[str], operator.add]

    def first(state): return {"steps": ["first"]}
    def review(state):
        return {"steps": ["review:" + interrupt({"question": "approve?"})]}
    def last(state): return {"steps": ["last"]}

    builder = StateGraph(State)
    for name, fn in [("first", first), ("review", review), ("last", last)]:
        builder.add_node(name, fn)
    builder.add_edge(START, "first")
    builder.add_edge("first", "review")
    builder.add_edge("review", "last")
    builder.add_edge("last", END)
    url, thread, action = sys.argv[1], sys.argv[2], sys.argv[3]
    graph = builder.compile(checkpointer=AgentmemSaver(url))
    config = {"configurable": {"thread_id": thread}}
    if action == "start":
        out = graph.invoke({"steps": []}, config)
    else:
        out = graph.invoke(Command(resume=action), config)
    state = graph.get_state(config)
    print(json.dumps({"steps": state.values.get("steps"), "next": list(state.next),
                      "interrupts": [i.value for i in out.get("__interrupt__", [])]}))
    """
)


def _run(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_interrupt_started_in_one_process_is_resumed_in_another(namespace):
    thread = f"approval {uuid.uuid4()} :/*"
    started = _run(namespace.url, thread, "start")
    assert started["next"] == ["review"]
    assert started["interrupts"] == [{"question": "approve?"}]
    resumed = _run(namespace.url, thread, "approved")
    assert resumed["next"] == []
    assert resumed["steps"] == ["first", "review:approved", "last"]


def test_a_subgraph_keeps_its_checkpoints_in_its_namespace(store):
    def inner_step(state: State) -> dict[str, Any]:
        return {"steps": ["inner"]}

    inner = StateGraph(State)
    inner.add_node("inner_step", inner_step)
    inner.add_edge(START, "inner_step")
    inner.add_edge("inner_step", END)

    outer = StateGraph(State)
    outer.add_node("child", inner.compile())
    outer.add_edge(START, "child")
    outer.add_edge("child", END)
    saver = AgentmemSaver(store=store)
    graph = outer.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": f"sub-{uuid.uuid4()}"}}
    graph.invoke({"steps": []}, config)
    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in saver.list(config)}
    assert "" in namespaces
    child = [ns for ns in namespaces if ns.startswith("child:")]
    assert child, namespaces
    assert graph.get_state(config).values["steps"] == ["inner"]
    rows = store._native.checkpoints().list(thread=config["configurable"]["thread_id"], ns="")
    assert all(row[1] == "" for row in rows), "the root namespace alone"


_WRITER = textwrap.dedent(
    """
    import sys
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6
    from agentmem.langgraph import AgentmemSaver

    url, thread, writer, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    saver = AgentmemSaver(url)
    for i in range(count):
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=-1))
        checkpoint["channel_values"] = {"who": f"{writer}/{i}"}
        checkpoint["channel_versions"] = {"who": f"{writer}.{i}"}
        config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        stored = saver.put(config, checkpoint, {"source": "loop", "step": i, "writer": writer},
                           {"who": f"{writer}.{i}"})
        saver.put_writes(stored, [("out", f"{writer}/{i}")], f"task-{writer}-{i}")
    """
)


def test_four_processes_writing_one_thread_lose_nothing(namespace):
    thread = f"busy-{uuid.uuid4()}"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, namespace.url, thread, str(w), "15"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    for w in writers:
        _, err = w.communicate(timeout=180)
        assert w.returncode == 0, err
    saver = AgentmemSaver(namespace.url)
    tuples = list(saver.list({"configurable": {"thread_id": thread}}))
    assert len(tuples) == 60
    seen = {t.checkpoint["channel_values"]["who"] for t in tuples}
    assert seen == {f"{w}/{i}" for w in range(4) for i in range(15)}
    assert all(len(t.pending_writes) == 1 for t in tuples)
    by_writer = [t for t in tuples if t.metadata["writer"] == "2"]
    assert len(by_writer) == 15


def test_bad_input_is_a_typed_error_and_early_writes_wait(store):
    saver = AgentmemSaver(store=store)
    thread = f"bad-{uuid.uuid4()}"
    with pytest.raises(agentmem.InvalidInput):
        saver.get_tuple({"configurable": {"thread_id": "a\0b"}})
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": "c1"}}
    with pytest.raises(agentmem.InvalidInput):
        saver.put_writes(config, [("fine", 1), ("bad\0channel", 2)], "task")
    # LangGraph may write before the checkpoint's own put lands: the writes wait for it.
    saver.put_writes(config, [("early", 1)], "task")
    assert list(saver.list({"configurable": {"thread_id": thread}})) == []
    checkpoint = empty_checkpoint()
    checkpoint["id"] = "c1"
    saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, checkpoint, {}, {})
    stored = saver.get_tuple({"configurable": {"thread_id": thread}})
    assert stored is not None
    assert stored.pending_writes == [("task", "early", 1)], "the refused batch wrote nothing"
