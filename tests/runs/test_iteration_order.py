"""What a phase iteration asks does not depend on which parallel extraction started first: the
follow-ups a leaf's sources raised are taken by source, so a run asked twice asks the same."""

from __future__ import annotations

from research_mcp.contracts import Confidence, FollowUpQuestion
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.role_inputs import ExtractorInput
from research_mcp.runs.context import node_key
from research_mcp.runs.phases import MAX_FOLLOW_UPS, follow_ups_of, raised_by_source
from research_mcp.storage.outputs import StoredExtraction
from research_mcp.storage.store import Store
from tests.runs.walk import PLAN_ID, leaf, tree, walk

RAISED = {
    "corpus:1": ["Which field does fsck read?", "What does the pass number mean?"],
    "corpus:2": ["What does the dump field do?", "Which options does defaults stand for?"],
}


def extracted(store: Store, run_id: str, ref: str) -> None:
    asked = ExtractorInput(
        source_id=int(ref.split(":")[1]), source_ref=ref, source_title=ref, questions=["fstab?"]
    )
    handoff = store.start_handoff(
        role="extractor",
        input=asked.model_dump(),
        backend="scripted",
        run_id=run_id,
        node_id=node_key(PLAN_ID, "n.1"),
    )
    follow_ups = [FollowUpQuestion(question=q, confidence=0.5, rationale="open") for q in RAISED[ref]]
    output = StoredExtraction(
        follow_up_questions=follow_ups, confidence=Confidence(level="low", reasoning="scripted")
    )
    store.finish_handoff(handoff, status="done", output=output, summary=[])


def test_the_follow_ups_an_iteration_asks_do_not_depend_on_which_source_was_read_first(
    temp_store: Store,
) -> None:
    asked = []
    for order in (["corpus:1", "corpus:2"], ["corpus:2", "corpus:1"]):
        rc = walk(temp_store, ScriptedModel(team_script), tree(leaf("fstab", questions=["fstab?"])))
        for ref in order:
            extracted(temp_store, rc.run_id, ref)
        asked.append(follow_ups_of(raised_by_source(rc, node_key(PLAN_ID, "n.1"), iteration=1)))
    assert asked[0] == asked[1]
    assert len(asked[0]) == MAX_FOLLOW_UPS == 3
    assert asked[0][:2] == RAISED["corpus:1"]
