"""research-mcp command line: serve | run | runs | show | export | index | reindex | prune | doctor.

Everything but `serve` is for people at a terminal; `serve` speaks MCP on stdio and logs to stderr.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from research_mcp import __version__
from research_mcp.cli.doctor import backend_line, connect_hint
from research_mcp.core.config import Settings
from research_mcp.core.contracts import FINISHED, RETRYABLE
from research_mcp.core.errors import ResearchError, bounded
from research_mcp.core.ids import kind_of_id
from research_mcp.core.printable import printable
from research_mcp.core.redaction import Redactor, redact_logs

if TYPE_CHECKING:
    from research_mcp.cli.driver import RunRequest
    from research_mcp.storage.store import Store

__all__ = ["main"]

logger = logging.getLogger("research_mcp")

VIEWS = ["summary", "report", "sources", "facts", "confidence", "gaps", "followups", "tree", "handoff"]
INTERRUPTED = 130  # the shell's code for a process stopped by SIGINT


def _settings() -> Settings:
    try:
        settings = Settings()
    except ValueError as error:
        raise click.ClickException(f"configuration error: {error}") from None
    redact_logs(Redactor.from_settings(settings))  # stderr never shows a configured secret
    return settings


class _Commands(click.Group):
    """The command group; Ctrl-C anywhere exits 130, as a shell expects of an interrupted program.
    An error's message (which may quote a run's error, a page or a file name) is made printable, and
    quotes at most 80 characters of any argument it was given (`errors.bounded`)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            message = bounded(printable(error.message), sys.argv[1:])
            setattr(error, "message", message)  # noqa: B010 (Final in click's stubs)
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(INTERRUPTED)


@click.group(cls=_Commands)
@click.version_option(__version__, "-V", "--version", prog_name="research-mcp")
@click.option("-v", "--verbose", is_flag=True, help="Log debug detail to stderr.")
def main(verbose: bool) -> None:
    """research-mcp: a research team as MCP tools."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )


@main.command()
@click.option(
    "--http",
    "http_address",
    metavar="[HOST:]PORT",
    help="Serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio; PORT alone means "
    "127.0.0.1:PORT. Any address but loopback needs RESEARCH_MCP_HTTP_TOKEN.",
)
def serve(http_address: str | None) -> None:
    """Serve the MCP tools on stdio (what a host runs), or over HTTP with --http."""
    from research_mcp.core.memory import limit_heap_arenas
    from research_mcp.server.app import create_server

    limit_heap_arenas()  # a long-lived process: its memory comes back after the work (memory.py)
    settings = _settings()
    if http_address is not None:  # usage errors first, before the data folder is touched
        from research_mcp.server.http import parse_bind, refusal, serve_http

        try:
            bind = parse_bind(http_address)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="'--http'") from None
        problem = refusal(settings, bind)
        if problem is not None:
            click.echo(f"Error: {problem}", err=True)
            sys.exit(2)
    _check_store(settings)
    if http_address is not None:
        logger.info("research-mcp: store %s; model %s", settings.database_path, backend_line(settings))
        serve_http(settings, bind)
        return
    logger.info(
        "research-mcp: store %s; model %s; %s", settings.database_path, backend_line(settings), connect_hint()
    )
    create_server(settings).run("stdio")


def _check_store(settings: Settings) -> None:
    """Open (and migrate) the store once before serving, so a folder that cannot hold it is one line
    saying what to do rather than a traceback from inside the server."""
    from research_mcp.core.errors import ResearchError
    from research_mcp.storage.store import Store

    try:
        Store(settings.database_path).close()
    except ResearchError as error:
        raise click.ClickException(str(error)) from None


@main.command()
def doctor() -> None:
    """Print the configuration in effect and why; exit 1 when it names a problem."""
    from research_mcp.cli.doctor import doctor_problems, doctor_report

    report = printable(doctor_report(_settings()))
    click.echo(report)
    if problems := doctor_problems(report):
        click.echo(
            f"doctor: {problems} problem{'s' if problems > 1 else ''} found (lines starting 'problem:')",
            err=True,
        )
        sys.exit(1)


@main.command()
def reindex() -> None:
    """Rebuild the knowledge index (fact and corpus chunk vectors) from the SQLite store."""
    from research_mcp.cli.doctor import rebuild_knowledge_index

    click.echo(printable(rebuild_knowledge_index(_settings())))


@main.command()
@click.argument("run_ids", nargs=-1, metavar="[RUN_ID]...")
@click.option(
    "--older-than",
    type=click.FloatRange(min=0, min_open=True),
    metavar="DAYS",
    help="Runs finished more than DAYS ago (default: RESEARCH_MCP_RETENTION_DAYS).",
)
@click.option("--dry-run", is_flag=True, help="Name the runs it would delete; delete nothing.")
def prune(run_ids: tuple[str, ...], older_than: float | None, dry_run: bool) -> None:
    """Delete finished runs (by id, `last`, or by age) with their handoffs, events and the facts no
    other run cites, and those facts' vectors."""
    from research_mcp.cli.prune import prune_runs, runs_to_prune

    if run_ids and older_than is not None:
        raise click.UsageError("give run ids or --older-than DAYS, not both")
    settings = _settings()
    if LAST in run_ids:
        store = _open_store()
        try:
            run_ids = tuple(_resolve_run(store, ident) for ident in run_ids)
        finally:
            store.close()
    chosen = runs_to_prune(settings, run_ids, older_than)
    if chosen is None:
        raise click.UsageError("give run ids, or --older-than DAYS, or set RESEARCH_MCP_RETENTION_DAYS")
    if dry_run or not chosen:
        click.echo(f"{len(chosen)} runs to prune{': ' if chosen else ''}{' '.join(chosen)}")
        return
    try:
        lines, refused = prune_runs(settings, chosen)
    except ResearchError as error:
        raise _user_error(error) from None
    click.echo(printable("\n".join([*lines, f"pruned {len(chosen) - refused} of {len(chosen)} runs"])))
    if refused:
        sys.exit(1)


@main.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
def index(folder: Path) -> None:
    """Index a folder of documents (md, txt, rst, html, pdf, text files without a suffix, any gzipped) into
    the local corpus; only changed files again.

    Shows progress; Ctrl-C keeps what was indexed, and running it again goes on from there."""
    from research_mcp.cli.corpus import index_folder

    index_folder(_settings(), folder)


def _open_store() -> Store:
    """The store, or one line on stderr (exit 1) saying why it cannot be opened and what to do."""
    from research_mcp.storage.store import Store

    try:
        return Store(_settings().database_path)
    except ResearchError as error:
        raise _user_error(error) from None


def _user_error(error: ResearchError) -> click.ClickException:
    """A research error as one line on stderr (exit 1) that says what to do."""
    from research_mcp.core.errors import NotFound

    if isinstance(error, NotFound):
        return click.ClickException(
            f"no {error.kind} with id {error.ident!r}; list the runs and their ids with: research-mcp runs"
        )
    return click.ClickException(" ".join(str(error).split()))


LAST = "last"  # stands for the newest run wherever a run id is asked for


def _resolve_run(store: Store, ident: str) -> str:
    """`last` means the newest run; any other id is returned as given."""
    if ident != LAST:
        return ident
    run = store.latest_run()
    if run is None:
        raise click.ClickException('no runs yet; start one with: research-mcp run "your question"')
    return run.id


def _needs_report(store: Store, run_id: str) -> None:
    """A run without a report yet: say why, and how to get one."""

    run = store.get_run(run_id)
    if run.status not in FINISHED or not run.result_handoff_id:
        reason = f": {run.error}" if run.error else ""
        raise click.ClickException(
            f"run {run_id} is {run.status}{reason} and has no report yet; "
            f"finish it with: research-mcp run --resume {run_id}"
        )


@main.command()
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), help="How many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one list) instead of a table.")
def runs(limit: int, as_json: bool) -> None:
    """List recent research runs, newest first."""
    from research_mcp.cli.progress import print_runs
    from research_mcp.runs.snapshot import recent_runs

    store = _open_store()
    try:
        rows = recent_runs(store, limit)
    finally:
        store.close()
    if as_json:
        click.echo(printable(json.dumps([row.as_dict() for row in rows], ensure_ascii=False, indent=2)))
    elif not rows:
        click.echo('no runs yet; start one with: research-mcp run "your question"', err=True)
    else:
        print_runs(rows, sys.stdout, rich=sys.stdout.isatty())


@main.command()
@click.argument("ident")
@click.option("--view", default="summary", show_default=True, type=click.Choice(VIEWS), help="What to show.")
def show(ident: str, view: str) -> None:
    """Show one view of a run, plan or handoff (IDENT `last`: the newest run)."""
    from research_mcp.reports import view_items

    store = _open_store()
    try:
        ident = _resolve_run(store, ident)
        if kind_of_id(ident) == "run" and view not in ("summary", "tree", "handoff"):
            _needs_report(store, ident)
        click.echo(printable("\n".join(view_items(store, ident, view))))  # type: ignore[arg-type]
    except ResearchError as error:
        raise _user_error(error) from None
    finally:
        store.close()


@main.command()
@click.argument("run_id")
@click.option(
    "--format",
    "fmt",
    default="md",
    show_default=True,
    type=click.Choice(["md", "html", "json"]),
    help="md: the report; json: everything; html: one self-contained page.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write here, not to stdout.",
)
def export(run_id: str, fmt: str, output: Path | None) -> None:
    """Export a finished run as Markdown, JSON or a self-contained HTML page (RUN_ID `last`: the newest run)."""
    from research_mcp.cli.exports import export_run

    store = _open_store()
    try:
        run_id = _resolve_run(store, run_id)
        _needs_report(store, run_id)
        text = printable(export_run(store, run_id, fmt))
    except ResearchError as error:
        raise _user_error(error) from None
    finally:
        store.close()
    if output is None:
        click.echo(text)
        return
    try:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as error:
        raise click.ClickException(
            f"cannot write {output}: {error.strerror}; choose another -o path"
        ) from None
    click.echo(f"wrote {output}", err=True)


def _ask_on_terminal(question: str) -> bool:
    """The server's authorization question on stderr (stdout carries the report); yes by default."""
    *lines, last = question.splitlines()
    for line in lines:
        click.echo(line, err=True)
    try:
        return click.confirm(last, default=True, err=True)
    except click.Abort:  # end of input at the prompt: no
        return False


@main.command()
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
    from research_mcp.cli.exports import export_run

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
    store = _open_store()
    try:
        click.echo(printable(export_run(store, run_id, "md")))
    finally:
        store.close()


def _run_settings(corpus: tuple[Path, ...], model: str | None) -> Settings:
    """The settings with `--corpus` folders added and `--model` applied."""
    settings = _settings()
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
    from research_mcp.cli.exports import export_run
    from research_mcp.storage.store import Store

    store = Store(settings.database_path)
    try:
        resume = _resolve_run(store, resume)
        # A partial run is not finished: resuming it retries the parts that failed.
        status = store.get_run(resume).status
        if status in FINISHED and status not in RETRYABLE:  # nothing to run: its report, no server
            click.echo(f"run {resume} had already finished", err=True)
            click.echo(printable(export_run(store, resume, "md")))
            return None
        # The folders it read documents from are searched and read again, --corpus given or not.
        known = {str(path) for path in settings.corpus}
        roots = [Path(root) for root in store.corpus_roots(resume) if root not in known]
        corpus = [*settings.corpus, *(root for root in roots if root.is_dir())]
        return settings.model_copy(update={"corpus": corpus}), resume
    except ResearchError as error:
        raise _user_error(error) from None
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
