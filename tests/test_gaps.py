"""A gap is typed where code writes it (research_mcp/core/gaps.py): its kind and question are read, never
its sentence; a synthesis stored before gaps were typed still loads."""

from research_mcp.core.contracts import Confidence, SynthesisOutput
from research_mcp.core.gaps import NOT_ESTABLISHED, UNANSWERED, Gap
from research_mcp.storage.outputs import StoredSynthesis

MEDIUM = Confidence(level="medium", reasoning="two sources")


def test_a_gap_carried_up_keeps_its_kind_and_question_under_the_parts_title() -> None:
    gap = Gap.unanswered("When did the bridge open?").under("Bridges")
    assert gap.text == f"Bridges: {UNANSWERED}When did the bridge open?"
    assert (gap.kind, gap.question, gap.part) == ("unanswered", "When did the bridge open?", "Bridges")
    # Carried up again: the first part's title stays its part, the text says both.
    assert gap.under("Cities").part == "Bridges"


def test_a_models_gap_that_reads_like_codes_is_of_kind_other() -> None:
    output = SynthesisOutput(report="r", confidence=MEDIUM, gaps=[f"{NOT_ESTABLISHED}When?"])
    assert [(gap.kind, gap.question) for gap in output.as_gaps()] == [("other", None)]
    output.set_gaps([Gap.not_established("When?"), Gap(kind="cut_short", text="Cut short: 3 more")])
    assert output.gaps == [f"{NOT_ESTABLISHED}When?", "Cut short: 3 more"]
    assert [gap.kind for gap in output.as_gaps()] == ["not_established", "cut_short"]


def test_a_synthesis_stored_before_gaps_were_typed_loads_with_its_gaps_as_other() -> None:
    stored = StoredSynthesis.model_validate(
        {
            "report": "r",
            "confidence": MEDIUM.model_dump(),
            "gaps": [f"{UNANSWERED}When?"],
            "evidence_gaps": [f"{UNANSWERED}When?"],
        }
    )
    assert stored.typed_gaps == []
    assert stored.as_gaps() == [Gap(text=f"{UNANSWERED}When?")]
    assert stored.evidence_gaps == [Gap(text=f"{UNANSWERED}When?")]
    # Stored typed, it reads back typed.
    typed = stored.model_copy(update={"typed_gaps": [Gap.unanswered("When?")]})
    again = StoredSynthesis.model_validate_json(typed.model_dump_json())
    assert again.as_gaps() == [Gap.unanswered("When?")]
