"""runs/rejudge.py: a leaf with acceptance criteria, synthesized again after an iteration read more,
has its criteria judged again and the verdicts before and after recorded; an unmet criterion is what
the next iteration asks."""

from __future__ import annotations

from research_mcp.core.contracts import ExtractorTaskSpec
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.leaf import run_leaf
from research_mcp.runs.reading import extract_sources
from research_mcp.runs.rejudge import criteria_questions, judged_leaves, rejudge, unmet_acceptance
from research_mcp.storage.events import AcceptanceRejudged
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR, WIND
from tests.runs.walk import PLAN_ID, leaf, tree, walk

KEY = node_key(PLAN_ID, "n.1")
SPEC = ExtractorTaskSpec(questions=["How is electricity made?"], acceptance_criteria=["at least 2 sources"])


async def test_a_criterion_met_by_what_an_iteration_read_is_judged_met_and_recorded(
    temp_store: Store,
) -> None:
    root = tree(leaf("energy", SOLAR, questions=[], task_specs=[SPEC]))
    node = root.children[0]
    rc = walk(temp_store, ScriptedModel(team_script), root)
    before = await run_leaf(rc, node, KEY, [])
    assert judged_leaves(rc, [before], [node], [KEY]) == {KEY: before}
    [question] = criteria_questions(rc, node, before)
    assert question == "How is electricity made? (to meet: at least 2 sources)"
    output = temp_store.get_handoff(before).output_as(StoredSynthesis)
    assert output is not None and unmet_acceptance(output) == 1

    grown = await extract_sources(rc, node, KEY, [WIND], questions=list(SPEC.questions), iteration=1)
    after = await rejudge(rc, node, KEY, before, grown, 1)
    assert after is not None and after != before
    assert criteria_questions(rc, node, after) == []
    [event] = temp_store.events_for_run(rc.run_id, AcceptanceRejudged)
    assert event.handoff_id == after
    assert [c.met for c in event.before] == [False] and [c.met for c in event.after] == [True]


def test_a_leaf_without_acceptance_criteria_is_not_judged_again(temp_store: Store) -> None:
    root = tree(leaf("energy", SOLAR))
    rc = walk(temp_store, ScriptedModel(team_script), root)
    assert judged_leaves(rc, [], root.children, [KEY]) == {}
    assert criteria_questions(rc, root.children[0], None) == []
