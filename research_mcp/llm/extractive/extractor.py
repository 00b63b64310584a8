"""The extractor without a model: the source's best passages for each question, quoted verbatim.

The source is split into the passages a reader would quote (research_mcp.answering.passages: a
definition with its term, a heading's paragraph, a list item, a table row), each passage is ranked
for each question by the general ranker (research_mcp.answering.ranker: BM25, MiniLM similarity and
structure, weights fitted across several corpora), and up to k passages per question become facts:
the quote is the passage sliced from the source (found by construction), the statement the same
text, the confidence the ranker's probability that the passage holds the answer. A changelog is read
for questions about history only (when, which version, what changed). Nothing here decides whether
a passage answers: the host's model reads them.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from research_mcp.answering.confidence import ANSWERED, level_of
from research_mcp.answering.lexicon import Lexicon
from research_mcp.answering.passages import Passage, document_kind, split_passages
from research_mcp.answering.ranker import FEATURES, features, load_ranker, passage_lexicon
from research_mcp.answering.terms import clip, terms
from research_mcp.core.contracts import (
    Answer,
    ClaimedFact,
    Confidence,
    Embedder,
    ExtractorOutput,
    FollowUpQuestion,
    LinkedSource,
)
from research_mcp.core.role_inputs import ExtractorPayload

__all__ = ["NO_ANSWER", "extract"]

NO_ANSWER = "The source does not answer this."
MAX_FACTS = 40
K_BY_PRIORITY = {1: 4, 2: 3}
DEFAULT_K = 3
#: A passage past the first is quoted when its probability is at least this share of the best one's.
RELATIVE = 0.1
#: Passages whose probability is under this are never quoted (a source that does not bear on the question).
FLOOR = 0.02
#: A changelog's passages count this much for a question that does not ask about history.
CHANGELOG_WEIGHT = 0.25
_HISTORY = re.compile(
    r"\b(?:when|since|version|versions|release[sd]?|changed?|changes|added|introduced|removed|deprecated|history|new in)\b",
    re.IGNORECASE,
)
_URL = re.compile(r"\bhttps?://[^\s<>\"'\]\[)(]+", re.IGNORECASE)
_SPACE = re.compile(r"\s+")
_RANKER = load_ranker()
_COVERAGE = FEATURES.index("coverage")


class _Prepared(NamedTuple):
    passages: list[Passage]
    lexicon: Lexicon
    vectors: dict[int, np.ndarray]
    changelog: bool


#: Sources kept prepared for their next extraction (a phase's iteration, another leaf): up to this
#: many characters of source text in all.
PREPARED_CHARS = 2_000_000
_prepared_cache: OrderedDict[str, tuple[int, _Prepared]] = OrderedDict()
_prepared_lock = threading.Lock()


def _prepared(text: str, title: str) -> _Prepared:
    key = hashlib.blake2b(f"{title}\x00{text}".encode(), digest_size=16).hexdigest()
    with _prepared_lock:
        if key in _prepared_cache:
            _prepared_cache.move_to_end(key)
            return _prepared_cache[key][1]
    passages = split_passages(text)
    prepared = _Prepared(
        passages, passage_lexicon(text, passages), {}, document_kind(text, title) == "changelog"
    )
    if len(text) <= PREPARED_CHARS // 2:
        with _prepared_lock:
            _prepared_cache[key] = (len(text), prepared)
            while sum(size for size, _ in _prepared_cache.values()) > PREPARED_CHARS:
                _prepared_cache.popitem(last=False)
    return prepared


def extract(payload: ExtractorPayload, embedder: Embedder | None) -> ExtractorOutput:
    questions = (payload.questions or (payload.task_spec.questions if payload.task_spec else []))[:10]
    text = payload.source_text
    prepared = _prepared(text, payload.source_title)
    passages = prepared.passages
    if not questions or not passages:
        reason = "No questions were given." if not questions else "The source has no readable passages."
        return ExtractorOutput(
            answers=[Answer(question=clip(q, 500), answer=NO_ANSWER) for q in questions],
            confidence=Confidence(level="low", reasoning=reason),
        )
    probabilities = [_probabilities(question, payload, prepared, embedder) for question in questions]
    k = K_BY_PRIORITY.get(payload.task_spec.priority, DEFAULT_K) if payload.task_spec else DEFAULT_K
    per_question = max(1, min(k, MAX_FACTS // len(questions)))
    chosen = [_choose(p, passages, per_question) for p in probabilities]

    home: dict[int, int] = {}  # each passage is one fact, under the question it ranks best for
    for question_index, indexes in enumerate(chosen):
        for index in indexes:
            current = home.get(index)
            if current is None or probabilities[question_index][index] > probabilities[current][index]:
                home[index] = question_index
    order = sorted(home, key=lambda index: (home[index], chosen[home[index]].index(index)))
    quotes = {index: text[passages[index].start : passages[index].end] for index in order}
    facts = [
        ClaimedFact(
            statement=clip(quotes[index], 1000),
            quote=quotes[index],
            question_index=home[index],
            confidence=float(probabilities[home[index]][index]),
        )
        for index in order
    ]
    fact_of = {index: position for position, index in enumerate(order)}
    best = [float(p.max()) for p in probabilities]
    answers = [
        Answer(
            question=clip(question, 500),
            answer=clip(quotes[chosen[i][0]], 2000) if chosen[i] and best[i] >= ANSWERED else NO_ANSWER,
            fact_indexes=[fact_of[index] for index in chosen[i] if index in fact_of],
        )
        for i, question in enumerate(questions)
    ]
    return ExtractorOutput(
        facts=facts,
        answers=answers,
        confidence=_confidence(best),
        follow_up_questions=_follow_ups(questions, best),
        linked_candidate_sources=_linked_sources(payload, [*(quotes[i] for i in order), text]),
    )


def _probabilities(
    question: str, payload: ExtractorPayload, prepared: _Prepared, embedder: Embedder | None
) -> np.ndarray:
    matrix = features(
        question,
        payload.source_text,
        payload.source_title,
        prepared.passages,
        embedder,
        lexicon=prepared.lexicon,
        vectors=prepared.vectors,
    )
    # A passage that says none of the question's terms has only the ranker's prior for its shape
    # (a short note's long paragraph): never quoted. In the fit's rows, 50 of 51 such passages
    # among a document's best three held no answer.
    probabilities = _RANKER.probabilities(matrix)
    if terms(question):
        probabilities = np.where(matrix[:, _COVERAGE] > 0, probabilities, 0.0)
    if prepared.changelog and not _HISTORY.search(question):
        probabilities = np.round(probabilities * CHANGELOG_WEIGHT, 4)
    return probabilities


def _choose(probabilities: np.ndarray, passages: list[Passage], k: int) -> list[int]:
    """Up to k passages, the most probable first; a passage inside or around a chosen one is skipped."""
    order = sorted(range(len(passages)), key=lambda i: (-probabilities[i], i))
    if not order or probabilities[order[0]] < FLOOR:
        return []
    top = float(probabilities[order[0]])
    chosen: list[int] = []
    for index in order:
        if len(chosen) == k or probabilities[index] < max(FLOOR, RELATIVE * top):
            break
        span = passages[index]
        if any(span.start < passages[o].end and passages[o].start < span.end for o in chosen):
            continue
        chosen.append(index)
    return chosen


def _confidence(best: list[float]) -> Confidence:
    levels = [level_of(p) for p in best]
    answered = sum(level != "low" for level in levels)
    level = min(levels, key=["low", "medium", "high"].index)
    return Confidence(
        level=level,
        reasoning=clip(
            f"{answered} of {len(best)} questions have a passage likely to hold the answer "
            f"(best probabilities {', '.join(f'{p:.2f}' for p in best)}). Passages are ranked, not read: "
            "no language model.",
            1000,
        ),
    )


def _follow_ups(questions: list[str], best: list[float]) -> list[FollowUpQuestion]:
    return [
        FollowUpQuestion(
            question=clip(questions[index], 500),
            confidence=round(1 - p, 2),
            rationale="No passage of this source is likely to answer it; look in another source.",
        )
        for index, p in sorted(enumerate(best), key=lambda item: item[1])
        if p < ANSWERED
    ][:5]


def _linked_sources(payload: ExtractorPayload, quotes: list[str]) -> list[LinkedSource]:
    """Web addresses the source gives, those of its quoted passages first, when the task asks to
    follow leads (only addresses written in the source: none is composed from its text)."""
    if not (payload.task_spec and payload.task_spec.discovery_intense):
        return []
    found: dict[str, LinkedSource] = {}
    for quote in quotes:
        for match in _URL.finditer(quote):
            ref = match.group().rstrip(".,;:!?")
            if ref not in found and ref != payload.source_ref:
                found[ref] = LinkedSource(
                    ref=ref[:2000], context=clip(_SPACE.sub(" ", quote), 500), priority=2
                )
    return list(found.values())[:8]
