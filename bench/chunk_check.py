"""What comparing the corpus chunk vectors with SQLite by identity costs (`sources/chunk_vectors.py`).

Run from the repository root:

    .venv/bin/python -m bench.chunk_check [--chunks 20000]

Builds a store of synthetic documents cut into about `--chunks` chunks, embeds them with the corpus
embedder into a Qdrant Edge folder (both in a temporary folder, removed at the end), then times one
read-only check in a fresh index (its shard loaded by the check, as at a process's first pass): ids
swept from the index, every chunk's text read from SQLite and hashed, each compared with the hash
its vector carries. Bounded: it stops after one check.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.static_embedder import corpus_embedder
from research_mcp.sources.chunk_vectors import check_chunk_vectors, chunk_point
from research_mcp.sources.documents import chunk_spans
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

WORDS = ["tide", "kelp", "reef", "marsh", "glacier", "volcano", "basalt", "coral", "anemone", "estuary"]


def build(folder: Path, chunks: int) -> Store:
    store = Store(folder / "research.db")
    pending: list[tuple[int, str, dict[str, object]]] = []
    with KnowledgeIndex.open(
        path=folder / "vectors", embedder=default_embedder(), chunk_embedder=corpus_embedder()
    ) as index:
        for number in range(max(1, chunks // 4)):  # four paragraphs of about 1,000 characters each
            text = "\n\n".join(
                " ".join(WORDS[(number + paragraph + word) % len(WORDS)] for word in range(170)) + "."
                for paragraph in range(4)
            )
            spans = chunk_spans(text)
            doc_id, _, ids = store.save_corpus_document(
                doc_id=None,
                root="/bench",
                path=f"{number}.md",
                title=f"document {number}",
                text=text,
                content_hash=str(number),
                size=len(text),
                mtime_ns=0,
                spans=spans,
            )
            pending += [
                chunk_point(chunk_id, doc_id, f"document {number}", text[start:end])
                for chunk_id, (start, end) in zip(ids, spans, strict=True)
            ]
            if len(pending) >= 512:
                index.add("chunks", pending)
                pending = []
        index.add("chunks", pending)
        index.optimize("chunks")
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-chunk-check-") as name:
        folder = Path(name)
        started = time.perf_counter()
        store = build(folder, args.chunks)
        built = time.perf_counter() - started
        with KnowledgeIndex.open(
            path=folder / "vectors", embedder=default_embedder(), chunk_embedder=corpus_embedder()
        ) as index:
            started = time.perf_counter()
            drift = check_chunk_vectors(store, index, repair=False)
            checked = time.perf_counter() - started
        store.close()
    print(
        f"{drift.chunks:,} chunks built and embedded in {built:.1f} s; checked in {checked:.2f} s: {drift.describe()}"
    )


if __name__ == "__main__":
    main()
