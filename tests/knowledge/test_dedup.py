"""Near-duplicate facts from different sources merge into one canonical fact; other facts stay apart."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from research_mcp.core.citations import same_claim
from research_mcp.llm.embeddings import default_embedder
from research_mcp.storage.knowledge_base import DEDUP_THRESHOLD, KnowledgeBase
from research_mcp.storage.models import Citation
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.knowledge.kb import record, source

COMPLETED = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."
FINISHED = "The Eiffel Tower was finished in 1889 for the Paris World's Fair."
WORLD = "It was the tallest man-made structure in the world until 1930."
EUROPE = "It was the tallest man-made structure in Europe until 1930."


def cosine(a: str, b: str) -> float:
    vectors = default_embedder().embed([a, b])
    return float(vectors[0] @ vectors[1])


@pytest.fixture(params=["memory", "disk"])
def knowledge(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeBase]:
    store = Store(tmp_path / "research.db")
    if request.param == "memory":
        index = KnowledgeIndex.open(location=":memory:", embedder=default_embedder())
    else:
        index = KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=default_embedder())
    with index:
        yield KnowledgeBase(store, index)
    store.close()


def test_two_near_duplicate_facts_from_different_sources_merge_with_both_citations(
    knowledge: KnowledgeBase,
) -> None:
    assert cosine(COMPLETED, FINISHED) >= DEDUP_THRESHOLD
    store = knowledge.store
    guide = source(store, "guide", f"Paris guide. {COMPLETED} More text.")
    history = source(store, "history", f"A history. {FINISHED} Later years.")

    first = record(knowledge, guide, COMPLETED)
    second = record(knowledge, history, FINISHED)

    # Both rows stay (their ids remain citable); the second reads as the first, corroborated.
    assert [fact.id for fact in store.canonical_facts([first, second])] == [first]
    [canonical] = store.canonical_facts([second])
    assert (canonical.statement, canonical.source_id, canonical.corroborations) == (COMPLETED, guide.id, 2)
    at_guide, at_history = guide.text.index(COMPLETED), history.text.index(FINISHED)
    assert store.citations([first])[first] == [
        Citation(source_id=guide.id, quote=COMPLETED, start=at_guide, end=at_guide + len(COMPLETED)),
        Citation(source_id=history.id, quote=FINISHED, start=at_history, end=at_history + len(FINISHED)),
    ]
    assert knowledge.index is not None and knowledge.index.count("facts") == 1


def test_a_fact_just_below_the_threshold_stays_separate(knowledge: KnowledgeBase) -> None:
    similarity = cosine(WORLD, EUROPE)
    assert DEDUP_THRESHOLD - 0.03 <= similarity < DEDUP_THRESHOLD  # a distinct claim, close in wording
    store = knowledge.store

    world = record(knowledge, source(store, "a", f"Tower facts. {WORLD}"), WORLD)
    europe = record(knowledge, source(store, "b", f"Other facts. {EUROPE}"), EUROPE)

    assert [fact.id for fact in store.canonical_facts([world, europe])] == [world, europe]
    assert [fact.corroborations for fact in store.get_facts([world, europe])] == [1, 1]


def test_near_duplicates_with_different_numbers_stay_separate(knowledge: KnowledgeBase) -> None:
    later = COMPLETED.replace("1889", "1890")
    assert cosine(COMPLETED, later) >= DEDUP_THRESHOLD  # what the number guard is for
    store = knowledge.store

    first = record(knowledge, source(store, "a", COMPLETED), COMPLETED)
    second = record(knowledge, source(store, "b", later), later)

    assert [fact.id for fact in store.canonical_facts([first, second])] == [first, second]


def test_the_same_claim_twice_from_one_source_is_not_a_corroboration(knowledge: KnowledgeBase) -> None:
    store = knowledge.store
    page = source(store, "page", f"{COMPLETED} {FINISHED}")

    first = record(knowledge, page, COMPLETED)
    second = record(knowledge, page, FINISHED)

    assert [fact.id for fact in store.canonical_facts([first, second])] == [first, second]


def test_a_third_source_raises_the_count_and_a_repeat_does_not(knowledge: KnowledgeBase) -> None:
    store = knowledge.store
    first = record(knowledge, source(store, "a", COMPLETED), COMPLETED)
    other = source(store, "b", FINISHED)
    record(knowledge, other, FINISHED)
    record(knowledge, other, FINISHED)  # the same source found again
    record(knowledge, source(store, "c", COMPLETED + " Indeed."), COMPLETED)

    assert store.get_facts([first])[0].corroborations == 3
    assert len(store.citations([first])[first]) == 3  # distinct citations; the repeat is the same one


def test_an_unverified_fact_is_neither_merged_nor_indexed(knowledge: KnowledgeBase) -> None:
    store = knowledge.store
    first = record(knowledge, source(store, "a", COMPLETED), COMPLETED)
    unverified = record(knowledge, source(store, "b", "unrelated text here"), FINISHED, verified=False)

    assert [fact.id for fact in store.canonical_facts([unverified])] == [unverified]
    assert store.get_facts([first])[0].corroborations == 1
    assert knowledge.index is not None and knowledge.index.count("facts") == 1


def test_without_an_index_facts_are_stored_and_nothing_merges(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    store = Store(tmp_path / "research.db")
    with KnowledgeIndex.open(
        path=tmp_path / "qdrant", embedder=default_embedder(), idle_release=None
    ) as holder:
        holder.add("facts", [(999, "holds the folder", {})])
        locked_out = KnowledgeBase(
            store, KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=default_embedder(), wait=0)
        )
        first = record(locked_out, source(store, "a", COMPLETED), COMPLETED)
        second = record(locked_out, source(store, "b", FINISHED), FINISHED)
    assert [fact.id for fact in store.canonical_facts([first, second])] == [first, second]
    assert not locked_out.available
    store.close()


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Built in 1889.", "Completed in 1889.", True),
        ("Built in 1889.", "Built in 1890.", False),
        ("Costs 1,000 euros.", "Costs 1000 euros.", True),
        ("The drug is safe for children.", "The drug is not safe for children.", False),
        ("It isn't safe.", "It is not safe.", True),
        ("It was never used.", "It was used.", False),
    ],
)
def test_same_claim_needs_the_same_numbers_and_negation(a: str, b: str, same: bool) -> None:
    assert same_claim(a, b) is same


@pytest.mark.parametrize("first_recorded", ["guide", "history"])
def test_a_source_read_again_joins_the_fact_holding_its_quote_whichever_source_came_first(
    knowledge: KnowledgeBase, first_recorded: str
) -> None:
    """Parallel extractions finish in any order, and a phase iteration (or a resumed run) reads a source
    again: its repeated fact must land on the same canonical fact either way. Before, a repeat from the
    source whose fact happened to become canonical stayed a separate fact, from the other source it merged."""
    store = knowledge.store
    sources = {
        "guide": source(store, "guide", f"Paris guide. {COMPLETED} More text."),
        "history": source(store, "history", f"A history. {COMPLETED} Later years."),
    }
    second = "history" if first_recorded == "guide" else "guide"
    canonical = record(knowledge, sources[first_recorded], COMPLETED)
    record(knowledge, sources[second], COMPLETED)

    again = [record(knowledge, sources[name], COMPLETED) for name in ("guide", "history")]

    assert [fact.id for fact in store.canonical_facts(again)] == [canonical]
    assert store.get_facts([canonical])[0].corroborations == 2


def test_a_fact_found_again_for_another_question_reads_as_found_for_it(knowledge: KnowledgeBase) -> None:
    """A later run re-finds a sentence an earlier run extracted for another question: its synthesis
    is given the known fact, asked and scored as this run found it (the evidence rules count a
    question's own facts), while a scope holding the original keeps the original's question."""
    store = knowledge.store
    readme = source(store, "e2fsprogs/README", "This is the new version (1.47.0) of e2fsprogs. More text.")
    sentence = "This is the new version (1.47.0) of e2fsprogs."
    earlier = record(knowledge, readme, sentence, questions=["In which BSD release did fstab appear?"])
    asked = "Which version of e2fsprogs does its README describe?"
    again = record(knowledge, readme, sentence, questions=[asked], confidence=0.55)

    [found] = store.canonical_facts([again])
    assert (found.id, found.question, found.confidence) == (earlier, asked, 0.55)
    [original] = store.canonical_facts([earlier, again])
    assert (original.id, original.question, original.confidence) == (
        earlier,
        "In which BSD release did fstab appear?",
        0.8,
    )


def test_a_fact_found_again_for_a_later_question_is_read_as_found_for_it_by_a_report_asking_it(
    knowledge: KnowledgeBase,
) -> None:
    # An earlier run stored the line for its question; a later run's extraction found it again (a
    # copy, merged into it) for its own. The later report reads the line as scored for its question
    # even where it is given the canonical id (a lower report's citation, a prior finding).
    store = knowledge.store
    earlier, later = "When was the tower built?", "For which event was the Eiffel Tower completed?"
    guide = source(store, "guide", f"Paris guide. {COMPLETED} More text.")
    history = source(store, "history", f"A history. {FINISHED} Later years.")
    first = record(knowledge, guide, COMPLETED, questions=[earlier], confidence=0.41)
    record(knowledge, history, FINISHED, questions=[later], confidence=0.77)

    [as_stored] = store.canonical_facts([first])
    [for_later] = store.canonical_facts([first], [later])
    [for_earlier] = store.canonical_facts([first], [earlier, later])

    assert (as_stored.question, as_stored.confidence) == (earlier, 0.41)
    assert (for_later.id, for_later.question, for_later.confidence) == (first, later, 0.77)
    assert (for_earlier.question, for_earlier.confidence) == (earlier, 0.41)  # its own question asked


def _page(seed: int) -> str:
    """A page of prose long enough for its copies to be recognised (research_mcp/core/copies.py)."""
    words = [f"word{(seed * 7919 + n * 104729) % 997}" for n in range(400)]
    return " ".join(words)


def test_a_copy_of_a_source_does_not_corroborate_it(knowledge: KnowledgeBase) -> None:
    store = knowledge.store
    page = f"{_page(1)} {COMPLETED} {_page(2)}"
    first = record(knowledge, source(store, "licences/GPL", page), COMPLETED)
    record(knowledge, source(store, "licences/GPL-3", page.replace(COMPLETED, FINISHED)), FINISHED)
    record(knowledge, source(store, "docs/tower.txt", f"{_page(3)} {FINISHED}"), FINISHED)
    record(knowledge, source(store, "docs/tower.html", f"Contents. {_page(3)} {COMPLETED}"), COMPLETED)

    # Four citations, two documents: one copied under another name, one page in two formats.
    assert len(store.citations([first])[first]) == 4
    assert store.get_facts([first])[0].corroborations == 2
