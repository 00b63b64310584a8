"""Follow-ups from this run alone (roles/followups.py)."""

from __future__ import annotations

from research_mcp.core.contracts import Fact
from research_mcp.core.role_inputs import SourceInsight
from research_mcp.roles.contradictions import disagreements
from research_mcp.roles.followups import followups


def _fact(fact_id: int, source_id: int, statement: str) -> Fact:
    return Fact(
        id=fact_id,
        statement=statement,
        quote=statement,
        source_id=source_id,
        location=None,
        confidence=0.8,
        verified=True,
    )


def test_follow_ups_settle_disagreements_and_follow_this_runs_leads_only() -> None:
    facts = [
        _fact(1, 1, "Giant kelp grows up to 61 centimetres per day in summer."),
        _fact(2, 2, 'Giant kelp grows up to 30 centimetres per day in summer, its "growth rate".'),
    ]
    found = followups(
        asked=["How fast does giant kelp grow?"],
        open_questions=["Where does giant kelp grow?"],
        disagreements=disagreements(facts),
        insights=[
            SourceInsight(source_id=2, kind="follow_up", text="Does kelp grow in winter?"),
            SourceInsight(source_id=2, kind="link", text="https://example.org/kelp"),
            SourceInsight(
                source_id=9,
                kind="follow_up",
                text="What does the MPL-2.0 say about larger works?",
                earlier="MPL-2.0",
            ),
            SourceInsight(source_id=2, kind="follow_up", text="Where does giant kelp grow?"),
        ],
        read=set(),
        cited=facts,
        title_of=lambda source_id: f"Kelp note {source_id}",
        suggested=["How fast does giant kelp grow?", "Who measured kelp growth first?"],
    )
    assert found == [
        "Which is right on Giant kelp grows centimetres day summer: 30 or 61?",
        "Who measured kelp growth first?",
        "Does kelp grow in winter?",
        "Read https://example.org/kelp (cited by S2)",
        'What does Kelp note 2 mean by "growth rate"?',
    ]
