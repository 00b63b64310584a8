"""A fact the knowledge base lends one user from another's research (a corpus document or a web page
every caller reads) reaches the borrower's synthesizer without the question the other user asked;
the local host, the user who asked, and a borrower who asks the same question see it as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_mcp.core.callers import LOCAL, user
from research_mcp.core.contracts import Fact
from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.synthesizer import synthesize
from research_mcp.storage.store import Store
from tests.knowledge.kb import source
from tests.runs.walk import deps_for

ALICE_ASKS = "Which guild of masons raised the aqueduct of Ostravel?"
BOB_ASKS = "When was the aqueduct of Ostravel built?"
TEXT = "The aqueduct of Ostravel was built in 1712 by a guild of 40 masons."


def found_by(store: Store, caller: str | None, question: str) -> int:
    """A fact of the corpus document found by `caller`'s extraction asking `question`."""
    document = source(store, "corpus:1", TEXT, kind="corpus")
    handoff_id = store.start_handoff(
        role="extractor", input={"questions": [question]}, backend="test", caller=caller
    )
    fact = Fact(
        source_id=document.id,
        statement=TEXT,
        quote=TEXT,
        location=(0, len(TEXT)),
        question=question,
        confidence=0.9,
        verified=True,
    )
    [fact_id] = store.add_facts(None, handoff_id, [fact])
    return fact_id


async def synthesized(store: Store, caller: str | None, question: str, prior: list[int]) -> list[Fact]:
    """The facts the synthesizer of `caller`'s leaf asking `question` was given."""
    model = ScriptedModel(team_script)
    deps = deps_for(store, model)
    deps.caller = caller
    await synthesize(deps, title="aqueduct", questions=[question], input_handoffs=[], prior_facts=prior)
    [call] = model.calls_for("synthesizer")
    assert isinstance(call.payload, SynthesisPayload)
    return call.payload.facts


@pytest.mark.parametrize(
    ("borrower", "asks", "shown"),
    [
        (user("bob"), BOB_ASKS, ""),  # another user: the fact, not Alice's question
        (user("bob"), ALICE_ASKS, ALICE_ASKS),  # Bob asks it too: it is his question as well
        (user("alice"), BOB_ASKS, ALICE_ASKS),  # her own research
        (LOCAL, BOB_ASKS, ALICE_ASKS),  # the local host reads every run
    ],
)
async def test_a_lent_fact_reaches_the_synthesizer_without_another_users_question(
    tmp_path: Path, borrower: str | None, asks: str, shown: str
) -> None:
    store = Store(tmp_path / "r.db")
    lent = found_by(store, user("alice"), ALICE_ASKS)
    [fact] = await synthesized(store, borrower, asks, [lent])
    assert (fact.id, fact.statement, fact.question) == (lent, TEXT, shown)


def test_a_borrowers_own_copy_keeps_the_question_it_asked(tmp_path: Path) -> None:
    """Bob's extraction found Alice's fact again, for his leaf's question: a synthesis above it,
    asking other questions, reads the canonical fact with his question, his own research."""
    store = Store(tmp_path / "r.db")
    lent = found_by(store, user("alice"), ALICE_ASKS)
    copy = found_by(store, user("bob"), BOB_ASKS)
    store.merge_fact(copy, lent)  # as the knowledge base merges a duplicate
    [canonical] = store.canonical_facts([copy], [BOB_ASKS])
    assert canonical.id == lent and canonical.question == BOB_ASKS  # merged into Alice's, read as his
    assert store.as_lent([canonical], user("bob"), ["How old is it?"]) == [canonical]
    [alices] = store.get_facts([lent])
    assert store.as_lent([alices], user("bob"))[0].question == ""
    assert store.as_lent([alices], user("carol"), [ALICE_ASKS]) == [alices]
