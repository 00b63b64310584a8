"""What the scout's sweep finds that one search does not: HotpotQA questions scouted over a local
corpus of the questions' paragraphs, with the extractive backend.

Run from the repository root:

    .venv/bin/python -m bench.scout_sweep [--data PATH] [--limit N]

Method. The corpus is bench.retrieval's (every context paragraph of the questions one document, ~500
in all). Two settings, each scouted twice through an MCP client: once as the server does it (the
sweep: roles/sweep.py's angles), once with the angles cut to the topic alone (one search, as a
discovery leaf did before the sweep, when its siblings' questions were not searched):
- one question: `scout_sources(topic=question, limit=8)` for each question;
- three questions: `scout_sources(topic=first, queries=[second, third], limit=8)` for each run of
  three consecutive questions, as a discovery leaf scouts for its sibling leaves' questions.
Figures:
- gold recall@8: the share of the questions' gold paragraphs (the two holding each question's
  supporting facts) among the curation's 8 sources;
- all gold: the share of scouts whose gold paragraphs are all among them;
- gold@3: the share of the first 3 sources that are gold paragraphs (the order the leaves read
  them in; the extractor's quick scan of the first candidates moves them here);
- searches and seconds per scout.
Nothing is fitted to these questions.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from bench.eval_extractive import wait_until_indexed
from bench.retrieval import DEFAULT_DATA, served_corpus

COMMAND = ".venv/bin/python -m bench.scout_sweep"
LIMIT = 8


def gold_of(question: dict[str, Any], paths: dict[tuple[str, str], str]) -> set[str]:
    """The file names of a question's gold paragraphs (those holding its supporting facts)."""
    context = question["context"]
    by_title = {
        title: paths[(title, "".join(sentences))]
        for title, sentences in zip(context["title"], context["sentences"], strict=True)
    }
    return {by_title[title] for title in set(question["supporting_facts"]["title"])}


async def scout_all(questions: list[dict[str, Any]], paths: dict[tuple[str, str], str]) -> dict[str, Any]:
    import research_mcp.roles.scout as scout_module
    from research_mcp.core.config import Settings
    from research_mcp.server.app import create_server
    from research_mcp.storage.outputs import StoredCuration
    from research_mcp.storage.store import Store

    sweep_angles = scout_module.angles
    groups = {
        "one question": [[q] for q in questions],
        "three questions": [questions[i : i + 3] for i in range(0, len(questions) - 2, 3)],
    }
    figures: dict[str, Any] = {}
    async with Client(create_server()) as client:
        status = await wait_until_indexed(client)
        store = Store(Settings().database_path)
        for setting, scouts in groups.items():
            for name, angles in (
                ("one search", lambda topic, queries, questions, limit=1: [topic]),
                ("sweep", sweep_angles),
            ):
                scout_module.angles = angles  # type: ignore[assignment]
                gold_total = gold_found = complete = searches = top_gold = top_total = 0
                started = time.perf_counter()
                for group in scouts:
                    gold = set().union(*(gold_of(q, paths) for q in group))
                    asked = {"topic": group[0]["question"], "limit": LIMIT}
                    if len(group) > 1:
                        asked["queries"] = [q["question"] for q in group[1:]]
                    result = await client.call_tool("scout_sources", asked)
                    curation = store.get_handoff(result.structured_content["id"]).output_as(StoredCuration)
                    assert curation is not None
                    found, ranked = set(), []
                    for source in curation.sources:
                        row = store.corpus_document(int(source.ref.split(":", 1)[1]))
                        if row is not None:
                            found.add(Path(row.path).name)
                            ranked.append(Path(row.path).name)
                    top_gold += len(set(ranked[:3]) & gold)
                    top_total += len(ranked[:3])
                    gold_total += len(gold)
                    gold_found += len(gold & found)
                    complete += gold <= found
                    searches += curation.searches
                seconds = time.perf_counter() - started
                figures[f"{setting}, {name}"] = {
                    "scouts": len(scouts),
                    "gold_recall_at_8": round(gold_found / gold_total, 3),
                    "all_gold": round(complete / len(scouts), 3),
                    "gold_at_3": round(top_gold / max(top_total, 1), 3),
                    "searches_per_scout": round(searches / len(scouts), 2),
                    "seconds_per_scout": round(seconds / len(scouts), 3),
                }
        scout_module.angles = sweep_angles
        figures["documents"] = status.get("documents_indexed")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    args = parser.parse_args(argv)
    questions = json.loads(args.data.read_text(encoding="utf-8"))
    if args.limit:
        questions = questions[: args.limit]
    with served_corpus(questions) as paths:
        figures = anyio.run(scout_all, questions, paths)
    print(f"scout sweep on {args.data.name} ({len(questions)} questions) — {COMMAND}")
    print(
        f"  {'':30} {'scouts':>6} {'gold recall@8':>14} {'all gold':>9} {'gold@3':>7} {'searches':>9} {'s/scout':>8}"
    )
    for name, row in figures.items():
        if isinstance(row, dict):
            print(
                f"  {name:30} {row['scouts']:>6} {row['gold_recall_at_8']:>14.3f} {row['all_gold']:>9.3f} "
                f"{row['gold_at_3']:>7.3f} "
                f"{row['searches_per_scout']:>9.2f} {row['seconds_per_scout']:>8.3f}"
            )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
