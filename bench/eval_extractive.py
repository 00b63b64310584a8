"""End-to-end quality with no model: HotpotQA questions researched through the MCP tools by the
extractive backend over a local corpus of the questions' paragraphs.

Run from the repository root:

    .venv/bin/python -m bench.eval_extractive [--data PATH] [--limit N]

Method. Every context paragraph of the questions becomes one document of a local corpus (as in
bench.retrieval), the server is created with RESEARCH_MCP_MODEL=extractive and
RESEARCH_MCP_CORPUS pointing at it; once the server has indexed it (research://corpus/status says
ready), each question goes, as asked, through the tools an MCP host
would call: plan_research(query) → execute_plan(plan_id) until done → report_results(view="facts")
and (view="report"), every page followed by its cursor. The plan, the sources each leaf reads (the
corpus search's best 3 across all ~500 paragraphs) and the facts are the server's own.

Figures, over all questions:
- supporting-fact recall: the share of gold supporting sentences found among the run's verified
  facts; a fact matches a sentence when, after normalisation, one contains the other and the
  shorter is at least 60% of the longer (sentence splitters differ at the edges);
- supporting-fact precision: the share of verified facts that match a gold supporting sentence
  (the extractive backend quotes whole sentences, so this is sentence-level precision);
- answer-string recall: does the normalised gold answer appear in a fact the report cites;
  questions whose answer is yes/no are left out of this figure (the string cannot be quoted).
Nothing is fitted to these questions.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import anyio
from mcp import Client

from bench.retrieval import DEFAULT_DATA, served_corpus
from research_mcp.core.citations import normalize

COMMAND = ".venv/bin/python -m bench.eval_extractive"
# "F12 [verified] S3 statement | "quote"", with ", corroborated by N sources" in the brackets and
# " | also S5: "..."" after the quote when other sources said the same.
_FACT = re.compile(r'^F(\d+) \[(verified|UNVERIFIED)[^\]]*\] S\d+ .*? \| "(.*?)"(?: \| also .*)?$')


def matches(quote: str, sentence: str) -> bool:
    a, b = normalize(quote).strip(" ."), normalize(sentence).strip(" .")
    if not a or not b:
        return False
    short, long = sorted((a, b), key=len)
    return short in long and len(short) >= 0.6 * len(long)


async def read_view(client: Client, ident: str, view: str) -> str:
    parts, cursor = [], None
    while True:
        args: dict[str, Any] = {"id": ident, "view": view, "max_tokens": 8000}
        if cursor:
            args["cursor"] = cursor
        page = await client.call_tool("report_results", args)
        if page.is_error:
            return ""
        parts.append(page.structured_content["text"])
        cursor = page.structured_content["cursor"]
        if not cursor:
            return "\n".join(parts)


class Outcome(NamedTuple):
    """What one question's run gave: its facts by id (verified, quote), the ids its report cites,
    the run's status and id."""

    facts: dict[int, tuple[bool, str]]
    cited: set[int]
    status: str
    run_id: str


async def research(client: Client, question: str) -> Outcome:
    plan = await client.call_tool("plan_research", {"query": question})
    if plan.is_error or plan.structured_content["status"] != "feasible":
        return Outcome({}, set(), "plan failed", "")
    run = await client.call_tool(
        "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 55}
    )
    while run.structured_content["status"] in ("pending", "running"):
        run = await client.call_tool(
            "execute_plan", {"run_id": run.structured_content["id"], "wait_seconds": 55}
        )
    run_id = run.structured_content["id"]
    facts: dict[int, tuple[bool, str]] = {}
    for line in (await read_view(client, run_id, "facts")).splitlines():
        if match := _FACT.match(line):
            facts[int(match.group(1))] = (match.group(2) == "verified", match.group(3))
    cited = {int(i) for i in re.findall(r"\[F(\d+)\]", await read_view(client, run_id, "report"))}
    return Outcome(facts, cited, run.structured_content["status"], run_id)


async def evaluate(
    questions: list[dict[str, Any]], paths: dict[tuple[str, str], str], *, explain: bool = False
) -> dict[str, float]:
    from research_mcp.server.app import create_server

    gold_total = gold_found = facts_total = facts_gold = 0
    answerable = answers_found = 0
    started = time.perf_counter()
    async with Client(create_server()) as client:
        # The server indexes the corpus in the background: a question researched before it has
        # finished searches part of the corpus (and its run is honestly "partial").
        status = await wait_until_indexed(client)
        if status["phase"] != "ready":
            raise SystemExit(f"the corpus was not indexed: {status}")
        indexed = time.perf_counter()
        for number, item in enumerate(questions, 1):
            context = dict(zip(item["context"]["title"], item["context"]["sentences"], strict=True))
            gold = [
                (title, context[title][sent])
                for title, sent in zip(
                    item["supporting_facts"]["title"], item["supporting_facts"]["sent_id"], strict=True
                )
                if title in context and sent < len(context[title])
            ]
            facts, cited, status, run_id = await research(client, item["question"])
            verified = [quote for ok, quote in facts.values() if ok]
            missed = [(t, s) for t, s in gold if not any(matches(q, s) for q in verified)]
            gold_total += len(gold)
            gold_found += len(gold) - len(missed)
            facts_total += len(verified)
            facts_gold += sum(1 for q in verified if any(matches(q, sentence) for _, sentence in gold))
            answer = normalize(item["answer"])
            answered = None
            if answer not in ("yes", "no"):
                answerable += 1
                cited_quotes = [normalize(facts[i][1]) for i in cited if i in facts and facts[i][0]]
                answered = any(answer in quote for quote in cited_quotes)
                answers_found += answered
            print(
                f"  {number:>2}/{len(questions)} {status:<8} {len(verified):>2} verified facts",
                file=sys.stderr,
            )
            if explain:
                _explain(item, context, paths, _sources_read(run_id), verified, missed, answered)
    return {
        "questions": len(questions),
        "supporting_fact_recall": gold_found / max(gold_total, 1),
        "supporting_fact_precision": facts_gold / max(facts_total, 1),
        "answer_string_recall": answers_found / max(answerable, 1),
        "answerable_questions": answerable,
        "verified_facts_per_question": facts_total / max(len(questions), 1),
        "seconds_per_question": (time.perf_counter() - indexed) / max(len(questions), 1),
        "index_seconds": indexed - started,
    }


def _sources_read(run_id: str) -> list[str]:
    """The titles of the sources the run's extractors read, in the order they were asked (read from
    the server's store, for --explain only: the figures come from the tools)."""
    from research_mcp.core.config import Settings
    from research_mcp.core.role_inputs import ExtractorInput
    from research_mcp.storage.store import Store

    if not run_id:
        return []
    store = Store(Settings().database_path)
    asked = [h.input_as(ExtractorInput) for h in store.handoffs_for_run(run_id, role="extractor")]
    return list(dict.fromkeys(source.source_title for source in asked if source is not None))


def _explain(
    item: dict[str, Any],
    context: dict[str, list[str]],
    paths: dict[tuple[str, str], str],
    read: list[str],
    verified: list[str],
    missed: list[tuple[str, str]],
    answered: bool | None,
) -> None:
    """Why a question scored as it did (stderr): the gold sentences missed, each with whether its
    paragraph was read at all; the paragraphs read; the answer's fate."""

    def stem(title: str) -> str:  # the file a paragraph was written to, as the corpus titles it
        return Path(paths.get((title, "".join(context[title])), "")).stem

    def was_read(title: str) -> bool:
        return stem(title) in read

    gold_titles = set(item["supporting_facts"]["title"])
    gold_stems = {stem(title) for title in gold_titles}
    print(f"     Q: {item['question']} -> {item['answer']!r} ({item['type']})", file=sys.stderr)
    print(
        "     read: "
        + "; ".join(f"{'*' if title in gold_stems else ''}{title}" for title in read)
        + f" | answer {'n/a' if answered is None else 'cited' if answered else 'MISSED'}",
        file=sys.stderr,
    )
    for title, sentence in missed:
        print(
            f"     missed ({'read' if was_read(title) else 'NOT READ'}) {title}: {sentence[:140]}",
            file=sys.stderr,
        )
    if explain_facts := [
        q for q in verified if not any(matches(q, s) for t in gold_titles for s in context.get(t, []))
    ]:
        print(f"     {len(explain_facts)} facts off the gold paragraphs", file=sys.stderr)


async def wait_until_indexed(client: Client, timeout: float = 600) -> dict[str, Any]:
    """The corpus status once the server's background indexing pass has ended."""
    with anyio.fail_after(timeout):
        while True:
            result = await client.read_resource("research://corpus/status")
            status: dict[str, Any] = json.loads(result.contents[0].text)  # type: ignore[union-attr]
            if status["phase"] in ("ready", "stopped", "failed", "not_configured"):
                return status
            await anyio.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument(
        "--explain", action="store_true", help="say for each question what was missed and why (stderr)"
    )
    args = parser.parse_args(argv)
    questions = json.loads(args.data.read_text(encoding="utf-8"))
    if args.limit:
        questions = questions[: args.limit]
    with served_corpus(questions) as paths:
        figures = anyio.run(partial(evaluate, questions, paths, explain=args.explain))
    print(f"extractive end-to-end on {args.data.name} ({figures['questions']} questions) — {COMMAND}")
    print(f"  supporting-fact recall     {figures['supporting_fact_recall']:.3f}")
    print(f"  supporting-fact precision  {figures['supporting_fact_precision']:.3f}")
    print(
        f"  answer-string recall       {figures['answer_string_recall']:.3f}"
        f"  (over {figures['answerable_questions']} questions whose answer is not yes/no)"
    )
    print(f"  verified facts per question {figures['verified_facts_per_question']:.1f}")
    print(
        f"  seconds per question       {figures['seconds_per_question']:.2f} (indexing {figures['index_seconds']:.1f} s)"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
