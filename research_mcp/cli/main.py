"""research-mcp command line: serve | run | runs | show | export | index | reindex | prune | doctor.

Everything but `serve` is for people at a terminal; `serve` speaks MCP on stdio and logs to stderr.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import click

from research_mcp import __version__
from research_mcp.cli.doctor import backend_line, connect_hint
from research_mcp.cli.run_command import run
from research_mcp.cli.shared import (
    INTERRUPTED,
    LAST,
    needs_report,
    open_store,
    resolve_run,
    settings_or_exit,
    user_error,
)
from research_mcp.core.config import Settings
from research_mcp.core.errors import ResearchError, bounded
from research_mcp.core.ids import kind_of_id
from research_mcp.core.printable import printable

__all__ = ["main"]

logger = logging.getLogger("research_mcp")

VIEWS = ["summary", "report", "sources", "facts", "confidence", "gaps", "followups", "tree", "handoff"]


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
    settings = settings_or_exit()
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

    report = printable(doctor_report(settings_or_exit()))
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

    click.echo(printable(rebuild_knowledge_index(settings_or_exit())))


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
    settings = settings_or_exit()
    if LAST in run_ids:
        store = open_store()
        try:
            run_ids = tuple(resolve_run(store, ident) for ident in run_ids)
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
        raise user_error(error) from None
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

    index_folder(settings_or_exit(), folder)


@main.command()
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), help="How many runs.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one list) instead of a table.")
def runs(limit: int, as_json: bool) -> None:
    """List recent research runs, newest first."""
    from research_mcp.cli.progress import print_runs
    from research_mcp.runs.snapshot import recent_runs

    store = open_store()
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

    store = open_store()
    try:
        ident = resolve_run(store, ident)
        if kind_of_id(ident) == "run" and view not in ("summary", "tree", "handoff"):
            needs_report(store, ident)
        click.echo(printable("\n".join(view_items(store, ident, view))))  # type: ignore[arg-type]
    except ResearchError as error:
        raise user_error(error) from None
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

    store = open_store()
    try:
        run_id = resolve_run(store, run_id)
        needs_report(store, run_id)
        text = printable(export_run(store, run_id, fmt))
    except ResearchError as error:
        raise user_error(error) from None
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


main.add_command(run)
