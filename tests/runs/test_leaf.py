"""runs/leaf.py: a leaf's sources chosen once and recorded (a resumed leaf reads the same ones), read,
synthesized; and the rubric its extractors are told (what the findings must meet)."""

from __future__ import annotations

from research_mcp.core.contracts import ExtractorTaskSpec
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.leaf import leaf_sources, rubric, run_leaf
from research_mcp.storage.events import SourcesChosen
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR, WIND
from tests.runs.walk import PLAN_ID, leaf, tree, walk

KEY = node_key(PLAN_ID, "n.1")


async def test_a_leaf_reads_its_sources_and_ends_in_one_synthesis_over_them(temp_store: Store) -> None:
    model = ScriptedModel(team_script)
    root = tree(leaf("energy", SOLAR, WIND))
    rc = walk(temp_store, model, root)
    handoff_id = await run_leaf(rc, root.children[0], KEY, [])
    assert temp_store.get_handoff(handoff_id).role == "synthesizer"
    read = [call.payload.source_text for call in model.calls_for("extractor")]  # type: ignore[union-attr]
    assert sorted(read) == sorted([SOLAR, WIND])
    [chosen] = temp_store.events_for_run(rc.run_id, SourcesChosen)
    assert (chosen.node_id, chosen.refs, chosen.failures) == (KEY, [SOLAR, WIND], [])


async def test_a_resumed_leaf_takes_the_sources_it_chose_before(temp_store: Store) -> None:
    root = tree(leaf("energy", SOLAR))
    rc = walk(temp_store, ScriptedModel(team_script), root)
    temp_store.add_event(rc.run_id, SourcesChosen(message="chosen", node_id=KEY, refs=[WIND]))
    assert await leaf_sources(rc, root.children[0], KEY, []) == [WIND]
    assert len(temp_store.events_for_run(rc.run_id, SourcesChosen)) == 1  # nothing chosen anew


def test_the_rubric_tells_each_source_the_criteria_and_format_the_findings_must_meet(
    temp_store: Store,
) -> None:
    spec = ExtractorTaskSpec(
        questions=["How efficient are panels?"],
        acceptance_criteria=["at least 2 sources"],
        expected_format="an essay in APA style",
    )
    node = leaf("energy", SOLAR, task_specs=[spec])
    rc = walk(temp_store, ScriptedModel(team_script), tree(node))
    contexts, known = rubric(rc, node, [], [SOLAR])
    assert list(contexts) == [SOLAR] and known == []
    assert contexts[SOLAR] == (
        "The findings must meet:\n- at least 2 sources\n- expected format: an essay in APA style"
    )
    # A table or a list code gives the report itself: the extractors are not told it.
    listed = leaf("listed", SOLAR, task_specs=[spec.model_copy(update={"expected_format": "a table"})])
    assert rubric(rc, listed, [], [SOLAR])[0] == {SOLAR: "The findings must meet:\n- at least 2 sources"}
    assert rubric(rc, leaf("plain", SOLAR), [], [SOLAR]) == ({}, [])
