"""runs/engine.py: the tree walk, node by node: children in parallel, one synthesis over them, every
node recorded; a done node read back, never run again; a failing child named, its siblings kept."""

from __future__ import annotations

from typing import Any

from research_mcp.core.errors import ModelError
from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.engine import execute_node
from research_mcp.storage.events import NodeFailed
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.runs.walk import PLAN_ID, leaf, tree, walk

SOLAR = "Solar panels convert sunlight into electricity using photovoltaic cells."
WIND = "Wind turbines convert the kinetic energy of wind into electricity."


async def test_an_executor_runs_its_leaves_then_one_synthesis_over_their_handoffs(temp_store: Store) -> None:
    model = ScriptedModel(team_script)
    root = tree(leaf("solar", SOLAR), leaf("wind", WIND))
    rc = walk(temp_store, model, root)
    handoff_id = await execute_node(rc, root)
    result = temp_store.get_handoff(handoff_id)
    assert (result.role, result.node_id) == ("synthesizer", node_key(PLAN_ID, "n"))
    children = [temp_store.get_node(rc.run_id, node_key(PLAN_ID, f"n.{i}")) for i in (1, 2)]
    assert [(node.status, node.handoff_id is not None) for node in children if node] == [("done", True)] * 2
    [top] = [call for call in model.calls_for("synthesizer") if call.payload and call.payload.child_reports]
    assert {report.title for report in top.payload.child_reports} == {"solar", "wind"}  # type: ignore[union-attr]


async def test_a_done_node_is_read_back_and_never_run_again(temp_store: Store) -> None:
    root = tree(leaf("solar", SOLAR))
    rc = walk(temp_store, ScriptedModel(team_script), root)
    first = await execute_node(rc, root)
    again = ScriptedModel(team_script)
    rc.deps.model = again
    assert await execute_node(rc, root) == first
    assert again.calls == []


async def test_a_failing_child_is_named_and_its_sibling_still_synthesized(temp_store: Store) -> None:
    def wind_fails(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if isinstance(payload, SynthesisPayload) and payload.title == "wind":
            raise ModelError("the model refused")
        return team_script(request)

    root = tree(leaf("solar", SOLAR), leaf("wind", WIND))
    rc = walk(temp_store, ScriptedModel(wind_fails), root)
    handoff_id = await execute_node(rc, root)
    output = temp_store.get_handoff(handoff_id).output_as(StoredSynthesis)
    assert output is not None
    [failure] = output.failures
    assert failure.startswith("Not researched: leaf 'wind' failed: the model refused")
    wind = temp_store.get_node(rc.run_id, node_key(PLAN_ID, "n.2"))
    assert wind is not None and wind.status == "failed"
    assert [e.node_id for e in temp_store.events_for_run(rc.run_id, NodeFailed)] == [node_key(PLAN_ID, "n.2")]
