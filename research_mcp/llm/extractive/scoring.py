"""Relevance without a language model: BM25 term coverage and embedding cosine, combined.

Lexical relevance is research_mcp.answering.lexicon's share of a query's IDF mass a text covers. Semantic relevance is the embedding cosine mapped onto 0..1 (cosine
0.2 or less is 0, 0.7 or more is 1: all-MiniLM-L6-v2 gives unrelated sentences about 0.1-0.3 and
answering sentences about 0.4-0.75). With an embedder the two are averaged; without one, lexical
relevance stands alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from research_mcp.answering.lexicon import Lexicon
from research_mcp.answering.terms import terms
from research_mcp.core.contracts import Embedder

__all__ = ["Lexicon", "Relevance", "select_diverse", "semantic_scale"]

LEXICAL_WEIGHT = 0.5
COSINE_FLOOR = 0.2
COSINE_CEILING = 0.7


def semantic_scale(cosine: np.ndarray) -> np.ndarray:
    """Embedding cosine mapped onto 0..1 between COSINE_FLOOR and COSINE_CEILING."""
    return np.clip((cosine - COSINE_FLOOR) / (COSINE_CEILING - COSINE_FLOOR), 0.0, 1.0)


class Relevance:
    """Scores of a collection of texts against queries, and similarity between its texts.

    Embedding costs about 15 ms a sentence on a small CPU, so a collection larger than
    `embed_limit` is embedded only where it matters: each query's `embed_limit` best texts by
    lexical relevance (the rest keep lexical relevance alone). Scores are rounded to four decimals
    so that ties break the same way on every run.
    """

    def __init__(
        self, texts: Sequence[str], embedder: Embedder | None, *, embed_limit: int = 256, flat: bool = False
    ) -> None:
        self.texts = list(texts)
        self.embedder = embedder
        self.embed_limit = embed_limit
        self.lexicon = Lexicon([terms(text) for text in self.texts], flat=flat)
        self._vectors: dict[int, np.ndarray] = {}

    def _embedded(self, indexes: Sequence[int]) -> np.ndarray:
        assert self.embedder is not None
        missing = [index for index in indexes if index not in self._vectors]
        if missing:
            for index, vector in zip(
                missing, self.embedder.embed([self.texts[i] for i in missing]), strict=True
            ):
                self._vectors[index] = vector.astype(np.float64)
        return np.array([self._vectors[index] for index in indexes]).reshape(len(indexes), -1)

    def lexical(self, query: str) -> np.ndarray:
        return self.lexicon.coverages(terms(query))

    def scores(self, query: str) -> np.ndarray:
        """Combined relevance of every text to `query`, 0..1."""
        lexical = self.lexical(query)
        if self.embedder is None or not self.texts:
            return np.round(lexical, 4)
        if len(self.texts) <= self.embed_limit:
            shortlist = list(range(len(self.texts)))
        else:
            order = sorted(range(len(self.texts)), key=lambda index: (-lexical[index], index))
            shortlist = sorted(order[: self.embed_limit])
        query_vector = self.embedder.embed([query])[0].astype(np.float64)
        semantic = np.zeros(len(self.texts), dtype=np.float64)
        semantic[shortlist] = semantic_scale(self._embedded(shortlist) @ query_vector)
        return np.round(LEXICAL_WEIGHT * lexical + (1 - LEXICAL_WEIGHT) * semantic, 4)

    def similarity(self, indexes: Sequence[int]) -> np.ndarray:
        """Pairwise similarity of the texts at `indexes`, 0..1: embedding cosine, else TF-IDF cosine."""
        rows = list(indexes)
        chosen = self._embedded(rows) if self.embedder is not None else self.lexicon.tfidf(rows)
        return np.round(np.clip(chosen @ chosen.T, 0.0, 1.0), 4)


def select_diverse(
    relevance: Relevance,
    scores: np.ndarray,
    *,
    k: int,
    threshold: float,
    balance: float = 0.7,
    duplicate: float = 0.9,
    pool: int = 30,
) -> list[int]:
    """Up to `k` indexes by maximal marginal relevance: `balance`·score − (1 − balance)·(similarity to
    the nearest already chosen), among the `pool` best texts scoring at least `threshold`; a text at
    least `duplicate`-similar to a chosen one is never chosen."""
    eligible = [index for index in range(len(scores)) if scores[index] >= threshold]
    candidates = sorted(eligible, key=lambda index: (-scores[index], index))[:pool]
    if not candidates:
        return []
    similarity = relevance.similarity(candidates)
    chosen: list[int] = []  # positions in candidates
    while len(chosen) < k:
        best: tuple[float, int] | None = None
        for position, index in enumerate(candidates):
            if position in chosen:
                continue
            nearest = max((similarity[position, other] for other in chosen), default=0.0)
            if nearest >= duplicate:
                continue
            marginal = round(balance * scores[index] - (1 - balance) * nearest, 4)
            if best is None or marginal > best[0]:
                best = (marginal, position)
        if best is None:
            break
        chosen.append(best[1])
    return [candidates[position] for position in chosen]
