"""A source asked again (a phase iteration, a second hop, another leaf) is prepared once: its
sentences, claims and embeddings are kept, and what it answers is the same as from a fresh read."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_mcp.core.role_inputs import ExtractorPayload
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.extractive import extractor

FSTAB = (Path(__file__).resolve().parents[1] / "fixtures" / "realdocs" / "fstab.5.txt").read_text(
    encoding="utf-8"
)
QUESTIONS = [
    ["What does the sixth field of an fstab line do?"],
    ["What does the first field of an fstab line describe?", "Which options does defaults stand for?"],
]


def payload(questions: list[str], text: str = FSTAB) -> ExtractorPayload:
    return ExtractorPayload(
        source_id=1, source_ref="corpus:1", source_title="fstab(5)", questions=questions, source_text=text
    )


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    extractor._prepared_cache.clear()


@pytest.mark.parametrize("embedded", [True, False])
def test_a_source_asked_again_answers_as_a_fresh_read_does(embedded: bool) -> None:
    embedder = default_embedder() if embedded else None
    fresh = []
    for questions in QUESTIONS:
        extractor._prepared_cache.clear()
        fresh.append(extractor.extract(payload(questions), embedder))
    extractor._prepared_cache.clear()
    again = [extractor.extract(payload(questions), embedder) for questions in QUESTIONS * 2]
    assert again == fresh * 2
    assert len(extractor._prepared_cache) == 1  # one source, prepared once


def test_the_kept_preparations_stay_within_their_character_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extractor, "PREPARED_CHARS", 2 * (len(FSTAB) + 40))
    texts = [f"{FSTAB}\nVariant {number} of the page ends here." for number in range(3)]
    for text in texts:
        extractor.extract(payload(QUESTIONS[0], text), None)
    assert len(extractor._prepared_cache) == 2  # the oldest was let go
    too_long = FSTAB * 3
    extractor.extract(payload(QUESTIONS[0], too_long), None)
    assert len(extractor._prepared_cache) == 2  # a source over half the bound is never kept
