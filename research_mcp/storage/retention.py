"""Data that can be cleaned up: deleting a finished run with what only it holds, and checking that
what is left still hangs together.

`prune_run` deletes, in one transaction, a run's row, its nodes and events, and its handoffs with
their model calls and cached outputs, and the facts it found that no other run cites. A fact another
run cites (a citation from another run's extraction, a fact merged into it, or a place in another
run's synthesis scope, as prior findings are) is kept, with the extraction that found it: both lose
their link to the deleted run (`run_id` NULL) and stay in the knowledge base. The run's plans go too,
unless another run executes them. What sources leave open (`source_insights`) stays with the source,
unlinked from the run; the sources themselves (the texts read) stay as the reading cache. The ids of
the facts deleted are returned, so the knowledge base drops their vectors.

A kept extraction remembers the run it was kept from (`kept_after`). Once no run cites its facts any
more (the run that did is pruned too, in whichever order), the prune that ends the last citation
deletes it with them, its citations, model calls and cached output: two runs of one question and a
third leave nothing behind whether the oldest or the newest is pruned first.

`consistency_problems` lists the references that point at nothing (a fact of a run that is gone, a
citation of a handoff that is gone, ...), each with how many rows, and the facts kept for pruned
runs that no run cites any more: `doctor` reports them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from research_mcp.core.errors import InvalidInput, NotFound
from research_mcp.storage.database import StoreDatabase, marks

__all__ = ["PrunedRun", "RetentionTables"]

#: Run states a prune refuses: the run is still being executed (cancel it first).
UNFINISHED = ("pending", "running")

#: Each check: what it finds, as doctor says it, and the SQL counting the rows that break it.
_CHECKS = (
    ("nodes of a run that is gone", "SELECT COUNT(*) FROM nodes WHERE run_id NOT IN (SELECT id FROM runs)"),
    ("events of a run that is gone", "SELECT COUNT(*) FROM events WHERE run_id NOT IN (SELECT id FROM runs)"),
    (
        "handoffs of a run that is gone",
        "SELECT COUNT(*) FROM handoffs WHERE run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs)",
    ),
    (
        "facts of a run that is gone",
        "SELECT COUNT(*) FROM facts WHERE run_id IS NOT NULL AND run_id NOT IN (SELECT id FROM runs)",
    ),
    (
        "facts whose extraction is gone",
        "SELECT COUNT(*) FROM facts WHERE handoff_id IS NOT NULL AND handoff_id NOT IN (SELECT id FROM handoffs)",
    ),
    (
        "facts merged into a fact that is gone",
        "SELECT COUNT(*) FROM facts WHERE canonical_id IS NOT NULL AND canonical_id NOT IN (SELECT id FROM facts)",
    ),
    (
        "citations of a fact that is gone",
        "SELECT COUNT(*) FROM fact_citations WHERE fact_id NOT IN (SELECT id FROM facts)",
    ),
    (
        "citations by an extraction that is gone",
        "SELECT COUNT(*) FROM fact_citations WHERE handoff_id IS NOT NULL"
        " AND handoff_id NOT IN (SELECT id FROM handoffs)",
    ),
    (
        "model calls of a handoff that is gone",
        "SELECT COUNT(*) FROM model_calls WHERE handoff_id NOT IN (SELECT id FROM handoffs)",
    ),
    (
        "cached outputs of a handoff that is gone",
        "SELECT COUNT(*) FROM output_cache WHERE handoff_id NOT IN (SELECT id FROM handoffs)",
    ),
    (
        "runs whose report is gone",
        "SELECT COUNT(*) FROM runs WHERE result_handoff_id IS NOT NULL"
        " AND result_handoff_id NOT IN (SELECT id FROM handoffs)",
    ),
)


@dataclass(frozen=True)
class PrunedRun:
    """What deleting one run removed, and the facts it kept because other runs cite them."""

    run_id: str
    handoffs: int
    events: int
    plans: int
    facts: list[int] = field(default_factory=list)  # the facts deleted: their vectors go too
    kept_facts: int = 0

    def line(self) -> str:
        kept = f" ({self.kept_facts} kept: other runs cite them)" if self.kept_facts else ""
        return (
            f"{self.run_id}: {self.handoffs} handoffs, {self.events} events, {len(self.facts)} facts{kept}, "
            f"{self.plans} plans deleted"
        )


class RetentionTables(StoreDatabase):
    def runs_finished_before(self, moment: str) -> list[str]:
        """Ids of the runs that finished (or were created, if they never finished) before `moment`,
        oldest first, but those still being executed."""
        rows = self._all(
            f"SELECT id FROM runs WHERE status NOT IN ({marks(UNFINISHED)})"
            " AND COALESCE(finished_at, created_at) < ? ORDER BY COALESCE(finished_at, created_at), id",
            [*UNFINISHED, moment],
        )
        return [str(row["id"]) for row in rows]

    def prune_run(self, run_id: str) -> PrunedRun:
        """Delete a finished run and what only it holds (see the module doc); one transaction."""
        run = self._one("SELECT status, plan_ids FROM runs WHERE id = ?", (run_id,))
        if run is None:
            raise NotFound("run", run_id)
        if run["status"] in UNFINISHED:
            raise InvalidInput(
                f"run {run_id} is {run['status']}; cancel it first (execute_plan(run_id, cancel=true), "
                "or Ctrl-C in the terminal running it), then prune it."
            )
        with self.write() as conn:
            handoffs = _ids(conn.execute("SELECT id FROM handoffs WHERE run_id = ?", (run_id,)))
            facts = _ids(
                conn.execute(
                    f"SELECT id FROM facts WHERE run_id = ? OR handoff_id IN ({marks(handoffs)})",
                    [run_id, *handoffs],
                )
            )
            kept = sorted(_cited_elsewhere(conn, facts, handoffs))
            gone_facts = [fact for fact in facts if fact not in set(kept)]
            finders = _ids(
                conn.execute(f"SELECT DISTINCT handoff_id FROM facts WHERE id IN ({marks(kept)})", kept)
            )
            gone = [handoff for handoff in handoffs if handoff not in finders]
            touched = _ids(
                conn.execute(
                    f"SELECT DISTINCT fact_id FROM fact_citations WHERE handoff_id IN ({marks(gone)})", gone
                )
            )
            _delete_facts(conn, gone_facts, gone)
            _delete_handoffs(conn, run_id, gone, kept, finders)
            events = conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,)).rowcount
            conn.execute("DELETE FROM nodes WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
            plans = _delete_plans(conn, json.loads(run["plan_ids"] or "[]"))
            # What earlier prunes kept only because this run cited it goes now, whatever the order.
            released, released_facts = _kept_for_no_run(conn)
            touched += _ids(
                conn.execute(
                    f"SELECT DISTINCT fact_id FROM fact_citations WHERE handoff_id IN ({marks(released)})",
                    released,
                )
            )
            _delete_facts(conn, released_facts, released)
            _delete_handoffs(conn, run_id, released, [], [])
            deleted = {*gone_facts, *released_facts}
            _recount_corroborations(conn, sorted({fact for fact in touched if fact not in deleted}))
        return PrunedRun(
            run_id=run_id,
            handoffs=len(gone) + len(released),
            events=events,
            plans=plans,
            facts=sorted(deleted),
            kept_facts=len(kept),
        )

    def consistency_problems(self) -> list[str]:
        """Each kind of reference that points at nothing, with how many rows, and the facts an earlier
        prune kept that no run cites any more: empty when consistent."""
        problems = []
        for what, sql in _CHECKS:
            row = self._one(sql.replace("SELECT COUNT(*)", "SELECT COUNT(*) AS n", 1))
            count = int(row["n"]) if row else 0
            if count:
                problems.append(f"{count} {what}")
        with self._lock, self._errors():
            handoffs, facts = _kept_for_no_run(self.db.conn)
        if handoffs:
            problems.append(
                f"{len(facts)} facts and {len(handoffs)} handoffs kept for pruned runs that no run cites any more"
            )
        return problems


def _ids(cursor: sqlite3.Cursor) -> list[Any]:
    return [row[0] for row in cursor]


def _kept_for_no_run(conn: sqlite3.Connection) -> tuple[list[str], list[int]]:
    """The handoffs a prune kept (they found facts another run cited) whose facts nothing else cites
    any more, and those facts. Kept handoffs citing only each other's facts are all in it: a handoff
    stays only when something outside the set cites one of its facts (the greatest such set)."""
    unused = set(_ids(conn.execute("SELECT id FROM handoffs WHERE kept_after IS NOT NULL")))
    while unused:
        facts = _ids(
            conn.execute(
                f"SELECT id FROM facts WHERE handoff_id IN ({marks(sorted(unused))})", sorted(unused)
            )
        )
        cited = sorted(_cited_elsewhere(conn, facts, sorted(unused)))
        used = set(
            _ids(conn.execute(f"SELECT DISTINCT handoff_id FROM facts WHERE id IN ({marks(cited)})", cited))
        )
        if not used & unused:
            return sorted(unused), facts
        unused -= used
    return [], []


def _cited_elsewhere(conn: sqlite3.Connection, facts: Sequence[int], handoffs: Sequence[str]) -> set[int]:
    """Those of the run's facts another run cites: a citation from another extraction, a fact merged
    into one, or a place in another synthesis's scope (prior findings)."""
    if not facts:
        return set()
    run = set(handoffs)
    execute = conn.execute
    cited = {
        row[0]
        for row in execute(
            f"SELECT fact_id, handoff_id FROM fact_citations WHERE fact_id IN ({marks(facts)})", list(facts)
        )
        if row[1] not in run
    }
    cited |= {
        row[0]
        for row in execute(
            f"SELECT canonical_id FROM facts WHERE canonical_id IN ({marks(facts)})"
            f" AND id NOT IN ({marks(facts)})",
            [*facts, *facts],
        )
    }
    wanted = set(facts)
    for handoff_id, output in execute(
        "SELECT id, output FROM handoffs WHERE role = 'synthesizer' AND output IS NOT NULL"
    ):
        if handoff_id not in run:
            cited |= wanted.intersection(json.loads(output).get("fact_ids", []))
    return cited


def _delete_facts(conn: sqlite3.Connection, facts: Sequence[int], handoffs: Sequence[str]) -> None:
    execute = conn.execute
    execute(f"DELETE FROM fact_citations WHERE handoff_id IN ({marks(handoffs)})", list(handoffs))
    execute(f"DELETE FROM fact_citations WHERE fact_id IN ({marks(facts)})", list(facts))
    execute(f"DELETE FROM facts WHERE id IN ({marks(facts)})", list(facts))


def _delete_handoffs(
    conn: sqlite3.Connection,
    run_id: str,
    gone: Sequence[str],
    kept_facts: Sequence[int],
    finders: Sequence[str],
) -> None:
    """The run's handoffs but those that found a kept fact, which stay, unlinked from the run."""
    execute = conn.execute
    execute(f"UPDATE facts SET run_id = NULL WHERE id IN ({marks(kept_facts)})", list(kept_facts))
    execute(
        f"UPDATE handoffs SET run_id = NULL, node_id = NULL, kept_after = ? WHERE id IN ({marks(finders)})",
        [run_id, *finders],
    )
    execute("UPDATE source_insights SET run_id = NULL WHERE run_id = ?", (run_id,))
    execute(f"UPDATE source_insights SET handoff_id = NULL WHERE handoff_id IN ({marks(gone)})", list(gone))
    for table in ("model_calls", "output_cache"):
        execute(f"DELETE FROM {table} WHERE handoff_id IN ({marks(gone)})", list(gone))
    execute(f"DELETE FROM handoffs WHERE id IN ({marks(gone)})", list(gone))


def _delete_plans(conn: sqlite3.Connection, plan_ids: Sequence[str]) -> int:
    """The run's plans that no other run executes, with their planner handoffs; how many."""
    execute = conn.execute
    used = {plan for (ids,) in execute("SELECT plan_ids FROM runs") for plan in json.loads(ids or "[]")}
    orphans = [plan for plan in plan_ids if plan not in used]
    planners = [
        row[0]
        for row in execute(f"SELECT handoff_id FROM plans WHERE id IN ({marks(orphans)})", orphans)
        if row[0]
    ]
    execute(f"DELETE FROM model_calls WHERE handoff_id IN ({marks(planners)})", planners)
    execute(f"DELETE FROM output_cache WHERE handoff_id IN ({marks(planners)})", planners)
    execute(f"DELETE FROM handoffs WHERE id IN ({marks(planners)})", planners)
    return int(execute(f"DELETE FROM plans WHERE id IN ({marks(orphans)})", orphans).rowcount)


def _recount_corroborations(conn: sqlite3.Connection, facts: Sequence[int]) -> None:
    """A fact that lost citations: how many distinct sources still cite it."""
    conn.execute(
        "UPDATE facts SET corroborations = MAX(1, (SELECT COUNT(DISTINCT s.ref) FROM fact_citations c"
        " JOIN sources s ON s.id = c.source_id WHERE c.fact_id = facts.id))"
        f" WHERE id IN ({marks(facts)})",
        list(facts),
    )
