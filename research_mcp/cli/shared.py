"""What the commands share: the settings (a configuration error is one line), the store, `last` for
the newest run, a run that has no report yet, and a research error as one line that says what to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from research_mcp.core.config import Settings
from research_mcp.core.contracts import FINISHED
from research_mcp.core.errors import ResearchError
from research_mcp.core.redaction import Redactor, redact_logs

if TYPE_CHECKING:
    from research_mcp.storage.store import Store

__all__ = [
    "INTERRUPTED",
    "LAST",
    "needs_report",
    "open_store",
    "resolve_run",
    "settings_or_exit",
    "user_error",
]

INTERRUPTED = 130  # the shell's code for a process stopped by SIGINT


def settings_or_exit() -> Settings:
    try:
        settings = Settings()
    except ValueError as error:
        raise click.ClickException(f"configuration error: {error}") from None
    redact_logs(Redactor.from_settings(settings))  # stderr never shows a configured secret
    return settings


def open_store() -> Store:
    """The store, or one line on stderr (exit 1) saying why it cannot be opened and what to do."""
    from research_mcp.storage.store import Store

    try:
        return Store(settings_or_exit().database_path)
    except ResearchError as error:
        raise user_error(error) from None


def user_error(error: ResearchError) -> click.ClickException:
    """A research error as one line on stderr (exit 1) that says what to do."""
    from research_mcp.core.errors import NotFound

    if isinstance(error, NotFound):
        return click.ClickException(
            f"no {error.kind} with id {error.ident!r}; list the runs and their ids with: research-mcp runs"
        )
    return click.ClickException(" ".join(str(error).split()))


LAST = "last"  # stands for the newest run wherever a run id is asked for


def resolve_run(store: Store, ident: str) -> str:
    """`last` means the newest run; any other id is returned as given."""
    if ident != LAST:
        return ident
    run = store.latest_run()
    if run is None:
        raise click.ClickException('no runs yet; start one with: research-mcp run "your question"')
    return run.id


def needs_report(store: Store, run_id: str) -> None:
    """A run without a report yet: say why, and how to get one."""

    run = store.get_run(run_id)
    if run.status not in FINISHED or not run.result_handoff_id:
        reason = f": {run.error}" if run.error else ""
        raise click.ClickException(
            f"run {run_id} is {run.status}{reason} and has no report yet; "
            f"finish it with: research-mcp run --resume {run_id}"
        )
