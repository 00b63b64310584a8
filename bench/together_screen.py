"""Which questions the together rule (roles/evidence.py `_judge_together`) finds not established,
read off `bench.answers --dump` files: each run's verified facts, grouped by the question they were
extracted for, judged again offline. Held-out runs are skipped (they are only reported).

    .venv/bin/python -m bench.answers --sets dev,dev2,dev3,dev4,dev5 --apart --dump runs.jsonl
    .venv/bin/python -m bench.together_screen runs.jsonl

Each line: set, whether the run's question is answerable and was answered ("ANSW"), missed ("miss")
or unanswerable ("UNANS"), the run's confidence, and the rule's reason. A line "ANSW medium" is a
right answer the rule would lower; "UNANS medium" a near miss it catches.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

from research_mcp.contracts import Fact
from research_mcp.matching.terms import terms
from research_mcp.roles import evidence


def screened(path: str) -> Counter[str]:
    found: Counter[str] = Counter()
    with open(path, encoding="utf-8") as lines:
        runs = [json.loads(line) for line in lines]
    for run in runs:
        if "heldout" in run["set"]:
            continue
        titles = {int(k[1:]): re.sub(r"^/tmp/realdocs-\w+/corpus/", "", v) for k, v in run["sources"].items()}
        by_question: dict[str, list[Fact]] = {}
        for fact in run["facts"]:
            if fact["verified"] and fact["question"]:
                fields = {k: v for k, v in fact.items() if k in Fact.model_fields}
                fields.update(id=int(fact["id"][1:]), source_id=int(fact["source_id"][1:]))
                by_question.setdefault(fact["question"], []).append(Fact(**fields))
        asked = set(terms(run["question"]))
        tag = "UNANS" if run["unanswerable"] else ("ANSW" if run["answered"] else "miss")
        for question, facts in by_question.items():
            if len(set(terms(question)) & asked) * 2 < len(set(terms(question))):
                continue  # a fact an earlier run found for another question
            judged = evidence.Evidence()
            evidence._judge_together(judged, [question], [facts], titles)
            if judged.caps:
                found[f"{run['set']:20} {tag:5} {run['level']:6} {judged.caps[0][1][:160]}"] += 1
    return found


def main() -> int:
    for path in sys.argv[1:]:
        for line, count in sorted(screened(path).items()):
            print(f"{count:3} {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
