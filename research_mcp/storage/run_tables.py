"""Plans, runs, their nodes and their events: the SQL of the tables that say where research stands.

A run belongs to the one process that executes it (`claim_run`): a second process on the same folder
waits on it instead of running it twice, and takes it over only once the owner has died. A run that a
dead process left half-done is tidied in one transaction before it resumes (`recover_run`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, overload

from research_mcp.core.contracts import Budget, PlannerOutput
from research_mcp.core.errors import NotFound
from research_mcp.storage.database import StoreDatabase, as_json, new_id, now
from research_mcp.storage.events import (
    AttemptStarted,
    Event,
    EventBase,
    Recovered,
    StoredEvent,
    data_of,
    from_row,
    kind_of,
)
from research_mcp.storage.models import (
    NewNode,
    PlanEstimate,
    Run,
    RunEvent,
    RunNode,
    StoredPlan,
)
from research_mcp.storage.sqlite import owner_alive

__all__ = ["INTERRUPTED", "RunTables", "names_failures"]

EventT = TypeVar("EventT", bound=EventBase)

INTERRUPTED = "interrupted: the server stopped before this finished; the run did it again when resumed"


def names_failures(output: str) -> str:
    """SQL: the handoff output in column `output` lists parts that failed (a synthesis's `failures`)."""
    return f"json_array_length(COALESCE(json_extract({output}, '$.failures'), '[]')) > 0"


class RunTables(StoreDatabase):
    # --- plans ---------------------------------------------------------------------------------

    def save_plan(
        self,
        *,
        plan_id: str,
        query: str,
        tree: PlannerOutput,
        status: str,
        reasons: Sequence[str],
        estimate: PlanEstimate,
        suggested: PlannerOutput | None,
        backend: str,
        handoff_id: str,
        budget: Budget | None = None,
        caller: str | None = None,
    ) -> None:
        row = {
            "id": plan_id,
            "query": query,
            "tree": as_json(tree.model_dump(mode="json")),
            "status": status,
            "reasons": as_json(list(reasons)),
            "estimate": as_json(estimate.model_dump(mode="json")),
            "suggested": as_json(suggested.model_dump(mode="json") if suggested else None),
            "backend": backend,
            "handoff_id": handoff_id,
            "created_at": now(),
            "budget": as_json(budget.model_dump(mode="json") if budget else None),
            "caller": caller,
        }
        with self.write():
            self.db.table("plans").insert(row)

    def get_plan(self, plan_id: str) -> StoredPlan:
        row = self._one("SELECT * FROM plans WHERE id = ?", (plan_id,))
        if row is None:
            raise NotFound("plan", plan_id)
        return StoredPlan.model_validate(row)

    # --- runs ----------------------------------------------------------------------------------

    def create_run(
        self, plan_ids: list[str], backend: str, budget: Budget | None, *, caller: str | None = None
    ) -> str:
        run_id = new_id("run")
        row = {
            "id": run_id,
            "plan_ids": as_json(plan_ids),
            "status": "pending",
            "backend": backend,
            "budget": as_json(budget.model_dump(mode="json") if budget else None),
            "created_at": now(),
            "attempt": 0,
            "caller": caller,
        }
        with self.write():
            self.db.table("runs").insert(row)
        return run_id

    def get_run(self, run_id: str) -> Run:
        row = self._one("SELECT * FROM runs WHERE id = ?", (run_id,))
        if row is None:
            raise NotFound("run", run_id)
        return Run.model_validate(row)

    def latest_run_for(self, plan_ids: list[str]) -> Run | None:
        runs = self.recent_runs(1, plan_ids=plan_ids)
        return runs[0] if runs else None

    def recent_runs(self, limit: int, *, plan_ids: list[str] | None = None) -> list[Run]:
        """The `limit` most recently created runs (of exactly these plans, when given), newest first."""
        where, params = ("WHERE plan_ids = ? ", [as_json(plan_ids)]) if plan_ids is not None else ("", [])
        rows = self._all(
            f"SELECT * FROM runs {where}ORDER BY created_at DESC, rowid DESC LIMIT ?", (*params, limit)
        )
        return [Run.model_validate(row) for row in rows]

    def runs_page(self, limit: int, *, after: str | None = None) -> list[Run]:
        """Up to `limit` runs, newest first (by creation, then id), starting after the run `after`;
        a run created while a client pages is never listed twice nor shifts a page.
        Raises NotFound for an unknown `after`."""
        if after is None:
            rows = self._all("SELECT * FROM runs ORDER BY created_at DESC, id DESC LIMIT ?", (limit,))
        else:
            last = self.get_run(after)
            rows = self._all(
                "SELECT * FROM runs WHERE (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?",
                (last.created_at, last.id, limit),
            )
        return [Run.model_validate(row) for row in rows]

    def task_runs_page(self, caller: str, limit: int, *, after: str | None = None) -> list[Run]:
        """Up to `limit` runs that `caller` started as protocol tasks, newest first, after the run
        `after` (NotFound for an unknown one)."""
        where = "caller = ? AND EXISTS (SELECT 1 FROM events e WHERE e.run_id = runs.id AND e.kind = 'task')"
        params: tuple[Any, ...] = (caller,)
        if after is not None:
            last = self.get_run(after)
            where += " AND (created_at, id) < (?, ?)"
            params += (last.created_at, last.id)
        rows = self._all(
            f"SELECT * FROM runs WHERE {where} ORDER BY created_at DESC, id DESC LIMIT ?", (*params, limit)
        )
        return [Run.model_validate(row) for row in rows]

    def unfinished_runs(self) -> list[Run]:
        """Runs neither finished nor cancelled (pending or running), oldest first."""
        rows = self._all(
            "SELECT * FROM runs WHERE status IN ('pending', 'running') ORDER BY created_at, id", ()
        )
        return [Run.model_validate(row) for row in rows]

    def latest_run(self) -> Run | None:
        """The run created last, if any."""
        runs = self.recent_runs(1)
        return runs[0] if runs else None

    def update_run(self, run_id: str, **fields: Any) -> None:
        with self.write():
            self.db.table("runs").update(run_id, fields)

    def claim_run(self, run_id: str, owner: str) -> str | None:
        """Make `owner` the run's one executor, unless another live process owns it; the other owner if so."""
        with self.write() as conn:
            row = conn.execute("SELECT owner FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise NotFound("run", run_id)
            current = row[0]
            if current and current != owner and owner_alive(current):
                return str(current)
            conn.execute("UPDATE runs SET owner = ? WHERE id = ?", (owner, run_id))
        return None

    def release_run(self, run_id: str, owner: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE runs SET owner = NULL WHERE id = ? AND owner = ?", (run_id, owner))

    def recover_run(self, run_id: str, finished: dict[str, str]) -> Recovered | None:
        """Tidy what a process that died mid-run left behind, in one transaction, before the run resumes.

        A node whose final handoff was committed but not yet recorded on the node (the process died
        between the two writes) is marked done with it, so it is not run again; `finished` maps such
        node ids to the role of their final handoff (synthesizer or scout). Handoffs left 'running'
        are closed as failed (interrupted): their work is done again. Nodes left 'running' go back
        to 'pending'. Done handoffs and done nodes are never touched. A final handoff that names parts
        that failed does not complete its node: the node is retried (see `reopen_failed_nodes`).
        What was tidied is answered as the event the run records, None when nothing was.
        """
        with self.write() as conn:
            completed = 0
            rows = conn.execute(
                "SELECT node_id FROM nodes WHERE run_id = ? AND status != 'done'", (run_id,)
            ).fetchall()
            for (node_id,) in rows:
                role = finished.get(node_id)
                if role is None:
                    continue
                latest = conn.execute(
                    f"SELECT id, role, status, iteration, {names_failures('output')} FROM handoffs"
                    " WHERE run_id = ? AND node_id = ? ORDER BY rowid DESC LIMIT 1",
                    (run_id, node_id),
                ).fetchone()
                if latest and latest[1] == role and latest[2] == "done" and not latest[3] and not latest[4]:
                    conn.execute(
                        "UPDATE nodes SET status = 'done', handoff_id = ?, finished_at = ?"
                        " WHERE run_id = ? AND node_id = ?",
                        (latest[0], now(), run_id, node_id),
                    )
                    completed += 1
            handoffs = conn.execute(
                "UPDATE handoffs SET status = 'failed', error = ?, summary = ?, finished_at = ?"
                " WHERE run_id = ? AND status = 'running'",
                (INTERRUPTED, as_json([INTERRUPTED[:200]]), now(), run_id),
            ).rowcount
            nodes = conn.execute(
                "UPDATE nodes SET status = 'pending' WHERE run_id = ? AND status = 'running'", (run_id,)
            ).rowcount
        if not (completed or handoffs or nodes):
            return None
        return Recovered(
            message="resumed after an interruption",
            nodes_completed=completed,
            handoffs_interrupted=handoffs,
            nodes_reset=nodes,
        )

    def reopen_failed_nodes(self, run_id: str) -> list[str]:
        """Done nodes whose result names parts that failed (a child, a source, a search) go back to
        'pending', so executing the run again retries those parts and synthesizes over them anew.
        Nodes that finished whole stay done and are reused. The ids reopened, parents first."""
        with self.write() as conn:
            rows = conn.execute(
                f"SELECT n.node_id FROM nodes n JOIN handoffs h ON h.id = n.handoff_id"
                f" WHERE n.run_id = ? AND n.status = 'done' AND {names_failures('h.output')}"
                " ORDER BY n.rowid",
                (run_id,),
            ).fetchall()
            conn.executemany(
                "UPDATE nodes SET status = 'pending', handoff_id = NULL WHERE run_id = ? AND node_id = ?",
                [(run_id, node_id) for (node_id,) in rows],
            )
        return [node_id for (node_id,) in rows]

    # --- nodes ---------------------------------------------------------------------------------

    def ensure_nodes(self, run_id: str, nodes: Sequence[NewNode]) -> None:
        """Register the run's nodes as pending; nodes already known keep their state."""
        with self.write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO nodes (run_id, node_id, plan_id, parent_id, kind, title, status, runs_started)"
                " VALUES (?, ?, ?, ?, ?, ?, 'pending', 0)",
                [(run_id, n.node_id, n.plan_id, n.parent_id, n.kind, n.title) for n in nodes],
            )

    def get_node(self, run_id: str, node_id: str) -> RunNode | None:
        row = self._one("SELECT * FROM nodes WHERE run_id = ? AND node_id = ?", (run_id, node_id))
        return None if row is None else RunNode.model_validate(row)

    def nodes_for_run(self, run_id: str) -> list[RunNode]:
        rows = self._all("SELECT * FROM nodes WHERE run_id = ? ORDER BY rowid", (run_id,))
        return [RunNode.model_validate(row) for row in rows]

    def start_node(self, run_id: str, node_id: str) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE nodes SET status = 'running', started_at = ?, runs_started = runs_started + 1"
                " WHERE run_id = ? AND node_id = ?",
                (now(), run_id, node_id),
            )

    def finish_node(self, run_id: str, node_id: str, status: str, handoff_id: str | None) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE nodes SET status = ?, handoff_id = ?, finished_at = ? WHERE run_id = ? AND node_id = ?",
                (status, handoff_id, now(), run_id, node_id),
            )

    # --- events --------------------------------------------------------------------------------

    def add_event(self, run_id: str, event: Event) -> None:
        """One line of the run's progress log."""
        with self.write() as conn:
            conn.execute(
                "INSERT INTO events (run_id, node_id, kind, message, data, at) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, event.node_id, event.kind, event.message, as_json(data_of(event)), now()),
            )

    def corpus_roots(self, run_id: str) -> list[str]:
        """The corpus folders the run searched (as its attempts recorded them) and those holding the
        documents its extractors read."""
        rows = self._all(
            "SELECT json_extract(s.metadata, '$.root') AS root, MIN(h.rowid) AS first FROM handoffs h"
            " JOIN sources s ON s.id = json_extract(h.input, '$.source_id')"
            " WHERE h.run_id = ? AND h.role = 'extractor' AND s.kind = 'corpus'"
            " GROUP BY root ORDER BY first",
            (run_id,),
        )
        roots = [str(row["root"]) for row in rows if row["root"]]
        for attempt in self.events_for_run(run_id, AttemptStarted):
            roots += [root for root in attempt.corpus if root not in roots]
        return roots

    @overload
    def events_for_run(self, run_id: str) -> list[StoredEvent]: ...
    @overload
    def events_for_run(self, run_id: str, kind: type[EventT]) -> list[EventT]: ...
    def events_for_run(self, run_id: str, kind: type[EventBase] | None = None) -> Sequence[EventBase]:
        """The run's events in the order they happened; of one kind when `kind` is given. Rows
        this version cannot read come back as `UnreadEvent` when all kinds are asked for."""
        sql = "SELECT * FROM events WHERE run_id = ?" + (" AND kind = ?" if kind else "") + " ORDER BY id"
        rows = self._all(sql, (run_id, kind_of(kind)) if kind else (run_id,))
        events = [self._event(RunEvent.model_validate(row)) for row in rows]
        return [event for event in events if isinstance(event, kind)] if kind else events

    @staticmethod
    def _event(row: RunEvent) -> StoredEvent:
        return from_row(row.kind, row.message, row.node_id, row.data)
