"""The answer table, with each question's evidence kept: what confidence can be fitted on.

    .venv/bin/python -m bench.evidence_rows --out FILE [answer_table's options]

Runs ``bench.answer_table`` unchanged and, for every question of the document sets, appends one
JSON line to FILE: the set, the question, and each verified fact of the finished run (its source,
the ranker's probability, whether it was found for this question, its quote's first characters).
Joined with ``--dump``'s line of the same question (``selected``: the report holds the answer),
these are the rows ``bench.fit_confidence`` fits the confidence thresholds on (dev rows only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench import answer_table

_ORIGINAL = answer_table.research
OUT: Path | None = None


async def research(client, question: str, root: Path) -> answer_table.Outcome:  # type: ignore[no-untyped-def]
    """answer_table.research, keeping the finished run's verified facts."""
    import time

    from research_mcp.core.config import Settings
    from research_mcp.run_document import run_document
    from research_mcp.storage.store import Store

    started = time.perf_counter()
    plan = await client.call_tool("plan_research", {"query": question})
    if plan.is_error or plan.structured_content["status"] != "feasible":
        return answer_table.Outcome("plan failed", "low", "", [], time.perf_counter() - started)
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
    if OUT is not None:
        facts = [
            {
                "source": fact["source_id"],
                "p": fact["confidence"],
                "asked": fact["question"],
                "quote": fact["quote"][:300],
                "cited": f"[{fact['id']}]" in report,
            }
            for fact in document["facts"]
            if fact["verified"]
        ]
        record = {
            "root": root.name,
            "question": question,
            "level": level,
            "reasoning": document["confidence"]["reasoning"][:400],
            "facts": facts,
        }
        with OUT.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    return answer_table.Outcome(document["run"]["status"], level, report, sorted(set(read)), seconds)


def main(argv: list[str] | None = None) -> int:
    global OUT
    argv = list(sys.argv[1:] if argv is None else argv)
    at = argv.index("--out")
    OUT = Path(argv[at + 1])
    del argv[at : at + 2]
    answer_table.research = research
    return answer_table.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
