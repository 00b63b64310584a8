"""The knowledge base: what research learned once, kept for every later run.

SQLite (the :class:`Store`) holds every fact and every citation; the :class:`KnowledgeIndex` holds
the vectors of the verified canonical facts and can be rebuilt from SQLite (:meth:`reindex_facts`).
This module joins the two for what the roles need:

- **recording** an extraction's facts: stored (and committed) first, then each verified fact is
  compared with the known ones; a near-duplicate of a known fact from another source is merged into
  it (its row stays, pointing at the canonical fact; its citation moves there; the canonical fact's
  ``corroborations`` becomes the number of distinct sources citing it); a fact repeating a quote its
  source already gave (the source read again) joins the fact holding that quote; the others are indexed.
  An index failure is logged and never loses a fact.
- **prior findings**: known, verified, fresh facts close in meaning to a leaf's questions.
- **reuse**: a role's output kept under a key of everything that shapes it (``roles.base.cache_key``).

Thresholds are cosine similarities of all-MiniLM-L6-v2 vectors; ``python -m bench.knowledge``
prints the probes behind them:

- ``DEDUP_THRESHOLD = 0.95``. Close rewordings of one claim score 0.98-0.99; looser paraphrases
  score 0.89-0.94, the same band as distinct claims on one subject ("tallest in the world / in
  Europe until 1930": 0.935; "offshore ... 40 percent / onshore ... 30 percent": 0.90). A false
  merge hides a distinct claim and cites a source for what it does not say; a missed merge only
  leaves a duplicate line. So the threshold sits above that band, and two guards catch what
  embeddings blur even above it: different numbers ("1889" / "1890": 0.955) and a negation on one
  side ("is safe" / "is not safe": 0.91) never merge.
- ``PRIOR_MIN_SCORE = 0.55``. A question against a fact answering it scores 0.58-0.73 in the
  probes; against facts that do not answer it, at most ~0.5.
- ``INSIGHT_MIN_SCORE = 0.6``. A question against a follow-up question that rewords it with other
  words scores 0.71-0.80, against a gap a source names in other words 0.51-0.62; against what
  another question on the same subject left open, at most 0.46 (``python -m bench.knowledge``).
  Insights are matched by their shared terms as well (``runs/prior.py``): either one suffices.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Collection, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from research_mcp.core.callers import may_lend
from research_mcp.core.citations import same_claim
from research_mcp.core.contracts import Fact
from research_mcp.core.errors import ResearchError
from research_mcp.storage.models import KnownFact
from research_mcp.storage.outputs import CachedOutput
from research_mcp.storage.store import PrunedRun, Store
from research_mcp.storage.vectors import KnowledgeIndex

__all__ = [
    "DEDUP_THRESHOLD",
    "INSIGHT_MIN_SCORE",
    "PRIOR_MIN_SCORE",
    "CachedOutput",
    "KnowledgeBase",
]

logger = logging.getLogger(__name__)

#: Cosine at or above which a new fact from another source is the same claim as a known one.
DEDUP_THRESHOLD = 0.95
#: Cosine at or above which a known fact bears on a question (prior findings, known_facts).
PRIOR_MIN_SCORE = 0.55
#: Cosine at or above which what an earlier source left open (an insight) bears on a question.
INSIGHT_MIN_SCORE = 0.6
#: Insights given a vector per look-up, the newest first; the others stay matched by terms till later.
INSIGHT_BACKFILL = 256
#: Prior findings given to one leaf's synthesizer, best first.
PRIOR_LIMIT = 20
#: Known facts counted for plan_research.
KNOWN_LIMIT = 200
#: Nearest known facts checked as merge targets for a new fact.
MERGE_CANDIDATES = 5
REINDEX_BATCH = 512

# What an index or embedder failure can raise, beside the Qdrant errors the index absorbs itself.
_INDEX_FAILURES = (ResearchError, OSError, RuntimeError, ValueError, sqlite3.Error)


class KnowledgeBase:
    """Facts recorded, merged, found again and reused; the index may be missing or unavailable."""

    def __init__(
        self, store: Store, index: KnowledgeIndex | None, *, web_max_age: timedelta = timedelta(days=7)
    ) -> None:
        self.store = store
        self.index = index
        self.web_max_age = web_max_age
        self._merging = threading.Lock()  # one fact at a time is compared with the known ones
        #: Facts were stored but could not be indexed in this process: the index needs healing.
        self.dirty = False

    @property
    def available(self) -> bool:
        return self.index is not None and self.index.available

    def warm_up(self) -> None:
        """Load the embedding model now (blocking, ~0.3 s), so the first fact does not wait for it."""
        if self.available:
            assert self.index is not None
            try:
                self.index.embedder.embed(["warm up"])
            except _INDEX_FAILURES:
                logger.exception("the embedding model could not be loaded; facts are kept but not indexed")

    # --- recording facts -----------------------------------------------------------------------

    def record_facts(self, run_id: str | None, handoff_id: str, facts: list[Fact]) -> list[int]:
        """Store one handoff's facts (committed before anything else), then merge or index them."""
        ids = self.store.add_facts(run_id, handoff_id, facts)
        self.merge_or_index(ids)
        return ids

    def merge_or_index(self, fact_ids: Sequence[int]) -> bool:
        """For each stored verified fact: merge it into a known one it duplicates, or index it.

        Blocking (it embeds); thread-safe. Whether the facts reached the index: when the index is
        unavailable or fails, the facts stay in SQLite, unmerged, the failure is logged and the index
        is marked :attr:`dirty`; healing (:func:`research_mcp.storage.healing.heal`, run by the server
        in the background) or `research-mcp reindex` indexes them later.
        """
        if not fact_ids:
            return True
        if not self.available:
            self.dirty = True
            return False
        try:
            rows = self.store.known_facts(fact_ids)
            if not rows:
                return True
            assert self.index is not None
            # Embedding is the slow part and needs no lock; searching and merging do, so that two
            # extractions stating one claim at once cannot both index it as new.
            vectors = self.index.embedder.embed([row.statement for row in rows])
            with self._merging:
                self._merge_or_index(rows, vectors)
        except _INDEX_FAILURES:
            logger.exception(
                "facts %s are stored but not indexed; the server heals the index in the background, "
                "`research-mcp reindex` rebuilds it at once",
                fact_ids,
            )
            self.dirty = True
            return False
        if not self.available:  # Qdrant stopped answering during the call (it logged why)
            self.dirty = True
            return False
        return True

    def _merge_or_index(self, rows: list[KnownFact], vectors: Any) -> None:
        assert self.index is not None
        # Merged meanwhile (healing and a live extraction may both hold one fact): not indexed again.
        still_known = {row.id for row in self.store.known_facts([row.id for row in rows])}
        unique = []
        for row, vector in zip(rows, vectors, strict=True):
            if row.id not in still_known:
                continue
            # A repeat of a quote its source gave before joins the fact holding it, whichever source's
            # fact became canonical (parallel extractions finish in any order): the same facts every run.
            target = self.store.repeat_of(row.id) or self._duplicate_of(row, vector)
            if target is None:
                unique.append((row.id, vector, _payload(row)))
            else:
                self.store.merge_fact(row.id, target)
        self.index.add_vectors("facts", unique)

    def _duplicate_of(self, row: KnownFact, vector: Any) -> int | None:
        """The canonical verified fact from another source that states the same claim, if any."""
        assert self.index is not None
        hits = self.index.search_vector("facts", vector, limit=MERGE_CANDIDATES, min_score=DEDUP_THRESHOLD)
        known = {candidate.id: candidate for candidate in self.store.known_facts([hit.id for hit in hits])}
        for hit in hits:
            candidate = known.get(hit.id)
            if (
                candidate is not None
                and candidate.ref != row.ref
                and same_claim(candidate.statement, row.statement)
            ):
                return candidate.id
        return None

    def relink(self, handoff_id: str, fact_ids: Sequence[int]) -> None:
        """A reused extraction found these facts again: each gets a citation from the new handoff."""
        self.store.relink_facts(handoff_id, fact_ids)

    # --- prior findings ------------------------------------------------------------------------

    def prior_findings(
        self,
        questions: Sequence[str],
        *,
        own: Collection[str] = (),
        others: Collection[str] = (),
        limit: int = PRIOR_LIMIT,
        caller: str | None = None,
    ) -> list[Fact]:
        """Known verified fresh facts bearing on these questions, best first; those `caller` may be
        lent (research_mcp/core/callers.py: from a source every caller reads, or found by their research).

        A fact found only by extractions asking ``others`` (questions other leaves of the same run
        ask) and none of ``own`` is left out: it reaches the parent synthesis through those leaves.
        """
        scores = self._scores(questions, limit=limit * 3)
        usable = self._fresh(scores, caller)
        if others:
            asked = self.store.questions_asking(usable)
            usable = [
                fid
                for fid in usable
                if not (asked.get(fid, set()) & set(others)) or asked.get(fid, set()) & set(own)
            ]
        best = sorted(usable, key=lambda fid: (-scores[fid], fid))[:limit]
        facts = {fact.id: fact for fact in self.store.get_facts(best)}
        return [facts[fid] for fid in best if fid in facts]

    def count_known(self, text: str, caller: str | None = None) -> int:
        """How many known verified fresh facts bear on this text that `caller` may be lent (0 without
        the index)."""
        return len(self._fresh(self._scores([text], limit=KNOWN_LIMIT), caller))

    def _scores(self, texts: Sequence[str], *, limit: int) -> dict[int, float]:
        texts = [text for text in texts if text.strip()]
        if not self.available or not texts:
            return {}
        assert self.index is not None
        best: dict[int, float] = {}
        try:
            vectors = self.index.embedder.embed(texts)
        except _INDEX_FAILURES:
            logger.exception("known facts could not be looked up; going on without them")
            return {}
        for vector in vectors:
            for hit in self.index.search_vector("facts", vector, limit=limit, min_score=PRIOR_MIN_SCORE):
                best[hit.id] = max(best.get(hit.id, -1.0), hit.score)
        return best

    def _fresh(self, fact_ids: Collection[int], caller: str | None = None) -> list[int]:
        """Those still canonical and verified whose source is not a web page read too long ago, and
        that `caller` may be lent."""
        cutoff = datetime.now(UTC) - self.web_max_age
        return [
            row.id
            for row in self.store.known_facts(sorted(fact_ids))
            if (row.kind != "web" or datetime.fromisoformat(row.fetched_at) >= cutoff)
            and may_lend(row.kind, row.owner, caller)
        ]

    # --- insights ------------------------------------------------------------------------------

    def insight_scores(
        self, questions: Sequence[str], insights: Sequence[tuple[int, str]]
    ) -> dict[int, float]:
        """Of these insights (id, what it says), those close in meaning to one of the questions, with
        their best cosine (at least INSIGHT_MIN_SCORE). An insight without a vector (one kept before
        insights had them, or lost in a crash) is given one first, at most INSIGHT_BACKFILL a call;
        empty without the index. Blocking (it embeds)."""
        questions = [question for question in questions if question.strip()]
        if not self.available or not questions or not insights:
            return {}
        assert self.index is not None
        wanted = {insight_id for insight_id, _ in insights}
        best: dict[int, float] = {}
        try:
            held = self.index.held("insights", sorted(wanted))
            unheld = [(i, text) for i, text in insights if i not in held][:INSIGHT_BACKFILL]
            self.index.add("insights", [(i, text, {}) for i, text in unheld])
            for vector in self.index.embedder.embed(questions):
                hits = self.index.search_vector(
                    "insights", vector, limit=len(wanted) + 100, min_score=INSIGHT_MIN_SCORE
                )
                for hit in hits:
                    if hit.id in wanted:
                        best[hit.id] = max(best.get(hit.id, -1.0), hit.score)
        except _INDEX_FAILURES:
            logger.exception("insights could not be matched by meaning; matching them by terms only")
            return {}
        return best

    # --- reuse ---------------------------------------------------------------------------------

    def cached_output(self, key: str) -> CachedOutput | None:
        return self.store.cached_output(key)

    def remember_output(self, key: str, role: str, handoff_id: str) -> None:
        self.store.remember_output(key, role, handoff_id)

    # --- retention ------------------------------------------------------------------------------

    def prune_run(self, run_id: str) -> PrunedRun:
        """Delete a finished run and what only it holds (``retention.py``), and the vectors of the
        facts deleted; when the index cannot be written now, it is marked :attr:`dirty` and healing
        deletes them (they are points no fact stands behind)."""
        pruned = self.store.prune_run(run_id)
        if not pruned.facts:
            return pruned
        if not self.available:
            self.dirty = True
            return pruned
        assert self.index is not None
        try:
            self.index.delete("facts", pruned.facts)
        except _INDEX_FAILURES:
            logger.exception("the vectors of run %s's facts are left for healing to delete", run_id)
            self.dirty = True
        return pruned

    # --- rebuilding the index ------------------------------------------------------------------

    def reindex_facts(self) -> int:
        """Drop the facts collection and index every verified canonical fact again from SQLite."""
        if not self.available:
            return 0
        assert self.index is not None
        self.index.reset("facts")
        last, indexed = 0, 0
        while True:
            ids = self.store.known_fact_ids(after=last, limit=REINDEX_BATCH)
            if not ids:
                return indexed
            rows = self.store.known_facts(ids)
            self.index.add("facts", [(row.id, row.statement, _payload(row)) for row in rows])
            indexed += len(rows)
            last = ids[-1]


def _payload(row: KnownFact) -> dict[str, Any]:
    return {
        "run_id": row.run_id,
        "source_id": row.source_id,
        "question": row.question,
        "source_kind": row.kind,
    }
