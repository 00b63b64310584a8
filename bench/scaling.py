"""How corpus indexing and search scale: corpora of about 1k, 10k and 50k chunks, as a table.

Run from the repository root:

    .venv/bin/python -m bench.scaling [--sizes 1000 10000 50000] [--data PATH]

Corpus. The 50 HotpotQA questions' 491 paragraphs, one document each (as ``bench.retrieval`` writes
them), are the documents the questions are about; around them, generated documents fill the corpus
to the size asked: each one ~5,000 characters of paragraphs of HotpotQA sentences drawn at random
(seeded) from the whole set, so they use the same vocabulary and compete for the same words, under
a title of their own ("Notes 123"). Files are written to a temporary folder first, then indexed.

Each size runs in its own process, as ``research-mcp index`` would: the server's own ``Corpus``
over SQLite (FTS5) and the embedded Qdrant in a folder, chunks embedded by the server's corpus
embedder. Figures:

- index s, chunks/s: the wall time of ``Corpus.index()`` (read, chunk, store, embed, upsert);
- peak MB: the indexing process's peak resident memory (VmHWM), and its RSS before indexing;
- p50 / p99 ms: ``Corpus.search(question, limit=10)`` (hybrid), each question three times;
- R@10: the share of each question's 2 gold paragraphs among those 10 hits, averaged.

The load average is printed with each row: this machine is shared, and wall times follow it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.retrieval import DEFAULT_DATA, write_documents

COMMAND = ".venv/bin/python -m bench.scaling"
SIZES = (1_000, 10_000, 50_000)
DOC_CHARS = 5_000
QUERY_ROUNDS = 3


def build_corpus(questions: list[dict[str, Any]], folder: Path, chunks: int, seed: int = 14) -> int:
    """Write the gold paragraphs and enough generated documents for about ``chunks`` chunks; return the count."""
    from research_mcp.sources.documents import chunk_spans

    write_documents(questions, folder)
    total = sum(len(chunk_spans(path.read_text(encoding="utf-8"))) for path in folder.iterdir())
    sentences = [
        sentence.strip()
        for question in questions
        for paragraph in question["context"]["sentences"]
        for sentence in paragraph
        if len(sentence.strip()) > 20
    ]
    rng = random.Random(seed)
    generated = folder / "generated"
    generated.mkdir()
    n = 0
    while total < chunks:
        paragraphs, length = [], 0
        while length < DOC_CHARS:
            paragraph = " ".join(rng.choice(sentences) for _ in range(rng.randint(3, 7)))
            paragraphs.append(paragraph)
            length += len(paragraph) + 2
        text = "\n\n".join(paragraphs)
        n += 1
        (generated / f"Notes {n}.txt").write_text(text, encoding="utf-8")
        total += len(chunk_spans(text))
    return total


def memory_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def measure(folder: Path, data: Path, home: Path) -> dict[str, Any]:
    """Index ``folder`` and query it, in this process, as the server would."""
    from bench.retrieval import write_documents as _paths_only
    from research_mcp.llm.embeddings import default_embedder
    from research_mcp.llm.static_embedder import corpus_embedder
    from research_mcp.sources.corpus import Corpus
    from research_mcp.storage.store import Store
    from research_mcp.storage.vectors import KnowledgeIndex

    questions = json.loads(data.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as scratch:  # the same names write_documents gave the gold files
        paths = _paths_only(questions, Path(scratch))
    store = Store(home / "research.db")
    index = KnowledgeIndex.open(
        path=home / "qdrant", embedder=default_embedder(), chunk_embedder=corpus_embedder()
    )
    corpus = Corpus(store, [folder], index=index)
    before, _ = memory_mb()
    started = time.perf_counter()
    report = corpus.index()
    seconds = time.perf_counter() - started
    _, peak = memory_mb()
    chunks = store.corpus_chunk_count()

    latencies, recall = [], 0.0
    for round_ in range(QUERY_ROUNDS):
        for question in questions:
            context = question["context"]
            own = {
                paths[(t, "".join(s))]: t for t, s in zip(context["title"], context["sentences"], strict=True)
            }
            gold = {p for p, t in own.items() if t in set(question["supporting_facts"]["title"])}
            started = time.perf_counter()
            hits = corpus.search(question["question"], limit=10)
            latencies.append(time.perf_counter() - started)
            if round_ == 0:
                recall += len(gold & {hit.path for hit in hits}) / len(gold)
    index.close()
    store.close()
    latencies.sort()
    return {
        "documents": report.added,
        "chunks": chunks,
        "errors": len(report.errors),
        "index_seconds": seconds,
        "rss_before_mb": before,
        "peak_mb": peak,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))] * 1000,
        "recall_at_10": recall / len(questions),
    }


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="chunks per corpus")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="HotpotQA JSON (Hugging Face schema)")
    parser.add_argument("--one", nargs=2, type=Path, help=argparse.SUPPRESS)  # child: FOLDER HOME
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one[0], args.data, args.one[1])))
        return 0

    questions = json.loads(args.data.read_text(encoding="utf-8"))
    print(f"command: {COMMAND}" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip())
    print(f"cpus: {os.cpu_count()}; each size indexed in its own process; HF_HUB_OFFLINE=1")
    print(
        f"{'chunks':>8}{'docs':>8}{'index s':>9}{'chunks/s':>10}{'RSS before MB':>15}{'peak MB':>9}"
        f"{'p50 ms':>8}{'p99 ms':>8}{'R@10':>6}  load avg before -> after"
    )
    for size in args.sizes:
        with tempfile.TemporaryDirectory(prefix="research-mcp-scaling-") as tmp:
            folder, home = Path(tmp) / "corpus", Path(tmp) / "home"
            folder.mkdir()
            home.mkdir()
            build_corpus(questions, folder, size)
            before = load()
            child = [
                sys.executable,
                "-m",
                "bench.scaling",
                "--data",
                str(args.data),
                "--one",
                str(folder),
                str(home),
            ]
            done = subprocess.run(
                child, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False
            )
            if done.returncode != 0:
                print(f"{size:>8}  failed: {done.stderr.strip().splitlines()[-3:]}")
                continue
            f = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{f['chunks']:>8,}{f['documents']:>8,}{f['index_seconds']:>9.1f}"
                f"{f['chunks'] / f['index_seconds']:>10.0f}{f['rss_before_mb']:>15.0f}{f['peak_mb']:>9.0f}"
                f"{f['p50_ms']:>8.1f}{f['p99_ms']:>8.1f}{f['recall_at_10']:>6.2f}  {before} -> {load()}"
                + (f"  ({f['errors']} index errors)" if f["errors"] else ""),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
