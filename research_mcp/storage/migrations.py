"""Named migrations of the store, applied once each, in order, and recorded in `_migrations`."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlite_utils import Database

from research_mcp.core.citations import normalize

logger = logging.getLogger(__name__)

__all__ = ["MIGRATIONS", "apply_migrations"]

Migration = Callable[[Database], None]


def m001_initial(db: Database) -> None:
    db.table("plans").create(
        {
            "id": str,
            "query": str,
            "tree": str,  # PlannerOutput JSON (ids assigned)
            "status": str,  # feasible | infeasible
            "reasons": str,  # JSON list
            "estimate": str,  # JSON
            "suggested": str,  # JSON or null
            "backend": str,
            "handoff_id": str,
            "created_at": str,
        },
        pk="id",
    )
    db.table("runs").create(
        {
            "id": str,
            "plan_ids": str,  # JSON list
            "status": str,
            "backend": str,
            "budget": str,  # JSON
            "created_at": str,
            "started_at": str,
            "finished_at": str,
            "error": str,
            "result_handoff_id": str,
            "attempt": int,
        },
        pk="id",
    )
    db.table("nodes").create(
        {
            "run_id": str,
            "node_id": str,
            "plan_id": str,
            "parent_id": str,
            "kind": str,
            "title": str,
            "status": str,  # pending | running | done | failed | cancelled
            "handoff_id": str,
            "started_at": str,
            "finished_at": str,
            "runs_started": int,  # how many times this node was started; a done node is never started again
        },
        pk=("run_id", "node_id"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db.table("handoffs").create(
        {
            "id": str,
            "run_id": str,
            "node_id": str,
            "role": str,
            "status": str,
            "input": str,
            "output": str,
            "summary": str,
            "backend": str,
            "model": str,
            "tokens_in": int,
            "tokens_out": int,
            "cost_usd": float,
            "started_at": str,
            "finished_at": str,
            "attempt": int,
            "iteration": int,
            "error": str,
        },
        pk="id",
    )
    db.table("handoffs").create_index(["run_id", "node_id"])
    db.table("sources").create(
        {
            "id": int,
            "ref": str,
            "kind": str,
            "title": str,
            "content_hash": str,
            "text": str,
            "fetched_at": str,
            "metadata": str,
        },
        pk="id",
    )
    db.table("sources").create_index(["ref", "content_hash"], unique=True)
    db.table("facts").create(
        {
            "id": int,
            "run_id": str,
            "handoff_id": str,
            "source_id": int,
            "statement": str,
            "quote": str,
            "start": int,
            "end": int,
            "question": str,
            "confidence": float,
            "verified": int,
            "corroborations": int,
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("source_id", "sources", "id")],
    )
    db.table("facts").create_index(["handoff_id"])
    db.table("events").create(
        {"id": int, "run_id": str, "node_id": str, "kind": str, "message": str, "data": str, "at": str},
        pk="id",
    )
    db.table("events").create_index(["run_id"])
    db.table("model_calls").create(
        {
            "id": int,
            "handoff_id": str,
            "role": str,
            "backend": str,
            "model": str,
            "tokens_in": int,
            "tokens_out": int,
            "cost_usd": float,
            "calls": int,
            "latency_s": float,
            "status": str,
            "error": str,
            "at": str,
        },
        pk="id",
    )


def m002_corpus(db: Database) -> None:
    """The local corpus: documents, their chunks, and FTS5 over chunk text and document title.

    The title is copied onto each chunk so that one FTS5 table (external content, kept right by
    triggers on insert, update and delete) can weight title and text as two columns in bm25().
    """
    db.table("corpus_documents").create(
        {
            "id": int,
            "root": str,  # resolved corpus folder
            "path": str,  # POSIX path relative to root
            "title": str,
            "content_hash": str,  # sha256 of the file's bytes
            "size": int,
            "mtime_ns": int,
            "text": str,
            "indexed_at": str,
        },
        pk="id",
    )
    db.table("corpus_documents").create_index(["root", "path"], unique=True)
    db.table("corpus_chunks").create(
        {
            "id": int,  # also the point id of the chunk's vector in the knowledge index
            "doc_id": int,
            "ordinal": int,
            "title": str,
            "text": str,
            "start": int,  # offsets into corpus_documents.text
            "end": int,
        },
        pk="id",
        foreign_keys=[("doc_id", "corpus_documents", "id")],
    )
    db.table("corpus_chunks").create_index(["doc_id", "ordinal"], unique=True)
    db.table("corpus_chunks").enable_fts(
        ["text", "title"], create_triggers=True, tokenize="porter unicode61 remove_diacritics 2"
    )


def m003_knowledge(db: Database) -> None:
    """The knowledge base: merged facts, every citation of a fact, and reusable role outputs.

    A fact merged into a near-duplicate keeps its row (its id stays citable) and points at the
    canonical fact by ``canonical_id``; its citation moves to the canonical fact. A citation is one
    handoff finding the fact at one place in one source, so a fact re-found by a cached extraction
    gets a citation row for the new handoff too. Existing facts get their own citation here.
    """
    db.table("facts").add_column("canonical_id", int)
    db.table("fact_citations").create(
        {
            "id": int,
            "fact_id": int,  # the canonical fact
            "source_id": int,
            "quote": str,
            "start": int,
            "end": int,
            "handoff_id": str,  # the extraction that found it
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("fact_id", "facts", "id"), ("source_id", "sources", "id")],
    )
    db.table("fact_citations").create_index(["fact_id"])
    db.table("fact_citations").create_index(["handoff_id"])
    db.conn.execute(
        "INSERT INTO fact_citations (fact_id, source_id, quote, start, end, handoff_id, created_at)"
        " SELECT id, source_id, quote, start, end, handoff_id, created_at FROM facts ORDER BY id"
    )
    db.table("output_cache").create(
        {
            "key": str,  # sha256 of the role's inputs, prompt and model (roles.base.cache_key)
            "role": str,
            "handoff_id": str,  # the handoff whose output is reused
            "created_at": str,
        },
        pk="key",
    )


def m004_indexes(db: Database) -> None:
    """Run totals join model calls to handoffs; without an index every poll scanned all calls ever made."""
    db.table("model_calls").create_index(["handoff_id"], if_not_exists=True)
    db.table("facts").create_index(["run_id"], if_not_exists=True)


def m005_run_owner(db: Database) -> None:
    """The process executing a run ("host:pid"), so that a second process on the same folder never runs it too."""
    db.table("runs").add_column("owner", str)


def m006_corpus_fts_bulk(db: Database) -> None:
    """A document's chunks enter the full-text index in one statement (`CorpusTables.save_corpus_document`),
    not one trigger call per chunk: FTS5 flushes its pending terms at the end of every trigger statement,
    which made a 10 MB text file take 3 s to index instead of 1. Deletes and updates keep their triggers."""
    db.execute('DROP TRIGGER IF EXISTS "corpus_chunks_ai"')


def m007_facts_by_source(db: Database) -> None:
    """A new fact is looked up among the earlier facts of its source (`FactTables.repeat_of`)."""
    db.table("facts").create_index(["source_id"], if_not_exists=True)


def m008_source_insights(db: Database) -> None:
    """What sources leave open, kept in the knowledge base with the source (`insight_tables.py`): each
    extraction's follow-up questions, the gaps its source names and the sources it cites, once per
    source (address), kind and text. Those of the extractions already stored are kept here too."""
    db.table("source_insights").create(
        {
            "id": int,
            "source_id": int,
            "ref": str,  # the source's address, as stored: one source read again keeps its insights once
            "kind": str,  # follow_up | source_gap | linked_source
            "text": str,  # the question, the gap, or the cited source's address
            "context": str,  # why (a follow-up's rationale, where a cited source is named)
            "key": str,  # the text normalized: what makes two insights of a source the same
            "run_id": str,
            "handoff_id": str,  # the extraction that found it
            "created_at": str,
        },
        pk="id",
        foreign_keys=[("source_id", "sources", "id")],
    )
    db.table("source_insights").create_index(["ref", "kind", "key"], unique=True)
    db.table("source_insights").create_index(["run_id"])
    rows = db.conn.execute(
        "SELECT h.id, h.run_id, h.output, h.finished_at, s.id, s.ref FROM handoffs h"
        " JOIN sources s ON s.id = json_extract(h.output, '$.source_id')"
        " WHERE h.role = 'extractor' AND h.status = 'done' AND h.output IS NOT NULL ORDER BY h.started_at, h.id"
    ).fetchall()
    for handoff_id, run_id, output, finished_at, source_id, ref in rows:
        for row in _insight_rows(json.loads(output), source_id, ref):
            db.conn.execute(
                "INSERT OR IGNORE INTO source_insights (source_id, ref, kind, text, context, key, run_id,"
                " handoff_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*row, run_id, handoff_id, finished_at),
            )


def m009_plan_budget(db: Database) -> None:
    """The budget given to plan_research, kept with the plan: a run of it spends within it."""
    db.table("plans").add_column("budget", str)


def m010_corpus_failures(db: Database) -> None:
    """Files of a corpus folder that could not be indexed, with the size and time they failed at: a
    later pass, in this process or another, does not read them again until they change."""
    db.table("corpus_failures").create(
        {"root": str, "path": str, "size": int, "mtime_ns": int, "error": str, "failed_at": float},
        pk=("root", "path"),
    )


def m011_facts_by_canonical(db: Database) -> None:
    """Facts by the canonical fact they were merged into: a report reads the copy of a stored line
    found for its own question (`FactTables.canonical_facts`) without scanning every fact."""
    db.table("facts").create_index(["canonical_id"], if_not_exists=True)


def m012_corpus_reader_version(db: Database) -> None:
    """The version of the readers that made each corpus document's stored text
    (``sources.readers.READER_VERSION``): a document read by older readers is read again, although its
    file is unchanged, so a change in how documents are read reaches every index."""
    db.table("corpus_documents").add_column("reader_version", int, not_null_default=0)


def m013_kept_handoffs(db: Database) -> None:
    """The run a handoff was kept from when that run was pruned (it found facts another run cites):
    once no run cites them any more, a later prune deletes it with them (`storage/retention.py`).
    An extraction `extract_source` made outside any run has none, and stays."""
    db.table("handoffs").add_column("kept_after", str)


def m014_callers(db: Database) -> None:
    """Who made each plan, run and direct handoff ("user:<name>" over HTTP with a token per user,
    "session:<id>" over HTTP without one, NULL for the local host): over HTTP a caller reads, runs and
    lists as tasks only what is theirs, across restarts of the server."""
    for table in ("plans", "runs", "handoffs"):
        db.table(table).add_column("caller", str)
    db.table("runs").create_index(["caller"], if_not_exists=True)


def m015_chunk_text_once(db: Database) -> None:
    """A chunk's text is kept once, in its document's (compressed) text, not again in `corpus_chunks`
    and a third time for the full-text index: chunks keep their offsets into the document, and the
    index becomes contentless (it ranks and matches; nothing reads text back from it). What it
    indexes is given by `CorpusTables`, which also removes a chunk's terms with the text it was
    indexed with. The data folder of git's documentation went from 2.8x its text to about 1.6x."""
    for trigger in ("corpus_chunks_ai", "corpus_chunks_ad", "corpus_chunks_au"):
        db.execute(f'DROP TRIGGER IF EXISTS "{trigger}"')
    db.execute("DROP TABLE IF EXISTS corpus_chunks_fts")
    db.execute(
        "CREATE VIRTUAL TABLE corpus_chunks_fts USING fts5(text, title, content='',"
        " tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.execute("INSERT INTO corpus_chunks_fts (rowid, text, title) SELECT id, text, title FROM corpus_chunks")
    db.execute("ALTER TABLE corpus_chunks DROP COLUMN text")
    db.execute("ALTER TABLE corpus_chunks DROP COLUMN title")


def _insight_rows(
    output: dict[str, Any], source_id: int, ref: str
) -> list[tuple[int, str, str, str, str, str]]:
    """An extraction's stored output as insight rows (source id, ref, kind, text, context, key)."""
    found: list[tuple[int, str, str, str, str]] = []
    found += [(source_id, ref, "source_gap", gap, "") for gap in output.get("source_identified_gaps") or []]
    found += [
        (source_id, ref, "follow_up", item.get("question", ""), item.get("rationale", ""))
        for item in output.get("follow_up_questions") or []
    ]
    found += [
        (source_id, ref, "linked_source", item.get("ref", ""), item.get("context", ""))
        for item in output.get("linked_candidate_sources") or []
    ]
    return [(*row, normalize(row[3])) for row in found if row[3].strip()]


MIGRATIONS: list[tuple[str, Migration]] = [
    ("001_initial", m001_initial),
    ("002_corpus", m002_corpus),
    ("003_knowledge", m003_knowledge),
    ("004_indexes", m004_indexes),
    ("005_run_owner", m005_run_owner),
    ("006_corpus_fts_bulk", m006_corpus_fts_bulk),
    ("007_facts_by_source", m007_facts_by_source),
    ("008_source_insights", m008_source_insights),
    ("009_plan_budget", m009_plan_budget),
    ("010_corpus_failures", m010_corpus_failures),
    ("011_facts_by_canonical", m011_facts_by_canonical),
    ("012_corpus_reader_version", m012_corpus_reader_version),
    ("013_kept_handoffs", m013_kept_handoffs),
    ("014_callers", m014_callers),
    ("015_chunk_text_once", m015_chunk_text_once),
]
#: Migrations that leave much of the file free: the database is compacted (VACUUM) after them.
COMPACTING = frozenset({"015_chunk_text_once"})


def apply_migrations(db: Database, migrations: list[tuple[str, Migration]] = MIGRATIONS) -> list[str]:
    """Apply the migrations not yet recorded; return the names applied now."""
    if not db.table("_migrations").exists():
        db.table("_migrations").create({"name": str, "applied_at": str}, pk="name")
    done = {row["name"] for row in db.table("_migrations").rows}
    applied = []
    for name, migrate in migrations:
        if name in done:
            continue
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            migrate(db)
            db.conn.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                (name, datetime.now(UTC).isoformat()),
            )
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
        db.conn.execute("COMMIT")
        applied.append(name)
    if COMPACTING.intersection(applied):
        try:
            db.conn.execute("VACUUM")  # give the freed pages back to the file system
            db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # in WAL mode the file shrinks here
        except sqlite3.OperationalError as error:  # another connection busy: compacted another time
            logger.info("the database was not compacted after its migration: %s", error)
    return applied
