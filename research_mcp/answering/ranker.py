"""One general ranker: how likely a passage is to hold the answer to a question.

Each (question, passage) pair is described by a handful of features that hold in any corpus:

- ``bm25``: the share of the question's IDF mass the passage covers (BM25 saturation and length
  normalisation, IDF over the document's passages; the passage's headings and term count as its
  words), and ``bm25_gap``: how far below the document's best passage it is;
- ``dense``: MiniLM cosine between the question and the passage (with its headings and term), and
  ``dense_gap``: how far below the document's best;
- ``coverage``: the share of the question's distinct terms the passage says at all;
- ``heading``: the share said by its headings and term; ``term``: the passage defines a term the
  question names (an option, a field);
- ``title``: the share said by the document's title (the same for every passage of a document:
  it tells documents apart, not passages);
- ``first``: the passage opens its section; ``definition``, ``listy`` (list item or table row):
  its kind; ``length``: log of its length;
- ``passages``: log of how many passages the document has (the best of a one-paragraph note holds
  the answer far more often than the best of a long manual page).

A logistic model over them gives the probability that the passage holds the answer. Its weights
(``weights.json``) are fitted by ``bench/fit_ranker.py`` on the dev halves of every evaluation set
together and checked on the held-out halves: first the order of a document's passages (listwise),
then the probability across documents (the document-level features ``title`` and ``passages`` with
that order's score); nothing here names a corpus, a product or a file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from research_mcp.answering.lexicon import Lexicon
from research_mcp.answering.passages import Passage
from research_mcp.answering.terms import terms
from research_mcp.core.contracts import Embedder

__all__ = ["FEATURES", "RankedPassage", "Ranker", "features", "load_ranker"]

FEATURES = (
    "bm25",
    "bm25_gap",
    "dense",
    "dense_gap",
    "coverage",
    "heading",
    "term",
    "title",
    "first",
    "definition",
    "listy",
    "length",
    "passages",
)
#: Passages embedded per question and document: the best by BM25 (the rest take the lowest cosine).
#: MiniLM takes tens of ms of CPU a passage, most of a no-key question's CPU. 20 (refitted) cut a
#: git question's CPU from about 6 s to 4 s but lowered python3-doc's dev selection (0.35 -> 0.29)
#: and HotpotQA's dev supporting recall (0.875 -> 0.828) end to end: 40 stays until a cheaper
#: dense feature holds every set. At 8 or 12 an answer BM25 ranks low was lost as well.
EMBED_LIMIT = 40
#: Characters of a passage its embedding reads (MiniLM reads about 256 word pieces).
EMBED_CHARS = 900
_WEIGHTS = Path(__file__).with_name("weights.json")


@dataclass(frozen=True, slots=True)
class RankedPassage:
    index: int
    probability: float


def passage_label(passage: Passage) -> str:
    """The words a passage stands under: its headings and its term."""
    return " ".join(part for part in (passage.heading.replace(" > ", " "), passage.term) if part)


def features(
    question: str,
    text: str,
    title: str,
    passages: Sequence[Passage],
    embedder: Embedder | None,
    *,
    lexicon: Lexicon | None = None,
    vectors: dict[int, np.ndarray] | None = None,
) -> np.ndarray:
    """The feature matrix of `passages` for `question`, one row per passage (columns: FEATURES)."""
    count = len(passages)
    matrix = np.zeros((count, len(FEATURES)), dtype=np.float64)
    if not count:
        return matrix
    labels = [passage_label(p) for p in passages]
    if lexicon is None:
        lexicon = passage_lexicon(text, passages)
    asked = list(dict.fromkeys(terms(question)))
    bm25 = lexicon.coverages(asked)
    dense = _dense(question, text, passages, labels, bm25, embedder, vectors)
    title_terms = set(terms(title))
    question_lower = question.lower()
    previous_heading = None
    for row, passage in enumerate(passages):
        words = lexicon.words(row)
        label_terms = set(terms(labels[row]))
        matrix[row, 0] = bm25[row]
        matrix[row, 2] = dense[row]
        if asked:
            matrix[row, 4] = sum(term in words for term in asked) / len(asked)
            matrix[row, 5] = sum(term in label_terms for term in asked) / len(asked)
            matrix[row, 7] = sum(term in title_terms for term in asked) / len(asked)
        term = passage.term.strip()
        matrix[row, 6] = float(
            bool(term) and passage.kind == "definition" and _names_term(term, question_lower, asked)
        )
        matrix[row, 8] = float(passage.heading != previous_heading)
        previous_heading = passage.heading
        matrix[row, 9] = float(passage.kind == "definition")
        matrix[row, 10] = float(passage.kind in ("list_item", "table_row"))
        matrix[row, 11] = math.log1p((passage.end - passage.start) / 200)
    matrix[:, 12] = math.log1p(count)
    matrix[:, 1] = bm25 - bm25.max()
    matrix[:, 3] = dense - dense.max()
    return matrix


def passage_lexicon(text: str, passages: Sequence[Passage]) -> Lexicon:
    return Lexicon([terms(f"{passage_label(p)} {text[p.start : p.end]}") for p in passages])


def _names_term(term: str, question_lower: str, asked: list[str]) -> bool:
    """The question names the defined term: verbatim ("--soft"), or every word of it."""
    words = term.replace(",", " ").replace("=", " ").split()
    first = words[0] if words else ""
    if len(first) >= 2 and first.lower() in question_lower:
        return True
    term_words = terms(term)
    return bool(term_words) and all(word in asked for word in term_words)


def _dense(
    question: str,
    text: str,
    passages: Sequence[Passage],
    labels: list[str],
    bm25: np.ndarray,
    embedder: Embedder | None,
    vectors: dict[int, np.ndarray] | None,
) -> np.ndarray:
    count = len(passages)
    if embedder is None:
        return np.zeros(count)
    shortlist = sorted(sorted(range(count), key=lambda i: (-bm25[i], i))[:EMBED_LIMIT])
    cache = vectors if vectors is not None else {}
    missing = [i for i in shortlist if i not in cache]
    if missing:
        texts = [
            f"{labels[i]}: {text[passages[i].start : passages[i].end][:EMBED_CHARS]}".strip(": ")
            for i in missing
        ]
        for index, vector in zip(missing, embedder.embed(texts), strict=True):
            cache[index] = vector.astype(np.float64)
    query = embedder.embed([question])[0].astype(np.float64)
    cosines = np.array([cache[i] @ query for i in shortlist])
    dense = np.full(count, float(cosines.min()) if len(cosines) else 0.0)
    dense[shortlist] = cosines
    return dense


#: A document's only passage has no rival: its margin is this (a rival's is a difference of scores).
LONE_MARGIN = 3.0


def margins(order: np.ndarray) -> np.ndarray:
    """Each passage's order score less the best of the document's other passages' (capped at LONE_MARGIN)."""
    if len(order) < 2:
        return np.full(len(order), LONE_MARGIN)
    top, second = np.sort(order)[-1], np.sort(order)[-2]
    rivals = np.where(order >= top, second, top)
    return np.minimum(order - rivals, LONE_MARGIN)


class Ranker:
    """A logistic model over FEATURES: how a document's passages are ordered (`order` weights), and
    the probability that one holds the answer: the features' `weights`, its `margin` over the
    document's next best passage, and a bias (each feature standardised by its mean and scale)."""

    def __init__(
        self,
        weights: Sequence[float],
        bias: float,
        mean: Sequence[float],
        scale: Sequence[float],
        order: Sequence[float] | None = None,
        margin: float = 0.0,
    ):
        self.weights = np.asarray(weights, dtype=np.float64)
        self.bias = float(bias)
        self.mean = np.asarray(mean, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.order = np.asarray(order if order is not None else weights, dtype=np.float64)
        self.margin = float(margin)

    def probabilities(self, matrix: np.ndarray) -> np.ndarray:
        """One document's passages' probabilities of holding the answer."""
        if not len(matrix):
            return np.zeros(0)
        z = (matrix - self.mean) / self.scale
        logits = z @ self.weights + self.margin * margins(z @ self.order) + self.bias
        return np.round(1 / (1 + np.exp(-logits)), 4)


def load_ranker(path: Path = _WEIGHTS) -> Ranker:
    data = json.loads(path.read_text())
    if list(data["features"]) != list(FEATURES):
        raise ValueError(f"{path.name} was fitted on other features: refit with bench/fit_ranker.py")
    return Ranker(
        data["weights"], data["bias"], data["mean"], data["scale"], data.get("order"), data.get("margin", 0.0)
    )
