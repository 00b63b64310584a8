"""Could Qdrant Edge's own BM25 (sparse vectors with IDF, fused with the dense vectors in the engine)
replace the SQLite FTS5 index the corpus searches today? Both measured on ``bench.retrieval``'s
HotpotQA corpus, with its figures.

Run from the repository root:

    .venv/bin/python -m bench.edge_bm25 [--data PATH]

The corpus is indexed once by the project's ``Corpus`` (FTS5 and the dense chunk vectors); the same
chunks (title and text, as the dense side embeds them) then go into an Edge shard holding a dense
vector and a BM25 sparse vector per chunk (``qdrant_edge.Bm25``: English stemming and stopwords,
k=1.2, b=0.75; ``Modifier.Idf`` on the sparse vector). Rankings, each question asked as written:

- ``FTS5 BM25`` and ``hybrid`` are ``Corpus.search`` as the server runs it (lexical only; and BM25
  with title weight 2 fused with dense by RRF, plus the title links);
- ``Edge BM25``: the sparse query alone; ``Edge hybrid``: sparse and dense prefetched, fused by
  the engine's RRF (k=60, as the corpus fuses).

A chunk ranking becomes a document ranking by each document's best chunk.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.retrieval import DEFAULT_DATA, Figures, evaluate, write_documents
from research_mcp.llm.static_embedder import corpus_embedder
from research_mcp.sources.corpus import Corpus
from research_mcp.sources.indexing import embedding_text
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex


class EdgeLexical:
    """The corpus's chunks in an Edge shard with dense and BM25 vectors; searched like ``Corpus.search``."""

    def __init__(self, corpus: Corpus, store: Store, folder: Path, shard_path: Path) -> None:
        import qdrant_edge as qe

        self.qe = qe
        self.embedder = corpus_embedder()
        self.bm25 = qe.Bm25(qe.Bm25Config(language="english"))
        config = qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=self.embedder.dim, distance=qe.Distance.Cosine)},
            sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        self.shard = qe.EdgeShard.create(str(shard_path), config)
        self.paths: dict[int, str] = {}
        last = 0
        while chunks := store.corpus_chunks_after(last, 256):
            last = chunks[-1].id
            texts = [embedding_text(c.title, c.text) for c in chunks]
            dense = self.embedder.embed(texts)
            points = [
                qe.Point(
                    c.id, {"dense": v.tolist(), "bm25": self.bm25.embed_document(t)}, {"doc_id": c.doc_id}
                )
                for c, t, v in zip(chunks, texts, dense, strict=True)
            ]
            self.shard.update(qe.UpdateOperation.upsert_points(points))
        docs = {c.doc_id for c in _all_chunks(store)}
        info = store.corpus_documents(sorted(docs), [str(folder.resolve())])
        self.paths = {doc_id: doc.path for doc_id, doc in info.items()}
        self.total = len(self.paths)
        self.mode = "bm25"

    def document_count(self) -> int:
        return self.total

    def search(self, query: str, *, limit: int, mode: str, follow_links: bool) -> list[Any]:
        qe = self.qe
        sparse = qe.Query.Nearest(self.bm25.embed_query(query), using="bm25")
        wide = 4 * limit + 40
        if self.mode == "bm25":
            request = qe.QueryRequest(limit=wide, query=sparse, with_payload=True)
        else:
            dense = qe.Query.Nearest(self.embedder.embed([query])[0].tolist(), using="dense")
            request = qe.QueryRequest(
                limit=wide,
                prefetches=[qe.Prefetch(limit=wide, query=sparse), qe.Prefetch(limit=wide, query=dense)],
                query=qe.Fusion.Rrf(k=60),
                with_payload=True,
            )
        seen: list[str] = []
        for point in self.shard.query(request):
            path = self.paths.get(int((point.payload or {})["doc_id"]))
            if path is not None and path not in seen:
                seen.append(path)
        return [_Hit(path) for path in seen[:limit]]


class _Hit:
    def __init__(self, path: str) -> None:
        self.path = path


def _all_chunks(store: Store) -> list[Any]:
    found, last = [], 0
    while chunks := store.corpus_chunks_after(last, 1024):
        found += chunks
        last = chunks[-1].id
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.edge_bm25")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args(argv)
    questions = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="research-mcp-bm25-") as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        paths = write_documents(questions, folder)
        store = Store(Path(tmp) / "research.db")
        with KnowledgeIndex.open(location=":memory:", embedder=corpus_embedder()) as index:
            corpus = Corpus(store, [folder], index=index)
            corpus.index()
            edge = EdgeLexical(corpus, store, folder, Path(tmp) / "shard")
            rows: dict[str, Callable[[], Figures]] = {
                "FTS5 BM25 (today)": lambda: evaluate(corpus, questions, paths, "lexical", False),
                "hybrid (today)": lambda: evaluate(corpus, questions, paths, "hybrid", True),
                "Edge BM25": lambda: evaluate(edge, questions, paths, "lexical", False),  # type: ignore[arg-type]
            }
            figures = {label: run() for label, run in rows.items()}
            edge.mode = "hybrid"
            figures["Edge hybrid (RRF in Edge)"] = evaluate(edge, questions, paths, "hybrid", False)  # type: ignore[arg-type]
            edge.shard.close()
        store.close()
    print(f"command: .venv/bin/python -m bench.edge_bm25; {len(questions)} questions, {len(paths)} documents")
    print(f"{'ranking':<28}{'within 10:  R@2':>16}{'R@4':>7}{'MRR':>7}{'corpus R@10':>13}{'s/query':>9}")
    for label, f in figures.items():
        print(
            f"{label:<28}{f.recall_at_2:>16.3f}{f.recall_at_4:>7.3f}{f.mrr:>7.3f}"
            f"{f.corpus_recall_at_10:>13.3f}{f.seconds_per_query:>9.3f}"
        )


if __name__ == "__main__":
    main()
