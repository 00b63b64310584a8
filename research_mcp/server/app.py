"""The MCP server: long-lived clients built once in the lifespan, tools/resources/prompt wired."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from research_mcp import __version__
from research_mcp.config import Settings
from research_mcp.errors import StoreError
from research_mcp.llm.base import ModelBackend
from research_mcp.llm.embeddings import corpus_embedder, default_embedder
from research_mcp.llm.select import choose_backend
from research_mcp.redaction import Redactor, redact_logs
from research_mcp.runs.manager import RunManager
from research_mcp.server.context import ServerState
from research_mcp.server.prompts import UnknownPrompts, register_prompts
from research_mcp.server.resources import register_resources
from research_mcp.server.tasks import RunTasks, TaskRequests
from research_mcp.server.tools import build_tools
from research_mcp.server.view import AppsOnly, build_apps, link_view
from research_mcp.service import ResearchService
from research_mcp.sources.fetch import SafeFetcher
from research_mcp.sources.library import SourceLibrary
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.search import WebSearch
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

__all__ = ["create_server"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "A research team as tools. Use the `research` prompt for how to act as the manager: "
    "plan_research → execute_plan → report_results. Results are small handles; pull detail with report_results."
)


def open_knowledge_index(settings: Settings) -> KnowledgeIndex:
    """The process's one knowledge index: a Qdrant server at QDRANT_URL, else embedded under the data
    folder. Never raises for an unavailable Qdrant (the index is then a no-op, with one warning)."""
    return KnowledgeIndex.open(
        path=settings.qdrant_path,
        url=settings.qdrant_url,
        api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
        embedder=default_embedder(),
        chunk_embedder=corpus_embedder(),
    )


def open_parser(settings: Settings) -> DocumentParser:
    """The process's document parser: HTML and PDF parsed in worker processes, each document within
    the source timeout. Parsing is CPU-bound, so there are no more workers than cores (nor than the
    configured concurrency)."""
    return DocumentParser(
        timeout=settings.source_timeout, max_workers=max(1, min(settings.concurrency, os.cpu_count() or 1))
    )


def open_corpus(settings: Settings, store: Store, index: KnowledgeIndex, parser: DocumentParser) -> Any:
    """The local corpus over RESEARCH_MCP_CORPUS (indexed incrementally at start), or None."""
    if not settings.corpus:
        return None
    from research_mcp.sources.corpus import Corpus

    return Corpus(store, settings.corpus, index=index, parser=parser)


def bring_corpus_up_to_date(corpus: Any) -> None:
    """Index the corpus at start. A file that cannot be read is skipped with a note; a store that
    cannot be written (a read-only or full data folder) leaves the index as it was, said on stderr,
    and the server starts all the same: searches find what was indexed before."""
    try:
        report = corpus.index()
    except StoreError as err:
        logger.warning(
            "corpus index not updated, searches use it as it was (it may be stale or empty): %s",
            " ".join(str(err).split()),
        )
        return
    for error in report.errors:
        logger.warning("corpus: %s", error)
    logger.info(
        "corpus: %d documents (%d new or changed)", corpus.document_count(), report.added + report.updated
    )


def create_server(settings: Settings | None = None, *, model: ModelBackend | None = None) -> MCPServer[Any]:
    """The research-mcp server. `model` replaces backend choice (tests and benchmarks use a scripted one)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[ServerState]:
        config = settings or Settings()
        redact = Redactor.from_settings(config)
        store = Store(config.database_path)
        async with AsyncExitStack() as stack:
            stack.callback(redact_logs(redact))  # the last thing undone: logs stay redacted to the end
            index = await anyio.to_thread.run_sync(open_knowledge_index, config)
            stack.callback(index.close)  # after the runs below have stopped
            knowledge = KnowledgeBase(store, index, web_max_age=config.web_max_age)
            parser = open_parser(config)
            stack.callback(parser.close)
            fetcher = SafeFetcher(
                allow=config.fetch_allow, timeout=config.source_timeout, parser=parser, redact=redact
            )
            stack.push_async_callback(fetcher.aclose)
            web = WebSearch.from_settings(config)
            stack.push_async_callback(web.aclose)
            corpus = open_corpus(config, store, index, parser)
            if corpus is not None:
                await anyio.to_thread.run_sync(bring_corpus_up_to_date, corpus)
            library = SourceLibrary(
                store, fetcher=fetcher, web=web, corpus=corpus, web_max_age=config.web_max_age
            )

            anthropic = None
            if model is None and config.anthropic_key is not None and config.model in ("auto", "anthropic"):
                from research_mcp.llm.anthropic import AnthropicModel

                anthropic = AnthropicModel.from_settings(config)
                stack.push_async_callback(anthropic.aclose)

            def choose_model(ctx: Context[Any]) -> ModelBackend:
                if model is not None:
                    return model
                return choose_backend(config, ctx=ctx, anthropic=anthropic)

            async with anyio.create_task_group() as group:
                # Abandoned on shutdown: a Ctrl-C in the first seconds does not wait for the model to load.
                group.start_soon(partial(anyio.to_thread.run_sync, knowledge.warm_up, abandon_on_cancel=True))
                service = ResearchService(
                    settings=config,
                    store=store,
                    sources=library,
                    runs=RunManager(store, group),
                    knowledge=knowledge,
                )
                try:
                    yield ServerState(service, choose_model)
                finally:
                    group.cancel_scope.cancel()
        store.close()

    server: MCPServer[Any] = MCPServer(
        "research-mcp",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        version=__version__,
        tools=link_view(build_tools()),
        # The run view, for hosts that render MCP Apps; runs as protocol tasks, for hosts that send them.
        extensions=[build_apps(), RunTasks()],
        # Other hosts list exactly what they did before the view; a task-augmented call starts a task;
        # an unknown prompt is invalid params.
        middleware=[AppsOnly(), TaskRequests(), UnknownPrompts()],
    )
    register_resources(server)
    register_prompts(server)
    return server
