"""The extractive backend: plans, facts, syntheses and rankings with no language model."""

from __future__ import annotations

from typing import Literal, TypeVar

import pytest
from pydantic import BaseModel

from research_mcp.answering.confidence import ANSWERED, CLEAR, HIGH, RIVAL_SHARE
from research_mcp.core.citations import CITATION, locate_quote
from research_mcp.core.contracts import (
    ExtractorOutput,
    ExtractorTaskSpec,
    Fact,
    PlannerOutput,
    PlanNode,
    ScoutOutput,
    SynthesisOutput,
)
from research_mcp.core.errors import ModelError
from research_mcp.core.feasibility import check_feasible
from research_mcp.core.gaps import Gap
from research_mcp.core.role_inputs import (
    ChildReport,
    ExtractorPayload,
    PlannerInput,
    ScoutCandidate,
    ScoutInput,
    SynthesisPayload,
)
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.llm.extractive.extractor import NO_ANSWER
from research_mcp.llm.extractive.synthesizer import FIRST_PAGE, LINES_PER_QUESTION

OutputT = TypeVar("OutputT", bound=BaseModel)

COFFEE = """# Coffee and health

Coffee is one of the most widely consumed beverages in the world. Dr. Jane Smith, of the U.S.
National Institutes of Health, led a cohort study of 400,000 adults, e.g. nurses and physicians.
The study found that people who drank 3 to 5 cups of coffee a day had a 12.5% lower risk of death
over 13 years.
Caffeine is a stimulant that blocks adenosine receptors in the brain.
A typical 240 ml cup of brewed coffee contains about 95 mg of caffeine.
Decaffeinated coffee showed similar associations with mortality, suggesting that compounds other
than caffeine are involved.

## Limitations

The study was observational, so it cannot establish causation. Participants reported their own
coffee intake.

## Data availability

Data are available at https://example.org/coffee-data and the protocol at https://doi.org/10.1000/xyz123.
"""

CAFFEINE_QUESTION = "How much caffeine is in a cup of coffee?"
CAFFEINE_ANSWER = "A typical 240 ml cup of brewed coffee contains about 95 mg of caffeine."


async def ask(model: ExtractiveModel, output_type: type[OutputT], payload: BaseModel) -> OutputT:
    request = ModelRequest(role="test", system="", prompt="", output_type=output_type, payload=payload)
    return (await model.generate(request)).output


def extraction(
    questions: list[str], text: str = COFFEE, *, discovery_intense: bool | None = None
) -> ExtractorPayload:
    return ExtractorPayload(
        source_id=1,
        source_ref="text:coffee",
        source_title="Coffee and health",
        questions=questions,
        task_spec=None
        if discovery_intense is None
        else ExtractorTaskSpec(questions=questions, discovery_intense=discovery_intense),
        source_text=text,
    )


# --- sentences ---------------------------------------------------------------------------------


async def test_every_quote_is_a_verbatim_slice_of_the_source_that_locate_quote_finds(
    model: ExtractiveModel,
) -> None:
    questions = [CAFFEINE_QUESTION, "Is drinking coffee associated with a lower risk of death?"]

    output = await ask(model, ExtractorOutput, extraction(questions))

    assert output.facts
    for fact in output.facts:
        assert fact.quote in COFFEE
        assert fact.quote == fact.quote.strip()
        assert locate_quote(fact.quote, COFFEE) is not None
        assert fact.statement == " ".join(fact.quote.split())
        assert 0 <= fact.confidence <= 1


async def test_the_sentence_answering_the_question_ranks_first(model: ExtractiveModel) -> None:
    output = await ask(model, ExtractorOutput, extraction([CAFFEINE_QUESTION]))

    first = output.facts[output.answers[0].fact_indexes[0]]
    assert CAFFEINE_ANSWER in first.quote  # the passage holding it, quoted whole
    assert first.question_index == 0
    assert CAFFEINE_ANSWER in output.answers[0].answer


async def test_mmr_never_picks_two_near_identical_sentences(model: ExtractiveModel) -> None:
    text = (
        "The bridge is 1,280 metres long and opened in 1937. "
        "The bridge is 1,280 metres long, and it opened in 1937. "
        "Its towers rise 227 metres above the water. "
        "Fog often covers the bridge in summer."
    )

    output = await ask(
        model, ExtractorOutput, extraction(["How long is the bridge and when did it open?"], text)
    )

    quotes = [fact.quote for fact in output.facts]
    assert sum("1,280 metres long" in quote for quote in quotes) == 1


async def test_an_unanswerable_question_gets_the_no_answer_answer_and_low_confidence(
    model: ExtractiveModel,
) -> None:
    question = "What is the boiling point of mercury at sea level?"

    output = await ask(model, ExtractorOutput, extraction([question]))

    assert output.facts == []
    assert output.answers[0].answer == NO_ANSWER
    assert output.answers[0].fact_indexes == []
    assert output.confidence.level == "low"
    assert [follow_up.question for follow_up in output.follow_up_questions] == [question]


async def test_linked_sources_are_listed_only_for_a_discovery_intense_task(model: ExtractiveModel) -> None:
    plain = await ask(model, ExtractorOutput, extraction([CAFFEINE_QUESTION]))
    discovery = await ask(model, ExtractorOutput, extraction([CAFFEINE_QUESTION], discovery_intense=True))

    assert plain.linked_candidate_sources == []
    assert [link.ref for link in discovery.linked_candidate_sources] == [
        "https://example.org/coffee-data",
        "https://doi.org/10.1000/xyz123",
    ]


# --- synthesizer -------------------------------------------------------------------------------


def fact(
    fact_id: int, statement: str, *, question: str | None, verified: bool = True, source: int = 1
) -> Fact:
    return Fact(
        id=fact_id,
        statement=statement,
        quote=statement,
        source_id=source,
        verified=verified,
        confidence=0.8,
        question=question,
    )


CAFFEINE_FACTS = [
    fact(12, CAFFEINE_ANSWER, question=CAFFEINE_QUESTION, source=1),
    fact(15, CAFFEINE_ANSWER, question=CAFFEINE_QUESTION, source=2),
    fact(20, "Espresso has 63 mg of caffeine per shot.", question=CAFFEINE_QUESTION, verified=False),
    fact(21, "Caffeine is broken down in the liver by the enzyme CYP1A2.", question=None),
    fact(22, "Coffee was first roasted in Yemen.", question="When was coffee first roasted?", verified=False),
]
SYNTHESIS_QUESTIONS = [
    CAFFEINE_QUESTION,
    "How is caffeine broken down in the body?",
    "When was coffee first roasted?",
]


async def test_the_synthesizer_cites_only_verified_facts_and_lists_uncovered_questions_as_gaps(
    model: ExtractiveModel,
) -> None:
    payload = SynthesisPayload(
        title="Caffeine", questions=SYNTHESIS_QUESTIONS, input_handoffs=[], facts=CAFFEINE_FACTS
    )

    output = await ask(model, SynthesisOutput, payload)

    cited = {int(found) for found in CITATION.findall(output.report)}
    assert cited == {12, 15, 21}
    assert "Espresso" not in output.report
    assert f"{CAFFEINE_ANSWER} [F12][F15]" in output.report  # near-duplicates: one line citing both
    assert all(set(finding.fact_ids) <= {12, 15, 21} for finding in output.key_findings)
    # No line at all for it: unanswered (a line too weak to answer it would leave it not established).
    assert output.gaps == ["No verified fact was found for: When was coffee first roasted?"]
    assert output.suggested_followups == ["When was coffee first roasted?"]
    assert output.contradictions == []
    assert "does not detect contradictions" not in output.confidence.reasoning  # code looks for them now


async def test_confidence_follows_the_best_passage_and_copies_never_corroborate(
    model: ExtractiveModel,
) -> None:
    question = "When did the observatory open?"

    def scored(fact_id: int, score: float, source: int, said: str = "") -> Fact:
        said = said or f"The observatory opened in {1900 + fact_id}."
        return fact(fact_id, said, question=question, source=source).model_copy(update={"confidence": score})

    def payload(*facts: Fact) -> SynthesisPayload:
        return SynthesisPayload(title="t", questions=[question], input_handoffs=[], facts=list(facts))

    weak = await ask(model, SynthesisOutput, payload(scored(1, CLEAR - 0.05, 1)))
    alone = await ask(model, SynthesisOutput, payload(scored(2, HIGH + 0.1, 1)))
    copied = await ask(
        model,
        SynthesisOutput,
        payload(scored(2, HIGH + 0.1, 1), scored(3, HIGH + 0.1, 2, "The observatory opened in 1902.")),
    )
    agreed = await ask(
        model,
        SynthesisOutput,
        payload(
            scored(2, HIGH + 0.1, 1), scored(3, ANSWERED, 2, "It has been open to the public since 1902.")
        ),
    )

    assert weak.confidence.level == "low"
    assert weak.gaps == [f"Not established by the verified facts: {question}"]
    assert alone.confidence.level == "medium"  # one source, however likely
    assert copied.confidence.level == "medium"  # the same text in a second file is a copy
    assert agreed.confidence.level == "high"  # two independent sources
    assert "src" not in agreed.confidence.reasoning and ".py" not in agreed.confidence.reasoning


async def test_a_passage_below_answered_is_medium_only_when_no_other_source_comes_near_it(
    model: ExtractiveModel,
) -> None:
    question = "When did the observatory open?"
    best = CLEAR + 0.05  # under ANSWERED: medium only as the one clear place

    def scored(fact_id: int, score: float, source: int, said: str) -> Fact:
        return fact(fact_id, said, question=question, source=source).model_copy(update={"confidence": score})

    async def level(*facts: Fact) -> str:
        payload = SynthesisPayload(title="t", questions=[question], input_handoffs=[], facts=list(facts))
        return (await ask(model, SynthesisOutput, payload)).confidence.level

    clear = scored(1, best, 1, "The observatory opened in 1902.")
    far = scored(2, best * RIVAL_SHARE * 0.9, 2, "Telescopes were ground by hand.")
    near = scored(3, best * RIVAL_SHARE * 1.5, 2, "The dome was rebuilt in 1931.")
    copy = scored(4, best, 2, "The observatory opened in 1902.")
    same_source = scored(5, best * 0.9, 1, "Its first director was appointed in 1901.")
    weak = scored(6, CLEAR - 0.05, 1, "The observatory opened in 1902.")

    assert await level(clear) == "medium"  # one source, nothing else found
    assert await level(clear, far) == "medium"  # the other source's best is far below
    assert await level(clear, near) == "low"  # another source comes near: the evidence is split
    assert await level(clear, copy) == "medium"  # a copy of the same text is not a rival
    assert await level(clear, same_source) == "medium"  # the same source's other passages are not rivals
    assert await level(weak) == "low"  # under CLEAR, however alone
    assert ANSWERED > CLEAR


def _moon_facts(question: str, padding: str) -> list:
    moons = [
        "Titan",
        "Rhea",
        "Iapetus",
        "Dione",
        "Tethys",
        "Enceladus",
        "Mimas",
        "Hyperion",
        "Phoebe",
        "Janus",
    ]
    return [
        fact(
            index,
            f"{moon} is a moon of Saturn with {index + 3} known craters.{padding}",
            question=question,
            source=index,
        )
        for index, moon in enumerate(moons, 1)
    ]


async def test_a_list_cut_short_in_the_report_is_recorded_as_a_gap(model: ExtractiveModel) -> None:
    question = "Which moons does Saturn have?"
    padding = " Its surface was mapped by a probe that passed it on the way to the outer planets." * 5
    payload = SynthesisPayload(
        title="Saturn", questions=[question], input_handoffs=[], facts=_moon_facts(question, padding)
    )

    output = await ask(model, SynthesisOutput, payload)

    shown = len(CITATION.findall(output.report.split("## Which moons")[1].split("_Extractive")[0]))
    assert LINES_PER_QUESTION <= shown < 10
    assert any(
        gap.startswith(f"Cut short: {10 - shown} more verified lines on 'Which moons") for gap in output.gaps
    )


async def test_short_lines_leave_room_for_more_lines(model: ExtractiveModel) -> None:
    question = "Which moons does Saturn have?"
    payload = SynthesisPayload(
        title="Saturn", questions=[question], input_handoffs=[], facts=_moon_facts(question, "")
    )

    output = await ask(model, SynthesisOutput, payload)

    section = output.report.split("## Which moons")[1].split("_Extractive")[0]
    assert len(CITATION.findall(section)) == 10  # ten short lines fit the page: none is cut
    assert not any(gap.startswith("Cut short") for gap in output.gaps)


async def test_the_synthesizer_files_a_fact_without_a_question_under_the_nearest_question(
    model: ExtractiveModel,
) -> None:
    payload = SynthesisPayload(
        title="Caffeine", questions=SYNTHESIS_QUESTIONS, input_handoffs=[], facts=CAFFEINE_FACTS
    )

    output = await ask(model, SynthesisOutput, payload)

    section = output.report.split("## How is caffeine broken down in the body?")[1].split("##")[0]
    assert "[F21]" in section


async def test_child_reports_add_only_lines_not_already_cited_and_never_unverified_citations(
    model: ExtractiveModel,
) -> None:
    child = ChildReport(
        title="Tea",
        report="# Tea\n\n## Caffeine in tea\n- Tea has 47 mg of caffeine a cup. [F12][F99]\n"
        "- Green tea may help. [F20, unverified]\n\n_Extractive synthesis._",
        confidence="medium",
        gaps=["Is tea healthy?"],
    )
    payload = SynthesisPayload(
        title="Drinks", questions=[], input_handoffs=[], facts=CAFFEINE_FACTS[:3], child_reports=[child]
    )

    output = await ask(model, SynthesisOutput, payload)

    # The child's one verified line cites F12, already shown under its question: it is not repeated.
    assert output.report.count("Tea has 47 mg of caffeine a cup. [F12]") <= 1
    assert "### Tea" not in output.report
    assert "[F99]" not in output.report
    assert "Green tea may help" not in output.report
    assert "Tea: Is tea healthy?" in output.gaps


async def test_a_part_that_found_nothing_is_not_carried_as_unanswered_where_the_synthesis_has_lines(
    model: ExtractiveModel,
) -> None:
    # The part's first reading found no line; the report above it has one (a phase's iteration).
    child = ChildReport(
        title=CAFFEINE_QUESTION,
        report=f"# {CAFFEINE_QUESTION}\n\n_No verified fact answers this._",
        confidence="low",
        gaps=[Gap.unanswered(CAFFEINE_QUESTION), Gap(text="Is tea healthy?")],
    )
    payload = SynthesisPayload(
        title="Drinks",
        questions=[CAFFEINE_QUESTION],
        input_handoffs=[],
        facts=CAFFEINE_FACTS[:2],
        child_reports=[child],
    )

    output = await ask(model, SynthesisOutput, payload)

    assert not any("No verified fact was found" in gap for gap in output.gaps), output.gaps
    assert f"{CAFFEINE_QUESTION}: Is tea healthy?" in output.gaps
    # The part's gap is carried up typed: under its part's title, of its kind.
    carried = next(gap for gap in output.as_gaps() if gap.text == f"{CAFFEINE_QUESTION}: Is tea healthy?")
    assert (carried.kind, carried.part) == ("other", CAFFEINE_QUESTION)


# --- planner (more in tests/llm/test_extractive_planner.py) ------------------------------


async def test_an_infeasible_suggested_plan_is_replaced(model: ExtractiveModel) -> None:
    leaf = PlanNode(kind="leaf", title="deep", questions=["What is deep?"])
    for level in range(4):
        leaf = PlanNode(kind="executor", title=f"level {level}", children=[leaf])

    output = await ask(
        model, PlannerOutput, PlannerInput(query="What is deep?", suggested_plan=PlannerOutput(root=leaf))
    )

    assert check_feasible(leaf) != []
    assert check_feasible(output.root) == []
    assert [child.questions for child in output.root.children] == [["What is deep?"]]


# --- scout -------------------------------------------------------------------------------------


def candidate(
    index: int,
    ref: str,
    title: str,
    snippet: str,
    score: float,
    *,
    origin: Literal["web", "corpus"] = "web",
    published: str | None = None,
) -> ScoutCandidate:
    return ScoutCandidate(
        index=index, ref=ref, title=title, snippet=snippet, score=score, origin=origin, published=published
    )


SCOUT = ScoutInput(
    topic="caffeine content of coffee",
    queries=["caffeine coffee mg"],
    candidates=[
        candidate(
            0,
            "https://www.fda.gov/consumers/caffeine",
            "How Much Caffeine is Too Much? | FDA",
            "400 milligrams of caffeine a day is safe for most adults; a cup of coffee has about 95 mg",
            0.9,
            published="2024-03-01",
        ),
        candidate(
            1,
            "https://en.wikipedia.org/wiki/Caffeine",
            "Caffeine: an overview - Wikipedia",
            "Caffeine is a stimulant",
            0.8,
        ),
        candidate(2, "https://fda.gov/consumers/caffeine/", "How Much Caffeine is Too Much?", "copy", 0.7),
        candidate(3, "https://example.com/cats", "Best cat toys 2023", "Our favourite toys for cats", 0.2),
        candidate(
            4, "notes/coffee.md", "Coffee notes", "caffeine in espresso and drip coffee", 7.5, origin="corpus"
        ),
    ],
)


async def test_the_scout_ranks_tags_and_excludes_duplicates_and_off_topic_pages(
    model: ExtractiveModel,
) -> None:
    output = await ask(model, ScoutOutput, SCOUT)

    by_index = {ranked.index: ranked for ranked in output.ranked}
    included = [ranked for ranked in output.ranked if ranked.include]
    assert {ranked.index for ranked in included} == {0, 1, 4}
    assert output.ranked[: len(included)] == included
    assert [ranked.score for ranked in included] == sorted(
        (ranked.score for ranked in included), reverse=True
    )
    assert "duplicate of #0" in by_index[2].rationale
    assert not by_index[3].include and "off-topic" in by_index[3].rationale
    assert {"authoritative", "recent"} <= set(by_index[0].tags)
    assert "primary" in by_index[4].tags
    assert "broad" in by_index[1].tags  # told by its title; no site is named by a rule
    assert "search 0.90" in by_index[0].rationale
    assert all(0 <= ranked.score <= 1 for ranked in output.ranked)


# --- the backend as a whole --------------------------------------------------------------------

EVERY_ROLE: list[tuple[type[BaseModel], BaseModel]] = [
    (PlannerOutput, PlannerInput(query="Compare solar and wind power in terms of land use")),
    (
        ExtractorOutput,
        extraction([CAFFEINE_QUESTION, "Does coffee lower mortality?"], discovery_intense=True),
    ),
    (
        SynthesisOutput,
        SynthesisPayload(title="C", questions=SYNTHESIS_QUESTIONS, input_handoffs=[], facts=CAFFEINE_FACTS),
    ),
    (ScoutOutput, SCOUT),
]


@pytest.mark.parametrize(
    ("output_type", "payload"), EVERY_ROLE, ids=lambda value: getattr(value, "__name__", "")
)
async def test_the_same_input_gives_the_same_output(
    model: ExtractiveModel, output_type: type[BaseModel], payload: BaseModel
) -> None:
    first = await ask(model, output_type, payload)
    again = await ask(ExtractiveModel(model.embedder, today=model.today), output_type, payload)

    assert again.model_dump() == first.model_dump()


async def test_usage_says_no_model_ran_and_nothing_was_spent() -> None:
    request = ModelRequest(
        role="planner",
        system="",
        prompt="",
        output_type=PlannerOutput,
        payload=PlannerInput(query="Why is the sky blue?"),
    )

    generation = await ExtractiveModel().generate(request)

    assert ExtractiveModel.name == "extractive"
    assert (generation.usage.model, generation.usage.tokens_in, generation.usage.tokens_out) == (
        "extractive",
        0,
        0,
    )
    assert (generation.usage.cost_usd, generation.usage.calls) == (0.0, 1)


async def test_an_output_it_cannot_build_or_a_missing_payload_is_a_clear_model_error() -> None:
    class Poem(BaseModel):
        text: str

    with pytest.raises(ModelError, match="cannot produce 'Poem'"):
        await ExtractiveModel().generate(ModelRequest(role="poet", system="", prompt="", output_type=Poem))
    with pytest.raises(ModelError, match="needs a PlannerInput payload"):
        await ExtractiveModel().generate(
            ModelRequest(role="planner", system="", prompt="plan this", output_type=PlannerOutput)
        )


async def test_the_report_shows_every_questions_best_passage_first_within_three_kilobytes(
    model: ExtractiveModel,
) -> None:
    questions = [f"What does the {name} valve control?" for name in ("red", "green", "blue")]
    filler = "The plant manual describes maintenance schedules, safety drills and staffing rotas. " * 12
    facts = [
        fact(
            10 * q + rank,
            f"{filler} The {name} valve controls the {name} coolant loop. {filler}",
            question=question,
            source=rank + 1,
        ).model_copy(update={"confidence": 0.9 - 0.1 * rank})
        for q, (name, question) in enumerate(zip(("red", "green", "blue"), questions, strict=True))
        for rank in range(6)
    ]
    payload = SynthesisPayload(title="Valves", questions=questions, input_handoffs=[], facts=facts)

    output = await ask(model, SynthesisOutput, payload)

    body = output.report.split("\n\n_Extractive synthesis")[0]
    assert len(body.encode()) <= 3000, len(body.encode())
    for q, name in enumerate(("red", "green", "blue")):
        section = output.report.split(f"## {questions[q]}")[1].split("##")[0]
        first_line = section.strip().splitlines()[0]
        assert f"The {name} valve controls the {name} coolant loop." in first_line  # the excerpt says it
        assert f"[F{10 * q}]" in first_line  # the most likely passage leads


async def test_a_parts_list_cut_short_on_a_question_the_synthesis_lists_is_said_once(
    model: ExtractiveModel,
) -> None:
    question = "Which moons does Saturn have?"
    padding = " Its surface was mapped by a probe that passed it on the way to the outer planets." * 5
    facts = [
        fact(
            index,
            f"Moon {index} of Saturn has {index + 3} known craters.{padding}",
            question=question,
            source=index,
        )
        for index in range(1, 11)
    ]
    part_cut = f"Cut short: 4 more verified lines on {question!r} are not in the report (it shows 6)"
    child = ChildReport(
        title="moons",
        report="# moons",
        confidence="medium",
        gaps=[Gap(kind="cut_short", text=part_cut, question=question)],
    )
    payload = SynthesisPayload(
        title="Saturn", questions=[question], input_handoffs=[], facts=facts, child_reports=[child]
    )

    output = await ask(model, SynthesisOutput, payload)

    cuts = [gap for gap in output.gaps if gap.startswith("Cut short") or "Cut short" in gap]
    assert len(cuts) == 1 and "moons:" not in cuts[0], output.gaps


async def test_what_a_short_answer_leaves_of_the_page_shows_more_of_another_question(
    model: ExtractiveModel,
) -> None:
    short, long = "Which moon is largest?", "Which moons does Saturn have?"
    padding = " Its surface was mapped by a probe that passed it on the way to the outer planets." * 5
    facts = [fact(0, "Titan is the largest moon.", question=short, source=0), *_moon_facts(long, padding)]
    payload = SynthesisPayload(title="Saturn", questions=[short, long], input_handoffs=[], facts=facts)

    output = await ask(model, SynthesisOutput, payload)

    section = output.report.split(f"## {long}")[1].split("_Extractive")[0]
    shown = sum(len(line) for line in section.strip().splitlines())
    assert shown > FIRST_PAGE // 2 + 400  # its half of the page and most of what the short one left
    assert len(output.report.split("\n\n_Extractive")[0].encode()) <= FIRST_PAGE + 600


async def test_lines_on_none_of_the_questions_show_only_in_what_the_questions_leave_of_the_page(
    model: ExtractiveModel,
) -> None:
    question = "Which moons does Saturn have?"
    padding = " Its surface was mapped by a probe that passed it on the way to the outer planets." * 5
    elsewhere = [
        fact(
            90 + n, f"The kitchen door was painted {colour} in {year}.", question="Kitchen: paint", source=90
        )
        for n, (colour, year) in enumerate((("green", 1990), ("blue", 2004)))
    ]

    def report(facts: list[Fact]) -> str:
        payload = SynthesisPayload(title="Saturn", questions=[question], input_handoffs=[], facts=facts)
        return ask(model, SynthesisOutput, payload)

    full = (await report([*_moon_facts(question, padding), *elsewhere])).report
    roomy = (await report([*_moon_facts(question, ""), *elsewhere])).report

    # The moons fill the page: the kitchen's lines are left to the facts view, said in one line.
    assert "## Other findings" not in full and "[F90]" not in full
    assert "2 more verified lines bear on none of the questions" in full
    assert len(full.split("\n\n_Extractive")[0].encode()) <= FIRST_PAGE + 600
    # Short moon lines leave room: the kitchen's lines show in it.
    assert "## Other findings" in roomy and "[F90]" in roomy and "[F91]" in roomy


async def test_a_quoted_list_item_or_heading_shows_as_one_list_item_of_the_report(
    model: ExtractiveModel,
) -> None:
    """A passage keeps its document's marks ("- " of a list item, "# " of a heading): a report line,
    itself a list item, shows the words without them (a heading inside a bullet renders as a heading);
    the facts view keeps the quote as written."""
    question = "How many columns can a table have?"
    facts = [
        fact(1, "- The default limit is 2000 columns a table.", question=question, source=1),
        fact(2, "# 4. Column limits A table can have up to 32767 columns.", question=question, source=2),
    ]
    payload = SynthesisPayload(title=question, questions=[question], input_handoffs=[], facts=facts)

    output = await ask(model, SynthesisOutput, payload)

    lines = [line for line in output.report.splitlines() if "[F" in line]
    assert any(line.startswith("- The default limit is 2000 columns a table.") for line in lines), lines
    assert any(line.startswith("- 4. Column limits A table can have up to 32767") for line in lines), lines
    assert not [line for line in lines if line.startswith(("- - ", "- # "))], lines


async def test_a_node_of_several_parts_is_written_by_its_parts_not_by_every_question_its_facts_had(
    model: ExtractiveModel,
) -> None:
    parts = ["How does the barrage turn turbines?", "Which tidal station is the largest?"]
    children = [ChildReport(title=part, report=f"# {part}\n", confidence="medium") for part in parts]
    facts = [
        fact(1, "The barrage turns its turbines as the tide falls behind the dam.", question=parts[0]),
        # A second hop's question, and an earlier run's lent with its fact: neither is a part.
        fact(2, "The Sihwa Lake station is the largest tidal station.", question="Sihwa Lake: largest"),
        fact(
            3, "A turbine of the barrage turns in both directions of the tide.", question="What is a barrage?"
        ),
    ]
    payload = SynthesisPayload(
        title="Tidal power", questions=[], input_handoffs=[], facts=facts, child_reports=children
    )

    output = await ask(model, SynthesisOutput, payload)

    headings = [line for line in output.report.splitlines() if line.startswith("## ")]
    assert headings[:2] == [f"## {part}" for part in parts] and len(headings) == 2
    largest = output.report.split(f"## {parts[1]}")[1]
    assert "[F2]" in largest  # under the part it answers
    assert "[F1]" in output.report and "[F3]" in output.report
