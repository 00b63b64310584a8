"""Does the report the host reads hold the answer, on many corpora, beside a plain BM25 search?

Run from the repository root (after ``apt-get install -y python3-doc git-doc``):

    .venv/bin/python -m bench.answer_table [--sets python3-doc,git-doc,realdocs,hotpot]
        [--split dev|heldout|both] [--limit N] [--dump FILE] [--hotpot PATH] [--check]

Every set of ``bench.corpora`` with a ``bench/data/<name>/questions.json`` (and ``hotpot``, HotpotQA
part A through ``bench.answers``) is researched as a host would: a fresh ``RESEARCH_MCP_HOME`` per
set and split (the corpus is indexed once per set, and each split starts from a copy of that
home, so the held-out half never meets facts its dev half stored), ``RESEARCH_MCP_CORPUS`` the
set's materialised folder, ``RESEARCH_MCP_MODEL=extractive``; per question ``plan_research``,
``execute_plan`` until done and the first page of ``report_results`` (view ``report``, the
default page of 2,000 tokens). One row per set and split:

- retrieval: share of answerable questions whose run has a source for one of the answering files;
- selection: share whose report (first page) holds every answer part (normalised substring, as
  ``bench.answers.score``); sel|retr: selection among the retrieved;
- report B: median bytes of that first page;
- BM25 @B / @5 / @10: share whose BM25 chunks (``bench.bm25_baseline``) hold every part: the top
  chunks cut to the question's report bytes, the top 5, the top 10;
- overconf: answerable questions missed at medium or high, as a share of answerable;
  ans-low: questions answered at low, as a share of those answered;
  unans honest: unanswerable questions that ended ``no_sources`` or low, n/N;
- s/q: seconds per question (research only).

HotpotQA (part A, first half as dev, second as held-out) prints its answer and supporting recall
from ``bench.answers`` in a table of its own. ``--dump`` writes one JSON line per question (dev and
held-out) to examine misses on dev; held-out failures are not printed. ``--check`` only verifies
that every answer part occurs in the text of its named files (as the server reads them).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench import corpora
from bench.bm25_baseline import BM25, holds, joined, read_corpus
from bench.eval_extractive import wait_until_indexed
from bench.retrieval import DEFAULT_DATA
from research_mcp.sources.readers import READER_VERSION

COMMAND = ".venv/bin/python -m bench.answer_table"
HOTPOT = "hotpot"
SPLITS = ("dev", "heldout")
TEXTS_CACHE = ".bench-texts.json"
INDEX_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Question:
    id: str
    split: str
    text: str
    parts: list[list[str]]
    files: list[str]

    @property
    def answerable(self) -> bool:
        return bool(self.parts)


@dataclass(frozen=True)
class Outcome:
    """What the research of one question gave, as the table scores it."""

    status: str
    level: str
    report: str
    read: list[str]
    seconds: float


@dataclass
class Row:
    """One set and split's tally."""

    answerable: int = 0
    retrieved: int = 0
    selected: int = 0
    selected_retrieved: int = 0
    bm25_bytes: int = 0
    bm25_top5: int = 0
    bm25_top10: int = 0
    overconfident: int = 0
    answered_low: int = 0
    unanswerable: int = 0
    honest: int = 0
    seconds: float = 0.0
    questions: int = 0
    report_bytes: list[int] = field(default_factory=list)

    def cells(self) -> list[str]:
        def share(part: int, whole: int) -> str:
            return f"{part / whole:.2f}" if whole else "-"

        return [
            f"{self.answerable}+{self.unanswerable}",
            share(self.retrieved, self.answerable),
            share(self.selected, self.answerable),
            share(self.selected_retrieved, self.retrieved),
            str(int(statistics.median(self.report_bytes))) if self.report_bytes else "-",
            share(self.bm25_bytes, self.answerable),
            share(self.bm25_top5, self.answerable),
            share(self.bm25_top10, self.answerable),
            share(self.overconfident, self.answerable),
            share(self.answered_low, self.selected),
            f"{self.honest}/{self.unanswerable}" if self.unanswerable else "-",
            f"{self.seconds / self.questions:.1f}" if self.questions else "-",
        ]


HEADER = [
    "set",
    "split",
    "answerable+not",
    "retrieval",
    "selection",
    "sel|retr",
    "report B",
    "BM25 @B",
    "BM25 @5",
    "BM25 @10",
    "overconf",
    "ans-low",
    "unans honest",
    "s/q",
]


def load_questions(spec: corpora.CorpusSpec, split: str) -> list[Question]:
    wanted = spec.dev_splits if split == "dev" else spec.heldout_splits
    data = json.loads(spec.questions_path.read_text(encoding="utf-8"))
    return [
        Question(q["id"], q["split"], q["question"], q["answers"], q["files"])
        for q in data
        if q["split"] in wanted
    ]


def score(row: Row, question: Question, outcome: Outcome, bm25: BM25) -> dict[str, Any]:
    """Count one question's outcome into its row; what was counted, for the dump."""
    row.questions += 1
    row.seconds += outcome.seconds
    row.report_bytes.append(len(outcome.report.encode("utf-8")))
    confident = outcome.level in ("medium", "high")
    if not question.answerable:
        row.unanswerable += 1
        row.honest += outcome.status == "no_sources" or not confident
        return {"honest": outcome.status == "no_sources" or not confident}
    retrieved = bool(set(question.files) & set(outcome.read))
    selected = holds(outcome.report, question.parts)
    hits = bm25.search(question.text, limit=10)
    baseline = {
        "bytes": holds(joined(hits, len(outcome.report.encode("utf-8"))), question.parts),
        "top5": holds(joined(hits[:5]), question.parts),
        "top10": holds(joined(hits), question.parts),
    }
    row.answerable += 1
    row.retrieved += retrieved
    row.selected += selected
    row.selected_retrieved += selected and retrieved
    row.bm25_bytes += baseline["bytes"]
    row.bm25_top5 += baseline["top5"]
    row.bm25_top10 += baseline["top10"]
    row.overconfident += confident and not selected
    row.answered_low += selected and not confident
    return {
        "retrieved": retrieved,
        "selected": selected,
        "bm25": baseline,
        "bm25_files": [hit.path for hit in hits],
    }


async def research(client: Client, question: str, root: Path) -> Outcome:
    """One question researched through the MCP tools; the report's first page and the sources read."""
    return (await researched(client, question, root))[0]


async def researched(client: Client, question: str, root: Path) -> tuple[Outcome, dict[str, Any] | None]:
    """`research`'s outcome and the finished run's whole document (None when planning failed), for
    benchmarks that keep more of the run (``bench.evidence_rows``)."""
    from research_mcp.core.config import Settings
    from research_mcp.run_document import run_document
    from research_mcp.storage.store import Store

    started = time.perf_counter()
    plan = await client.call_tool("plan_research", {"query": question})
    if plan.is_error or plan.structured_content["status"] != "feasible":
        return Outcome("plan failed", "low", "", [], time.perf_counter() - started), None
    run = await client.call_tool(
        "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 55}
    )
    while run.structured_content["status"] in ("pending", "running"):
        run = await client.call_tool(
            "execute_plan", {"run_id": run.structured_content["id"], "wait_seconds": 55}
        )
    run_id = run.structured_content["id"]
    page = await client.call_tool("report_results", {"id": run_id, "view": "report"})
    report = "" if page.is_error else page.structured_content["text"]
    seconds = time.perf_counter() - started
    document = run_document(Store(Settings().database_path), run_id).model_dump(mode="json")
    read = []
    for source in document["sources"]:
        path = Path(source["location"] or source["url_or_path"])
        if path.is_absolute() and path.is_relative_to(root):
            read.append(path.relative_to(root).as_posix())
    level = document["confidence"]["level"]
    return Outcome(document["run"]["status"], level, report, sorted(set(read)), seconds), document


@contextmanager
def served(home: Path, root: Path) -> Iterator[None]:
    """The environment a server created inside the block reads: this home and corpus, no keys."""
    keys = ("RESEARCH_MCP_HOME", "RESEARCH_MCP_CORPUS", "RESEARCH_MCP_MODEL", "ANTHROPIC_API_KEY")
    saved = {k: os.environ.get(k) for k in (*keys, "TAVILY_API_KEY", "QDRANT_URL")}
    os.environ.update(
        RESEARCH_MCP_HOME=str(home), RESEARCH_MCP_CORPUS=str(root), RESEARCH_MCP_MODEL="extractive"
    )
    for name in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "QDRANT_URL"):
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


async def index(home: Path, root: Path) -> None:
    from research_mcp.server.app import create_server

    with served(home, root):
        async with Client(create_server()) as client:
            status = await wait_until_indexed(client, INDEX_TIMEOUT)
    if status["phase"] != "ready":
        raise SystemExit(f"the corpus {root} was not indexed: {status}")


async def run_split(
    name: str, split: str, questions: list[Question], home: Path, root: Path, bm25: BM25, dump: Path | None
) -> Row:
    from research_mcp.server.app import create_server

    row = Row()
    with served(home, root):
        async with Client(create_server()) as client:
            await wait_until_indexed(client, INDEX_TIMEOUT)
            for number, question in enumerate(questions, 1):
                outcome = await research(client, question.text, root)
                counted = score(row, question, outcome, bm25)
                shown = (
                    ""
                    if split != "dev"
                    else " " + " ".join(f"{k}={v}" for k, v in counted.items() if k != "bm25_files")
                )
                print(
                    f"  {name} {split} {number}/{len(questions)} {question.id} {outcome.status} {outcome.level}"
                    f" {outcome.seconds:.1f}s{shown if question.answerable else ''}",
                    file=sys.stderr,
                )
                if dump is not None:
                    record = {
                        "set": name,
                        "id": question.id,
                        "split": question.split,
                        "question": question.text,
                        "answers": question.parts,
                        "files": question.files,
                        "status": outcome.status,
                        "level": outcome.level,
                        "read": outcome.read,
                        "seconds": round(outcome.seconds, 2),
                        **counted,
                        "report": outcome.report.encode("utf-8")[:3072].decode("utf-8", errors="ignore"),
                    }
                    with dump.open("a", encoding="utf-8") as out:
                        out.write(json.dumps(record) + "\n")
    return row


def corpus_texts(folder: Path) -> dict[str, str]:
    """The folder's document texts, cached beside its manifest (reading HTML takes a while)."""
    cache, manifest = folder / TEXTS_CACHE, folder / corpora.MANIFEST
    stamp = json.loads(manifest.read_text())["stamp"] if manifest.is_file() else ""
    stamp = f"{stamp}:{READER_VERSION}" if stamp else ""  # texts read by another reader are read again
    if cache.is_file():
        held = json.loads(cache.read_text(encoding="utf-8"))
        if held["stamp"] == stamp and stamp:
            return dict(held["texts"])
    texts = read_corpus(folder)
    if stamp:
        cache.write_text(json.dumps({"stamp": stamp, "texts": texts}), encoding="utf-8")
    return texts


def run_set(name: str, splits: list[str], limit: int, dump: Path | None) -> dict[str, Row]:
    spec = corpora.get(name)
    root = corpora.materialise(spec)
    bm25 = BM25.of_texts(corpus_texts(root))
    rows = {}
    with tempfile.TemporaryDirectory(prefix=f"answer-table-{name}-") as tmp:
        base = Path(tmp) / "indexed"
        started = time.perf_counter()
        anyio.run(index, base, root)
        print(f"  {name}: indexed in {time.perf_counter() - started:.0f}s", file=sys.stderr)
        for split in splits:
            questions = load_questions(spec, split)
            questions = questions[:limit] if limit else questions
            home = Path(tmp) / split
            shutil.copytree(base, home)
            rows[split] = anyio.run(partial(run_split, name, split, questions, home, root, bm25, dump))
    return rows


def run_hotpot(path: Path, splits: list[str], limit: int, dump: Path | None) -> dict[str, dict[str, Any]]:
    """HotpotQA part A through bench.answers: first half as dev, second as held-out."""
    from bench.answers import evaluate, hotpot_questions
    from bench.retrieval import served_corpus

    if not path.is_file():
        print(f"  hotpot: {path} not found (give --hotpot PATH); skipped", file=sys.stderr)
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    half = len(data) // 2
    halves = {"dev": data[:half], "heldout": data[half:]}
    chosen = {s: hotpot_questions(halves[s][:limit] if limit else halves[s]) for s in splits}
    with served_corpus([item for s in splits for item in halves[s]]):
        tallies = anyio.run(partial(evaluate, chosen, Path("/"), explain=False, dump=dump))
    return {split: tally.row() for split, tally in tallies.items()}


def check(names: list[str]) -> int:
    """Every answer part of every question found in one of its files' text; the problems printed."""
    problems = 0
    for name in names:
        spec = corpora.get(name)
        texts = corpus_texts(corpora.materialise(spec))
        data = json.loads(spec.questions_path.read_text(encoding="utf-8"))
        for q in data:
            missing_files = [f for f in q["files"] if f not in texts]
            bad = [
                part for part in q["answers"] if not any(holds(texts.get(f, ""), [part]) for f in q["files"])
            ]
            if missing_files or bad or bool(q["answers"]) != bool(q["files"]):
                problems += 1
                print(f"{name} {q['id']}: files not read {missing_files}; parts not found {bad}")
        splits = {s: sum(q["split"] == s for q in data) for s in sorted({q["split"] for q in data})}
        print(f"{name}: {len(data)} questions {splits}")
    return 1 if problems else 0


def markdown(rows: dict[tuple[str, str], Row], hotpot: dict[str, dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)] if rows else []
    lines += [
        f"| {name} | {split} | " + " | ".join(row.cells()) + " |" for (name, split), row in rows.items()
    ]
    if hotpot:
        figures = ["answer recall", "supporting recall", "overconfident misses", "s / question"]
        lines += ["", "| HotpotQA part A | " + " | ".join(figures) + " |", "|---|" + "---|" * len(figures)]
        lines += [
            f"| {split} | " + " | ".join("-" if got[f] is None else str(got[f]) for f in figures) + " |"
            for split, got in hotpot.items()
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    with_questions = [name for name, spec in corpora.CORPORA.items() if spec.questions_path.is_file()]
    parser.add_argument("--sets", default=",".join([*with_questions, HOTPOT]))
    parser.add_argument("--hotpot", type=Path, default=DEFAULT_DATA, help="HotpotQA part A's JSON")
    parser.add_argument("--split", choices=["dev", "heldout", "both"], default="both")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions of each split")
    parser.add_argument("--dump", type=Path, help="append one JSON line per question to this file")
    parser.add_argument("--check", action="store_true", help="only verify the answers occur in their files")
    args = parser.parse_args(argv)
    logging.getLogger("research_mcp").setLevel(logging.WARNING)  # the indexer's progress lines
    names = [name for name in args.sets.split(",") if name]
    if args.check:
        return check([name for name in names if name != HOTPOT])
    splits = list(SPLITS) if args.split == "both" else [args.split]
    started = time.perf_counter()
    rows: dict[tuple[str, str], Row] = {}
    hotpot: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    for name in names:
        if name == HOTPOT:
            hotpot = run_hotpot(args.hotpot, splits, args.limit, args.dump)
        else:
            try:
                got = run_set(name, splits, args.limit, args.dump)
            except corpora.CorpusMissing as missing:  # the other sets still run
                skipped.append(f"{name}: {missing}")
                continue
            rows.update({(name, split): row for split, row in got.items()})
    options = f"--sets {','.join(names)} --split {args.split}" + (
        f" --limit {args.limit}" if args.limit else ""
    )
    print(f"answers on many corpora, extractive backend — {COMMAND} {options}")
    print(f"wall time {time.perf_counter() - started:.0f}s\n")
    print(markdown(rows, hotpot))
    for line in skipped:
        print(f"\nskipped {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
