"""The process's long-lived corpus and index objects, opened from the settings: shared by the server's
lifespan and the CLI commands that need no server (``index``, ``doctor``, ``reindex``), which so
import neither the MCP SDK nor the research roles."""

from __future__ import annotations

import os
from typing import Any

from research_mcp.core.config import Settings
from research_mcp.sources.parsing import DocumentParser
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

__all__ = ["open_corpus", "open_knowledge_index", "open_parser"]


def open_knowledge_index(settings: Settings, *, lazy: bool = False) -> KnowledgeIndex:
    """The process's one knowledge index: a Qdrant server at QDRANT_URL, else Qdrant Edge embedded under
    the data folder. Never raises for an unavailable Qdrant (the index is then a no-op, with one
    warning). ``lazy`` defers the connection (and importing the engine) to first use."""
    from research_mcp.llm.embeddings import default_embedder
    from research_mcp.llm.static_embedder import corpus_embedder

    return KnowledgeIndex.open(
        path=settings.vectors_path,
        url=settings.qdrant_url,
        api_key=settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None,
        embedder=default_embedder(),
        chunk_embedder=corpus_embedder(),
        lazy=lazy,
        wait=settings.index_wait,
    )


def open_parser(settings: Settings) -> DocumentParser:
    """The process's document parser: HTML and PDF parsed in worker processes, each document within
    the source timeout. Parsing is CPU-bound, so there are no more workers than cores (nor than the
    configured concurrency)."""
    return DocumentParser(
        timeout=settings.source_timeout, max_workers=max(1, min(settings.concurrency, os.cpu_count() or 1))
    )


def open_corpus(settings: Settings, store: Store, index: KnowledgeIndex, parser: DocumentParser) -> Any:
    """The local corpus over RESEARCH_MCP_CORPUS (the server indexes it in the background), or None."""
    if not settings.corpus:
        return None
    from research_mcp.sources.corpus import Corpus

    return Corpus(store, settings.corpus, index=index, parser=parser)
