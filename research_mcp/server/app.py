"""The MCP server: long-lived clients built once in the lifespan, tools/resources/prompt wired."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from research_mcp import __version__
from research_mcp.core.config import Settings
from research_mcp.core.errors import ResearchError
from research_mcp.core.printable import PrintableFilter
from research_mcp.core.redaction import RedactingFilter, Redactor, redact_logs, weak_secrets
from research_mcp.llm.base import ModelBackend
from research_mcp.llm.select import choose_backend
from research_mcp.runs.manager import RunManager
from research_mcp.server.context import ServerState
from research_mcp.server.host_log import HostLog
from research_mcp.server.prompts import UnknownPrompts, register_prompts
from research_mcp.server.protocol import BoundedEchoes, UnknownTools, UnpagedLists
from research_mcp.server.pruning import keep_pruned
from research_mcp.server.resources import register_resources
from research_mcp.server.tasks import RunTasks, TaskRequests
from research_mcp.server.tools import build_tools
from research_mcp.server.view import AppsOnly, build_apps, link_view, view_tool
from research_mcp.service import ResearchService
from research_mcp.sources.fetch import SafeFetcher
from research_mcp.sources.library import SourceLibrary
from research_mcp.sources.process_objects import open_corpus, open_knowledge_index, open_parser
from research_mcp.sources.search import WebSearch
from research_mcp.sources.vector_migration import keep_migrating
from research_mcp.sources.watching import keep_indexed
from research_mcp.storage.healing import keep_healed
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store

__all__ = ["create_server", "open_corpus", "open_knowledge_index", "open_parser"]

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "A research team as tools. Use the `research` prompt for how to act as the manager: "
    "plan_research → execute_plan → report_results. Results are small handles; pull detail with report_results."
)


def _backend_chooser(
    config: Settings, model: ModelBackend | None, anthropic: Any
) -> Callable[[Context[Any]], ModelBackend]:
    def choose_model(ctx: Context[Any]) -> ModelBackend:
        if model is not None:
            return model
        return choose_backend(config, ctx=ctx, anthropic=anthropic)

    return choose_model


async def _open_library(
    stack: AsyncExitStack, config: Settings, store: Store, index: Any, redact: Any
) -> SourceLibrary:
    """The sources a run reads: the fetcher, web search and the local corpus, closed with `stack`."""
    parser = open_parser(config)
    stack.callback(parser.close)
    fetcher = SafeFetcher(
        allow=config.fetch_allow, timeout=config.source_timeout, parser=parser, redact=redact
    )
    stack.push_async_callback(fetcher.aclose)
    web = WebSearch.from_settings(config)
    stack.push_async_callback(web.aclose)
    corpus = open_corpus(config, store, index, parser)
    return SourceLibrary(store, fetcher=fetcher, web=web, corpus=corpus, web_max_age=config.web_max_age)


def _keep_in_the_background(
    group: anyio.abc.TaskGroup,
    config: Settings,
    library: SourceLibrary,
    knowledge: KnowledgeBase,
    stops: tuple[threading.Event, threading.Event],
) -> None:
    """Indexing the corpus, healing the facts index, moving an old index, applying the retention."""
    stop_indexing, stop_healing = stops
    corpus = library.corpus
    if corpus is not None:
        # Scanning from now on: a search in the meantime waits to know if the index is whole.
        corpus.progress.scanning()
        rescan = functools.partial(keep_indexed, rescan_seconds=config.corpus_rescan)
        group.start_soon(rescan, corpus, stop_indexing)
    # The facts index is compared with the store and healed in the background, at once and after any
    # indexing failure; the host's first request never waits for it.
    group.start_soon(keep_healed, knowledge, stop_healing)
    if config.qdrant_url is None:
        group.start_soon(keep_migrating, config.legacy_qdrant_path, knowledge, corpus, stop_healing)
    group.start_soon(keep_pruned, knowledge, config.retention_days)


async def _resume_interrupted(
    service: ResearchService, config: Settings, model: ModelBackend | None, anthropic: Any
) -> None:
    """Runs a process now gone left unfinished go on here, without anyone calling execute_plan."""
    try:
        backend = model
        if backend is None:
            backend = await anyio.to_thread.run_sync(
                functools.partial(choose_backend, config, anthropic=anthropic)
            )
        service.resume_interrupted(backend)
    except ResearchError as error:  # no backend without a client, or the store cannot be read
        logger.warning("interrupted runs are not resumed at start: %s", error)


def create_server(settings: Settings | None = None, *, model: ModelBackend | None = None) -> MCPServer[Any]:
    """The research-mcp server. `model` replaces backend choice (tests and benchmarks use a scripted one)."""

    running: list[ResearchService] = []  # the service while the server runs, for static resources
    host_log = HostLog()  # log lines for the clients that set a level

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[ServerState]:
        config = settings or Settings()
        redact = Redactor.from_settings(config)
        store = Store(config.database_path)
        stops = (threading.Event(), threading.Event())  # indexing, healing
        async with AsyncExitStack() as stack:
            stack.callback(redact_logs(redact))  # the last thing undone: logs stay redacted to the end
            host_log.filters = [*([RedactingFilter(redact)] if redact else []), PrintableFilter()]
            logging.getLogger("research_mcp").addHandler(host_log)
            stack.callback(logging.getLogger("research_mcp").removeHandler, host_log)
            for warning in weak_secrets(config):
                logger.warning("%s", warning)
            # Nothing slow before the host's first request is answered: Qdrant connects, and the
            # corpus is indexed, in the background; searches meanwhile use what is indexed.
            index = open_knowledge_index(config, lazy=True)
            stack.callback(index.close)  # after the runs below have stopped
            knowledge = KnowledgeBase(store, index, web_max_age=config.web_max_age)
            library = await _open_library(stack, config, store, index, redact)
            anthropic = None
            if model is None and config.anthropic_key is not None and config.model in ("auto", "anthropic"):
                from research_mcp.llm.anthropic import AnthropicModel

                anthropic = AnthropicModel.from_settings(config)
                stack.push_async_callback(anthropic.aclose)

            async with anyio.create_task_group() as group:
                # Connect now (off the event loop), so this server holds the local folder's lock.
                group.start_soon(anyio.to_thread.run_sync, index.connect)
                _keep_in_the_background(group, config, library, knowledge, stops)
                runs = RunManager(store, group)
                service = ResearchService(
                    settings=config, store=store, sources=library, runs=runs, knowledge=knowledge
                )
                running.append(service)
                group.start_soon(_resume_interrupted, service, config, model, anthropic)
                try:
                    yield ServerState(service, _backend_chooser(config, model, anthropic))
                finally:
                    running.remove(service)
                    for stop in stops:  # a pass or heal ends after the file or batch at hand
                        stop.set()
                    group.cancel_scope.cancel()
        store.close()

    config = settings or Settings()
    tools = [*link_view(build_tools(config.wait_seconds)), view_tool()]
    server: MCPServer[Any] = MCPServer(
        "research-mcp",
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        version=__version__,
        tools=tools,
        # The run view, for hosts that render MCP Apps; runs as protocol tasks, for hosts that send them.
        extensions=[build_apps(), RunTasks()],
        # Other hosts list exactly what they did before the view; a task-augmented call starts a task;
        # no error echoes more than 80 characters of the request; an unknown tool or prompt, or a cursor
        # for an unpaged list, is invalid params; MCP logging for clients whose protocol has it.
        middleware=[
            BoundedEchoes(),
            UnknownTools([tool.name for tool in tools]),
            UnpagedLists(),
            AppsOnly(),
            TaskRequests(),
            UnknownPrompts(),
            host_log,
        ],
    )
    register_resources(server, lambda: running[-1] if running else None)
    register_prompts(server)
    return server
