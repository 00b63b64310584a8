"""Where the corpus search's relevance floor sits: the best cosine of a chunk for on-topic and
off-topic queries, over two corpora.

    .venv/bin/python -m bench.relevance [--data PATH]

1. The repository's own documentation (README, CHANGELOG, SECURITY, BENCHMARKS, docs/*.md),
   asked questions it answers and questions it has nothing on (the zebra migration in the
   Serengeti, as a new user asked it, and others chosen far from software).
2. HotpotQA's paragraphs (the ``bench.retrieval`` corpus), asked its own 50 questions, and the
   same off-topic questions.

For each query it prints the highest cosine between the query and any chunk (what
``Corpus.search(min_similarity=...)`` compares with the floor), then the lowest on-topic and the
highest off-topic score of each corpus, and whether ``RELEVANCE_FLOOR`` separates them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from bench.retrieval import DEFAULT_DATA, write_documents
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.static_embedder import corpus_embedder
from research_mcp.sources.corpus import RELEVANCE_FLOOR, Corpus
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

REPO = Path(__file__).resolve().parents[1]
REPO_DOCS = ["README.md", "CHANGELOG.md", "SECURITY.md", "BENCHMARKS.md", "docs"]
ON_TOPIC_REPO = [
    "how are citations checked against the source text",
    "what does execute_plan return while a run is still going",
    "rebuild the knowledge index from SQLite",
    "configure web search with a Tavily API key",
    "how does the server keep the host's context small",
    "run research from the terminal and export the report",
    "what happens when the model backend is not configured",
    "index a folder of my own documents",
]
OFF_TOPIC = [
    "zebra migration in the Serengeti",
    "how to bake sourdough bread at home",
    "who won the football world cup in 1998",
    "symptoms of vitamin D deficiency",
    "best hiking trails in the Alps",
    "the life cycle of monarch butterflies",
    "how to tune a violin",
    "recipe for a vegetable curry",
]


def best_cosine(corpus: Corpus, index: KnowledgeIndex, query: str) -> float:
    hits = index.search("chunks", query, limit=1, min_score=-1.0)
    return hits[0].score if hits else -1.0


def measure(folder: Path, tmp: Path, on_topic: list[str]) -> tuple[list[float], list[float]]:
    store = Store(tmp / f"{folder.name}.db")
    with KnowledgeIndex.open(
        location=":memory:", embedder=default_embedder(), chunk_embedder=corpus_embedder()
    ) as index:
        corpus = Corpus(store, [folder], index=index)
        corpus.index()
        on = [best_cosine(corpus, index, q) for q in on_topic]
        off = [best_cosine(corpus, index, q) for q in OFF_TOPIC]
    store.close()
    return on, off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="HotpotQA JSON (Hugging Face schema)")
    args = parser.parse_args(argv)
    questions = json.loads(args.data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="research-mcp-relevance-") as name:
        tmp = Path(name)
        docs = tmp / "repo-docs"
        docs.mkdir()
        for entry in REPO_DOCS:
            source = REPO / entry
            if source.is_dir():
                shutil.copytree(source, docs / entry)
            elif source.is_file():
                shutil.copy(source, docs / entry)
        hotpot = tmp / "hotpotqa"
        hotpot.mkdir()
        write_documents(questions, hotpot)
        corpora = {
            "repository docs": measure(docs, tmp, ON_TOPIC_REPO),
            "HotpotQA": measure(hotpot, tmp, [q["question"] for q in questions]),
        }
    print(f"RELEVANCE_FLOOR = {RELEVANCE_FLOOR}")
    for label, (on, off) in corpora.items():
        print(f"\n{label}: best chunk cosine per query")
        print(f"  on-topic  ({len(on)}): lowest {min(on):.3f}, median {sorted(on)[len(on) // 2]:.3f}")
        for query, score in zip(OFF_TOPIC, off, strict=True):
            print(f"  off-topic {score:.3f}  {query}")
        print(
            f"  floor keeps {sum(s >= RELEVANCE_FLOOR for s in on)}/{len(on)} on-topic queries, "
            f"refuses {sum(s < RELEVANCE_FLOOR for s in off)}/{len(off)} off-topic ones"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
