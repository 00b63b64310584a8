"""The retention setting, applied by the running server: at start and then every PRUNE_EVERY_S, the
runs finished more than RESEARCH_MCP_RETENTION_DAYS ago are deleted with what only they hold (as
`research-mcp prune` deletes them), each pass logged on stderr. Without the setting nothing is pruned."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import anyio

from research_mcp.core.errors import ResearchError
from research_mcp.storage.knowledge_base import KnowledgeBase

__all__ = ["PRUNE_EVERY_S", "keep_pruned", "prune_expired"]

logger = logging.getLogger(__name__)

PRUNE_EVERY_S = 3600.0


def prune_expired(knowledge: KnowledgeBase, retention_days: float) -> list[str]:
    """Delete the runs finished more than `retention_days` ago; the ids deleted."""
    cutoff = (datetime.now(UTC) - timedelta(days=retention_days)).isoformat()
    pruned = []
    for run_id in knowledge.store.runs_finished_before(cutoff):
        try:
            knowledge.prune_run(run_id)
        except ResearchError as error:  # started again meanwhile, or already gone: the next pass sees it
            logger.warning("retention: run %s not pruned: %s", run_id, error)
            continue
        pruned.append(run_id)
    if pruned:
        logger.info(
            "retention: pruned %d runs finished more than %g days ago: %s",
            len(pruned),
            retention_days,
            ", ".join(pruned),
        )
    return pruned


async def keep_pruned(knowledge: KnowledgeBase, retention_days: float | None) -> None:
    """Prune at once, then every PRUNE_EVERY_S, until cancelled (a pass runs in a worker thread)."""
    if retention_days is None:
        return
    while True:
        await anyio.to_thread.run_sync(prune_expired, knowledge, retention_days)
        await anyio.sleep(PRUNE_EVERY_S)
