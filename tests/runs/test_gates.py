"""runs/gates.py: a phase's criteria judged on a synthesis, an unmet one worded as a gap naming its
evidence, and the phase's own budget."""

from __future__ import annotations

from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Budget, Confidence, Finding, Phase, PhaseCriteria
from research_mcp.core.gaps import Gap
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.gates import (
    PhaseSpending,
    answered,
    corroboration,
    criteria_status,
    theme_covered,
    unmet_gap,
)
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.runs.walk import leaf, tree, walk

# fact id -> (its source, the sources its statement was found in)
SOURCE_OF = {1: (1, 1), 2: (2, 1), 3: (1, 3)}


def synthesis(**fields: object) -> StoredSynthesis:
    base: dict[str, object] = {
        "report": "# Bridges\n\nThe bridge opened in 1932 [F1].",
        "confidence": Confidence(level="medium", reasoning="two sources"),
    }
    return StoredSynthesis.model_validate(base | fields)


def phase(**criteria: object) -> Phase:
    return Phase(name="check", criteria=PhaseCriteria.model_validate(criteria))


def test_corroboration_counts_distinct_sources_or_a_merged_facts_repeats() -> None:
    assert corroboration([1, 2], SOURCE_OF) == 2
    assert corroboration([1], SOURCE_OF) == 1
    assert corroboration([3], SOURCE_OF) == 3  # one fact, found repeated in three sources
    assert corroboration([99], SOURCE_OF) == 0


def test_every_key_finding_must_be_corroborated_and_none_is_not_enough() -> None:
    two = synthesis(key_findings=[Finding(statement="opened 1932", fact_ids=[1, 2])])
    one = synthesis(key_findings=[Finding(statement="opened 1932", fact_ids=[1])])
    assert criteria_status(phase(min_corroboration=2), two, SOURCE_OF) == {"corroboration": True}
    assert criteria_status(phase(min_corroboration=2), one, SOURCE_OF) == {"corroboration": False}
    assert criteria_status(phase(min_corroboration=1), synthesis(), SOURCE_OF) == {"corroboration": False}


def test_a_theme_is_covered_by_what_a_verified_fact_says_not_by_the_report() -> None:
    said = ["The harbour bridge opened in 1932. The harbour bridge opened in 1932."]
    status = criteria_status(phase(themes=["Bridges", "harbour bridges", "ferries"]), synthesis(), {}, said)
    assert status == {"theme:Bridges": True, "theme:harbour bridges": True, "theme:ferries": False}
    assert theme_covered("the", ["see the notes"]) and not theme_covered("bridges", [])


def test_contradictions_and_confidence_are_judged_on_the_synthesis() -> None:
    disputed = synthesis(contradictions=["Sources disagree on opened: …"])
    judged = phase(contradictions_resolved=True, min_confidence="high")
    assert criteria_status(judged, disputed, {}) == {"contradictions_resolved": False, "confidence": False}
    settled = synthesis(confidence=Confidence(level="high", reasoning="three sources"))
    assert criteria_status(judged, settled, {}) == {"contradictions_resolved": True, "confidence": True}


def test_an_unmet_criterion_is_a_gap_naming_what_was_required_and_found() -> None:
    weak = synthesis(
        key_findings=[Finding(statement="a", fact_ids=[1, 2]), Finding(statement="b", fact_ids=[1])],
        contradictions=["S1 and S2 differ on the date"],
    )
    judged = phase(
        min_corroboration=3, themes=["ferries"], contradictions_resolved=True, min_confidence="high"
    )
    head = "Phase 'check' criterion unmet: "
    assert unmet_gap(judged, "corroboration", weak, SOURCE_OF) == (
        head + "each key finding agreed by 3 sources; 2 key findings, the weakest agreed by 1"
    )
    assert "no verified finding of the report covers 'ferries'" in unmet_gap(
        judged, "theme:ferries", weak, SOURCE_OF
    )
    assert "1 remain: S1 and S2 differ on the date" in unmet_gap(judged, "contradictions_resolved", weak, {})
    assert "reached medium (two sources)" in unmet_gap(judged, "confidence", weak, {})


def test_a_phase_budget_counts_only_what_was_spent_since_the_phase_began(temp_store: Store) -> None:
    rc = walk(temp_store, ScriptedModel(team_script), tree(leaf("a")))
    rc.deps.budget.tokens = 500  # spent before the phase
    spending = PhaseSpending(Budget(max_tokens=100, max_sources=2), rc.deps.budget.tokens, 0.0)
    assert spending.exceeded(rc) is None and spending.stop_reason(rc) is None
    rc.deps.budget.tokens = 600
    assert spending.exceeded(rc) == "100 of its 100 tokens spent"
    spending = PhaseSpending(Budget(max_sources=2), 0, 0.0)
    spending.sources = 2
    assert spending.sources_left() == 0 and spending.stop_reason(rc) == "its 2 sources read"
    assert PhaseSpending(None, 0, 0.0).exceeded(rc) is None


def test_a_theme_the_synthesis_answered_by_its_evidence_rules_is_covered_though_a_fact_leaves_a_word_unsaid() -> (
    None
):
    skel = "Which directory does adduser copy skeleton files from?"
    mode = "What permissions does adduser give new home directories?"
    said = ["SKEL The directory from which skeletal user configuration files will be copied."]
    themes = phase(themes=[skel, mode])
    # The fact does not say "adduser" (adduser.conf(5), its page's title, does): not by its words.
    assert criteria_status(themes, synthesis(), {}, said) == {f"theme:{skel}": False, f"theme:{mode}": False}
    # Its question, which the synthesis's evidence rules found it answers: covered.
    found = answered(synthesis(), [skel])
    assert criteria_status(themes, synthesis(), {}, said, found) == {
        f"theme:{skel}": True,
        f"theme:{mode}": False,
    }
    # A cited fact extracted for a question the synthesis says it did not establish, in its own gap or
    # in one a part carried up under its title, answers nothing.
    for gap in (Gap.not_established(skel), Gap.not_established(skel).under("Skeletons")):
        assert answered(synthesis(gaps=[gap.text], typed_gaps=[gap]), [skel, mode]) == {normalize(mode)}
    # A part that found no fact for it at first (a phase's iteration did): its gap does not undo it.
    unanswered = Gap.unanswered(skel).under("Skeletons")
    assert answered(synthesis(gaps=[unanswered.text], typed_gaps=[unanswered]), [skel]) == {normalize(skel)}
    # Only the kind is read, never the text: a model's gap that reads like code's is no judgement.
    assert answered(synthesis(gaps=[Gap.not_established(skel).text]), [skel]) == {normalize(skel)}
