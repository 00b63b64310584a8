"""research-mcp command line: serve | run | runs | show | export | index | reindex | doctor.

Everything but `serve` is for people at a terminal; `serve` speaks MCP on stdio and logs to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from research_mcp.config import Settings

if TYPE_CHECKING:
    from research_mcp.storage.knowledge import KnowledgeIndex
    from research_mcp.storage.store import Store

__all__ = ["main"]

logger = logging.getLogger("research_mcp")


def connect_hint() -> str:
    """How to add this very server to Claude Code: the absolute path of the running script."""
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else Path("research-mcp")
    command = str(script) if script.name == "research-mcp" and script.exists() else "research-mcp"
    return f"connect it with: claude mcp add research-mcp -- {command} serve"


def _settings() -> Settings:
    try:
        return Settings()
    except ValueError as error:
        raise click.ClickException(f"configuration error: {error}") from None


def backend_line(settings: Settings) -> str:
    """What model backend a session will get, and why."""
    has_key = settings.anthropic_api_key is not None and bool(settings.anthropic_api_key.get_secret_value())
    if settings.model == "auto":
        if has_key:
            return f"anthropic ({settings.anthropic_model}; ANTHROPIC_API_KEY is set)"
        return "auto: sampling when the host supports it, else extractive (no API key set)"
    return f"{settings.model} (RESEARCH_MCP_MODEL={settings.model})"


@click.group()
@click.option("-v", "--verbose", is_flag=True, help="Log debug detail to stderr.")
def main(verbose: bool) -> None:
    """research-mcp: a research team as MCP tools."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )


@main.command()
def serve() -> None:
    """Serve the MCP tools on stdio (what a host runs)."""
    from research_mcp.server.app import create_server

    settings = _settings()
    logger.info(
        "research-mcp: store %s; model %s; %s", settings.database_path, backend_line(settings), connect_hint()
    )
    create_server(settings).run("stdio")


@main.command()
def doctor() -> None:
    """Print the configuration in effect and why."""
    settings = _settings()
    web = "tavily" if settings.tavily_api_key else "not configured (set TAVILY_API_KEY)"
    corpus = ", ".join(str(path) for path in settings.corpus) or "not configured (set RESEARCH_MCP_CORPUS)"
    qdrant = settings.qdrant_url or f"embedded at {settings.qdrant_path}"
    lines = [
        f"data folder:  {settings.home}",
        f"model:        {backend_line(settings)}",
        f"web search:   {web}",
        f"corpus:       {corpus}",
        f"knowledge:    qdrant {qdrant}",
        f"concurrency:  {settings.concurrency} model calls at once",
        connect_hint(),
    ]
    click.echo("\n".join(lines))


@main.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
def index(folder: Path) -> None:
    """Index a folder of documents (md, txt, html, pdf) into the local corpus; only changed files again."""
    from research_mcp.server.app import open_corpus, open_knowledge_index
    from research_mcp.storage.store import Store

    settings = _settings()
    roots = [*settings.corpus, folder.resolve()]
    settings = settings.model_copy(update={"corpus": roots})
    store = Store(settings.database_path)
    knowledge_index = open_knowledge_index(settings)
    try:
        corpus = open_corpus(settings, store, knowledge_index)
        report = corpus.index(folder.resolve())
        click.echo(
            f"{folder}: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
            f"{report.removed} removed; {corpus.document_count()} documents in the corpus"
        )
        for error in report.errors:
            click.echo(f"skipped: {error}", err=True)
        click.echo(f"add it to RESEARCH_MCP_CORPUS so the server searches it: {folder.resolve()}")
    finally:
        knowledge_index.close()
        store.close()


@main.command()
def reindex() -> None:
    """Rebuild the knowledge index (fact and corpus chunk vectors) from the SQLite store."""
    from research_mcp.server.app import open_knowledge_index
    from research_mcp.storage.knowledge_base import KnowledgeBase
    from research_mcp.storage.store import Store

    settings = _settings()
    store = Store(settings.database_path)
    knowledge_index = open_knowledge_index(settings)
    try:
        if not knowledge_index.available:
            raise click.ClickException(
                "the knowledge index cannot be opened (see the warning above): stop the research-mcp "
                "server using this data folder, or start the Qdrant server, and run reindex again."
            )
        facts = KnowledgeBase(store, knowledge_index).reindex_facts()
        chunks = _reindex_chunks(store, knowledge_index)
        click.echo(
            f"knowledge index rebuilt from {settings.database_path}: {facts} facts, {chunks} corpus chunks"
        )
    finally:
        knowledge_index.close()
        store.close()


def _reindex_chunks(store: Store, knowledge_index: KnowledgeIndex) -> int:
    """Re-embed every corpus chunk from SQLite (the corpus module owns how a chunk is embedded)."""
    from research_mcp.sources.corpus import Corpus

    corpus = Corpus(store, [], index=knowledge_index)
    corpus.rebuild_vectors()
    return knowledge_index.count("chunks")


@main.command()
def runs() -> None:
    """List research runs, newest first."""
    from research_mcp.storage.store import Store

    store = Store(_settings().database_path)
    for row in store.db.query(
        "SELECT id, status, backend, created_at, plan_ids FROM runs ORDER BY created_at DESC"
    ):
        click.echo(
            f"{row['id']}  {row['status']:<16} {row['backend']:<10} {row['created_at'][:19]}  {row['plan_ids']}"
        )
    store.close()


@main.command()
@click.argument("ident")
@click.option(
    "--view", default="summary", help="summary, report, sources, facts, confidence, gaps, followups, tree"
)
def show(ident: str, view: str) -> None:
    """Show a view of a run, plan or handoff."""
    from research_mcp.errors import ResearchError
    from research_mcp.reports import view_items
    from research_mcp.storage.store import Store

    store = Store(_settings().database_path)
    try:
        click.echo("\n".join(view_items(store, ident, view)))  # type: ignore[arg-type]
    except ResearchError as error:
        raise click.ClickException(str(error)) from None
    finally:
        store.close()


@main.command()
@click.argument("run_id")
def export(run_id: str) -> None:
    """Print a run's report as Markdown."""
    from research_mcp.errors import ResearchError
    from research_mcp.reports import report_markdown
    from research_mcp.storage.store import Store

    store = Store(_settings().database_path)
    try:
        click.echo(report_markdown(store, run_id))
    except ResearchError as error:
        raise click.ClickException(str(error)) from None
    finally:
        store.close()


@main.command()
@click.argument("query")
@click.option("--wait", default=600.0, help="Seconds to wait for the run.")
def run(query: str, wait: float) -> None:
    """Plan and execute one research query here, and print its report."""
    from mcp import Client

    from research_mcp.server.app import create_server

    async def go() -> str:
        async with Client(create_server(_settings())) as client:
            plan = await client.call_tool("plan_research", {"query": query})
            if plan.is_error or plan.structured_content is None:
                raise click.ClickException(_text(plan))
            click.echo(_text(plan), err=True)
            result = await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 50}
            )
            with anyio.move_on_after(wait):
                while not result.is_error and result.structured_content["status"] in ("pending", "running"):
                    click.echo(_text(result), err=True)
                    run_id = result.structured_content["id"]
                    result = await client.call_tool("execute_plan", {"run_id": run_id, "wait_seconds": 50})
            if result.is_error:
                raise click.ClickException(_text(result))
            page = await client.call_tool(
                "report_results",
                {"id": result.structured_content["id"], "view": "report", "max_tokens": 20000},
            )
            return _text(page)

    click.echo(anyio.run(go))


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
