"""The local corpus against real SQLite in a temp folder and real Qdrant in memory with MiniLM."""

from __future__ import annotations

import hashlib
import itertools
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from research_mcp.core.contracts import Embedder
from research_mcp.core.errors import InvalidInput, NotFound, SourceError
from research_mcp.llm.embeddings import MiniLMEmbedder, default_embedder
from research_mcp.llm.static_embedder import StaticEmbedder
from research_mcp.sources import indexing
from research_mcp.sources.corpus import (
    Corpus,
    CorpusDocument,
    CorpusHit,
    IndexReport,
    fts_query,
)
from research_mcp.sources.documents import CHUNK_MAX_CHARS, CHUNK_MIN_CHARS, chunk_spans, read_regular_file
from research_mcp.sources.indexing import EMBED_BATCH
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex
from tests.sources import hostile

from .pdf import minimal_pdf

TIDES_MD = """---
tags: [coast]
---
# Tide pools

Tide pools are rocky depressions on the shore that hold seawater when the tide goes out.
They shelter anemones, sea stars and hermit crabs.
"""
VOLCANO_TXT = "Basaltic lava flows spread far from shield volcanoes such as Mauna Loa in Hawaii.\n"
GLACIERS_HTML = """<!doctype html><html><head><title>Glacier retreat</title></head><body><article>
<p>Alpine glaciers have lost a large share of their ice mass since the nineteenth century.</p>
<p>Meltwater from retreating glaciers feeds rivers during dry summers.</p></article></body></html>"""
CPP_MD = "# C++\n\nC++ is a general-purpose programming language created by Bjarne Stroustrup.\n"


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.inner.embed(texts)


#: The folder's files that are no documents by their names, as an index pass counts them (hidden ones are not).
CODE_AND_IMAGE = {".png": 1, ".py": 1}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "tides.md").write_text(TIDES_MD)
    (root / "volcano.txt").write_text(VOLCANO_TXT)
    (root / "glaciers.html").write_text(GLACIERS_HTML)
    (root / "reef.pdf").write_bytes(
        minimal_pdf("Coral bleaching doubled on the reef since 1998", "Reef survey")
    )
    (root / "cpp.md").write_text(CPP_MD)
    # Not documents of the corpus: other types, hidden files and hidden folders.
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "script.py").write_text("print('tide pools')\n")
    (root / ".draft.md").write_text("# Draft\n\nTide pools draft.\n")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "cache.md").write_text("# Cache\n\nTide pools cache.\n")
    return root


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder(default_embedder())


@pytest.fixture
def corpus(store: Store, folder: Path, embedder: CountingEmbedder) -> Iterator[Corpus]:
    with KnowledgeIndex.open(location=":memory:", embedder=embedder) as index:
        yield Corpus(store, [folder], index=index)


def paths(hits: Sequence[CorpusHit]) -> list[str]:
    return [hit.path for hit in hits]


def test_indexing_a_folder_makes_each_document_findable_by_its_topic_with_its_title(corpus: Corpus) -> None:
    report = corpus.index()

    assert report == IndexReport(
        added=5,
        updated=0,
        unchanged=0,
        removed=0,
        errors=[],
        read=5,
        embedded=5,
        not_documents=CODE_AND_IMAGE,
    )
    assert corpus.document_count() == 5
    found = {
        query: (hits[0].path, hits[0].title, hits[0].ref == f"corpus:{hits[0].doc_id}")
        for query in (
            "anemones in rocky pools",
            "lava from shield volcanoes",
            "melting ice",
            "coral bleaching",
        )
        for hits in [corpus.search(query, limit=3)]
    }
    assert found == {
        "anemones in rocky pools": ("notes/tides.md", "Tide pools", True),
        "lava from shield volcanoes": ("volcano.txt", "volcano", True),
        "melting ice": ("glaciers.html", "Glacier retreat", True),
        "coral bleaching": ("reef.pdf", "Reef survey", True),
    }


def test_a_hit_carries_a_snippet_of_the_passage_that_matched(corpus: Corpus) -> None:
    corpus.index()

    (hit,) = corpus.search("hermit crabs", limit=1)

    assert "hermit crabs" in hit.snippet
    assert hit.score > 0


def test_a_document_is_read_by_id_with_its_text_and_content_hash(corpus: Corpus, folder: Path) -> None:
    corpus.index()
    (hit,) = corpus.search("Mauna Loa", limit=1)

    document = corpus.read(hit.doc_id)

    assert document == CorpusDocument(
        doc_id=hit.doc_id,
        ref=hit.ref,
        root=str(folder.resolve()),
        path="volcano.txt",
        title="volcano",
        text=VOLCANO_TXT,
        content_hash=hashlib.sha256(VOLCANO_TXT.encode()).hexdigest(),
    )


def test_reading_an_unknown_document_id_is_not_found(corpus: Corpus) -> None:
    corpus.index()

    with pytest.raises(NotFound, match="corpus:9999"):
        corpus.read(9999)


def test_a_second_index_run_reads_and_embeds_nothing(corpus: Corpus, embedder: CountingEmbedder) -> None:
    corpus.index()
    embedded = embedder.texts

    report = corpus.index()

    assert report == IndexReport(
        added=0, updated=0, unchanged=5, removed=0, errors=[], read=0, not_documents=CODE_AND_IMAGE
    )
    assert embedder.texts == embedded


def test_a_changed_file_alone_is_read_chunked_and_embedded_again(
    corpus: Corpus, folder: Path, embedder: CountingEmbedder
) -> None:
    corpus.index()
    embedded = embedder.texts
    (folder / "volcano.txt").write_text("Pyroclastic flows race down the slopes of stratovolcanoes.\n")

    report = corpus.index()

    assert report == IndexReport(
        added=0,
        updated=1,
        unchanged=4,
        removed=0,
        errors=[],
        read=1,
        embedded=1,
        not_documents=CODE_AND_IMAGE,
    )
    assert embedder.texts == embedded + 1  # the one chunk of the changed file
    assert paths(corpus.search("basaltic", mode="lexical")) == []
    assert paths(corpus.search("pyroclastic", mode="lexical")) == ["volcano.txt"]
    assert paths(corpus.search("pyroclastic flows on a volcano", limit=1, mode="dense")) == ["volcano.txt"]


def test_a_touched_but_unchanged_file_is_read_and_hashed_but_not_embedded_again(
    corpus: Corpus, folder: Path, embedder: CountingEmbedder
) -> None:
    corpus.index()
    embedded = embedder.texts
    volcano = folder / "volcano.txt"
    stat = volcano.stat()
    os.utime(volcano, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))

    touched = corpus.index()
    again = corpus.index()

    assert touched == IndexReport(
        added=0, updated=0, unchanged=5, removed=0, errors=[], read=1, not_documents=CODE_AND_IMAGE
    )
    assert again == IndexReport(
        added=0, updated=0, unchanged=5, removed=0, errors=[], read=0, not_documents=CODE_AND_IMAGE
    )
    assert embedder.texts == embedded


def test_a_deleted_file_leaves_the_index_and_every_search(corpus: Corpus, folder: Path) -> None:
    corpus.index()
    (hit,) = corpus.search("Mauna Loa", limit=1)
    (folder / "volcano.txt").unlink()

    report = corpus.index()

    assert report == IndexReport(
        added=0, updated=0, unchanged=4, removed=1, errors=[], read=0, not_documents=CODE_AND_IMAGE
    )
    assert "volcano.txt" not in paths(corpus.search("basaltic lava Mauna Loa", limit=10))
    assert "volcano.txt" not in paths(corpus.search("basaltic lava Mauna Loa", limit=10, mode="dense"))
    assert paths(corpus.search("basaltic lava Mauna Loa", mode="lexical")) == []
    with pytest.raises(NotFound):
        corpus.read(hit.doc_id)


def test_indexing_one_subfolder_leaves_the_rest_of_the_corpus_alone(corpus: Corpus, folder: Path) -> None:
    corpus.index()
    (folder / "volcano.txt").unlink()
    (folder / "notes" / "waves.md").write_text("# Waves\n\nSwell travels across oceans.\n")

    report = corpus.index(folder / "notes")

    assert report == IndexReport(added=1, updated=0, unchanged=1, removed=0, errors=[], read=1, embedded=1)
    assert corpus.document_count() == 6


def test_vectors_lost_with_the_knowledge_index_are_rebuilt_from_sqlite(store: Store, folder: Path) -> None:
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as first:
        Corpus(store, [folder], index=first).index()
    with KnowledgeIndex.open(location=":memory:", embedder=default_embedder()) as fresh:
        corpus = Corpus(store, [folder], index=fresh)

        report = corpus.index()

        # Not one file read again: the chunks come from SQLite, each embedded once.
        assert report == IndexReport(
            added=0,
            updated=0,
            unchanged=5,
            removed=0,
            errors=[],
            read=0,
            embedded=5,
            not_documents=CODE_AND_IMAGE,
        )
        assert paths(corpus.search("coral bleaching", limit=1, mode="dense")) == ["reef.pdf"]


def test_a_new_chunk_embedder_re_embeds_every_chunk_once_and_drops_the_old_vectors(
    store: Store, folder: Path, tmp_path: Path
) -> None:
    qdrant = tmp_path / "qdrant"
    with KnowledgeIndex.open(path=qdrant, embedder=default_embedder()) as before:
        Corpus(store, [folder], index=before).index()
    chunks = store.corpus_chunk_count()
    static = CountingEmbedder(StaticEmbedder())

    with KnowledgeIndex.open(path=qdrant, embedder=default_embedder(), chunk_embedder=static) as after:
        corpus = Corpus(store, [folder], index=after)
        report = corpus.index()

        # Not one file read again: every chunk comes from SQLite and is embedded once by the new embedder.
        assert report == IndexReport(
            added=0,
            updated=0,
            unchanged=5,
            removed=0,
            errors=[],
            read=0,
            embedded=chunks,
            not_documents=CODE_AND_IMAGE,
        )
        assert static.texts == chunks
        assert paths(corpus.search("coral bleaching", limit=1, mode="dense")) == ["reef.pdf"]
        assert after.count("chunks") == chunks
        assert sorted(meta.stem for meta in qdrant.glob("*.json")) == [
            "research_mcp_chunks_all-MiniLM-L6-v2-static256"
        ]  # the old embedder's collection is dropped
    embedded = static.texts
    with KnowledgeIndex.open(path=qdrant, embedder=default_embedder(), chunk_embedder=static) as again:
        Corpus(store, [folder], index=again).index()

        assert static.texts == embedded  # once, not at every start


def test_re_embedding_reports_its_progress_up_to_every_chunk(store: Store, folder: Path) -> None:
    for n in range(80):  # several EMBED_BATCHes of chunks
        (folder / f"long{n}.txt").write_text(
            ("A sentence about the tides of the northern sea. " * 20 + "\n\n") * 8
        )
    corpus = Corpus(store, [folder], embedder=StaticEmbedder())
    corpus.index()
    total = store.corpus_chunk_count()
    seen: list[tuple[int, int]] = []

    corpus.rebuild_vectors(progress=lambda done, of: seen.append((done, of)))

    assert total > 2 * EMBED_BATCH
    assert seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted({done for done, _ in seen})
    assert all(
        done - earlier <= EMBED_BATCH for (earlier, _), (done, _) in itertools.pairwise([(0, 0), *seen])
    )


def test_without_an_embedder_search_is_lexical(store: Store, folder: Path) -> None:
    corpus = Corpus(store, [folder])
    corpus.index()

    assert paths(corpus.search("anemones", limit=1)) == ["notes/tides.md"]
    assert corpus.search("anemones", mode="dense") == []


def test_search_follows_titles_named_in_the_best_passages_to_the_documents_they_name(
    store: Store, tmp_path: Path
) -> None:
    root = tmp_path / "wiki"
    root.mkdir()
    (root / "Kiss and Tell (1945 film).md").write_text(
        "# Kiss and Tell (1945 film)\n\nKiss and Tell is a 1945 American comedy film starring "
        "then 17-year-old Shirley Temple as Corliss Archer.\n"
    )
    (root / "Shirley Temple.md").write_text(
        "# Shirley Temple\n\nShirley Temple Black was an American actress who later served as "
        "United States Ambassador to Ghana and to Czechoslovakia.\n"
    )
    (root / "Meet Corliss Archer.md").write_text(
        "# Meet Corliss Archer\n\nMeet Corliss Archer is an American radio sitcom about a teenage girl.\n"
    )
    corpus = Corpus(store, [root])
    corpus.index()
    question = "What government position was held by the woman who portrayed Corliss Archer in Kiss and Tell?"

    assert "Shirley Temple.md" not in paths(corpus.search(question, follow_links=False))
    assert "Shirley Temple.md" in paths(corpus.search(question, limit=3))


@pytest.mark.parametrize(
    "query",
    [
        '"C++ (language)?" AND',
        "NEAR(c++",
        "c* OR",
        "title: c++",
        "-c++ ^lang",
        "it's C++'s",
        '"""',
        "AND OR NOT",
    ],
)
def test_user_punctuation_never_breaks_the_full_text_query(corpus: Corpus, query: str) -> None:
    corpus.index()

    hits = corpus.search(query, mode="lexical")

    assert all(hit.path for hit in hits)


def test_a_query_with_punctuation_finds_by_its_words(corpus: Corpus) -> None:
    corpus.index()

    assert paths(corpus.search('"C++ (language)?" AND', limit=1)) == ["cpp.md"]
    assert fts_query('"C++ (language)?" AND') == '"c" OR "language"'
    assert corpus.search("?!", limit=5) == []


@pytest.fixture
def escapes(tmp_path: Path) -> dict[str, Path]:
    """A corpus folder with a symlink out, a file outside it, and a sibling sharing its name's prefix."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "inside.md").write_text("# Inside\n\nOrdinary notes.\n")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nPrivate diary entry.\n")
    (root / "link.md").symlink_to(outside)
    (root / "linked-folder").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "hidden.md").write_text("# Elsewhere\n\nPrivate diary entry.\n")
    sibling = tmp_path / "corpus-secret"
    sibling.mkdir()
    (sibling / "keys.md").write_text("# Keys\n\nPrivate diary entry.\n")
    return {"root": root, "outside": outside, "sibling": sibling}


@pytest.mark.parametrize(
    "escape",
    [
        "../outside.md",
        "notes/../../outside.md",
        "{outside}",
        "link.md",
        "linked-folder/hidden.md",
        "{sibling}/keys.md",
        "../corpus-secret/keys.md",
        "/etc/passwd",
    ],
)
def test_a_path_outside_the_corpus_folders_is_refused(
    store: Store, escapes: dict[str, Path], escape: str
) -> None:
    corpus = Corpus(store, [escapes["root"]])
    path = escape.format(outside=escapes["outside"], sibling=escapes["sibling"])

    with pytest.raises(InvalidInput, match="outside the corpus folders"):
        corpus.resolve(path)


def test_a_path_inside_a_corpus_folder_resolves_to_its_real_location(
    store: Store, escapes: dict[str, Path]
) -> None:
    corpus = Corpus(store, [escapes["root"]])

    assert corpus.resolve("inside.md") == (escapes["root"] / "inside.md").resolve()
    assert (
        corpus.resolve(escapes["root"] / "sub" / ".." / "inside.md")
        == (escapes["root"] / "inside.md").resolve()
    )


def test_indexing_a_folder_outside_the_corpus_is_refused(store: Store, escapes: dict[str, Path]) -> None:
    corpus = Corpus(store, [escapes["root"]])

    with pytest.raises(InvalidInput, match="outside the corpus folders"):
        corpus.index(escapes["sibling"])


def test_the_indexer_skips_symlinks_that_point_out_and_says_so(
    store: Store, escapes: dict[str, Path]
) -> None:
    corpus = Corpus(store, [escapes["root"]])

    report = corpus.index()

    assert (report.added, len(report.errors)) == (1, 2)
    assert all("symlink points outside the corpus folders" in error for error in report.errors)
    assert {Path(error.split(":")[0]).name for error in report.errors} == {"link.md", "linked-folder"}
    assert corpus.search("private diary entry") == []


def test_chunks_are_cut_on_sentence_and_paragraph_ends_within_the_size_bound() -> None:
    sentences = [
        f"Sentence number {i} talks about tide pools and the creatures living in them." for i in range(60)
    ]
    paragraphs = [" ".join(sentences[i : i + 6]) for i in range(0, 30, 6)]  # ~460 characters each
    text = "\n\n".join([*paragraphs, " ".join(sentences[30:])]) + "\n"  # the last one ~2,300 characters

    spans = chunk_spans(text)

    assert all(end - start <= CHUNK_MAX_CHARS for start, end in spans)
    assert all(text[end - 1] == "." for _, end in spans)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
    assert " ".join(text[start:end] for start, end in spans).split() == text.split()
    assert all(end - start >= CHUNK_MIN_CHARS for start, end in spans[:-1])


def test_the_corpus_migration_creates_documents_chunks_and_their_full_text_index(store: Store) -> None:
    assert store.db.table("corpus_documents").columns_dict == {
        "id": int,
        "root": str,
        "path": str,
        "title": str,
        "content_hash": str,
        "size": int,
        "mtime_ns": int,
        "text": str,
        "indexed_at": str,
        "reader_version": int,  # migration 012: a document older readers stored is read again
    }
    # A chunk is its offsets into its document's text (migration 013): its text is not kept twice.
    assert store.db.table("corpus_chunks").columns_dict == {
        "id": int,
        "doc_id": int,
        "ordinal": int,
        "start": int,
        "end": int,
    }
    assert store.db.table("corpus_chunks_fts").exists()


def test_an_unreadable_file_is_reported_and_its_old_version_leaves_the_index(
    corpus: Corpus, folder: Path
) -> None:
    corpus.index()
    (folder / "reef.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF body at all\n")
    (folder / "empty.md").write_text("\n\n")

    report = corpus.index()

    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 4, 1)
    assert [error.split(":")[0] for error in report.errors] == ["reef.pdf"]
    assert paths(corpus.search("coral bleaching", mode="lexical")) == []


def test_without_a_working_embedder_indexing_and_search_go_on_lexically(
    store: Store, folder: Path, tmp_path: Path
) -> None:
    broken = MiniLMEmbedder(model_path=tmp_path / "missing.onnx")
    with KnowledgeIndex.open(location=":memory:", embedder=broken) as index:
        corpus = Corpus(store, [folder], index=index)

        report = corpus.index()

        assert (report.added, [error.split(":")[0] for error in report.errors]) == (5, ["vectors"])
        assert paths(corpus.search("anemones", limit=1)) == ["notes/tides.md"]


def test_a_malformed_pdf_is_skipped_with_its_reason_and_the_other_documents_are_indexed(
    corpus: Corpus, folder: Path
) -> None:
    (folder / "broken.pdf").write_bytes(hostile.unknown_filter_pdf())

    report = corpus.index()

    assert report.added == 5
    [error] = report.errors
    assert error.startswith(
        "broken.pdf: 'broken.pdf' could not be parsed (NotImplementedError: Unsupported filter"
    )
    assert paths(corpus.search("coral bleaching", mode="lexical")) == ["reef.pdf"]


def test_special_files_named_like_documents_are_skipped_with_a_note_and_never_opened(
    corpus: Corpus, folder: Path
) -> None:
    os.mkfifo(folder / "pipe.txt")  # opened for reading, a FIFO blocks until a writer comes
    try:
        os.mknod(folder / "zero.md", 0o644 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: reads never end
        devices = ["zero.md: a character device, not a regular file; skipped"]
    except PermissionError:  # not root: the FIFO alone is checked here
        devices = []
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(folder / "sock.html"))

        report = corpus.index()

    assert report.added == 5
    assert sorted(report.errors) == sorted(
        [
            "pipe.txt: a FIFO (named pipe), not a regular file; skipped",
            "sock.html: a socket, not a regular file; skipped",
            *devices,
        ]
    )


def test_a_file_past_its_size_cap_is_reported_and_not_read(corpus: Corpus, folder: Path) -> None:
    with open(folder / "sparse.txt", "wb") as sparse:  # 10 GB that take no disk space
        sparse.truncate(10 * 2**30)

    report = corpus.index()

    assert report.errors == ["sparse.txt: larger than 10 MB; skipped"]
    assert report.read == 5


def test_a_device_or_fifo_swapped_in_after_the_walk_is_refused_when_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "late.txt")
    with pytest.raises(SourceError, match="a FIFO"):
        read_regular_file(tmp_path / "late.txt", 1000)
    with pytest.raises(SourceError, match="a character device"):
        read_regular_file(Path("/dev/zero"), 1000)
    grown = tmp_path / "grown.txt"
    grown.write_bytes(b"x" * 1001)
    with pytest.raises(SourceError, match="larger than"):
        read_regular_file(grown, 1000)


def test_a_file_that_failed_is_not_read_again_while_unchanged_but_is_once_it_changes(
    corpus: Corpus, store: Store, folder: Path
) -> None:
    """A stalling PDF cost its whole parse timeout (20 s) at every pass, so at every rescan of `serve`
    and every `research-mcp index`."""
    broken = folder / "notes" / "broken.pdf"
    broken.write_bytes(hostile.unknown_filter_pdf())
    first = corpus.index()

    again = corpus.index()
    in_another_process = Corpus(store, [folder]).index()  # what it knows comes from the store

    [failure] = [e for e in first.errors if e.startswith("notes/broken.pdf")]
    assert "could not be parsed" in failure
    assert again.read == 0  # not even read: its size and time are those it failed with
    assert f"{failure} (unchanged since: not read again)" in again.errors
    assert in_another_process.read == 0
    assert f"{failure} (unchanged since: not read again)" in in_another_process.errors

    broken.write_bytes(minimal_pdf("Spring tides follow the new and the full moon.", "Tides"))
    fixed = corpus.index()
    assert (fixed.read, fixed.added) == (1, 1)
    assert not [e for e in fixed.errors if "broken.pdf" in e]
    assert store.corpus_failures(str(folder)) == {}  # nothing left to remember


def test_a_failed_file_is_tried_again_after_an_hour_and_forgotten_when_gone(
    corpus: Corpus, store: Store, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = folder / "broken.pdf"
    broken.write_bytes(hostile.unknown_filter_pdf())
    corpus.index()
    later = time.time() + indexing.RETRY_FAILED_AFTER + 1
    monkeypatch.setattr(indexing.time, "time", lambda: later)

    retried = corpus.index()
    broken.unlink()
    gone = corpus.index()

    assert retried.read == 1  # a parse that timed out on a loaded machine may pass later
    assert not [e for e in gone.errors if "broken.pdf" in e]
    assert store.corpus_failures(str(folder)) == {}


def test_the_words_a_question_asks_about_that_no_document_holds_are_named(
    corpus: Corpus, folder: Path
) -> None:
    (folder / "terms.txt").write_text("The reef survey data is shared under a Creative Commons license.\n")
    corpus.index()

    # "pools" is held as "pool" is; stopwords and numbers are no words here.
    assert corpus.unmentioned("Which crabs do the tide pools shelter in 1998?") == []
    assert corpus.unmentioned("How deep do the tide pools of Mauna Loa freeze?") == ["deep", "freeze"]
    # A spelling the matching knows: "licence" is held by a document saying "license".
    assert corpus.unmentioned("Under which licence is the reef survey data?") == []
    # An identifier is held only as written: its words ("Mauna", "Loa") alone do not hold "Mauna_Loa_lava".
    assert corpus.unmentioned("What is Mauna_Loa_lava for shield volcanoes?") == ["Mauna_Loa_lava"]
    assert corpus.unmentioned("Do lava-pools spread from shield volcanoes?") == ["lava-pools"]
    # A folder's or file's name is where to look, not a word the documents must say.
    assert corpus.unmentioned("Which tides do the notes describe?") == []
    assert corpus.unmentioned("Which glaciers does glaciers.html name?") == []
    assert corpus.unmentioned("Which tides does the corpus describe?") == []


def test_documents_are_stored_in_the_folders_order_whichever_is_read_first(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two files read at once: the second is done first. The index stores them in the walk's order
    anyway, so a folder indexed twice gives its documents the same ids (searches break ties on
    them: the sources a question reads would otherwise change from one index to the next)."""
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a-first.txt").write_text("Tides rise twice a day on most coasts.\n")
    (root / "b-second.txt").write_text("Glaciers carve valleys over thousands of years.\n")
    second_read = threading.Event()
    read = indexing._read

    def first_waits_for_second(item: Any, parser: Any) -> Any:
        if item.rel == "a-first.txt":
            assert second_read.wait(30), "the other reading thread never read the second file"
        reading = read(item, parser)
        if item.rel == "b-second.txt":
            second_read.set()
        return reading

    monkeypatch.setattr(indexing, "_read", first_waits_for_second)
    Corpus(store, [root]).index()

    ids = {state.path: state.id for state in store.corpus_files(str(root))}
    assert ids["a-first.txt"] < ids["b-second.txt"]
