"""runs/partial.py: the report of a run a budget stopped, made without a model from what finished:
the syntheses done, the verified facts of extractions not yet synthesized, the parts not reached."""

from __future__ import annotations

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.leaf import run_leaf
from research_mcp.runs.partial import partial_report
from research_mcp.runs.reading import extract_sources
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR, WIND
from tests.runs.walk import PLAN_ID, leaf, tree, walk


async def test_a_partial_report_holds_what_finished_and_names_what_did_not(temp_store: Store) -> None:
    root = tree(leaf("solar", SOLAR), leaf("wind", WIND))
    rc = walk(temp_store, ScriptedModel(team_script), root)
    solar, wind = root.children
    await run_leaf(rc, solar, node_key(PLAN_ID, solar.id), [])
    temp_store.finish_node(rc.run_id, node_key(PLAN_ID, solar.id), "done", None)
    await extract_sources(rc, wind, node_key(PLAN_ID, wind.id), [WIND], questions=["What turns turbines?"])

    handoff_id = partial_report(temp_store, rc.run_id, "100 of 100 tokens spent", "scripted")
    output = temp_store.get_handoff(handoff_id).output_as(StoredSynthesis)
    assert output is not None
    assert output.report.startswith("**Partial report: 100 of 100 tokens spent**")
    assert "## solar" in output.report
    assert (
        "## Facts found before the stop (not yet synthesized)" in output.report
        and "Wind turbines" in output.report
    )
    assert output.finished_nodes == ["solar"]
    assert output.gaps == ["not researched (budget): root", "not researched (budget): wind"]
    assert output.confidence.level == "low"
