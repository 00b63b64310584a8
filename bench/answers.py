"""Answers a person can use, with no model: HotpotQA part A and the real-document set side by side.

Run from the repository root:

    .venv/bin/python -m bench.answers [--hotpot PATH] [--sets hotpot,dev,heldout,dev2,dev3,dev4,dev5,dev6,dev7,dev8,dev9,dev10,dev11,dev12] [--apart] [--explain] [--dump F]

Sets (one column each):
- HotpotQA part A (``../shared/eval/hotpotqa_dev_distractor_part_a.json``), also as its first and
  second halves (25 questions each) so that a change fitted to one half shows as a gap; part B is
  held by the graders;
- realdocs dev and realdocs held-out: ``bench/data/realdocs/questions.json`` over the documents in
  ``bench/data/realdocs/corpus`` (Debian licences, copyright files, READMEs and man pages rendered
  with ``man -P cat``, shipped in the repository). Each answer was written down from the documents
  before anything was run, as one or more parts, each a short verbatim phrase (or alternatives) of
  one file; some questions compare two things or ask two things; ten have no answer in the corpus.
  The split is fixed in the file: tune on dev, only report held-out. A second dev set, ``dev2``
  (16 questions, 3 unanswerable, written from the documents in round 3's fourth session, answers
  first), runs after held-out, so that it changes nothing the earlier sets' runs see (the
  sets share one home and its knowledge base). A third, ``dev3`` (20 questions, round 3's fifth
  session), runs last: 12 questions whose words the corpus holds but whose answer it does not
  ("In which city is the Mozilla Foundation based?"), the near misses a confidence rule must not
  call medium, and 8 answerable ones asked the same way. A fourth, ``dev4`` (20 questions, round 3's
  sixth session, after all of the above), runs after it: 12 more near misses of other kinds (a
  default the document does not give, an item a table lacks, who wrote or funded something, how or
  why a thing the document only mentions works) and 8 answerable ones, a comparison and a two-part
  question among them. A fifth, ``dev5`` (24 questions, round 3's seventh session), runs last: 14
  near misses of kinds the others lack (which uid, port, option or address a document gives only
  for something else; where a file is kept; when; what an acronym stands for; yes/no questions a
  page never addresses; a comparison with one side absent; a count never given) and 10 answerable
  ones asked the same ways, two comparisons and two two-part questions among them. A sixth, ``dev6``
  (26 questions, round 3's ninth session, written from the documents the other sets ask least about
  before anything was run on them), runs last: 14 near misses (a maintainer's address, a command, a
  module or an option the documents never name; a default, a limit, a count or a date they never
  give; who wrote a thing first) and 12 answerable ones, a comparison and a two-part question among
  them. A seventh, ``dev7`` (15 questions, round 3's tenth session, answers written first), runs
  last: limits ("What is the maximum length of a hostname?", answered by "up to 64") and which
  module of a kind does a thing, 8 answerable and 7 near misses (the minimum where a page gives only
  a maximum, the most where it gives only the least, a module no page names). An eighth, ``dev8``
  (13 questions, round 3's thirteenth session, answers written first, from hostname(5),
  machine-id(5), shells(5), base-passwd's README and Python's README.Debian), runs last: 9 near misses
  (a file, an option, a hash function, a daemon, a uid, a date, courts the pages never name) and 4
  answerable ones. A ninth, ``dev9`` (14 questions, round 3's fourteenth session, answers written
  first, from dpkg's, zlib's and e2fsprogs' files, Python's README.Debian, securetty(5) and the BSD
  licence), runs last: 8 near misses (a licence dpkg's copyright file never names, a shipped version
  where only the original tarball's is named, a default list, a year, an install path, a bug
  address where only copyright holders' are given, a count "too numerous to cite") and 6 answerable
  ones (one, the licence of dpkg's po files, first written as a near miss: its "Files: *" paragraph
  covers them, GPL-2+). A tenth, ``dev10`` (15 questions, the same session), asks only what the
  documents never say, in the first dev half's way ("Which TCP port does the MySQL server listen on
  by default?"): questions a system administrator asks next to what the documents cover (sudo, a
  umask, OpenSSH's port, logrotate, systemd, a user name's length, Debian's founder, the Linux
  kernel's licence, the capital of Canada). An eleventh, ``dev11`` (15 questions, the same session,
  written after ``dev10``'s runs), asks the same way of other things (a TTL, the initramfs, useradd,
  the system-wide PATH, zstd's threads, the Debian Project Leader, CUPS, dpkg's file hashes). A
  twelfth, ``dev12`` (15 questions, the same session), asks why, whether and how-to questions the
  documents never answer (why Debian uses /etc/alternatives, whether the MPL-2.0 is compatible with
  the Apache License, how to reset a root password, why the root filesystem is checked first).

The sets share one home, as a user's questions would, so a set's runs find the facts earlier
sets' runs stored. ``--apart`` runs each real-document set in a fresh home of its own instead (its
columns are named "... apart"): what a new user asking only those questions meets.

Each question is researched through the MCP tools as a host would (plan_research, execute_plan
until finished, report_results), by the extractive backend over the set's corpus; the run's
document (facts, confidence, sources) is then read from the server's store.

Figures per set:
- answer recall: a question counts when every part of its answer appears (normalised) in a
  verified fact the report cites; unanswerable and yes/no questions are left out;
- supporting recall / precision (HotpotQA only): gold sentences among the verified facts, verified
  facts that are gold sentences (as bench.eval_extractive);
- supporting precision (realdocs): the share of verified facts quoted from one of the gold files;
- medium/high contain the answer: among answerable questions whose run said medium or high, the
  share whose answer recall counted; overconfident misses: answerable questions that missed the
  answer but said medium or high, as a share of answerable questions; answered but low: questions
  whose answer was found whose run said low, as a share of those answered (the price of caution);
- unanswerable honest: questions with no answer in the corpus whose run ended ``no_sources`` or
  with confidence low, and the sources such runs cite (those with a fact in the run's document).
"""

from __future__ import annotations

import argparse
import json
import os
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

from bench.eval_extractive import matches, read_view, wait_until_indexed
from bench.retrieval import DEFAULT_DATA, served_corpus
from research_mcp.core.citations import normalize

COMMAND = ".venv/bin/python -m bench.answers --hotpot ../shared/eval/hotpotqa_dev_distractor_part_a.json"
REALDOCS = Path(__file__).resolve().parent / "data" / "realdocs"


@dataclass
class Tally:
    """What one set's questions gave, summed as they are researched."""

    questions: int = 0
    answerable: int = 0
    answered: int = 0
    gold: int = 0
    gold_found: int = 0
    verified: int = 0
    verified_gold: int = 0
    confident: int = 0
    confident_right: int = 0
    overconfident: int = 0
    underconfident: int = 0
    unanswerable: int = 0
    unanswerable_honest: int = 0
    unanswerable_sources: int = 0
    seconds: float = 0.0
    statuses: dict[str, int] = field(default_factory=dict)

    def row(self) -> dict[str, float | int | None]:
        def share(part: int, whole: int) -> float | None:
            return round(part / whole, 3) if whole else None

        return {
            "questions": self.questions,
            "answer recall": share(self.answered, self.answerable),
            "supporting recall": share(self.gold_found, self.gold),
            "supporting precision": share(self.verified_gold, self.verified),
            "medium/high contain answer": share(self.confident_right, self.confident),
            "overconfident misses": share(self.overconfident, self.answerable),
            "answered but low": share(self.underconfident, self.answered),
            "unanswerable honest": (
                f"{self.unanswerable_honest}/{self.unanswerable}" if self.unanswerable else None
            ),
            "sources cited (unanswerable)": share(self.unanswerable_sources, self.unanswerable),
            "verified facts / question": share(self.verified, self.questions),
            "s / question": round(self.seconds / max(self.questions, 1), 2),
        }


@dataclass(frozen=True)
class Question:
    """One question of any set: its answer parts (each a list of alternatives; none when the corpus
    cannot answer it), the gold sentences (HotpotQA) and the gold files (realdocs)."""

    text: str
    parts: list[list[str]]
    gold_sentences: list[str]
    gold_files: list[str]
    unanswerable: bool = False


@dataclass(frozen=True)
class Run:
    status: str
    level: str
    reasoning: str
    facts: list[dict[str, Any]]
    cited: set[str]
    sources: dict[str, str]


async def research(client: Client, question: str, corpus_root: Path) -> Run:
    from research_mcp.core.config import Settings
    from research_mcp.run_document import run_document
    from research_mcp.storage.store import Store

    plan = await client.call_tool("plan_research", {"query": question})
    if plan.is_error or plan.structured_content["status"] != "feasible":
        return Run("plan failed", "low", "", [], set(), {})
    run = await client.call_tool(
        "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 55}
    )
    while run.structured_content["status"] in ("pending", "running"):
        run = await client.call_tool(
            "execute_plan", {"run_id": run.structured_content["id"], "wait_seconds": 55}
        )
    run_id = run.structured_content["id"]
    report = await read_view(client, run_id, "report")
    document = run_document(Store(Settings().database_path), run_id).model_dump(mode="json")
    cited = {fact["id"] for fact in document["facts"] if f"[{fact['id']}]" in report}
    sources = {s["id"]: s["location"] or s["url_or_path"] for s in document["sources"]}
    confidence = document["confidence"]
    status, facts = document["run"]["status"], document["facts"]
    return Run(status, confidence["level"], confidence["reasoning"], facts, cited, sources)


def quotes(quote: str, sentence: str) -> bool:
    """A verified fact quotes a gold sentence when the sentence is in it (a fact quotes a passage: a
    paragraph, or a sentence of one) or it is most of the sentence (`matches`)."""
    said = normalize(sentence).strip(" .")
    return bool(said) and (said in normalize(quote) or matches(quote, sentence))


def score(tally: Tally, question: Question, run: Run, corpus_root: Path) -> bool | None:
    tally.questions += 1
    tally.statuses[run.status] = tally.statuses.get(run.status, 0) + 1
    verified = [fact for fact in run.facts if fact["verified"]]
    tally.verified += len(verified)
    if question.gold_sentences:
        found = [s for s in question.gold_sentences if any(quotes(f["quote"], s) for f in verified)]
        tally.gold += len(question.gold_sentences)
        tally.gold_found += len(found)
        tally.verified_gold += sum(
            1 for f in verified if any(quotes(f["quote"], s) for s in question.gold_sentences)
        )
    elif question.gold_files:
        gold = {str((corpus_root / name).resolve()) for name in question.gold_files}
        tally.verified_gold += sum(1 for f in verified if run.sources.get(f["source_id"]) in gold)
    confident = run.level in ("medium", "high")
    if question.unanswerable:
        tally.unanswerable += 1
        tally.unanswerable_honest += run.status == "no_sources" or not confident
        tally.unanswerable_sources += len(run.sources)
        return None
    if not question.parts:
        return None
    cited = [normalize(f["quote"]) for f in verified if f["id"] in run.cited]
    answered = all(any(normalize(alt) in quote for quote in cited for alt in part) for part in question.parts)
    tally.answerable += 1
    tally.answered += answered
    tally.confident += confident
    tally.confident_right += confident and answered
    tally.overconfident += confident and not answered
    tally.underconfident += answered and not confident
    return answered


async def evaluate(
    sets: dict[str, list[Question]], corpus_root: Path, *, explain: bool, dump: Path | None = None
) -> dict[str, Tally]:
    from research_mcp.server.app import create_server

    tallies = {name: Tally() for name in sets}
    async with Client(create_server()) as client:
        status = await wait_until_indexed(client)
        if status["phase"] != "ready":
            raise SystemExit(f"the corpus was not indexed: {status}")
        for name, questions in sets.items():
            for number, question in enumerate(questions, 1):
                started = time.perf_counter()
                run = await research(client, question.text, corpus_root)
                tallies[name].seconds += time.perf_counter() - started
                answered = score(tallies[name], question, run, corpus_root)
                print(
                    f"  {name} {number:>2}/{len(questions)} {run.status:<10} {run.level:<6}"
                    f" answer {'-' if answered is None else 'yes' if answered else 'MISSED'}",
                    file=sys.stderr,
                )
                if explain:
                    _explain(question, run, corpus_root)
                if dump is not None:
                    _dump(dump, name, question, run, answered)
    return tallies


def _dump(path: Path, name: str, question: Question, run: Run, answered: bool | None) -> None:
    """One JSON line a question: its run's status, confidence and facts, and whether it answered."""
    record = {
        "set": name,
        "question": question.text,
        "parts": question.parts,
        "unanswerable": question.unanswerable,
        "answered": answered,
        "status": run.status,
        "level": run.level,
        "reasoning": run.reasoning,
        "facts": [{**fact, "cited": fact["id"] in run.cited} for fact in run.facts],
        "sources": run.sources,
    }
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _explain(question: Question, run: Run, corpus_root: Path) -> None:
    print(f"     Q: {question.text}  -> {question.parts}", file=sys.stderr)
    print(f"     confidence {run.level}: {run.reasoning[:300]}", file=sys.stderr)
    for fact in run.facts:
        if fact["verified"]:
            path = run.sources.get(fact["source_id"], "")
            where = os.path.relpath(path, corpus_root) if path.startswith("/") else path
            mark = "*" if fact["id"] in run.cited else " "
            print(
                f"     {mark}{fact['id']} {fact['confidence']:.2f} {where}: {fact['quote'][:150]!r}",
                file=sys.stderr,
            )


def hotpot_questions(data: list[dict[str, Any]]) -> list[Question]:
    questions = []
    for item in data:
        context = dict(zip(item["context"]["title"], item["context"]["sentences"], strict=True))
        gold = [
            context[title][sent]
            for title, sent in zip(
                item["supporting_facts"]["title"], item["supporting_facts"]["sent_id"], strict=True
            )
            if title in context and sent < len(context[title])
        ]
        answer = item["answer"]
        parts = [] if normalize(answer) in ("yes", "no") else [[answer]]
        questions.append(Question(item["question"], parts, gold, []))
    return questions


def realdocs_questions(split: str) -> list[Question]:
    data = json.loads((REALDOCS / "questions.json").read_text(encoding="utf-8"))
    return [
        Question(q["question"], q["answers"], [], q["files"], q["kind"] == "unanswerable")
        for q in data
        if q["split"] == split
    ]


@contextmanager
def realdocs_corpus() -> Iterator[Path]:
    """The shipped documents, copied to a temporary corpus folder with the server's environment."""
    import shutil

    with tempfile.TemporaryDirectory(prefix="realdocs-") as home:
        root = Path(home) / "corpus"
        shutil.copytree(REALDOCS / "corpus", root)
        saved = {
            k: os.environ.get(k) for k in ("RESEARCH_MCP_HOME", "RESEARCH_MCP_CORPUS", "RESEARCH_MCP_MODEL")
        }
        os.environ.update(
            RESEARCH_MCP_HOME=str(Path(home) / "home"),
            RESEARCH_MCP_CORPUS=str(root),
            RESEARCH_MCP_MODEL="extractive",
        )
        try:
            yield root.resolve()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def print_table(tallies: dict[str, Tally]) -> None:
    rows = {name: tally.row() for name, tally in tallies.items()}
    names = list(rows)
    print("| figure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for figure in next(iter(rows.values())):
        cells = ["-" if rows[n][figure] is None else str(rows[n][figure]) for n in names]
        print(f"| {figure} | " + " | ".join(cells) + " |")
    print("statuses: " + "; ".join(f"{n}: {t.statuses}" for n, t in tallies.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hotpot", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--sets", default="hotpot,dev,heldout,dev2,dev3,dev4,dev5,dev6,dev7,dev8,dev9,dev10,dev11,dev12"
    )
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions of each set")
    parser.add_argument("--explain", action="store_true", help="each question's verified facts (stderr)")
    parser.add_argument("--dump", type=Path, help="append each question's run as a JSON line to this file")
    parser.add_argument(
        "--apart",
        action="store_true",
        help="each real-document set in a fresh home of its own, as a new user meets it (no earlier "
        "set's facts in the knowledge base)",
    )
    args = parser.parse_args(argv)
    wanted = args.sets.split(",")
    tallies: dict[str, Tally] = {}
    if "hotpot" in wanted:
        data = json.loads(args.hotpot.read_text(encoding="utf-8"))
        data = data[: args.limit] if args.limit else data
        half = len(data) // 2
        questions = hotpot_questions(data)
        with served_corpus(data) as _paths:
            got = anyio.run(
                partial(
                    evaluate,
                    {"hotpot A 1st half": questions[:half], "hotpot A 2nd half": questions[half:]},
                    Path("/"),
                    explain=args.explain,
                    dump=args.dump,
                )
            )
        whole = Tally()
        for tally in got.values():
            for name, value in vars(tally).items():
                if name != "statuses":
                    setattr(whole, name, getattr(whole, name) + value)
            for status, count in tally.statuses.items():
                whole.statuses[status] = whole.statuses.get(status, 0) + count
        tallies = {"hotpot A": whole, **got}
    real = {
        f"realdocs {s}": realdocs_questions(s)
        for s in (
            "dev",
            "heldout",
            "dev2",
            "dev3",
            "dev4",
            "dev5",
            "dev6",
            "dev7",
            "dev8",
            "dev9",
            "dev10",
            "dev11",
            "dev12",
        )
        if s in wanted
    }
    if real:
        if args.limit:
            real = {name: qs[: args.limit] for name, qs in real.items()}
        for group in [{name: qs} for name, qs in real.items()] if args.apart else [real]:
            with realdocs_corpus() as root:
                got = anyio.run(partial(evaluate, group, root, explain=args.explain, dump=args.dump))
            tallies.update({f"{name} apart": tally for name, tally in got.items()} if args.apart else got)
    print(f"answers, extractive backend — {COMMAND}{' --apart' if args.apart else ''}")
    print_table(tallies)
    print(json.dumps({name: tally.row() for name, tally in tallies.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
