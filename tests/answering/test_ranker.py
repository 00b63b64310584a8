"""The ranker's passages on real excerpts the repository ships (tests/fixtures/realdocs): the passage
holding a question's answer comes first, with and without the embedding model, and its features say
why (a defined term the question names, its heading)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from research_mcp.answering.passages import split_passages
from research_mcp.answering.ranker import FEATURES, features, load_ranker
from research_mcp.core.contracts import Embedder
from research_mcp.llm.embeddings import default_embedder

REALDOCS = Path(__file__).resolve().parents[1] / "fixtures" / "realdocs"
RANKER = load_ranker()

CASES = [
    ("fstab.5.txt", "Which program reads the fifth field to decide what to back up?", "used by dump(8)"),
    ("Apache-2.0", "Does the Apache licence give me a patent licence?", "Grant of Patent License"),
    ("hosts.5.txt", "Which character starts a comment in the hosts file?", "is a comment, and is ignored"),
]


@pytest.fixture(scope="module", params=["lexical", "lexical+minilm"])
def embedder(request: pytest.FixtureRequest) -> Embedder | None:
    return default_embedder() if request.param == "lexical+minilm" else None


@pytest.mark.parametrize(("name", "question", "answer"), CASES)
def test_the_passage_holding_the_answer_ranks_first(
    embedder: Embedder | None, name: str, question: str, answer: str
) -> None:
    text = (REALDOCS / name).read_text(encoding="utf-8")
    passages = split_passages(text)
    probabilities = RANKER.probabilities(features(question, text, name, passages, embedder))
    top = passages[int(np.argmax(probabilities))]
    assert " ".join(answer.split()) in " ".join(text[top.start : top.end].split())


def test_a_defined_term_the_question_names_is_a_feature_of_its_passage() -> None:
    text = "# OPTIONS\n\n--soft\n    Does not touch the index file or the working tree at all.\n\n--hard\n    Resets the index and working tree.\n"
    passages = split_passages(text)
    matrix = features("What does --soft do?", text, "git-reset", passages, None)
    term = FEATURES.index("term")
    heading = FEATURES.index("heading")
    assert [p.term for p in passages] == ["--soft", "--hard"]
    assert matrix[:, term].tolist() == [1.0, 0.0]
    assert matrix[:, heading].tolist() == [1.0, 0.0]  # its term says what is asked; "OPTIONS" does not
    probabilities = RANKER.probabilities(matrix)
    assert probabilities[0] > probabilities[1]
