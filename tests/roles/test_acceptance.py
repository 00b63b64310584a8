"""Acceptance criteria code can read off a report and its cited facts, judged as a reader would."""

from __future__ import annotations

import pytest

from research_mcp.core.contracts import CriterionVerdict, ExtractorTaskSpec, Fact, Finding
from research_mcp.core.gaps import Gap
from research_mcp.core.role_inputs import SourceInsight
from research_mcp.roles.acceptance import Criterion, judge, numbered_criteria, reshape, summary_asked
from research_mcp.roles.synthesis_inputs import insight_followups, source_gaps

SOURCES = {
    1: ("https://www.who.int/news/item/2023-malaria", "WHO malaria report 2023"),
    2: ("https://example.org/blog", "A blog post from 2019"),
    3: ("corpus:7", "GPL-3"),
}
REPORT = "# Malaria\n\n- Cases rose in 2022 [F1]\n- Nets work [F2]\n- Vaccines help [F3]\n\nThe RTS,S vaccine is named."


def fact(fact_id: int, source_id: int, quote: str = "a verbatim quote") -> Fact:
    return Fact(
        id=fact_id,
        statement=quote,
        quote=quote,
        source_id=source_id,
        location=(0, len(quote)),
        confidence=0.8,
        verified=True,
    )


CITED = [fact(1, 1), fact(2, 2, "Bed nets cut cases, a 2019 study found."), fact(3, 3)]


@pytest.mark.parametrize(
    ("criterion", "met", "evidence"),
    [
        ("cites at least 3 sources", True, "3 sources behind the cited verified facts"),
        ("at least four distinct sources", False, "3 sources behind the cited verified facts"),
        ("lists at least 3 interventions", True, "3 interventions in the report"),
        ("two or more examples", True, "3 examples in the report"),
        ("mentions 'RTS,S'", True, "the report mentions 'RTS,S'"),
        ("includes R21", False, "the report does not mention 'R21'"),
        ("cites a source from who.int", True, "1 cited sources on who.int: S1"),
        ("at least 2 sources from .gov", False, "0 of the 2 cited sources wanted on gov"),
        ("cites a source from 2023", True, "1 cited sources naming 2023: S1"),
        ("a study published after 2020", True, "1 cited sources naming 2020 or later: S1"),
        ("a source dated 2015", False, "0 of the 1 cited sources wanted naming 2015"),
    ],
)
def test_a_criterion_code_can_read_is_judged_with_its_evidence(
    criterion: str, met: bool, evidence: str
) -> None:
    [check] = judge(
        [Criterion(0, criterion)], report=REPORT, cited=CITED, source_of=SOURCES.__getitem__, verdicts=[]
    )
    assert (check.met, check.by, check.evidence) == (met, "code", evidence)


def test_a_criterion_code_cannot_read_takes_the_models_verdict_or_stays_unchecked() -> None:
    criteria = [Criterion(0, "explains the cause of the rise"), Criterion(0, "weighs costs against benefits")]
    verdict = CriterionVerdict(index=1, met=True, evidence="[F2] gives both")
    checks = judge(criteria, report=REPORT, cited=CITED, source_of=SOURCES.__getitem__, verdicts=[verdict])
    assert [(c.met, c.by) for c in checks] == [(None, "unchecked"), (True, "model")]


def test_a_format_code_can_give_is_no_criterion_and_one_it_cannot_is() -> None:
    specs = [
        ExtractorTaskSpec(
            questions=["What works?"], expected_format="a numbered list", acceptance_criteria=["x y"]
        ),
        ExtractorTaskSpec(questions=["What else?"], expected_format="an essay in APA style"),
    ]
    assert [c.label for c in numbered_criteria(specs)] == ["x y", "expected format: an essay in APA style"]
    report, gaps = reshape(
        "# Malaria\n\nNets work [F2].", specs, [Finding(statement="Nets work", fact_ids=[2])]
    )
    assert report.endswith("## In the expected format (a numbered list)\n\n1. Nets work [F2]")
    assert gaps == []
    # No key findings to give in that form: the report stays, and a gap says so.
    assert reshape(REPORT, specs[:1], []) == (
        REPORT,
        ["Expected format not met: 'a numbered list': no key findings to give in that form"],
    )


def test_a_summary_is_asked_by_a_format_or_a_question() -> None:
    assert summary_asked(ExtractorTaskSpec(questions=["What works?"], expected_format="a brief summary"))
    assert summary_asked(ExtractorTaskSpec(questions=["Summarize what works against malaria"]))
    assert not summary_asked(ExtractorTaskSpec(questions=["What works?"], expected_format="a table"))


def test_a_cited_source_not_read_and_a_new_follow_up_become_follow_ups() -> None:
    insights = [
        SourceInsight(source_id=3, kind="follow_up", text="What works?"),  # asked already
        SourceInsight(source_id=3, kind="follow_up", text="Does R21 work in infants?"),
        SourceInsight(source_id=3, kind="link", text="https://example.org/read", context="cited"),
        SourceInsight(source_id=3, kind="link", text="https://example.org/unread", context="cited"),
    ]
    followups = insight_followups(insights, ["What works?"], {"https://example.org/read"})
    assert followups == ["Does R21 work in infants?", "Read https://example.org/unread (cited by S3)"]


def test_a_gap_a_source_names_is_a_gap_of_the_research_only_when_it_bears_on_a_question() -> None:
    question = "What patent rights does the Apache License 2.0 grant?"
    insights = [
        SourceInsight(
            source_id=1, kind="gap", text="See the License for the specific language and limitations."
        ),
        SourceInsight(source_id=1, kind="gap", text="Whether patent rights survive a fork remains unclear."),
    ]
    assert source_gaps(insights, [question]) == [
        Gap(
            kind="source_gap",
            text="Source S1 names a gap: Whether patent rights survive a fork remains unclear.",
        )
    ]
