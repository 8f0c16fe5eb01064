"""`agentmem mcp` against the reference memory server, as the oracle: the same tool list, the
same sequence of calls with the same results, the same graph; and each reads the other's JSONL
file (agentmem through `import`/`export --format mcp-memory`)."""

from __future__ import annotations

import json
from typing import Any

from mcp_support import ToolResult, agentmem_stdio, connect, reference_stdio

# Where each observations tool takes its per-entity list, and the field naming the observations.
_OBSERVATION_FIELDS = {
    "add_observations": ("observations", "contents"),
    "delete_observations": ("deletions", "observations"),
}


def _observations(tool: str, *per_entity: tuple[str, list[str]]) -> tuple[str, dict[str, Any]]:
    """A call of ``tool`` (add or delete observations) with ``(entity name, observations)``
    entries, in the tool's argument shape."""
    entries, field = _OBSERVATION_FIELDS[tool]
    return tool, {entries: [{"entityName": name, field: items} for name, items in per_entity]}


# A session a client could have: every tool, the duplicate rules (existing names, relations
# and observations), a failing add_observations (which applies nothing), deletes that cascade,
# search by case and substring, open by exact name, Unicode, re-creation going to the end.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_graph", {}),
    ("search_nodes", {"query": ""}),
    (
        "create_entities",
        {
            "entities": [
                {
                    "name": "Ada Lovelace",
                    "entityType": "person",
                    "observations": ["wrote the first program"],
                },
                {"name": "Charles Babbage", "entityType": "person", "observations": []},
                {
                    "name": "Analytical Engine",
                    "entityType": "machine",
                    "observations": ["never finished", "had a mill"],
                },
                {"name": "Zoë", "entityType": "Πρόσωπο", "observations": ["likes 🦀", "ÄPFEL"]},
            ]
        },
    ),
    (
        "create_entities",
        {"entities": [{"name": "Ada Lovelace", "entityType": "robot", "observations": ["x"]}]},
    ),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "programmed"},
                {"from": "Charles Babbage", "to": "Analytical Engine", "relationType": "designed"},
                {
                    "from": "Ada Lovelace",
                    "to": "Charles Babbage",
                    "relationType": "corresponded_with",
                },
                {"from": "Zoë", "to": "Nobody", "relationType": "knows"},
            ]
        },
    ),
    (
        "create_relations",
        {
            "relations": [
                {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "programmed"}
            ]
        },
    ),
    _observations(
        "add_observations",
        ("Ada Lovelace", ["wrote the first program", "was a countess"]),
        ("Charles Babbage", ["built the difference engine"]),
    ),
    _observations("add_observations", ("Charles Babbage", ["lost"]), ("Ghost", ["boo"])),
    ("search_nodes", {"query": "ENGINE"}),
    ("search_nodes", {"query": "äpfel"}),
    ("search_nodes", {"query": "πρόσωπο"}),
    ("search_nodes", {"query": "nothing matches this"}),
    ("open_nodes", {"names": ["Charles Babbage", "ada lovelace", "Nobody"]}),
    ("open_nodes", {"names": []}),
    _observations(
        "delete_observations",
        ("Analytical Engine", ["never finished", "not there"]),
        ("Ghost", ["boo"]),
    ),
    (
        "delete_relations",
        {
            "relations": [
                {"from": "Zoë", "to": "Nobody", "relationType": "knows"},
                {"from": "a", "to": "b", "relationType": "c"},
            ]
        },
    ),
    ("delete_entities", {"entityNames": ["Charles Babbage", "Nobody at all"]}),
    ("read_graph", {}),
    (
        "create_entities",
        {
            "entities": [
                {"name": "Charles Babbage", "entityType": "person", "observations": ["is back"]}
            ]
        },
    ),
    _observations("add_observations", ("Analytical Engine", ["never finished"])),
    ("read_graph", {}),
]


async def _run(server) -> tuple[list[ToolResult], dict[str, Any], str]:
    async with connect(server) as mcp:
        results = [await mcp.call(tool, arguments) for tool, arguments in CALLS]
        resource = await mcp.client.read_resource("memory://knowledge-graph")
        return results, await mcp.tools(), resource.contents[0].text


def _comparable(tool: dict[str, Any]) -> dict[str, Any]:
    return {
        k: tool.get(k)
        for k in ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
    }


async def test_the_same_calls_give_the_same_results_as_the_reference(namespace, tmp_path):
    reference, reference_tools, reference_resource = await _run(
        reference_stdio(str(tmp_path / "memory.jsonl"))
    )
    ours, our_tools, our_resource = await _run(agentmem_stdio(namespace.url))
    for (tool, arguments), theirs, mine in zip(CALLS, reference, ours):
        assert mine.is_error == theirs.is_error, (tool, arguments, theirs.text, mine.text)
        assert mine.text == theirs.text, (tool, arguments)
        assert mine.structured == theirs.structured, (tool, arguments)
    for name, tool in reference_tools.items():
        assert _comparable(our_tools[name]) == _comparable(tool), name
    assert our_resource == reference_resource


def _graph_lines(graph: dict[str, Any]) -> str:
    lines = [
        json.dumps({"type": "entity", **e}, ensure_ascii=False, separators=(",", ":"))
        for e in graph["entities"]
    ]
    lines += [
        json.dumps({"type": "relation", **r}, ensure_ascii=False, separators=(",", ":"))
        for r in graph["relations"]
    ]
    return "\n".join(lines)


async def test_each_reads_the_others_file(namespace, tmp_path, cli):
    memory = tmp_path / "memory.jsonl"
    async with connect(reference_stdio(str(memory))) as reference:
        for tool, arguments in CALLS:
            await reference.call(tool, arguments)
        reference_graph = await reference.graph()
    # The reference file, imported twice: the duplicate rules make the second a no-op.
    for _ in range(2):
        cli("--store", namespace.url, "import", "--format", "mcp-memory", str(memory))
    async with connect(agentmem_stdio(namespace.url)) as ours:
        assert await ours.graph() == reference_graph
    exported = tmp_path / "exported.jsonl"
    cli("--store", namespace.url, "export", "--format", "mcp-memory", "-o", str(exported))
    assert exported.read_text() == memory.read_text() == _graph_lines(reference_graph)
    async with connect(reference_stdio(str(exported))) as reference:
        assert await reference.graph() == reference_graph


async def test_a_reference_file_with_a_final_newline_imports(namespace, tmp_path, cli):
    memory = tmp_path / "memory.jsonl"
    memory.write_text(
        '{"type":"entity","name":"A","entityType":"t","observations":["x","x"]}\n\n'
        '{"type":"entity","name":"A","entityType":"u","observations":["y"]}\n'
        '{"type":"relation","from":"A","to":"B","relationType":"r"}\n'
    )
    cli("--store", namespace.url, "import", "--format", "mcp-memory", str(memory))
    async with connect(agentmem_stdio(namespace.url)) as ours:
        assert await ours.graph() == {
            "entities": [{"name": "A", "entityType": "t", "observations": ["x", "y"]}],
            "relations": [{"from": "A", "to": "B", "relationType": "r"}],
        }
