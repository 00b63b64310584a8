"""The extractive extractor and a source's subject: what the question asks of the thing its title
names (the question's focus), and the sentence that says what that thing is (its definition)."""

from __future__ import annotations

from research_mcp.contracts import ExtractorOutput
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.llm.extractive.focus import focus
from research_mcp.role_inputs import ExtractorPayload


async def quotes(
    model: ExtractiveModel, title: str, question: str, text: str, context: str = ""
) -> list[str]:
    payload = ExtractorPayload(
        source_id=1,
        source_ref=f"corpus:{title}",
        source_title=title,
        questions=[question],
        context=context,
        source_text=text,
    )
    request = ModelRequest(role="test", system="", prompt="", output_type=ExtractorOutput, payload=payload)
    output = (await model.generate(request)).output
    return [fact.quote for fact in output.facts]


CHAIN = (
    "The 2011–12 VCU Rams men's basketball team, led by third year head coach Shaka Smart, represented "
    "Virginia Commonwealth University which was founded in what year?"
)


def test_the_focus_is_the_clause_the_question_says_of_the_sources_subject() -> None:
    # A relative clause after the name says something of it.
    assert focus(CHAIN, "Virginia Commonwealth University") == (
        "Virginia Commonwealth University which was founded in what year"
    )
    # Nothing said after the name: the clause that ends with it; a bracketed qualifier is no part of the name.
    assert (
        focus(
            "Who wrote the song that was the first track on the box set Back to Mono?",
            "Back to Mono (1958–1969)",
        )
        == "that was the first track on the box set Back to Mono"
    )
    # A question that does not name the subject, or says nothing of it, has no focus.
    assert focus(CHAIN, "Richmond, Virginia") == ""
    assert focus("Are Local H and For Against both from the United States?", "Local H") == ""


async def test_a_sentence_answering_what_the_question_asks_of_the_sources_subject_is_quoted(
    model: ExtractiveModel,
) -> None:
    text = (
        "The VCU Rams men's basketball team of Virginia Commonwealth University plays in Richmond. "
        "Its head coach Shaka Smart led the team in its third year. "
        "The university was founded in the year 1838 as a medical college."
    )

    found = await quotes(model, "Virginia Commonwealth University", CHAIN, text)

    # Against the whole question it shares one word of many; against the clause about the
    # university, it answers.
    assert "The university was founded in the year 1838 as a medical college." in found


LOCAL_H = "Are Local H and For Against both from the United States?"
LOCAL_H_TEXT = (
    "Local H is a rock band formed by Scott Lucas and Matt Garcia. "
    "The band toured the United States in 1990 after the members met in high school."
)


async def test_a_source_about_a_thing_the_question_names_gives_the_sentence_that_says_what_it_is(
    model: ExtractiveModel,
) -> None:
    found = await quotes(model, "Local H", LOCAL_H, LOCAL_H_TEXT)

    assert found[0].startswith("The band toured")  # the answer first
    assert "Local H is a rock band formed by Scott Lucas and Matt Garcia." in found


async def test_a_source_the_question_does_not_name_gives_its_answer_alone(model: ExtractiveModel) -> None:
    found = await quotes(
        model, "Local H (tour)", "Did a band from Illinois tour the United States?", LOCAL_H_TEXT
    )

    assert found == ["The band toured the United States in 1990 after the members met in high school."]


async def test_a_source_a_lead_reached_by_naming_its_subject_gives_its_definition_too(
    model: ExtractiveModel,
) -> None:
    context = "Found by following 'Local H', which source S2 names: Scott Lucas founded Local H."
    found = await quotes(
        model, "Local H", "Did a band from Illinois tour the United States?", LOCAL_H_TEXT, context
    )

    assert "Local H is a rock band formed by Scott Lucas and Matt Garcia." in found


CASUALTIES = (
    "World War II was the deadliest military conflict in history. "
    "Over 60 million people were killed, about 3% of the world population. "
    "The tables below give a count of losses by country. "
    "Military deaths from all causes totalled 21 to 25 million."
)
KILLED = "Over 60 million people were killed, about 3% of the world population."


async def test_a_source_a_lead_brought_gives_further_sentences_its_short_question_scores_lower() -> None:
    lexical = ExtractiveModel(None)
    hop = "World War II: fallen 60"
    context = (
        "Found by following 'World War II', which source S2 names: a memorial to the fallen of World War II."
    )

    # Searched for the leaf's question, the source gives its best sentence only; reached by a lead,
    # the sentence that scores a little lower against the lead's few words comes with it.
    assert KILLED not in await quotes(lexical, "World War II casualties", hop, CASUALTIES)
    assert KILLED in await quotes(lexical, "World War II casualties", hop, CASUALTIES, context)
