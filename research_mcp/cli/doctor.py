"""What `research-mcp doctor` says about the configuration in effect, and `reindex`'s rebuild."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from research_mcp.core.config import Settings
from research_mcp.core.errors import ResearchError

if TYPE_CHECKING:
    from research_mcp.storage.store import Store
    from research_mcp.storage.vectors import KnowledgeIndex

__all__ = [
    "PROBLEM",
    "backend_line",
    "connect_hint",
    "disk_problem",
    "doctor_problems",
    "doctor_report",
    "index_drift",
    "rebuild_knowledge_index",
    "store_consistency",
]

PROBLEM = "problem: "  # how a doctor line naming a problem begins; `doctor` then exits 1


def connect_hint(environ: Mapping[str, str] | None = None) -> str:
    """How to add this very server to Claude Code, with this shell's settings (`cli/connect.py`)."""
    from research_mcp.cli.connect import claude_add_command

    return f"connect it with: {claude_add_command(environ)}"


def backend_line(settings: Settings) -> str:
    """What model backend a session will get, and why."""
    if settings.model == "auto":
        if settings.anthropic_key is not None:
            return f"anthropic ({settings.anthropic_model}; ANTHROPIC_API_KEY is set)"
        return "auto: sampling when the host supports it, else extractive (no API key set)"
    return f"{settings.model} (RESEARCH_MCP_MODEL={settings.model})"


def doctor_problems(report: str) -> int:
    """How many problems a doctor report names (each on a line of its own, ``problem: …``)."""
    return sum(1 for line in report.splitlines() if line.lstrip().startswith(PROBLEM))


def doctor_report(settings: Settings) -> str:
    """The configuration in effect and why, with each problem (a line starting ``problem:``) and
    how to fix it."""
    web = "tavily" if settings.tavily_api_key else "not configured (set TAVILY_API_KEY)"
    corpus = ", ".join(str(path) for path in settings.corpus) or "not configured (set RESEARCH_MCP_CORPUS)"
    qdrant = settings.qdrant_url or f"Qdrant Edge, embedded at {settings.vectors_path}"
    consistency, dangling = store_consistency(settings)
    disk = disk_problem(settings)
    lines = [
        f"data folder:  {settings.home}",
        *([f"{PROBLEM}{disk}"] if disk else []),
        f"model:        {backend_line(settings)}",
        f"web search:   {web}",
        f"corpus:       {corpus}",
        f"knowledge:    qdrant {qdrant}"
        + (
            " (moving from the old qdrant folder: a running server finishes it)"
            if settings.qdrant_url is None and settings.legacy_qdrant_path.is_dir()
            else ""
        ),
        *index_drift(settings),
        f"consistency:  {consistency}",
        f"concurrency:  {settings.concurrency} model calls at once",
        connect_hint(),
    ]
    from research_mcp.cli.corpus import doctor_lines

    after_corpus = next(at for at, line in enumerate(lines) if line.startswith("corpus:")) + 1
    lines[after_corpus:after_corpus] = doctor_lines(settings)  # after the corpus folders
    lines += dangling
    if not settings.corpus and not settings.tavily_api_key:
        lines.append(
            "problem: nothing to search: set RESEARCH_MCP_CORPUS to folders of your documents, "
            "or TAVILY_API_KEY for web search (or give sources to each plan leaf)"
        )
    return "\n".join(lines)


def disk_problem(settings: Settings) -> str | None:
    """What the data folder's disk keeps research-mcp from doing, and the fix; None when nothing."""
    from research_mcp.storage.disk import no_room, writable

    home = settings.home
    if (full := no_room(home)) is not None:
        return (
            f"{full}: earlier research can be read, nothing new can be saved, and the knowledge index "
            "stays closed (a full disk would crash it); free some space, or set RESEARCH_MCP_HOME to a "
            "folder on a disk with room"
        )
    if home.exists() and not writable(home):
        return (
            f"the data folder {str(home)!r} is read-only: earlier research can be read, nothing new can be "
            "saved, and the knowledge index stays closed; make it writable (its permissions, or the disk "
            "mounted read-only), or set RESEARCH_MCP_HOME to a writable folder"
        )
    return None


def store_consistency(settings: Settings) -> tuple[str, list[str]]:
    """Whether every reference in the store points at a row (a fact's run, a citation's fact, ...):
    a line for the report, and a problem line for each kind of dangling reference."""
    from research_mcp.storage.store import Store

    if not settings.database_path.exists():
        return "no store yet", []
    try:
        store = Store(settings.database_path)
    except ResearchError as error:
        return f"not checked: {' '.join(str(error).split())}", []
    try:
        found = store.consistency_problems()
    finally:
        store.close()
    if not found:
        return "every reference in the store points at a row", []
    fix = "back up research.db, then prune the runs concerned (research-mcp prune RUN_ID)"
    return f"{len(found)} kinds of dangling references", [
        f"{PROBLEM}the store holds {what} (left by an interrupted delete or an edit from outside); {fix}"
        for what in found
    ]


def index_drift(settings: Settings) -> list[str]:
    """How far the knowledge index is from the store, a line each for facts and corpus chunk vectors
    (compared by identity: ids, and for chunks the hash of the text embedded). Read only: nothing is
    healed here."""
    from research_mcp.sources.chunk_vectors import check_chunk_vectors
    from research_mcp.sources.process_objects import open_knowledge_index
    from research_mcp.storage.healing import heal
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.storage.store import Store

    if not settings.database_path.exists():
        return ["index drift:  no store yet"]
    try:
        store = Store(settings.database_path)
    except ResearchError as error:
        return [f"index drift:  not checked: {' '.join(str(error).split())}"]
    # No waiting for a folder a running server holds: the doctor says so at once, without its warnings.
    vectors = logging.getLogger("research_mcp.storage")
    level, busy = vectors.level, False
    chunks = None
    try:
        vectors.setLevel(logging.ERROR)
        knowledge_index = open_knowledge_index(settings.model_copy(update={"index_wait": 0.0}))
        try:
            drift = heal(KnowledgeBase(store, knowledge_index), dry_run=True)
            busy = knowledge_index.busy
            if not busy:
                chunks = check_chunk_vectors(store, knowledge_index, repair=False)
        finally:
            knowledge_index.close()
    finally:
        vectors.setLevel(level)
        store.close()
    if busy:
        return ["index drift:  not checked: the index is held by a running server (which heals it itself)"]
    if not drift.available:
        why = (
            "the index is not opened on that disk (see the problem above)"
            if disk_problem(settings)
            else "the index is unavailable (a running server holds it and heals it itself)"
        )
        return [f"index drift:  not checked: {why}"]
    facts = drift.describe() + (
        ""
        if drift.in_step
        else "; a running server heals it in the background, `research-mcp reindex` rebuilds it at once"
    )
    lines = [f"index drift:  {facts}"]
    if chunks is not None and chunks.available and (chunks.chunks or not chunks.in_step):
        fix = (
            ""
            if chunks.in_step
            else "; the next indexing pass embeds them again (a server's start, or `research-mcp index`), "
            "`research-mcp reindex` rebuilds them at once"
        )
        lines.append(f"corpus vectors: {chunks.describe()}{fix}")
    return lines


def rebuild_knowledge_index(settings: Settings) -> str:
    """Rebuild the knowledge index (fact and corpus chunk vectors) from the SQLite store; what it holds now."""
    from research_mcp.sources.process_objects import open_knowledge_index
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.storage.store import Store

    store = Store(settings.database_path)
    knowledge_index = open_knowledge_index(settings)
    try:
        knowledge_index.count("facts")  # waits for the folder while another process uses it
        if not knowledge_index.available:
            raise click.ClickException(
                "the knowledge index cannot be opened (see the warning above): stop the research-mcp "
                "server using this data folder (or set RESEARCH_MCP_INDEX_WAIT to wait longer for it), "
                "or start the Qdrant server, and run reindex again."
            )
        facts = KnowledgeBase(store, knowledge_index).reindex_facts()
        chunks = _reindex_chunks(store, knowledge_index)
        if settings.qdrant_url is None and settings.legacy_qdrant_path.is_dir():
            from research_mcp.sources.vector_migration import retire

            retire(settings.legacy_qdrant_path)  # everything it held is in the new index now
        return f"knowledge index rebuilt from {settings.database_path}: {facts} facts, {chunks} corpus chunks"
    finally:
        knowledge_index.close()
        store.close()


def _reindex_chunks(store: Store, knowledge_index: KnowledgeIndex) -> int:
    """Re-embed every corpus chunk from SQLite (the corpus module owns how a chunk is embedded)."""
    from research_mcp.sources.corpus import Corpus

    corpus = Corpus(store, [], index=knowledge_index)
    corpus.rebuild_vectors()
    return knowledge_index.count("chunks")
