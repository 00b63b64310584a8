"""A data folder from before Qdrant Edge: its vectors move to the new engine from SQLite, in the
background, without losing a fact or a corpus chunk; an interrupted move goes on where it stopped."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.llm.static_embedder import StaticEmbedder, corpus_embedder
from research_mcp.server.app import create_server
from research_mcp.sources import vector_migration
from research_mcp.sources.corpus import Corpus
from research_mcp.sources.vector_migration import keep_migrating
from research_mcp.storage.healing import heal
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.knowledge.kb import record, source
from tests.sources.test_corpus import CountingEmbedder

STATEMENTS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "Honey bees communicate the direction of food with a waggle dance.",
    "Mount Vesuvius buried Pompeii in 79 AD.",
]
NOTES = {
    "tides.md": "# Tides\n\nSpring tides follow the full and the new moon, when sun and moon pull together.\n",
    "reefs.md": "# Reefs\n\nCoral bleaching follows a marine heatwave that lasts several weeks.\n",
}


def old_data_folder(settings: Settings, notes: Path) -> Store:
    """Facts and corpus chunks in SQLite, vectors only in qdrant-client's local mode (as 0.1 left them)."""
    from qdrant_client import QdrantClient, models

    store = Store(settings.database_path)
    knowledge = KnowledgeBase(store, None)
    for statement in STATEMENTS:
        record(knowledge, source(store, f"text:{statement[:10]}", f"Notes. {statement}"), statement)
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as elsewhere:
        Corpus(store, [notes], index=elsewhere).index()
    legacy = QdrantClient(path=str(settings.legacy_qdrant_path))
    legacy.create_collection(
        "research_mcp_facts_old", vectors_config=models.VectorParams(size=4, distance=models.Distance.COSINE)
    )
    legacy.close()
    return store


async def test_a_server_on_an_old_data_folder_moves_its_vectors_and_removes_the_old_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes"
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(notes))
    monkeypatch.setattr(vector_migration, "CHECK_INTERVAL", 0.05)
    settings = Settings()
    store = old_data_folder(settings, notes)
    chunks = store.corpus_chunk_count()

    async with Client(create_server(model=ScriptedModel(team_script))):
        with anyio.fail_after(60):
            while settings.legacy_qdrant_path.exists():
                await anyio.sleep(0.05)

    with KnowledgeIndex.open(
        path=settings.vectors_path, embedder=default_embedder(), chunk_embedder=corpus_embedder()
    ) as moved:
        assert (moved.count("facts"), moved.count("chunks")) == (3, chunks)
        assert moved.search("facts", "Who built the tower for the World's Fair?", limit=1)[0].payload
        assert [hit.payload["doc_id"] for hit in moved.search("chunks", "coral heatwave", limit=1)]
    store.close()


async def test_an_interrupted_move_embeds_only_what_is_still_missing(tmp_path: Path) -> None:
    settings = Settings()
    store = old_data_folder(settings, tmp_path / "notes")
    facts, chunks = CountingEmbedder(default_embedder()), CountingEmbedder(StaticEmbedder())
    with KnowledgeIndex.open(path=settings.vectors_path, embedder=facts, chunk_embedder=chunks) as index:
        knowledge = KnowledgeBase(store, index)
        [first, *_] = store.known_fact_ids(after=0, limit=10)
        knowledge.merge_or_index([first])  # the move had indexed one fact when it was stopped
        facts.texts = 0
        corpus = Corpus(store, [tmp_path / "notes"], index=index)
        stop = threading.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: keep_migrating(settings.legacy_qdrant_path, knowledge, corpus, stop, interval=0.05)
            )
            await anyio.to_thread.run_sync(lambda: heal(knowledge))
            await anyio.to_thread.run_sync(corpus.index)
            with anyio.fail_after(30):
                while settings.legacy_qdrant_path.exists():
                    await anyio.sleep(0.05)
            stop.set()

        assert facts.texts == 2  # the two facts still missing, not the one already moved
        assert chunks.texts == store.corpus_chunk_count()
        assert (index.count("facts"), index.count("chunks")) == (3, store.corpus_chunk_count())
    store.close()
