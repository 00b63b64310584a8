"""`research-mcp run`: plan and execute one query with live progress on stderr and the report on stdout;
resume a run; on a terminal, ask before starting."""

from __future__ import annotations

import logging
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from research_mcp.cli.shared import INTERRUPTED, open_store, resolve_run, settings_or_exit, user_error
from research_mcp.core.config import Settings
from research_mcp.core.contracts import FINISHED, RETRYABLE
from research_mcp.core.errors import ResearchError
from research_mcp.core.printable import printable

if TYPE_CHECKING:
    from research_mcp.cli.driver import RunRequest

__all__ = ["run"]


def _ask_on_terminal(question: str) -> bool:
    """The server's authorization question on stderr (stdout carries the report); yes by default."""
    *lines, last = question.splitlines()
    for line in lines:
        click.echo(line, err=True)
    try:
        return click.confirm(last, default=True, err=True)
    except click.Abort:  # end of input at the prompt: no
        return False


@click.command()
@click.argument("query", required=False)
@click.option(
    "--resume",
    "resume",
    metavar="RUN_ID",
    help="Resume this cancelled, failed or partial run (or `last`); done nodes are kept.",
)
@click.option(
    "--corpus",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A folder of documents to search too (repeatable).",
)
@click.option("--max-tokens", type=click.IntRange(min=1), help="Budget: model tokens in and out.")
@click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), help="Budget: USD.")
@click.option(
    "--max-seconds", type=click.FloatRange(min=0, min_open=True), help="Budget: wall-clock seconds."
)
@click.option("--max-sources", type=click.IntRange(min=1), help="Budget: sources read.")
@click.option(
    "--model",
    type=click.Choice(["auto", "anthropic", "sampling", "extractive"]),
    help="Model backend (default: RESEARCH_MCP_MODEL, else auto).",
)
@click.option("--yes", "-y", is_flag=True, help="Start the run without asking (never asked off a terminal).")
def run(
    query: str | None,
    resume: str | None,
    corpus: tuple[Path, ...],
    max_tokens: int | None,
    max_cost: float | None,
    max_seconds: float | None,
    max_sources: int | None,
    model: str | None,
    yes: bool,
) -> None:
    """Plan and execute one research query with live progress on stderr; print the report on stdout.

    On a terminal the plan (leaves, estimate, scope warning) is shown and the run starts on your yes.

    Ctrl-C cancels the run (exit 130); resume it with --resume RUN_ID.
    """
    from research_mcp.cli.driver import RunRequest
    from research_mcp.reports import report_markdown  # export_run's "md", without its HTML renderer

    budget = {
        key: value
        for key, value in {
            "max_tokens": max_tokens,
            "max_cost_usd": max_cost,
            "max_seconds": max_seconds,
            "max_sources": max_sources,
        }.items()
        if value is not None
    }
    if (query is None) == (resume is None):
        raise click.UsageError('give a question, or --resume RUN_ID (not both): research-mcp run "question"')
    if resume is not None and budget:
        raise click.UsageError("a resumed run keeps the budget it started with; drop the --max-* options")
    if not click.get_current_context().find_root().params.get("verbose"):
        logging.getLogger().setLevel(logging.WARNING)  # the progress view says what the info log would
    settings = _run_settings(corpus, model)
    if resume is not None:
        resumed = _resumed(settings, resume)
        if resumed is None:
            return
        settings, resume = resumed
    asks = not yes and sys.stdin.isatty() and settings.ask_before_run
    request = RunRequest(
        query=query, resume=resume, budget=budget or None, confirm=_ask_on_terminal if asks else None
    )
    run_id = _say_how_it_ended(_drive(settings, request, corpus))
    store = open_store()
    try:
        click.echo(printable(report_markdown(store, run_id)))
    finally:
        store.close()


def _run_settings(corpus: tuple[Path, ...], model: str | None) -> Settings:
    """The settings with `--corpus` folders added and `--model` applied."""
    settings = settings_or_exit()
    updates: dict[str, Any] = {"corpus": [*settings.corpus, *(path.resolve() for path in corpus)]}
    if model is not None:
        updates["model"] = model
    settings = settings.model_copy(update=updates)
    if settings.model == "sampling":
        raise click.ClickException(
            "the sampling backend borrows an MCP host's model, and a terminal has none; "
            "use --model anthropic (with ANTHROPIC_API_KEY) or --model extractive"
        )
    return settings


def _resumed(settings: Settings, resume: str) -> tuple[Settings, str] | None:
    """The run to resume, with the folders it read added to the settings; None when it had already
    finished (its report is then printed)."""
    from research_mcp.reports import report_markdown
    from research_mcp.storage.store import Store

    store = Store(settings.database_path)
    try:
        resume = resolve_run(store, resume)
        # A partial run is not finished: resuming it retries the parts that failed.
        status = store.get_run(resume).status
        if status in FINISHED and status not in RETRYABLE:  # nothing to run: its report, no server
            click.echo(f"run {resume} had already finished", err=True)
            click.echo(printable(report_markdown(store, resume)))
            return None
        # The folders it read documents from are searched and read again, --corpus given or not.
        known = {str(path) for path in settings.corpus}
        roots = [Path(root) for root in store.corpus_roots(resume) if root not in known]
        corpus = [*settings.corpus, *(root for root in roots if root.is_dir())]
        return settings.model_copy(update={"corpus": corpus}), resume
    except ResearchError as error:
        raise user_error(error) from None
    finally:
        store.close()


def _drive(settings: Settings, request: RunRequest, corpus: tuple[Path, ...]) -> dict[str, Any]:
    """The run driven to its end with live progress; its final handle. Ctrl-C exits 130 at once."""
    from research_mcp.cli.driver import Interrupted, RunFailed, drive
    from research_mcp.cli.progress import LiveProgress

    try:
        with LiveProgress(settings.database_path) as progress:
            return anyio.run(drive, settings, request, progress)
    except Interrupted as stop:
        if stop.run_id is None:
            click.echo("interrupted before the run started; nothing to resume.", err=True)
        else:
            folders = "".join(f" --corpus {shlex.quote(str(path))}" for path in corpus)
            click.echo(
                f"interrupted: run {stop.run_id} {stop.status or 'cancelled'}. "
                f"Resume it with: research-mcp run --resume {stop.run_id}{folders}",
                err=True,
            )
        # The run is recorded and the store closed; worker threads that cannot be interrupted (a model
        # still loading, abandoned embedding work) would otherwise hold the exit for seconds.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED)
    except RunFailed as failure:
        raise click.ClickException(" ".join(str(failure).split())) from None


def _say_how_it_ended(handle: dict[str, Any]) -> str:
    """The run's id once it has a report; a run without one is an error saying what to do."""
    run_id = str(handle["id"])
    if handle["status"] not in FINISHED:
        summary = " ".join(handle["summary"][:1])
        raise click.ClickException(
            f"run {run_id} {handle['status']} ({summary}); fix the cause, then: research-mcp run --resume {run_id}"
        )
    if handle["status"] == "no_sources":  # exit 1: an empty report is not an answer
        raise click.ClickException(f"run {run_id}: {handle['summary'][0]}")
    if handle["status"] == "budget_exhausted":
        click.echo(f"run {run_id}: the budget ran out; the report below is partial.", err=True)
    if handle["status"] == "partial":
        click.echo(
            f"run {run_id}: some parts failed; the report below names them under 'Not covered (failed)'. "
            f"Retry only them with: research-mcp run --resume {run_id}",
            err=True,
        )
    return run_id
