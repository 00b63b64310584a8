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
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.retrieval import DEFAULT_DATA, write_documents
from research_mcp.citations import normalize

COMMAND = ".venv/bin/python -m bench.eval_extractive"
_FACT = re.compile(r'^F(\d+) \[(verified|UNVERIFIED)\] S\d+ .*? \| "(.*)"$')


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


async def research(client: Client, question: str) -> tuple[dict[int, tuple[bool, str]], set[int], str]:
    plan = await client.call_tool("plan_research", {"query": question})
    if plan.is_error or plan.structured_content["status"] != "feasible":
        return {}, set(), "plan failed"
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
    return facts, cited, run.structured_content["status"]


async def evaluate(questions: list[dict[str, Any]]) -> dict[str, float]:
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
                context[title][sent]
                for title, sent in zip(
                    item["supporting_facts"]["title"], item["supporting_facts"]["sent_id"], strict=True
                )
                if title in context and sent < len(context[title])
            ]
            facts, cited, status = await research(client, item["question"])
            verified = [quote for ok, quote in facts.values() if ok]
            gold_total += len(gold)
            gold_found += sum(1 for sentence in gold if any(matches(q, sentence) for q in verified))
            facts_total += len(verified)
            facts_gold += sum(1 for q in verified if any(matches(q, sentence) for sentence in gold))
            answer = normalize(item["answer"])
            if answer not in ("yes", "no"):
                answerable += 1
                cited_quotes = [normalize(facts[i][1]) for i in cited if i in facts and facts[i][0]]
                answers_found += any(answer in quote for quote in cited_quotes)
            print(
                f"  {number:>2}/{len(questions)} {status:<8} {len(verified):>2} verified facts",
                file=sys.stderr,
            )
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
    args = parser.parse_args(argv)
    questions = json.loads(args.data.read_text(encoding="utf-8"))
    if args.limit:
        questions = questions[: args.limit]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "corpus"
        folder.mkdir()
        write_documents(questions, folder)
        os.environ.update(
            RESEARCH_MCP_HOME=str(Path(tmp) / "home"),
            RESEARCH_MCP_CORPUS=str(folder),
            RESEARCH_MCP_MODEL="extractive",
        )
        for name in ("ANTHROPIC_API_KEY", "TAVILY_API_KEY", "QDRANT_URL"):
            os.environ.pop(name, None)
        figures = anyio.run(evaluate, questions)
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
