"""The handoff store: SQLite through sqlite-utils, the system of record.

`Store` joins the table modules, each holding the SQL of its tables: `run_tables.py` (plans, runs,
nodes, events), `handoff_tables.py` (handoffs, model calls, reusable outputs), `fact_tables.py`
(sources, facts, citations), `insight_tables.py` (what sources leave open), `corpus_tables.py` (the local corpus)
and `retention.py` (deleting a run with what only it holds; the store's consistency). Their common ground, in
`database.py`: one connection per process, WAL mode, a busy timeout, and every write in a
`BEGIN IMMEDIATE` transaction, so that a second process on the same file waits instead of failing. A
write returns only after its COMMIT: a handoff id handed to anyone is already durable; a write that
fails (disk full, read-only folder, I/O error, lock held past the busy timeout) is rolled back whole
and raised as a `StoreError` that names the data folder and what to do.

A folder that cannot be written is opened read-only: earlier results can still be read, and every
write says why it cannot be made. Every read returns a model of `storage/models.py`, never a row.
"""

from __future__ import annotations

from research_mcp.storage.corpus_tables import CorpusTables
from research_mcp.storage.database import new_id, now
from research_mcp.storage.fact_tables import FactTables
from research_mcp.storage.handoff_tables import HandoffTables
from research_mcp.storage.insight_tables import InsightTables
from research_mcp.storage.retention import PrunedRun, RetentionTables
from research_mcp.storage.run_tables import INTERRUPTED, RunTables
from research_mcp.storage.sqlite import process_owner

__all__ = ["INTERRUPTED", "PrunedRun", "Store", "new_id", "now", "process_owner"]


class Store(RunTables, HandoffTables, FactTables, InsightTables, CorpusTables, RetentionTables):
    """Runs, plan nodes, handoffs, sources, facts, what sources leave open, events, model calls and the corpus."""
