"""runs/phases.py: after a node's synthesis, its phase's criteria decide: met, the synthesis stands;
unmet at max_iterations, the kept synthesis is committed again with a gap per unmet criterion and its
confidence capped."""

from __future__ import annotations

from typing import Any

import anyio

from research_mcp.core.contracts import Phase, PhaseCriteria, PlanNode
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, node_key
from research_mcp.runs.engine import execute_node
from research_mcp.runs.phases import run_phases
from research_mcp.storage.events import IterationDone, PhaseGate, PhaseMet, PhaseUnmet, StopReason
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR
from tests.runs.walk import PLAN_ID, leaf, tree, walk

KEY = node_key(PLAN_ID, "n")
PANELS = "Panels lose about half a percent of their output for each degree of heat."


def phased(*themes: str) -> PlanNode:
    check = Phase(name="check", criteria=PhaseCriteria(themes=list(themes)), max_iterations=1)
    return tree(leaf("solar", SOLAR), phases=[check])


async def first_synthesis(rc: RunContext, root: PlanNode) -> tuple[str, Any]:
    """The node's leaf done, and the node's first synthesis of it (before any phase)."""
    child = await execute_node(rc, root.children[0])
    first = await synthesize(
        rc.deps,
        title="root",
        questions=["How do panels work?"],
        input_handoffs=[child],
        run_id=rc.run_id,
        node_id=KEY,
    )
    return child, first


async def phase_result(rc: RunContext, root: PlanNode) -> tuple[str, str]:
    """The node's first synthesis, and what its phases made of it."""
    child, first = await first_synthesis(rc, root)
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


async def test_a_resumed_iteration_asks_what_its_gate_decided_though_its_lost_reads_corroborated_since(
    temp_store: Store,
) -> None:
    """Corroboration unmet: the iteration asks of new sources the weakest key finding. Interrupted
    after a read of the iteration had corroborated that finding, it was resumed asking another one
    (the store's corroborations read again): a resumed run read other sources than the run it
    should equal (the interrupt matrix's phase points, 8 of 9 sources, once runs got faster)."""
    in_iteration = anyio.Event()

    async def script(request: ModelRequest[Any]) -> Any:
        if in_iteration.is_set() or request.role == "scout":  # the iteration's first call
            in_iteration.set()
            await anyio.sleep_forever()
        return team_script(request)

    check = Phase(name="check", criteria=PhaseCriteria(min_corroboration=2), max_iterations=2)
    root = tree(leaf("solar", f"{SOLAR} {PANELS}"), phases=[check])
    rc = walk(temp_store, ScriptedModel(script), root)
    child, first = await first_synthesis(rc, root)
    findings = temp_store.get_handoff(first.handoff_id).output_as(StoredSynthesis)
    assert findings is not None and len(findings.key_findings) == 2
    weakest, other = (finding.statement for finding in findings.key_findings)  # one source each: the first

    async with anyio.create_task_group() as run:  # the run, cancelled in its iteration
        run.start_soon(run_phases, rc, root, KEY, [child], first)
        with anyio.fail_after(30):
            await in_iteration.wait()
        run.cancel_scope.cancel()
    # What a read of the interrupted iteration had stored before the stop: a second source saying
    # the weakest finding, merged into its fact.
    [fact] = [f for f in temp_store.get_facts(findings.fact_ids) if f.statement == weakest]
    elsewhere = temp_store.add_source(
        ref="corpus:2", kind="corpus", title="other", text=fact.quote, content_hash="other"
    )
    read = temp_store.start_handoff(
        role="extractor", input={}, backend="scripted", run_id=rc.run_id, node_id=KEY, iteration=1
    )
    [copy] = temp_store.add_facts(rc.run_id, read, [fact.model_copy(update={"source_id": elsewhere.id})])
    temp_store.merge_fact(copy, fact.id)
    assert temp_store.get_facts([fact.id])[0].corroborations == 2

    rc.deps.model = ScriptedModel(team_script)  # resumed
    await run_phases(rc, root, KEY, [child], first)
    [done] = temp_store.events_for_run(rc.run_id, IterationDone)
    assert weakest in done.changed["questions_added"]
    assert other not in done.changed["questions_added"]
    assert [gate.settling for gate in temp_store.events_for_run(rc.run_id, PhaseGate)] == [[weakest]] * 2
