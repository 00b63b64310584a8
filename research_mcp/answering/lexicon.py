"""BM25 statistics of one collection of texts (a document's passages, a list of search results).

Lexical relevance is the share of a query's IDF mass that a text covers, with BM25 term-frequency
saturation and length normalisation (Anserini's k1 = 0.9, b = 0.4); IDF comes from the collection
being ranked, and a query term the collection never uses keeps the highest IDF, so missing key terms
cost the most. A matched term earns its full IDF at average length and frequency one, less in a long
text, never more than its IDF. Terms are research_mcp.answering.terms'.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["Lexicon"]

K1 = 0.9
B = 0.4


class Lexicon:
    """BM25 statistics of a collection; `flat` weighs every term alike (search results share a topic)."""

    def __init__(self, documents: Sequence[Sequence[str]], *, flat: bool = False) -> None:
        self.flat = flat
        self.documents = [Counter(document) for document in documents]
        self.lengths = [sum(counts.values()) for counts in self.documents]
        self.size = len(self.documents)
        self.average_length = (sum(self.lengths) / self.size) if self.size else 0.0
        self.document_frequency: Counter[str] = Counter()
        for counts in self.documents:
            self.document_frequency.update(counts.keys())

    def words(self, index: int) -> Counter[str]:
        return self.documents[index]

    def idf(self, term: str) -> float:
        if self.flat:
            return 1.0
        frequency = self.document_frequency.get(term, 0)
        return math.log(1 + (self.size - frequency + 0.5) / (frequency + 0.5))

    def coverage(self, query: Sequence[str], index: int) -> float:
        """The share of the query's IDF mass that document `index` covers, 0..1."""
        unique = list(dict.fromkeys(query))
        if not unique:
            return 0.0
        counts = self.documents[index]
        norm = 1 - B + B * (self.lengths[index] / self.average_length if self.average_length else 1.0)
        covered = total = 0.0
        for term in unique:
            weight = self.idf(term)
            total += weight
            frequency = counts.get(term, 0)
            if frequency:
                covered += weight * min(1.0, frequency * (K1 + 1) / (frequency + K1 * norm))
        return covered / total if total else 0.0

    def coverages(self, query: Sequence[str]) -> np.ndarray:
        return np.array([self.coverage(query, index) for index in range(self.size)], dtype=np.float64)

    def tfidf(self, indexes: Sequence[int]) -> np.ndarray:
        """Unit TF-IDF rows of the documents at `indexes`, for cosine similarity between them."""
        rows = [self.documents[index] for index in indexes]
        vocabulary = {
            term: column for column, term in enumerate(sorted({t for counts in rows for t in counts}))
        }
        matrix = np.zeros((len(rows), max(1, len(vocabulary))), dtype=np.float64)
        for row, counts in enumerate(rows):
            for term, frequency in counts.items():
                matrix[row, vocabulary[term]] = (1 + math.log(frequency)) * self.idf(term)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.maximum(norms, 1e-12)
