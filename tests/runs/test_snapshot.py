"""One snapshot of a run feeds every view of it: the MCP handle, the terminal and the export agree."""

from __future__ import annotations

import io
import re

from mcp import Client

from research_mcp.cli.progress import LiveProgress
from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.run_document import run_document
from research_mcp.runs.snapshot import latest_run_id, read_snapshot, recent_runs
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.test_runs import plan
from tests.server.waiting import until_finished

TERMINAL_TOTALS = re.compile(
    r"(?P<status>\w+): (?P<done>\d+)/(?P<total>\d+) nodes, (?P<sources>\d+) sources read, "
    r"facts (?P<verified>\d+)/(?P<facts>\d+) verified, (?P<tokens>\d+) tokens, \$(?P<cost>[\d.]+), "
    r"(?P<elapsed>[\d.]+) s$"
)


async def test_the_handle_the_terminal_and_the_export_show_the_same_figures_of_a_run() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        plan_id = await plan(client)
        result = await until_finished(
            client, await client.call_tool("execute_plan", {"plan_id": plan_id, "wait_seconds": 20})
        )
    handle = result.structured_content
    assert handle["status"] == "done"
    run_id, metrics = handle["id"], handle["metrics"]

    store = Store(Settings().database_path)
    stream = io.StringIO()
    terminal = LiveProgress(Settings().database_path, stream=stream, live=False)
    terminal.run_id = run_id
    terminal.refresh(store)
    shown = TERMINAL_TOTALS.search(stream.getvalue().strip().splitlines()[-1])
    assert shown is not None, stream.getvalue()
    document = run_document(store, run_id).model_dump(mode="json")
    exported, metadata = document["run"]["totals"], document["metadata"]
    (listed,) = [row for row in recent_runs(store, 5) if row.id == run_id]

    assert metrics["tokens"] > 0 and metrics["facts"] > 0  # figures worth comparing
    for name, terminal_name in [
        ("nodes_done", "done"),
        ("nodes_total", "total"),
        ("sources", "sources"),
        ("facts", "facts"),
        ("tokens", "tokens"),
    ]:
        assert metrics[name] == int(shown[terminal_name]) == exported[name], name
    assert exported["facts_verified"] == int(shown["verified"])
    assert metrics["cost_usd"] == float(shown["cost"]) == round(exported["cost_usd"], 4)
    assert metadata["sources_read"] == metrics["sources"]
    assert metadata["tokens_in"] + metadata["tokens_out"] == metrics["tokens"]
    assert metadata["elapsed_s"] == exported["elapsed_s"] == round(listed.totals.elapsed_s, 2) > 0
    assert f"{exported['elapsed_s']:.1f}" == shown["elapsed"]
    assert (listed.totals.nodes_done, listed.totals.nodes_total) == (
        metrics["nodes_done"],
        metrics["nodes_total"],
    )
    assert latest_run_id(store) == run_id
    assert read_snapshot(store, run_id).totals == listed.totals
