"""Corpus chunk vectors never go stale (issue 46, item 3): the indexing pass compares chunk ids and
the hash of each chunk's text with what the index holds, never counts, and `doctor` sees a mismatch.
Real SQLite and a real Qdrant Edge folder under the data folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from research_mcp.cli.main import main
from research_mcp.core.config import Settings
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.static_embedder import StaticEmbedder
from research_mcp.sources.chunk_vectors import FINGERPRINT, ChunkDrift, check_chunk_vectors, fingerprint
from research_mcp.sources.corpus import Corpus
from research_mcp.sources.documents import chunk_spans, embedding_text
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

TOPICS = ["tide pools", "shield volcanoes", "glacier retreat", "coral reefs", "kelp forests", "salt marshes"]


def index_ids(index: KnowledgeIndex) -> set[int]:
    ids: set[int] = set()
    after = None
    while True:
        page, after = index.id_page("chunks", after=after)
        ids.update(page)
        if after is None:
            return ids


def store_ids(store: Store) -> set[int]:
    return {chunk.id for chunk in store.corpus_chunks_after(0, 10_000)}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    for number, topic in enumerate(TOPICS):
        paragraph = (
            f"Note {number} is about {topic}. " + f"The {topic} of this note change with the seasons. " * 12
        )
        (root / f"{number}.md").write_text(f"# {topic}\n\n{paragraph}\n\n{paragraph}\n", encoding="utf-8")
    return root


@pytest.fixture
def settings(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    return Settings()


def open_index(settings: Settings) -> KnowledgeIndex:
    return KnowledgeIndex.open(
        path=settings.vectors_path, embedder=default_embedder(), chunk_embedder=StaticEmbedder()
    )


def indexed(settings: Settings, folder: Path) -> Store:
    store = Store(settings.database_path)
    with open_index(settings) as index:
        Corpus(store, [folder], index=index).index()
    return store


def test_missing_vectors_beside_as_many_of_chunks_gone_are_found_and_repaired(
    settings: Settings, folder: Path
) -> None:
    store = indexed(settings, folder)
    chunks = store_ids(store)
    lost = sorted(chunks)[:3]
    with open_index(settings) as index:
        index.delete("chunks", lost)  # a pass killed before embedding them
        strays = [(10**6 + n, f"a chunk no store holds {n}", {"doc_id": 0}) for n in range(3)]
        index.add("chunks", strays)  # vectors of chunks another process deleted
        assert index.count("chunks") == len(chunks)  # the counts agree: counting saw nothing

        assert check_chunk_vectors(store, index, repair=False) == ChunkDrift(len(chunks), 3, 0, 3)

    with open_index(settings) as index:  # the next process's first pass
        report = Corpus(store, [folder], index=index).index()
        assert report.embedded == 3
        assert index_ids(index) == chunks == store_ids(store)
        assert check_chunk_vectors(store, index, repair=False).in_step
    store.close()


def test_a_vector_of_a_documents_old_text_under_its_new_chunks_id_is_embedded_again(
    settings: Settings, folder: Path
) -> None:
    store = indexed(settings, folder)
    last = max(store.corpus_files(str(folder)), key=lambda row: row.id)  # its chunks end the table
    file = folder / last.path
    text = f"# salt marshes\n\n{'Salt marshes were drained for farmland in the nineteenth century. ' * 30}\n"
    file.write_text(text, encoding="utf-8")
    stat = os.stat(file)
    # What a pass killed between committing the changed document and touching its vectors leaves:
    # the new chunks take the old ones' ids, the old vectors stay under them.
    _, old, new = store.save_corpus_document(
        doc_id=last.id,
        root=str(folder),
        path=last.path,
        title="salt marshes",
        text=text,
        content_hash=last.content_hash + "-changed",
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        spans=chunk_spans(text),
    )
    reused = set(new) & set(old)
    assert reused  # the same ids, other text
    with open_index(settings) as index:
        drift = check_chunk_vectors(store, index, repair=False)
        assert (drift.missing, drift.stale, drift.extra) == (len(set(new) - set(old)), len(reused), 0)

        report = Corpus(store, [folder], index=index).index()

        assert report.embedded == len(new)
        held = index.held_values("chunks", new, FINGERPRINT)
        for chunk in store.corpus_chunks_by_id(new):
            assert held[chunk.id] == fingerprint(embedding_text(chunk.title, chunk.text))
        hits = index.search("chunks", "salt marshes drained for farmland", limit=1)
        assert hits and hits[0].id in new
    store.close()


def test_vectors_made_before_they_carried_their_texts_hash_are_embedded_again_once(
    settings: Settings, folder: Path
) -> None:
    store = indexed(settings, folder)
    chunks = store.corpus_chunks_after(0, 10_000)
    with open_index(settings) as index:  # as an earlier release wrote them: no hash in the payload
        index.add("chunks", [(c.id, embedding_text(c.title, c.text), {"doc_id": c.doc_id}) for c in chunks])
        assert check_chunk_vectors(store, index, repair=False).stale == len(chunks)
    with open_index(settings) as index:
        assert Corpus(store, [folder], index=index).index().embedded == len(chunks)
    with open_index(settings) as index:
        assert Corpus(store, [folder], index=index).index().embedded == 0  # once, not at every start
    store.close()


def test_doctor_names_chunks_whose_vectors_are_missing_or_stale(settings: Settings, folder: Path) -> None:
    store = indexed(settings, folder)
    chunks = sorted(store_ids(store))
    with open_index(settings) as index:
        index.delete("chunks", chunks[:2])
        index.add(
            "chunks", [(chunks[2], "other text", {"doc_id": 0, FINGERPRINT: fingerprint("other text")})]
        )
        index.add("chunks", [(10**6, "gone", {"doc_id": 0}), (10**6 + 1, "gone too", {"doc_id": 0})])
    store.close()

    before = CliRunner().invoke(main, ["doctor"])
    assert (
        f"corpus vectors: 2 of {len(chunks)} corpus chunks without a vector, 1 with a vector of other "
        "text, 2 vectors of chunks gone; the next indexing pass embeds them again"
    ) in before.output, before.output

    assert CliRunner().invoke(main, ["index", str(folder)]).exit_code == 0
    after = CliRunner().invoke(main, ["doctor"])
    assert f"corpus vectors: {len(chunks)} corpus chunks, vectors in step with the store" in after.output


def test_chunks_another_process_changed_are_embedded_by_the_next_rescan_of_a_running_server(
    settings: Settings, folder: Path
) -> None:
    store = Store(settings.database_path)
    with open_index(settings) as index:
        server = Corpus(store, [folder], index=index)
        server.index()  # the server's first pass: in step
        (folder / "0.md").write_text(
            "# tide pools\n\n"
            + "Tide pools were mapped again after the winter storms moved the rocks. " * 25,
            encoding="utf-8",
        )
        # `research-mcp index` while the server holds the knowledge index: the changed note's chunks
        # reach SQLite, their vectors do not (its index is busy: lexical only).
        other = Store(settings.database_path)
        assert Corpus(other, [folder]).index().updated == 1
        other.close()

        rescan = server.index()  # nothing new on disk for the server: the store changed all the same

        assert (rescan.updated, rescan.added) == (0, 0) and rescan.embedded > 0
        assert check_chunk_vectors(store, index, repair=False).in_step
        assert server.index().embedded == 0  # checked once, not at every rescan
    store.close()


def counting_pages(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pages of chunk texts ``store`` is asked for (the comparison reads every chunk through it)."""
    pages: list[int] = []
    read = store.corpus_chunks_after

    def counted(after: int, limit: int) -> list[Any]:
        pages.append(after)
        return read(after, limit)

    monkeypatch.setattr(store, "corpus_chunks_after", counted)
    return pages


def test_a_new_process_on_an_unchanged_corpus_skips_the_comparison_and_still_finds_by_meaning(
    settings: Settings, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(settings, folder).close()  # the first process: embedded, compared, in step
    store = Store(settings.database_path)
    pages = counting_pages(store, monkeypatch)
    with open_index(settings) as index:
        corpus = Corpus(store, [folder], index=index)

        report = corpus.index()  # a new process, nothing changed since

        assert (report.unchanged, report.embedded) == (len(TOPICS), 0)
        assert pages == []  # no chunk text read to compare
        hits = corpus.search("glacier retreat", mode="dense", limit=1)
        assert hits and "glacier retreat" in hits[0].title
        assert check_chunk_vectors(store, index, repair=False).in_step  # and rightly so
    store.close()


#: A process that deletes one chunk vector, as a pass does before it embeds a chunk again, and is
#: killed before the new vector is written (its delete flushed: the worst a kill can leave).
KILLED_MID_WRITE = textwrap.dedent(
    """
    import os, signal, sys
    from research_mcp.llm.embeddings import default_embedder
    from research_mcp.llm.static_embedder import StaticEmbedder
    from research_mcp.storage.vectors import KnowledgeIndex

    index = KnowledgeIndex.open(path=sys.argv[1], embedder=default_embedder(), chunk_embedder=StaticEmbedder())
    index.delete("chunks", [int(sys.argv[2])])
    index.release()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_vector_lost_by_a_process_killed_mid_write_is_embedded_again_by_the_next(
    settings: Settings, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = indexed(settings, folder)
    lost = min(store_ids(store))
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_WRITE, str(settings.vectors_path), str(lost)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    pages = counting_pages(store, monkeypatch)
    with open_index(settings) as index:
        assert lost not in index_ids(index)  # the store is unchanged: only the mark's absence tells

        report = Corpus(store, [folder], index=index).index()

        assert pages and report.embedded == 1
        assert index_ids(index) == store_ids(store)
    pages.clear()
    with open_index(settings) as index:
        assert Corpus(store, [folder], index=index).index().embedded == 0
        assert pages == []  # found in step again, and remembered
    store.close()
