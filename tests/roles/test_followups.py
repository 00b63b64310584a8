"""Follow-ups are questions a person would ask, or none: a search's working words ("GPL: GPL-3 say",
"README: handle") raised by an extraction are not offered."""

from __future__ import annotations

import pytest

from research_mcp.answering.questions import reads_as_question
from research_mcp.core.role_inputs import SourceInsight
from research_mcp.roles.synthesis_inputs import insight_followups


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("GPL: GPL-3 say", False),
        ("README: handle", False),
        ("GPL: what does the GPL-3 say?", False),
        ("zlib licence", False),
        ("What does zlib's licence require?", True),
        ("How is fstab read?", True),
        ("Is the sixth field of fstab used by fsck?", True),
    ],
)
def test_what_reads_as_a_question(text: str, question: bool) -> None:
    assert reads_as_question(text) is question


def test_an_extractions_working_words_are_not_offered_as_follow_ups() -> None:
    raised = [
        SourceInsight(source_id=3, kind="follow_up", text="GPL: GPL-3 say"),
        SourceInsight(source_id=3, kind="follow_up", text="What does the GPL-3 say about patents?"),
    ]
    assert insight_followups(raised, [], set()) == ["What does the GPL-3 say about patents?"]
