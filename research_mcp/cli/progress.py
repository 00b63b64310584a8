"""The terminal's views of runs, on stderr: the live progress of one run, and the table of recent runs.

On a terminal the live view is a rich display of the plan tree (each node's state) and the running
totals, redrawn in place. Anywhere else (a pipe, a file, CI) it prints one plain line per change, no
ANSI escapes, so a log stays readable. Either way it reads the run from the store, on a connection
of its own, while the run goes on in the same process.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

import anyio
from rich.console import Console, Group
from rich.live import Live
from rich.logging import RichHandler
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from research_mcp.core.ids import FINAL_NODE
from research_mcp.core.printable import printable
from research_mcp.runs.snapshot import NodeState, PlanTree, RunRow, RunTotals, read_snapshot
from research_mcp.storage.models import Run
from research_mcp.storage.store import Store

__all__ = ["LiveProgress", "format_totals", "print_runs"]

POLL_S = 0.25
STATE_STYLE = {
    "pending": ("·", "dim"),
    "running": ("▶", "bold yellow"),
    "done": ("✓", "green"),
    "cached": ("✓", "cyan"),
    "failed": ("✗", "bold red"),
    "cancelled": ("■", "magenta"),
}


def format_totals(totals: RunTotals, sep: str = " · ") -> str:
    return sep.join(
        [
            f"{totals.nodes_done}/{totals.nodes_total} nodes",
            f"{totals.sources} sources read",
            f"facts {totals.facts_verified}/{totals.facts} verified",
            f"{totals.tokens} tokens",
            f"${totals.cost_usd:.4f}",
            f"{round(totals.elapsed_s, 2):.1f} s",  # the figure the export gives (2 places), shown to 1
        ]
    )


class LiveProgress:
    """Follows one run from the store and shows it on `stream` (stderr), redrawn or line by line."""

    def __init__(self, store_path: Any, *, stream: IO[str] | None = None, live: bool | None = None) -> None:
        self.store_path = store_path
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.console = Console(file=self.stream, highlight=False) if self.live else None
        self.run_id: str | None = None
        self._display: Live | None = None
        self._seen: dict[str, str] = {}
        self._last_totals = ""
        self._started = time.monotonic()
        self._handlers: list[logging.Handler] = []

    # --- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> LiveProgress:
        if self.console is not None:
            self._display = Live(console=self.console, auto_refresh=False, transient=False)
            self._display.start()
            # Log records go above the live display, not through it.
            root = logging.getLogger()
            self._handlers = root.handlers[:]
            handler = RichHandler(console=self.console, show_time=False, show_path=False)
            for log_filter in {id(f): f for h in self._handlers for f in h.filters}.values():
                handler.addFilter(log_filter)  # the redaction and the printable filter stay on
            root.handlers = [handler]
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._display is not None:
            self._display.stop()
            logging.getLogger().handlers = self._handlers

    # --- what the driver tells it ----------------------------------------------------------------

    def note(self, text: str) -> None:
        """A one-off message (planning, the plan's estimate, cancelling...)."""
        if self.console is not None:
            self.console.print(Text(printable(text), style="dim"))
        else:
            print(printable(f"research-mcp: {text}"), file=self.stream, flush=True)

    async def follow(self, run_id: str) -> None:
        """Show the run until cancelled (the driver cancels this task when the run has finished)."""
        self.run_id = run_id
        store = Store(self.store_path)
        try:
            while True:
                self.refresh(store)
                await anyio.sleep(POLL_S)
        finally:
            with anyio.CancelScope(shield=True):
                self.refresh(store)
                store.close()

    def refresh(self, store: Store) -> None:
        assert self.run_id is not None
        run = store.get_run(self.run_id)
        snapshot = read_snapshot(store, run)
        trees, totals = snapshot.trees(store), snapshot.totals
        if self._display is not None:
            self._display.update(self._renderable(run, trees, totals), refresh=True)
        else:
            self._print_changes(run, trees, totals)

    # --- rendering -------------------------------------------------------------------------------

    def _renderable(self, run: Run, trees: Sequence[PlanTree], totals: RunTotals) -> Group:
        query = printable(" + ".join(tree.query for tree in trees if tree.plan_id != FINAL_NODE))
        header = Text.assemble(("research: ", "bold"), (query, "bold"), f"  {run.id} ", _status(run))
        parts: list[Any] = [header]
        for tree in trees:
            view = Tree(Text(f"plan {tree.plan_id}", style="dim"), guide_style="dim")
            _add(view, tree.root)
            parts.append(view)
        parts.append(Text(format_totals(totals)))
        return Group(*parts)

    def _print_changes(self, run: Run, trees: Sequence[PlanTree], totals: RunTotals) -> None:
        changed = False
        for tree in trees:
            for depth, node in tree.root.walk():
                if self._seen.get(node.key) == node.state:
                    continue
                if node.key not in self._seen and node.state == "pending":
                    self._seen[node.key] = node.state
                    continue
                self._seen[node.key] = node.state
                changed = True
                indent = "  " * depth
                print(
                    printable(
                        f"[{time.monotonic() - self._started:6.1f}s] {node.state:<9} {indent}{node.kind} "
                        f"{node.node_id}: {node.title}"
                    ),
                    file=self.stream,
                )
        line = format_totals(totals, sep=", ")
        summary = run.status + line.rsplit(", ", 1)[0]  # not the elapsed time, which always changes
        if changed or summary != self._last_totals:
            self._last_totals = summary
            print(f"[{time.monotonic() - self._started:6.1f}s] {run.status}: {line}", file=self.stream)
        self.stream.flush()


def _status(run: Run) -> Text:
    style = {
        "done": "green",
        "partial": "dark_orange",
        "failed": "red",
        "cancelled": "magenta",
        "running": "yellow",
    }
    return Text(run.status, style=style.get(run.status, ""))


def _add(parent: Tree, node: NodeState) -> None:
    mark, style = STATE_STYLE.get(node.state, ("?", ""))
    label = Text.assemble(
        (f"{mark} ", style), (f"{node.kind} ", "dim"), printable(node.title), (f"  {node.state}", style)
    )
    branch = parent.add(label)
    for child in node.children:
        _add(branch, child)


# --- research-mcp runs ----------------------------------------------------------------------------

COLUMNS = ("id", "status", "query", "backend", "nodes", "cost", "tokens", "elapsed", "created")
QUERY_CHARS = 48


def _cells(row: RunRow) -> list[str]:
    t = row.totals
    query = row.query if len(row.query) <= QUERY_CHARS else row.query[: QUERY_CHARS - 1] + "…"
    return [
        row.id,
        row.status,
        printable(" ".join(query.split())),
        row.backend,
        f"{t.nodes_done}/{t.nodes_total}",
        f"${t.cost_usd:.4f}",
        str(t.tokens),
        f"{round(t.elapsed_s, 2):.1f}s",
        row.created_at[:19].replace("T", " "),
    ]


def print_runs(rows: Sequence[RunRow], stream: IO[str], *, rich: bool) -> None:
    """A table of runs: rich on a terminal, plain aligned columns otherwise."""
    cells = [_cells(row) for row in rows]
    if rich:
        table = Table(*COLUMNS, header_style="bold")
        for line in cells:
            table.add_row(*(Text(cell) for cell in line), style=_row_style(line[1]))  # no markup
        Console(file=stream, highlight=False).print(table)
        return
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(COLUMNS)]
    for line in [list(COLUMNS), *cells]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip(),
            file=stream,
        )


def _row_style(status: str) -> str:
    return {"partial": "dark_orange", "failed": "red", "cancelled": "magenta", "running": "yellow"}.get(
        status, ""
    )
