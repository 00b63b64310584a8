"""The no-model extractor's choice of sentences: one that refers back ("she", "the band") is scored
as what it refers back to, and a source that barely bears on a question gives one sentence."""

from __future__ import annotations

from research_mcp.llm.extractive.extractor import extract
from research_mcp.llm.extractive.references import refers_back, resolved_texts
from research_mcp.llm.extractive.sentences import split_sentences
from research_mcp.role_inputs import ExtractorPayload

BIOGRAPHY = (
    "Shirley Temple Black was an American actress and dancer. As an adult, she was named ambassador "
    "to Ghana and served as Chief of Protocol of the United States. The Hague is a city she visited.\n\n"
    "It is a second paragraph that names nothing."
)


def test_pronouns_and_descriptions_opening_a_sentence_refer_back_and_names_do_not() -> None:
    assert refers_back("She was named ambassador to Ghana.")
    assert refers_back("As an adult, she was named ambassador to Ghana.")
    assert refers_back("In March 2013, the band released its first album.")
    assert refers_back("Its members since 2012 are Ellie Rowsell and Joff Oddie.")
    assert not refers_back("The Hague is a city in the Netherlands.")
    assert not refers_back("Shirley Temple Black was an actress.")
    assert not refers_back("Many films were shot there; she acted in them.")


def test_a_sentence_that_refers_back_is_scored_with_the_name_before_it_in_its_paragraph() -> None:
    resolved = resolved_texts(BIOGRAPHY, split_sentences(BIOGRAPHY))
    assert resolved == [
        "Shirley Temple Black was an American actress and dancer.",
        "Shirley Temple Black: As an adult, she was named ambassador to Ghana and served as Chief of "
        "Protocol of the United States.",
        "The Hague is a city she visited.",
        # A new paragraph starts with no subject: nothing before it is carried over.
        "It is a second paragraph that names nothing.",
    ]


def test_the_extractor_quotes_the_sentence_about_the_name_asked_though_it_shares_no_word_with_it() -> None:
    payload = ExtractorPayload(
        source_id=1,
        source_ref="text:1",
        source_title="biography",
        questions=["What did Shirley Temple Black do?"],
        source_text=(
            "Shirley Temple Black was born in Santa Monica in 1928. She served as Chief of Protocol of "
            "the United States. Santa Monica is a beach city in California. The city has a pier."
        ),
    )
    quotes = [fact.quote for fact in extract(payload, embedder=None).facts]
    # Without the reference, "She served as Chief of Protocol" shares no word with the question.
    assert "She served as Chief of Protocol of the United States." in quotes
    assert "The city has a pier." not in quotes


def test_a_source_that_barely_bears_on_the_question_gives_its_best_sentence_and_no_weaker_ones() -> None:
    def quotes(text: str) -> list[str]:
        payload = ExtractorPayload(
            source_id=1,
            source_ref="text:1",
            source_title="notes",
            questions=["How tall is the Eiffel Tower in Paris?"],
            source_text=text,
        )
        return [fact.quote for fact in extract(payload, embedder=None).facts]

    # A near miss: every sentence shares a word or two with the question, none answers it.
    near_miss = quotes(
        "Paris has many museums and parks. The tower of the old church is small. "
        "Gardens line the river banks. Tall buildings are rare in the old town."
    )
    assert len(near_miss) == 1
    # A source that answers gives its answer and what else bears on it nearly as strongly.
    answering = quotes(
        "The Eiffel Tower in Paris is 330 metres tall. Gardens line the river banks. "
        "Its height in Paris made the Eiffel Tower tall among towers. Paris has many museums and parks."
    )
    assert answering == [
        "The Eiffel Tower in Paris is 330 metres tall.",
        "Its height in Paris made the Eiffel Tower tall among towers.",
    ]
