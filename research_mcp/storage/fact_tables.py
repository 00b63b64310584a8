"""Sources, facts and their citations: the SQL of what research read and what it found there.

A fact merged into a near-duplicate keeps its row (its id stays citable) and points at the canonical
fact by `canonical_id`; its citations move to the canonical fact (`merge_fact`). The knowledge base
(`knowledge_base.py`) decides what to merge; these methods only read and write the rows.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from research_mcp.core.callers import LOCAL, may_read
from research_mcp.core.citations import normalize
from research_mcp.core.contracts import Fact, Source
from research_mcp.core.copies import Fingerprint, fingerprint, independent_count, representatives
from research_mcp.core.errors import NotFound
from research_mcp.core.ids import source_label
from research_mcp.storage.database import StoreDatabase, as_json, marks, now
from research_mcp.storage.models import Citation, KnownFact, compress_text, decompress_text

__all__ = ["FactTables"]


class FactTables(StoreDatabase):
    # --- sources -------------------------------------------------------------------------------

    def add_source(
        self,
        *,
        ref: str,
        kind: str,
        title: str,
        text: str,
        content_hash: str,
        metadata: dict[str, Any] | None = None,
    ) -> Source:
        """Store a source's text; the same ref with the same content is stored once."""
        with self.write() as conn:
            # Read again with the same content: the stored copy is as fresh as this read.
            conn.execute(
                "INSERT INTO sources (ref, kind, title, content_hash, text, fetched_at, metadata)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (ref, content_hash) DO UPDATE SET fetched_at = excluded.fetched_at",
                (ref, kind, title, content_hash, compress_text(text), now(), as_json(metadata or {})),
            )
        row = self._one("SELECT * FROM sources WHERE ref = ? AND content_hash = ?", (ref, content_hash))
        assert row is not None
        return _source(row)

    def get_source(self, source_id: int) -> Source:
        row = self._one("SELECT * FROM sources WHERE id = ?", (source_id,))
        if row is None:
            raise NotFound("source", source_label(source_id))
        return _source(row)

    def source_read_by(self, source_id: int, caller: str) -> bool:
        """Whether research of `caller` (a run of theirs, or a handoff they asked for) read the source."""
        row = self._one(
            "SELECT 1 AS found FROM handoffs h LEFT JOIN runs r ON r.id = h.run_id WHERE h.role = 'extractor'"
            " AND json_extract(h.input, '$.source_id') = ? AND COALESCE(r.caller, h.caller) = ? LIMIT 1",
            (source_id, caller),
        )
        return row is not None

    def source_refs(self, source_ids: Collection[int]) -> dict[int, str]:
        """The address of each of these sources, without reading their stored text."""
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = self._all(f"SELECT id, ref FROM sources WHERE id IN ({marks})", ids)
        return {int(row["id"]): str(row["ref"]) for row in rows}

    def source_copies(self, source_ids: Collection[int]) -> dict[int, int]:
        """Each of these sources mapped to the first (lowest id) of them holding the same document
        (research_mcp/core/copies.py: a copy under another name, the same page in another format), or to
        itself: ``len(set(mapping.values()))`` is how many independent sources they are."""
        ids = sorted(set(source_ids))
        if len(ids) < 2:
            return {source_id: source_id for source_id in ids}
        return representatives((source_id, self._fingerprint(source_id)) for source_id in ids)

    def _fingerprint(self, source_id: int) -> Fingerprint:
        """A source's fingerprint, computed once per store (a source row's text never changes)."""
        cache: dict[int, Fingerprint] = self.__dict__.setdefault("_fingerprints", {})
        if source_id not in cache:
            row = self._one("SELECT ref, text, metadata FROM sources WHERE id = ?", (source_id,))
            if row is None:
                return fingerprint("")
            text = decompress_text(row["text"]) if isinstance(row["text"], bytes) else row["text"]
            path = json.loads(row["metadata"] or "{}").get("path") or row["ref"]
            cache[source_id] = fingerprint(text, str(path))
        return cache[source_id]

    def latest_source(self, ref: str) -> Source | None:
        row = self._one(
            "SELECT * FROM sources WHERE ref = ? ORDER BY fetched_at DESC, id DESC LIMIT 1", (ref,)
        )
        return None if row is None else _source(row)

    # --- facts ---------------------------------------------------------------------------------

    def add_facts(self, run_id: str | None, handoff_id: str, facts: Sequence[Fact]) -> list[int]:
        """Store facts found by one handoff, each with its citation (its quote in its source); their
        ids, in order (a fact's own `id` is not read: the store gives it)."""
        ids = []
        with self.write() as conn:
            for fact in facts:
                start, end = fact.location or (None, None)
                cursor = conn.execute(
                    "INSERT INTO facts (run_id, handoff_id, source_id, statement, quote, start, end, question,"
                    " confidence, verified, corroborations, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
                    (
                        run_id,
                        handoff_id,
                        fact.source_id,
                        fact.statement,
                        fact.quote,
                        start,
                        end,
                        fact.question,
                        fact.confidence,
                        int(fact.verified),
                        now(),
                    ),
                )
                ids.append(int(cursor.lastrowid or 0))
                conn.execute(
                    "INSERT INTO fact_citations (fact_id, source_id, quote, start, end, handoff_id, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (ids[-1], fact.source_id, fact.quote, start, end, handoff_id, now()),
                )
        return ids

    def facts_for_handoffs(self, handoff_ids: Sequence[str]) -> list[Fact]:
        if not handoff_ids:
            return []
        rows = self._all(
            f"SELECT * FROM facts WHERE handoff_id IN ({marks(handoff_ids)}) ORDER BY id", list(handoff_ids)
        )
        return [_fact(row) for row in rows]

    def get_facts(self, fact_ids: Sequence[int]) -> list[Fact]:
        if not fact_ids:
            return []
        rows = self._all(f"SELECT * FROM facts WHERE id IN ({marks(fact_ids)}) ORDER BY id", list(fact_ids))
        return [_fact(row) for row in rows]

    def canonical_facts(self, fact_ids: Sequence[int], questions: Collection[str] = ()) -> list[Fact]:
        """The facts these ids stand for: a fact merged into a near-duplicate is read as the canonical one.

        A canonical fact held here only through copies (found again by an extraction asking another
        question: a later run, another leaf) is read as this extraction found it, its question and
        confidence the first copy's: the evidence for "Which version of e2fsprogs does its README
        describe?" is the sentence scored against that question, not against the earlier run's.
        So is a canonical fact found for none of `questions` (a synthesis's) whose copy was found for
        one of them: the line an earlier run stored, given again to a report by its canonical id, is
        read as the extraction asking this report's question scored it, not as a line of no bearing.
        """
        if not fact_ids:
            return []
        given = self._all(
            f"SELECT id, canonical_id, question, confidence FROM facts WHERE id IN ({marks(fact_ids)}) ORDER BY id",
            list(fact_ids),
        )
        held = {row["id"] for row in given if row["canonical_id"] is None}
        as_found: dict[int, dict[str, Any]] = {}
        for row in given:
            if row["canonical_id"] is not None and row["canonical_id"] not in held:
                as_found.setdefault(row["canonical_id"], row)
        rows = self._all(
            f"SELECT * FROM facts WHERE id IN ({marks([*held, *as_found])}) ORDER BY id", [*held, *as_found]
        )
        asked = {normalize(question) for question in questions if question.strip()}
        elsewhere = [
            row["id"]
            for row in rows
            if normalize(as_found.get(row["id"], row)["question"] or "") not in asked
        ]
        if asked and elsewhere:
            copies = self._all(
                f"SELECT id, canonical_id, question, confidence FROM facts WHERE canonical_id IN ({marks(elsewhere)})"
                " ORDER BY id",
                elsewhere,
            )
            for copy in reversed(copies):  # the first copy found for one of the questions
                if normalize(copy["question"] or "") in asked:
                    as_found[copy["canonical_id"]] = copy
        facts = [_fact(row) for row in rows]
        return [
            fact.model_copy(
                update={"question": copy["question"] or fact.question, "confidence": copy["confidence"]}
            )
            if (copy := as_found.get(fact.id)) is not None
            else fact
            for fact in facts
        ]

    def as_lent(
        self, facts: Sequence[Fact], caller: str | None, questions: Collection[str] = ()
    ) -> list[Fact]:
        """These facts as `caller` is shown them: a fact's question is kept when it is one of
        `questions` (the caller's own) or research the caller may read asked it (the fact's row, or
        a copy found again); else it was another user's research, lent from a web page or the corpus
        (core/callers.py `may_lend`), and the fact keeps its statement, quote and source but not that
        question: it is blank (not None, so code counts it, as before, found for no question of the
        caller's). `facts` as `get_facts` or `canonical_facts` read them."""
        asked = {normalize(question) for question in questions if question.strip()}
        foreign = [fact.id for fact in facts if fact.question and normalize(fact.question) not in asked]
        if caller is LOCAL or not foreign:
            return list(facts)
        rows = self._all(
            "SELECT f.id, f.canonical_id, f.question, COALESCE(r.caller, h.caller) AS owner FROM facts f"
            " LEFT JOIN runs r ON r.id = f.run_id LEFT JOIN handoffs h ON h.id = f.handoff_id"
            f" WHERE f.id IN ({marks(foreign)}) OR f.canonical_id IN ({marks(foreign)})",
            [*foreign, *foreign],
        )
        readable = {
            (fact_id, normalize(row["question"] or ""))
            for row in rows
            if may_read(row["owner"], caller)
            for fact_id in (row["id"], row["canonical_id"])
        }
        return [
            fact.model_copy(update={"question": ""})
            if fact.id in foreign and (fact.id, normalize(fact.question or "")) not in readable
            else fact
            for fact in facts
        ]

    def citations(self, fact_ids: Sequence[int]) -> dict[int, list[Citation]]:
        """Each fact's distinct citations (source_id, quote, start, end), first found first."""
        found: dict[int, list[Citation]] = {fact_id: [] for fact_id in fact_ids}
        if not fact_ids:
            return found
        rows = self._all(
            f"SELECT fact_id, source_id, quote, start, end, MIN(id) AS first FROM fact_citations"
            f" WHERE fact_id IN ({marks(fact_ids)}) GROUP BY fact_id, source_id, quote, start, end ORDER BY first",
            list(fact_ids),
        )
        for row in rows:
            found[row["fact_id"]].append(Citation.model_validate(row))
        return found

    def count_facts(self, run_id: str) -> int:
        return self.fact_counts(run_id)[0]

    def fact_counts(self, run_id: str) -> tuple[int, int]:
        """Distinct facts the run's live or finished handoffs found, and how many of them are verified:
        near-duplicates merged, reused ones included (not those of a handoff interrupted after storing
        its facts: its rerun finds them again)."""
        row = self._one(
            "SELECT COUNT(*) AS n, COALESCE(SUM(verified), 0) AS verified FROM facts WHERE id IN"
            " (SELECT c.fact_id FROM fact_citations c JOIN handoffs h ON h.id = c.handoff_id"
            "  WHERE h.run_id = ? AND h.status IN ('running', 'done'))",
            (run_id,),
        )
        return (int(row["n"]), int(row["verified"])) if row else (0, 0)

    # --- the knowledge base's reads and writes -------------------------------------------------

    def known_facts(self, fact_ids: Sequence[int]) -> list[KnownFact]:
        """Those of these facts that are verified and canonical, with their source's ref, kind and age."""
        if not fact_ids:
            return []
        rows = self._all(
            "SELECT f.id, f.statement, f.run_id, f.source_id, f.question, s.ref, s.kind, s.fetched_at,"
            " COALESCE(r.caller, h.caller) AS owner FROM facts f JOIN sources s ON s.id = f.source_id"
            " LEFT JOIN runs r ON r.id = f.run_id LEFT JOIN handoffs h ON h.id = f.handoff_id"
            f" WHERE f.id IN ({marks(fact_ids)})"
            " AND f.verified = 1 AND f.canonical_id IS NULL ORDER BY f.id",
            list(fact_ids),
        )
        return [KnownFact.model_validate(row) for row in rows]

    def known_fact_ids(self, *, after: int, limit: int) -> list[int]:
        """Ids of verified canonical facts above `after`, in order, at most `limit` (to page through all)."""
        rows = self._all(
            "SELECT id FROM facts WHERE id > ? AND verified = 1 AND canonical_id IS NULL ORDER BY id LIMIT ?",
            (after, limit),
        )
        return [int(row["id"]) for row in rows]

    def count_known_facts(self) -> int:
        """How many facts are verified and canonical: what the knowledge index should hold."""
        rows = self._all("SELECT count(*) AS n FROM facts WHERE verified = 1 AND canonical_id IS NULL", ())
        return int(rows[0]["n"])

    def questions_asking(self, fact_ids: Sequence[int]) -> dict[int, set[str]]:
        """The questions of the extractions that found each fact."""
        if not fact_ids:
            return {}
        rows = self._all(
            "SELECT c.fact_id, h.input FROM fact_citations c JOIN handoffs h ON h.id = c.handoff_id"
            f" WHERE c.fact_id IN ({marks(fact_ids)})",
            list(fact_ids),
        )
        asked: dict[int, set[str]] = {}
        for row in rows:
            questions = json.loads(row["input"] or "{}").get("questions", [])
            asked.setdefault(row["fact_id"], set()).update(questions)
        return asked

    def repeat_of(self, fact_id: int) -> int | None:
        """The canonical fact holding an earlier copy of this fact (the same statement and quote from the
        same source: the source read again, by a phase iteration or a resumed run), else None."""
        row = self._one(
            "SELECT COALESCE(o.canonical_id, o.id) AS id FROM facts f"
            " JOIN sources s ON s.id = f.source_id JOIN sources os ON os.ref = s.ref"
            " JOIN facts o ON o.source_id = os.id AND o.id < f.id AND o.verified = 1"
            " AND o.quote = f.quote AND o.statement = f.statement"
            " WHERE f.id = ? ORDER BY o.id LIMIT 1",
            (fact_id,),
        )
        return None if row is None else int(row["id"])

    def merge_fact(self, fact_id: int, canonical_id: int) -> None:
        """Merge a fact into its canonical near-duplicate: its citations move there, and the canonical
        fact's `corroborations` becomes the number of independent sources citing it (distinct
        addresses, copies of one document counted once: `source_copies`)."""
        with self.write() as conn:
            conn.execute("UPDATE facts SET canonical_id = ? WHERE id = ?", (canonical_id, fact_id))
            conn.execute("UPDATE fact_citations SET fact_id = ? WHERE fact_id = ?", (canonical_id, fact_id))
            rows = conn.execute(
                "SELECT MIN(s.id) AS id FROM fact_citations c JOIN sources s ON s.id = c.source_id"
                " WHERE c.fact_id = ? GROUP BY s.ref",
                (canonical_id,),
            ).fetchall()
            citing = [int(row[0]) for row in rows]
            independent = independent_count(citing, self.source_copies(citing))
            conn.execute(
                "UPDATE facts SET corroborations = ? WHERE id = ?", (max(1, independent), canonical_id)
            )

    def relink_facts(self, handoff_id: str, fact_ids: Sequence[int]) -> None:
        """A reused extraction found these facts again: each gets a citation from the new handoff."""
        if not fact_ids:
            return
        with self.write() as conn:
            conn.execute(
                "INSERT INTO fact_citations (fact_id, source_id, quote, start, end, handoff_id, created_at)"
                " SELECT COALESCE(canonical_id, id), source_id, quote, start, end, ?, ? FROM facts"
                f" WHERE id IN ({marks(fact_ids)}) ORDER BY id",
                [handoff_id, now(), *fact_ids],
            )


def _source(row: dict[str, Any]) -> Source:
    text = row["text"]  # zlib-compressed since 0.3, plain in older rows
    text = decompress_text(text) if isinstance(text, bytes) else text
    return Source.model_validate({**row, "text": text, "metadata": json.loads(row["metadata"] or "{}")})


def _fact(row: dict[str, Any]) -> Fact:
    location = (row["start"], row["end"]) if row["start"] is not None else None
    return Fact(
        id=row["id"],
        statement=row["statement"],
        quote=row["quote"],
        source_id=row["source_id"],
        location=location,
        confidence=row["confidence"],
        verified=bool(row["verified"]),
        question=row["question"],
        corroborations=row["corroborations"],
    )
