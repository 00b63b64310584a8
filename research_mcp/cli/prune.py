"""`research-mcp prune`: the retention policy at the terminal.

Runs are chosen by id, or as those finished more than DAYS ago (`--older-than`, else
RESEARCH_MCP_RETENTION_DAYS). Each is deleted with what only it holds (`storage/retention.py`), and
the vectors of the facts deleted leave the knowledge index; when a running server holds the index,
its healing deletes them instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from research_mcp.core.config import Settings

__all__ = ["prune_runs", "runs_to_prune"]


def runs_to_prune(settings: Settings, run_ids: Sequence[str], older_than: float | None) -> list[str] | None:
    """The runs to prune: those named, else those finished more than `older_than` days ago (or the
    retention setting's); None when neither is given."""
    from research_mcp.storage.store import Store

    if run_ids:
        return list(dict.fromkeys(run_ids))
    days = older_than if older_than is not None else settings.retention_days
    if days is None:
        return None
    cutoff = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    store = Store(settings.database_path)
    try:
        return store.runs_finished_before(cutoff)
    finally:
        store.close()


def prune_runs(settings: Settings, run_ids: Sequence[str]) -> tuple[list[str], int]:
    """Delete these runs (see the module doc): one line per run (what it deleted, or why it could
    not), then what became of the vectors; and how many could not be pruned."""
    from research_mcp.core.errors import ResearchError, clipped
    from research_mcp.sources.process_objects import open_knowledge_index
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.storage.store import Store

    store = Store(settings.database_path)
    index = open_knowledge_index(settings)
    try:
        knowledge = KnowledgeBase(store, index)
        lines, refused = [], 0
        for run_id in run_ids:
            try:
                lines.append(knowledge.prune_run(run_id).line())
            except ResearchError as error:
                lines.append(f"{clipped(run_id)}: not pruned: {' '.join(str(error).split())}")
                refused += 1
        if knowledge.dirty:
            lines.append(
                "the knowledge index could not be written now (a running server holds it): that server "
                "deletes the pruned facts' vectors as it heals its index, or run: research-mcp reindex"
            )
        return lines, refused
    finally:
        index.close()
        store.close()
