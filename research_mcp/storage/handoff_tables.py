"""Handoffs, model calls and reusable outputs: the SQL of what each role's piece of work produced and cost.

A handoff's output is written as its role's stored-output model (`storage/models.py`) and read back
as one; `output_cache` names the done handoffs whose output is reused for the same inputs.
"""

from __future__ import annotations

import statistics
from typing import Any

from research_mcp.core.errors import NotFound
from research_mcp.storage.database import StoreDatabase, as_json, new_id, now
from research_mcp.storage.models import RunUsage
from research_mcp.storage.outputs import CachedOutput, Handoff, StoredOutput

__all__ = ["MIN_TIMED_CALLS", "HandoffTables"]

#: Calls of a role a measured pace needs; fewer, and the backend's typical figure stands.
MIN_TIMED_CALLS = 5


class HandoffTables(StoreDatabase):
    def start_handoff(
        self,
        *,
        role: str,
        input: dict[str, Any],
        backend: str,
        run_id: str | None = None,
        node_id: str | None = None,
        attempt: int = 1,
        iteration: int = 0,
        caller: str | None = None,
    ) -> str:
        handoff_id = new_id("handoff")
        with self.write() as conn:
            conn.execute(
                "INSERT INTO handoffs (id, run_id, node_id, role, status, input, summary, backend, model,"
                " tokens_in, tokens_out, cost_usd, started_at, attempt, iteration, caller)"
                " VALUES (?, ?, ?, ?, 'running', ?, '[]', ?, '', 0, 0, 0, ?, ?, ?, ?)",
                (
                    handoff_id,
                    run_id,
                    node_id,
                    role,
                    as_json(input),
                    backend,
                    now(),
                    attempt,
                    iteration,
                    caller,
                ),
            )
        return handoff_id

    def finish_handoff(
        self,
        handoff_id: str,
        *,
        status: str,
        output: StoredOutput | None,
        summary: list[str],
        model: str = "",
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
        error: str | None = None,
    ) -> None:
        """Commit a handoff's end; `output` is its role's stored output (see `stored_output`)."""
        stored = None if output is None else output.model_dump_json(exclude_unset=True)
        with self.write() as conn:
            conn.execute(
                "UPDATE handoffs SET status = ?, output = ?, summary = ?, model = ?, tokens_in = ?, tokens_out = ?,"
                " cost_usd = ?, finished_at = ?, error = ? WHERE id = ?",
                (
                    status,
                    stored,
                    as_json(summary),
                    model,
                    tokens_in,
                    tokens_out,
                    cost_usd,
                    now(),
                    error,
                    handoff_id,
                ),
            )

    def get_handoff(self, handoff_id: str) -> Handoff:
        row = self._one("SELECT * FROM handoffs WHERE id = ?", (handoff_id,))
        if row is None:
            raise NotFound("handoff", handoff_id)
        return Handoff.model_validate(row)

    def handoffs_for_run(
        self, run_id: str, role: str | None = None, *, node_id: str | None = None
    ) -> list[Handoff]:
        """The run's handoffs in the order they started; only one role's, or one node's, if given."""
        sql = "SELECT * FROM handoffs WHERE run_id = ?"
        params: list[str] = [run_id]
        for column, value in (("role", role), ("node_id", node_id)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        return [Handoff.model_validate(row) for row in self._all(sql + " ORDER BY rowid", params)]

    def seconds_per_call(self, backend: str, *, recent: int = 40) -> dict[str, float]:
        """This machine's measured pace on `backend`: the median wall time of each role's last
        `recent` finished calls, outputs reused from earlier calls left out, and a scout's quick
        scans (node `…/scan`: a source's opening, not a source) (a role with fewer than
        `MIN_TIMED_CALLS` is left out)."""
        rows = self._all(
            "SELECT role, (julianday(finished_at) - julianday(started_at)) * 86400.0 AS seconds"
            " FROM handoffs WHERE backend = ? AND status = 'done' AND started_at IS NOT NULL"
            " AND finished_at IS NOT NULL AND COALESCE(json_extract(output, '$.cached'), 0) = 0"
            " AND COALESCE(node_id, '') NOT LIKE '%/scan'"
            " ORDER BY rowid DESC LIMIT ?",
            (backend, recent * 5),
        )
        timed: dict[str, list[float]] = {}
        for row in rows:
            seconds = timed.setdefault(row["role"], [])
            if len(seconds) < recent and row["seconds"] is not None:
                seconds.append(max(0.0, float(row["seconds"])))
        return {
            role: round(statistics.median(seconds), 2)
            for role, seconds in timed.items()
            if len(seconds) >= MIN_TIMED_CALLS
        }

    def sources_read(self, run_id: str) -> int:
        """Distinct sources the run's extractors read (a scout's quick scans, node `…/scan`, aside)."""
        row = self._one(
            "SELECT COUNT(DISTINCT json_extract(input, '$.source_id')) AS n FROM handoffs"
            " WHERE run_id = ? AND role = 'extractor' AND COALESCE(node_id, '') NOT LIKE '%/scan'",
            (run_id,),
        )
        return int(row["n"]) if row else 0

    def run_usage(self, run_id: str) -> RunUsage:
        row = self._one(
            "SELECT COUNT(*) AS handoffs, COALESCE(SUM(tokens_in), 0) AS tokens_in,"
            " COALESCE(SUM(COALESCE(json_extract(output, '$.cached'), 0)), 0) AS reused,"
            " COALESCE(SUM(tokens_out), 0) AS tokens_out, COALESCE(SUM(cost_usd), 0) AS cost_usd"
            " FROM handoffs WHERE run_id = ?",
            (run_id,),
        )
        calls = self._one(
            "SELECT COALESCE(SUM(m.calls), 0) AS calls FROM model_calls m JOIN handoffs h ON h.id = m.handoff_id"
            " WHERE h.run_id = ?",
            (run_id,),
        )
        assert row is not None and calls is not None
        return RunUsage.model_validate({**row, "llm_calls": calls["calls"]})

    def record_model_call(self, handoff_id: str, **fields: Any) -> None:
        with self.write():
            self.db.table("model_calls").insert({"handoff_id": handoff_id, "at": now(), **fields})

    # --- reusable outputs ----------------------------------------------------------------------

    def cached_output(self, key: str) -> CachedOutput | None:
        """The output of the done handoff remembered under `key`, if any."""
        row = self._one(
            "SELECT h.* FROM output_cache c JOIN handoffs h ON h.id = c.handoff_id"
            " WHERE c.key = ? AND h.status = 'done'",
            (key,),
        )
        if row is None or row["output"] is None:
            return None
        handoff = Handoff.model_validate(row)
        assert handoff.output is not None
        return CachedOutput(
            handoff_id=handoff.id, output=handoff.output, summary=handoff.summary, model=handoff.model
        )

    def remember_output(self, key: str, role: str, handoff_id: str) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO output_cache (key, role, handoff_id, created_at) VALUES (?, ?, ?, ?)",
                (key, role, handoff_id, now()),
            )
