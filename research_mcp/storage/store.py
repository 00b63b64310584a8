"""The handoff store: SQLite through sqlite-utils, the system of record.

One connection per process (opened by `storage/sqlite.py`), WAL mode, a busy timeout, and every write in a `BEGIN IMMEDIATE`
transaction so that a second process on the same file waits instead of failing. A write returns
only after its COMMIT: a handoff id handed to anyone is already durable; a write that fails (disk
full, read-only folder, I/O error, lock held past the busy timeout) is rolled back whole and raised
as a `StoreError` that names the data folder and what to do.

A folder that cannot be written is opened read-only: earlier results can still be read, and every
write says why it cannot be made. A run belongs to the one process that executes it (`claim_run`):
a second process on the same folder waits on it instead of running it twice, and takes it over only
once the owner has died.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from research_mcp.contracts import Fact, Handoff, Source
from research_mcp.errors import NotFound, StoreError, StoreReadOnly
from research_mcp.storage.migrations import apply_migrations
from research_mcp.storage.sqlite import (
    connect,
    connect_read_only,
    map_os_error,
    owner_alive,
    process_owner,
    store_error,
)

# process_owner and store_error live in storage/sqlite.py; exported here too, where callers found them.
__all__ = ["INTERRUPTED", "NewFact", "Store", "new_id", "now", "process_owner", "store_error"]


def _names_failures(output: str) -> str:
    """SQL: the handoff output in column `output` lists parts that failed (a synthesis's `failures`)."""
    return f"json_array_length(COALESCE(json_extract({output}, '$.failures'), '[]')) > 0"


INTERRUPTED = "interrupted: the server stopped before this finished; the run did it again when resumed"


def now() -> str:
    return datetime.now(UTC).isoformat()


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(6)}"


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _load(value: str | None) -> Any:
    return None if value is None else json.loads(value)


class NewFact(dict[str, Any]):
    """Keyword bag for `Store.add_facts` (statement, quote, source_id, start, end, question, confidence, verified)."""


class Store:
    """Runs, plan nodes, handoffs, sources, facts, events and model calls."""

    def __init__(self, path: Path | str) -> None:
        self.path = path
        self.read_only = False
        self._lock = threading.RLock()
        try:
            if str(path) != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            conn = connect(str(path))
        except (OSError, sqlite3.Error) as error:
            mapped = self._mapped(error)
            if not isinstance(mapped, StoreReadOnly) or not Path(path).exists():
                raise mapped from error
            self.read_only = True
            conn = connect_read_only(Path(path))
        self.db = Database(conn)
        with self._lock, self._errors():
            apply_migrations(self.db)

    def _mapped(self, error: BaseException) -> StoreError:
        if isinstance(error, sqlite3.Error):
            mapped = store_error(error, self.path)
            if mapped is not None:
                return mapped
        if isinstance(error, OSError):
            return map_os_error(error, self.path)
        raise error

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite failures that a user can act on become StoreErrors; anything else is a bug, raised as is."""
        try:
            yield
        except sqlite3.Error as error:
            mapped = store_error(error, self.path)
            if mapped is None:
                raise
            raise mapped from error

    def close(self) -> None:
        self.db.conn.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: BEGIN IMMEDIATE ... COMMIT, rolled back whole on any error (COMMIT's too)."""
        if self.read_only:
            raise self._mapped(sqlite3.OperationalError("attempt to write a readonly database"))
        with self._lock, self._errors():
            conn = self.db.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        with self._lock, self._errors():
            cursor = self.db.conn.execute(sql, params)
            row = cursor.fetchone()
            if row is None:
                return None
            return dict(zip([c[0] for c in cursor.description], row, strict=True))

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock, self._errors():
            cursor = self.db.conn.execute(sql, params)
            names = [c[0] for c in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # --- plans ---------------------------------------------------------------------------------

    def save_plan(self, plan: dict[str, Any]) -> None:
        row = {
            **plan,
            "tree": _json(plan["tree"]),
            "reasons": _json(plan.get("reasons", [])),
            "estimate": _json(plan.get("estimate")),
            "suggested": _json(plan.get("suggested")),
            "created_at": now(),
        }
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.write() as conn:
            conn.execute(f"INSERT INTO plans ({columns}) VALUES ({marks})", list(row.values()))

    def get_plan(self, plan_id: str) -> dict[str, Any]:
        row = self._one("SELECT * FROM plans WHERE id = ?", (plan_id,))
        if row is None:
            raise NotFound("plan", plan_id)
        for key in ("tree", "reasons", "estimate", "suggested"):
            row[key] = _load(row[key])
        return row

    # --- runs and nodes ------------------------------------------------------------------------

    def create_run(self, plan_ids: list[str], backend: str, budget: dict[str, Any] | None) -> str:
        run_id = new_id("run")
        with self.write() as conn:
            conn.execute(
                "INSERT INTO runs (id, plan_ids, status, backend, budget, created_at, attempt)"
                " VALUES (?, ?, 'pending', ?, ?, ?, 0)",
                (run_id, _json(plan_ids), backend, _json(budget), now()),
            )
        return run_id

    def get_run(self, run_id: str) -> dict[str, Any]:
        row = self._one("SELECT * FROM runs WHERE id = ?", (run_id,))
        if row is None:
            raise NotFound("run", run_id)
        row["plan_ids"] = _load(row["plan_ids"])
        row["budget"] = _load(row["budget"])
        return row

    def latest_run_for(self, plan_ids: list[str]) -> dict[str, Any] | None:
        row = self._one(
            "SELECT id FROM runs WHERE plan_ids = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (_json(plan_ids),),
        )
        return None if row is None else self.get_run(row["id"])

    def update_run(self, run_id: str, **fields: Any) -> None:
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self.write() as conn:
            conn.execute(f"UPDATE runs SET {assignments} WHERE id = ?", [*fields.values(), run_id])

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

    def recover_run(self, run_id: str, finished: dict[str, str]) -> dict[str, int]:
        """Tidy what a process that died mid-run left behind, in one transaction, before the run resumes.

        A node whose final handoff was committed but not yet recorded on the node (the process died
        between the two writes) is marked done with it, so it is not run again; `finished` maps such
        node ids to the role of their final handoff (synthesizer or scout). Handoffs left 'running'
        are closed as failed (interrupted): their work is done again. Nodes left 'running' go back
        to 'pending'. Done handoffs and done nodes are never touched. A final handoff that names parts
        that failed does not complete its node: the node is retried (see `reopen_failed_nodes`).
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
                    f"SELECT id, role, status, iteration, {_names_failures('output')} FROM handoffs"
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
                (INTERRUPTED, _json([INTERRUPTED[:200]]), now(), run_id),
            ).rowcount
            nodes = conn.execute(
                "UPDATE nodes SET status = 'pending' WHERE run_id = ? AND status = 'running'", (run_id,)
            ).rowcount
        return {"nodes_completed": completed, "handoffs_interrupted": handoffs, "nodes_reset": nodes}

    def reopen_failed_nodes(self, run_id: str) -> list[str]:
        """Done nodes whose result names parts that failed (a child, a source, a search) go back to
        'pending', so executing the run again retries those parts and synthesizes over them anew.
        Nodes that finished whole stay done and are reused. The ids reopened, parents first."""
        with self.write() as conn:
            rows = conn.execute(
                f"SELECT n.node_id FROM nodes n JOIN handoffs h ON h.id = n.handoff_id"
                f" WHERE n.run_id = ? AND n.status = 'done' AND {_names_failures('h.output')}"
                " ORDER BY n.rowid",
                (run_id,),
            ).fetchall()
            conn.executemany(
                "UPDATE nodes SET status = 'pending', handoff_id = NULL WHERE run_id = ? AND node_id = ?",
                [(run_id, node_id) for (node_id,) in rows],
            )
        return [node_id for (node_id,) in rows]

    def ensure_nodes(self, run_id: str, nodes: list[dict[str, Any]]) -> None:
        """Register the run's nodes as pending; nodes already known keep their state."""
        with self.write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO nodes (run_id, node_id, plan_id, parent_id, kind, title, status, runs_started)"
                " VALUES (?, ?, ?, ?, ?, ?, 'pending', 0)",
                [(run_id, n["node_id"], n["plan_id"], n["parent_id"], n["kind"], n["title"]) for n in nodes],
            )

    def get_node(self, run_id: str, node_id: str) -> dict[str, Any] | None:
        return self._one("SELECT * FROM nodes WHERE run_id = ? AND node_id = ?", (run_id, node_id))

    def nodes_for_run(self, run_id: str) -> list[dict[str, Any]]:
        return self._all("SELECT * FROM nodes WHERE run_id = ? ORDER BY rowid", (run_id,))

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

    # --- handoffs ------------------------------------------------------------------------------

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
    ) -> str:
        handoff_id = new_id("h")
        with self.write() as conn:
            conn.execute(
                "INSERT INTO handoffs (id, run_id, node_id, role, status, input, summary, backend, model,"
                " tokens_in, tokens_out, cost_usd, started_at, attempt, iteration)"
                " VALUES (?, ?, ?, ?, 'running', ?, '[]', ?, '', 0, 0, 0, ?, ?, ?)",
                (handoff_id, run_id, node_id, role, _json(input), backend, now(), attempt, iteration),
            )
        return handoff_id

    def finish_handoff(
        self,
        handoff_id: str,
        *,
        status: str,
        output: dict[str, Any] | None,
        summary: list[str],
        model: str = "",
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
        error: str | None = None,
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "UPDATE handoffs SET status = ?, output = ?, summary = ?, model = ?, tokens_in = ?, tokens_out = ?,"
                " cost_usd = ?, finished_at = ?, error = ? WHERE id = ?",
                (
                    status,
                    _json(output),
                    _json(summary),
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
        return self._handoff(row)

    @staticmethod
    def _handoff(row: dict[str, Any]) -> Handoff:
        for key in ("input", "output", "summary"):
            row[key] = _load(row[key])
        return Handoff.model_validate(row)

    def handoffs_for_run(self, run_id: str, role: str | None = None) -> list[Handoff]:
        sql = (
            "SELECT * FROM handoffs WHERE run_id = ?" + (" AND role = ?" if role else "") + " ORDER BY rowid"
        )
        params = (run_id, role) if role else (run_id,)
        return [self._handoff(row) for row in self._all(sql, params)]

    def sources_read(self, run_id: str) -> int:
        """Distinct sources the run's extractors read."""
        row = self._one(
            "SELECT COUNT(DISTINCT json_extract(input, '$.source_id')) AS n FROM handoffs"
            " WHERE run_id = ? AND role = 'extractor'",
            (run_id,),
        )
        return int(row["n"]) if row else 0

    def run_usage(self, run_id: str) -> dict[str, Any]:
        row = self._one(
            "SELECT COUNT(*) AS handoffs, COALESCE(SUM(tokens_in), 0) AS tokens_in,"
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
        return {**row, "llm_calls": calls["calls"]}

    # --- sources and facts ---------------------------------------------------------------------

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
                (ref, kind, title, content_hash, text, now(), _json(metadata or {})),
            )
        row = self._one("SELECT id FROM sources WHERE ref = ? AND content_hash = ?", (ref, content_hash))
        assert row is not None
        return self.get_source(row["id"])

    def get_source(self, source_id: int) -> Source:
        row = self._one("SELECT * FROM sources WHERE id = ?", (source_id,))
        if row is None:
            raise NotFound("source", f"S{source_id}")
        return Source.model_validate(row)

    def latest_source(self, ref: str) -> Source | None:
        row = self._one(
            "SELECT id FROM sources WHERE ref = ? ORDER BY fetched_at DESC, id DESC LIMIT 1", (ref,)
        )
        return None if row is None else self.get_source(row["id"])

    def add_facts(self, run_id: str | None, handoff_id: str, facts: list[NewFact]) -> list[int]:
        """Store facts found by one handoff, each with its citation (its quote in its source)."""
        ids = []
        with self.write() as conn:
            for fact in facts:
                cursor = conn.execute(
                    "INSERT INTO facts (run_id, handoff_id, source_id, statement, quote, start, end, question,"
                    " confidence, verified, corroborations, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?)",
                    (
                        run_id,
                        handoff_id,
                        fact["source_id"],
                        fact["statement"],
                        fact["quote"],
                        fact.get("start"),
                        fact.get("end"),
                        fact.get("question"),
                        fact["confidence"],
                        int(bool(fact["verified"])),
                        now(),
                    ),
                )
                ids.append(int(cursor.lastrowid or 0))
                conn.execute(
                    "INSERT INTO fact_citations (fact_id, source_id, quote, start, end, handoff_id, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        ids[-1],
                        fact["source_id"],
                        fact["quote"],
                        fact.get("start"),
                        fact.get("end"),
                        handoff_id,
                        now(),
                    ),
                )
        return ids

    def facts_for_handoffs(self, handoff_ids: Sequence[str]) -> list[Fact]:
        if not handoff_ids:
            return []
        marks = ", ".join("?" for _ in handoff_ids)
        rows = self._all(f"SELECT * FROM facts WHERE handoff_id IN ({marks}) ORDER BY id", list(handoff_ids))
        return [self._fact(row) for row in rows]

    def get_facts(self, fact_ids: Sequence[int]) -> list[Fact]:
        if not fact_ids:
            return []
        marks = ", ".join("?" for _ in fact_ids)
        rows = self._all(f"SELECT * FROM facts WHERE id IN ({marks}) ORDER BY id", list(fact_ids))
        return [self._fact(row) for row in rows]

    def canonical_facts(self, fact_ids: Sequence[int]) -> list[Fact]:
        """The facts these ids stand for: a fact merged into a near-duplicate is read as the canonical one."""
        if not fact_ids:
            return []
        marks = ", ".join("?" for _ in fact_ids)
        rows = self._all(
            f"SELECT * FROM facts WHERE id IN (SELECT COALESCE(canonical_id, id) FROM facts WHERE id IN ({marks}))"
            " ORDER BY id",
            list(fact_ids),
        )
        return [self._fact(row) for row in rows]

    def citations(self, fact_ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        """Each fact's distinct citations (source_id, quote, start, end), first found first."""
        found: dict[int, list[dict[str, Any]]] = {fact_id: [] for fact_id in fact_ids}
        if not fact_ids:
            return found
        marks = ", ".join("?" for _ in fact_ids)
        rows = self._all(
            f"SELECT fact_id, source_id, quote, start, end, MIN(id) AS first FROM fact_citations"
            f" WHERE fact_id IN ({marks}) GROUP BY fact_id, source_id, quote, start, end ORDER BY first",
            list(fact_ids),
        )
        for row in rows:
            found[row.pop("fact_id")].append(
                {key: row[key] for key in ("source_id", "quote", "start", "end")}
            )
        return found

    @staticmethod
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

    # --- events and model calls ----------------------------------------------------------------

    def add_event(
        self,
        run_id: str,
        kind: str,
        message: str,
        *,
        node_id: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        with self.write() as conn:
            conn.execute(
                "INSERT INTO events (run_id, node_id, kind, message, data, at) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, node_id, kind, message, _json(data), now()),
            )

    def events_for_run(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM events WHERE run_id = ?" + (" AND kind = ?" if kind else "") + " ORDER BY id"
        rows = self._all(sql, (run_id, kind) if kind else (run_id,))
        for row in rows:
            row["data"] = _load(row["data"])
        return rows

    def record_model_call(self, handoff_id: str, **fields: Any) -> None:
        row = {"handoff_id": handoff_id, "at": now(), **fields}
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        with self.write() as conn:
            conn.execute(f"INSERT INTO model_calls ({columns}) VALUES ({marks})", list(row.values()))

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
