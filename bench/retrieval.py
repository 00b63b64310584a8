"""Retrieval quality of the local corpus search on HotpotQA (distractor setting), printed as a table.

Run from the repository root:

    .venv/bin/python -m bench.retrieval [--data PATH]

Method. Every context paragraph of the 50 questions becomes one ``.txt`` document whose file name
is the paragraph's Wikipedia title (HTML entities decoded, characters that are not safe in file
names replaced by ``_``), so the document's title is its file name. A title names one Wikipedia
paragraph, and paragraphs that share a title across questions carry the same text, so they are
written once (the script checks the texts are equal; differing ones would be kept apart with a
numeric suffix). The folder is indexed by the project's own :class:`Corpus` (SQLite FTS5 and
the server's corpus vectors (static MiniLM) in an in-memory Qdrant), and each question is put to ``Corpus.search`` as asked,
with no rewriting, once per ranking: hybrid (BM25 and dense fused by reciprocal rank fusion),
lexical only (BM25) and dense only.

Figures, averaged over the questions:

- within 10: the whole-corpus ranking restricted to the question's own 10 paragraphs (relative
  order kept); recall@k is the share of the 2 gold paragraphs in the first k, MRR the mean of
  1/rank of the first gold paragraph (0 when none is ranked);
- corpus recall@10: the share of the 2 gold paragraphs among the 10 hits of ``search(limit=10)``
  over the whole corpus (s/query is the time of that call).

Nothing in the ranking was fitted to these questions: the RRF constant (60) is the published
default, the chunk sizes, the BM25 title weight (2) and the stopword list are fixed on general
grounds documented in ``research_mcp/sources/ranking.py``.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from research_mcp.llm.static_embedder import corpus_embedder
from research_mcp.sources.corpus import Corpus, SearchMode
from research_mcp.storage.store import Store
from research_mcp.storage.vectors import KnowledgeIndex

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "hotpotqa_dev_distractor_part_a.json"
COMMAND = ".venv/bin/python -m bench.retrieval"
#: label -> (mode, follow_links)
RANKINGS: dict[str, tuple[SearchMode, bool]] = {
    "hybrid": ("hybrid", True),
    "hybrid, no title links": ("hybrid", False),
    "lexical (BM25)": ("lexical", False),
    "dense (static MiniLM)": ("dense", False),
}
_UNSAFE = re.compile(r'[\x00-\x1f/\\:*?"<>|]')


@dataclass(frozen=True)
class Figures:
    recall_at_2: float
    recall_at_4: float
    mrr: float
    corpus_recall_at_10: float
    seconds_per_query: float


def file_stem(title: str) -> str:
    """A file name (without extension) for a Wikipedia title, safe on common file systems."""
    stem = _UNSAFE.sub("_", html.unescape(title)).strip(" .")
    return stem[:150] or "untitled"


@contextmanager
def served_corpus(questions: list[dict[str, Any]]) -> Iterator[dict[tuple[str, str], str]]:
    """The questions' paragraphs written to a temporary corpus folder, and the environment a server
    created inside the block reads: that folder, a temporary home, the extractive backend, and no
    key or Qdrant server of the shell. Yields (title, text) -> relative path."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        paths = write_documents(questions, folder)
        os.environ.update(
            RESEARCH_MCP_HOME=str(Path(tmp) / "home"),
            RESEARCH_MCP_CORPUS=str(folder),
            RESEARCH_MCP_MODEL="extractive",
        )
        for name in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "QDRANT_URL"):
            os.environ.pop(name, None)
        yield paths


def write_documents(questions: list[dict[str, Any]], folder: Path) -> dict[tuple[str, str], str]:
    """Write each distinct paragraph once; return (title, text) -> relative path."""
    paths: dict[tuple[str, str], str] = {}
    used: set[str] = set()
    for question in questions:
        context = question["context"]
        for title, sentences in zip(context["title"], context["sentences"], strict=True):
            key = (title, "".join(sentences))
            if key in paths:
                continue
            stem, n = file_stem(title), 1
            while f"{stem}.txt".lower() in used:  # another title, or another text under this title
                n += 1
                stem = f"{file_stem(title)} ({n})"
            name = f"{stem}.txt"
            used.add(name.lower())
            (folder / name).write_text(key[1], encoding="utf-8")
            paths[key] = name
    return paths


def evaluate(
    corpus: Corpus,
    questions: list[dict[str, Any]],
    paths: dict[tuple[str, str], str],
    mode: SearchMode,
    follow_links: bool,
) -> Figures:
    total = corpus.document_count()
    r2 = r4 = mrr = r10 = seconds = 0.0
    for question in questions:
        context = question["context"]
        own = [paths[(t, "".join(s))] for t, s in zip(context["title"], context["sentences"], strict=True)]
        titles = dict(zip(own, context["title"], strict=True))
        gold = {p for p in own if titles[p] in set(question["supporting_facts"]["title"])}
        # Within 10: the question's paragraphs in the order the whole-corpus ranking gives them.
        everything = corpus.search(question["question"], limit=total, mode=mode, follow_links=follow_links)
        within = [hit.path for hit in everything if hit.path in titles]
        r2 += len(gold & set(within[:2])) / len(gold)
        r4 += len(gold & set(within[:4])) / len(gold)
        mrr += next((1 / rank for rank, p in enumerate(within, start=1) if p in gold), 0.0)
        # Corpus recall@10: exactly what a caller asking for 10 hits gets.
        started = time.perf_counter()
        top = corpus.search(question["question"], limit=10, mode=mode, follow_links=follow_links)
        seconds += time.perf_counter() - started
        r10 += len(gold & {hit.path for hit in top}) / len(gold)
    n = len(questions)
    return Figures(r2 / n, r4 / n, mrr / n, r10 / n, seconds / n)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="HotpotQA JSON (Hugging Face schema)")
    args = parser.parse_args(argv)
    questions = json.loads(args.data.read_text(encoding="utf-8"))

    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        paths = write_documents(questions, folder)
        store = Store(Path(tmp) / "research.db")
        embedder = corpus_embedder()  # as the server embeds corpus chunks
        with KnowledgeIndex.open(location=":memory:", embedder=embedder) as index:
            corpus = Corpus(store, [folder], index=index)
            started = time.perf_counter()
            first = corpus.index()
            index_seconds = time.perf_counter() - started
            started = time.perf_counter()
            second = corpus.index()
            reindex_seconds = time.perf_counter() - started
            figures = {
                label: evaluate(corpus, questions, paths, mode, links)
                for label, (mode, links) in RANKINGS.items()
            }
        store.close()

    print(f"command: {COMMAND}")
    print(
        f"data: {args.data.name}: {len(questions)} questions, {len(paths)} distinct paragraphs as documents"
    )
    print(
        f"index: {first.added} added in {index_seconds:.1f} s (embedder {embedder.name}); "
        f"re-index with nothing changed: {second.unchanged} unchanged, {second.read} read, "
        f"{reindex_seconds:.2f} s"
    )
    if first.errors:
        print(f"index errors: {first.errors}")
    print()
    print(f"{'ranking':<24}{'within 10:  R@2':>16}{'R@4':>7}{'MRR':>7}{'corpus R@10':>13}{'s/query':>9}")
    for label, f in figures.items():
        print(
            f"{label:<24}{f.recall_at_2:>16.3f}{f.recall_at_4:>7.3f}{f.mrr:>7.3f}"
            f"{f.corpus_recall_at_10:>13.3f}{f.seconds_per_query:>9.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
