"""runs/phases.py: after a node's synthesis, its phase's criteria decide: met, the synthesis stands;
unmet at max_iterations, the kept synthesis is committed again with a gap per unmet criterion and its
confidence capped."""

from __future__ import annotations

from research_mcp.core.contracts import Phase, PhaseCriteria, PlanNode
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, node_key
from research_mcp.runs.engine import execute_node
from research_mcp.runs.phases import run_phases
from research_mcp.storage.events import PhaseMet, PhaseUnmet, StopReason
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR
from tests.runs.walk import PLAN_ID, leaf, tree, walk

KEY = node_key(PLAN_ID, "n")


def phased(*themes: str) -> PlanNode:
    check = Phase(name="check", criteria=PhaseCriteria(themes=list(themes)), max_iterations=1)
    return tree(leaf("solar", SOLAR), phases=[check])


async def phase_result(rc: RunContext, root: PlanNode) -> tuple[str, str]:
    """The node's first synthesis, and what its phases made of it."""
    child = await execute_node(rc, root.children[0])
    first = await synthesize(
        rc.deps,
        title="root",
        questions=["How do panels work?"],
        input_handoffs=[child],
        run_id=rc.run_id,
        node_id=KEY,
    )
    return first.handoff_id, await run_phases(rc, root, KEY, [child], first)


async def test_a_met_phase_keeps_the_synthesis_and_says_so(temp_store: Store) -> None:
    root = phased("photovoltaic cells")
    rc = walk(temp_store, ScriptedModel(team_script), root)
    first, final = await phase_result(rc, root)
    assert final == first
    [met] = temp_store.events_for_run(rc.run_id, PhaseMet)
    assert met.criteria == {"theme:photovoltaic cells": True}


async def test_a_phase_unmet_at_max_iterations_names_each_unmet_criterion_and_caps_confidence(
    temp_store: Store,
) -> None:
    root = phased("photovoltaic cells", "geothermal")
    rc = walk(temp_store, ScriptedModel(team_script), root)
    first, final = await phase_result(rc, root)
    assert final != first
    output = temp_store.get_handoff(final).output_as(StoredSynthesis)
    assert output is not None
    assert output.unmet_criteria == ["check: theme:geothermal"]
    assert any("no verified finding of the report covers 'geothermal'" in gap for gap in output.gaps)
    assert output.confidence.level in ("low", "medium")  # capped at medium: one criterion of two met
    [unmet] = temp_store.events_for_run(rc.run_id, PhaseUnmet)
    assert "stopped at max_iterations=1" in unmet.message and unmet.stopped is StopReason.MAX_ITERATIONS
