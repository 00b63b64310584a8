"""The corpus at the terminal: `research-mcp index` with a progress bar, and what `doctor` checks.

On a terminal, indexing shows a rich progress bar (documents, then vectors, with the time left);
anywhere else it prints the status line every few seconds, so a log stays readable. Ctrl-C stops
it: every document committed so far is kept, and the next `index` goes on from there.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import click

from research_mcp.core.config import Settings
from research_mcp.core.printable import printable
from research_mcp.sources.index_progress import CorpusStatus, IndexProgress, IndexReport

__all__ = ["corpus_problems", "doctor_lines", "index_folder"]

#: Seconds between the status lines printed when stderr is not a terminal.
PLAIN_EVERY_S = 5.0


def index_folder(settings: Settings, folder: Path, *, stream: IO[str] | None = None) -> None:
    """Index ``folder`` into the corpus of ``settings``, showing progress on ``stream`` (stderr)."""
    from research_mcp.core.errors import ResearchError
    from research_mcp.sources.process_objects import open_corpus, open_knowledge_index, open_parser
    from research_mcp.storage.store import Store

    stream = stream or sys.stderr
    roots = [*settings.corpus, folder.resolve()]
    settings = settings.model_copy(update={"corpus": roots})
    store = Store(settings.database_path)
    knowledge_index = open_knowledge_index(settings)
    parser = open_parser(settings)
    try:
        corpus = open_corpus(settings, store, knowledge_index, parser)
        try:
            report = _with_progress(
                lambda progress: corpus.index(folder.resolve(), progress=progress),
                stream,
                known=corpus.document_count(),
            )
        except ResearchError as failure:  # a store that cannot be written: one line, not a traceback
            raise click.ClickException(" ".join(str(failure).split())) from None
        except KeyboardInterrupt:
            click.echo(
                f"interrupted: {corpus.document_count()} documents indexed so far are kept; "
                f"run the same command again to go on from there",
                err=True,
            )
            raise
        click.echo(
            printable(
                f"{folder}: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
                f"{report.removed} removed; {corpus.document_count()} documents in the corpus; "
                f"{report.embedded} chunks embedded"
            )
        )
        for error in report.errors:
            click.echo(printable(f"skipped: {error}"), err=True)
        if (skipped := report.skipped_line()) is not None:
            click.echo(printable(skipped), err=True)
        click.echo(printable(f"add it to RESEARCH_MCP_CORPUS so the server searches it: {folder.resolve()}"))
    finally:
        parser.close()
        knowledge_index.close()
        store.close()


def _with_progress(
    run: Callable[[IndexProgress], IndexReport], stream: IO[str], *, known: int = 0
) -> IndexReport:
    """``run(progress)``, its progress shown as a bar on a terminal, as a line every few seconds elsewhere;
    ``known``: documents indexed before, searchable meanwhile."""
    if not stream.isatty():
        shown = [0.0]

        def plain(status: CorpusStatus) -> None:
            if time.monotonic() - shown[0] >= PLAIN_EVERY_S or status.phase in ("ready", "stopped"):
                shown[0] = time.monotonic()
                print(printable(status.line()), file=stream, flush=True)

        return run(IndexProgress(plain, known=known))

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=stream),
        transient=False,
    )
    tasks: dict[str, TaskID] = {}

    def show(status: CorpusStatus) -> None:
        if status.phase == "reading":
            if "documents" not in tasks:
                tasks["documents"] = bar.add_task("documents", total=status.documents_total)
            bar.update(tasks["documents"], completed=status.documents_indexed)
        elif status.phase == "embedding":
            if "vectors" not in tasks:
                tasks["vectors"] = bar.add_task("vectors", total=status.chunks_to_embed)
            bar.update(tasks["vectors"], completed=status.chunks_embedded)

    with bar:
        return run(IndexProgress(show, known=known))


def doctor_lines(settings: Settings) -> list[str]:
    """What `doctor` says about the corpus: the index's state, then each folder's problem and its fix."""
    if not settings.corpus:
        return []
    from research_mcp.core.errors import ResearchError
    from research_mcp.storage.store import Store

    roots = [str(Path(folder).expanduser().resolve()) for folder in settings.corpus]
    try:
        store = Store(settings.database_path)
    except ResearchError as error:
        return [f"corpus index: cannot be read ({' '.join(str(error).split())})"]
    try:
        count, _, last = store.corpus_titles_version(roots)  # documents, newest id, last indexed
    finally:
        store.close()
    state = (
        f"corpus index: {count:,} documents, last indexed {str(last)[:19].replace('T', ' ')} UTC"
        if count
        else "corpus index: empty (the server indexes the folders when it starts; or run: research-mcp index FOLDER)"
    )
    return [state, *(f"  problem: {problem}" for problem in corpus_problems(settings))]


def corpus_problems(settings: Settings) -> list[str]:
    """What leaves the configured corpus with nothing to search, each with how to fix it."""
    from research_mcp.sources.folders import SUFFIXES

    problems = []
    for folder in settings.corpus:
        path = Path(folder).expanduser()
        if not path.exists():
            problems.append(
                f"{path}: no such folder; create it, or fix RESEARCH_MCP_CORPUS (folders separated by {os.pathsep!r})"
            )
        elif not path.is_dir():
            problems.append(f"{path}: not a folder; RESEARCH_MCP_CORPUS takes folders, not files")
        elif not os.access(path, os.R_OK | os.X_OK):
            problems.append(f"{path}: cannot be read by this user; fix its permissions (chmod u+rx)")
        elif not _holds_documents(path):
            problems.append(
                f"{path}: holds no documents research-mcp reads ({', '.join(sorted(SUFFIXES))}, or text "
                "files named without a suffix, any of them gzipped); "
                "add some, or point RESEARCH_MCP_CORPUS at the folder that has them"
            )
    return problems


def _holds_documents(folder: Path) -> bool:
    from research_mcp.sources.folders import document_name, sniff_text_file

    for here, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            named = document_name(name)
            if named is not None and (
                not named.sniffed or sniff_text_file(Path(here) / name, gzipped=named.gzipped)
            ):
                return True
    return False
