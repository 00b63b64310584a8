"""runs/hops.py: the second hop, chosen once from what a leaf's first reading led to and recorded, so
a resumed leaf follows the same hop; a reading that leads nowhere new reads nothing more."""

from __future__ import annotations

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.hops import follow_leads
from research_mcp.runs.reading import extract_sources
from research_mcp.storage.events import HopChoice, SecondHop
from research_mcp.storage.store import Store
from tests.runs.test_engine import SOLAR, WIND
from tests.runs.walk import PLAN_ID, leaf, tree, walk

KEY = node_key(PLAN_ID, "n.1")
QUESTIONS = ["How do panels make electricity?"]


async def test_a_reading_that_leads_nowhere_new_reads_nothing_more_and_says_so(temp_store: Store) -> None:
    model = ScriptedModel(team_script)
    root = tree(leaf("solar", SOLAR, questions=QUESTIONS))
    rc = walk(temp_store, model, root)
    node = root.children[0]
    first = await extract_sources(rc, node, KEY, [SOLAR], questions=QUESTIONS)
    assert await follow_leads(rc, node, KEY, QUESTIONS, [SOLAR], first) == []
    [hop] = temp_store.events_for_run(rc.run_id, SecondHop)
    assert hop.node_id == KEY and hop.chosen == [] and hop.followed == []
    assert len(model.calls_for("extractor")) == 1


async def test_a_resumed_leaf_follows_the_hop_it_chose_before(temp_store: Store) -> None:
    model = ScriptedModel(team_script)
    root = tree(leaf("solar", SOLAR, questions=QUESTIONS))
    rc = walk(temp_store, model, root)
    chosen = [HopChoice(ref=WIND, context="cited by the first source")]
    temp_store.add_event(rc.run_id, SecondHop(message="chosen before", node_id=KEY, chosen=chosen))
    handoffs = await follow_leads(rc, root.children[0], KEY, QUESTIONS, [SOLAR], [])
    assert len(handoffs) == 1
    [call] = model.calls_for("extractor")
    assert call.payload.source_text == WIND  # type: ignore[union-attr]
    assert len(temp_store.events_for_run(rc.run_id, SecondHop)) == 1  # not chosen anew
