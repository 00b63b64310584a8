"""What code's evidence rules (roles/evidence.py `judge_evidence`, or one rule of it) say of the runs
of `bench.answers --dump` files, judged again offline: each run's verified facts, grouped by the
question they were extracted for. Held-out runs are skipped (they are only reported). Run it before
and after a rule change and diff the two: what a rule would catch, and what it would lower.

    .venv/bin/python -m bench.answers --sets dev,dev2,dev3,dev4,dev5,dev6 --apart --dump runs.jsonl
    .venv/bin/python -m bench.evidence_screen [--rule together] runs.jsonl

`--as-asked` reads every verified fact of a run as found for the run's own question (as a report
reads a stored line its run found again: `FactTables.canonical_facts(ids, questions)`), so that a
rule is judged on what the report judges, not only on the facts first stored for that question. A
fact is read as found in every source the dump says it is in (its `also_in`), as a report reads it.

Each line: set, whether the run's question is answerable and was answered ("ANSW"), missed ("miss")
or unanswerable ("UNANS"), the run's confidence, the question the facts were extracted for and the
reasons of the caps the rules set. A new cap on an "ANSW medium" line is a right answer a change
would lower; on an "UNANS medium" line, a near miss it catches.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter

from research_mcp.contracts import Fact
from research_mcp.matching.terms import terms
from research_mcp.roles import evidence


def screened(path: str, rule: str, *, as_asked: bool = False) -> Counter[str]:
    found: Counter[str] = Counter()
    with open(path, encoding="utf-8") as lines:
        runs = [json.loads(line) for line in lines]
    for run in runs:
        if "heldout" in run["set"]:
            continue
        titles = {int(k[1:]): re.sub(r"^/tmp/realdocs-\w+/corpus/", "", v) for k, v in run["sources"].items()}
        by_question: dict[str, list[Fact]] = {}
        # Every source a fact was found in (a line several files share): its own, and those it is also in.
        cited_in = {
            int(fact["id"][1:]): [int(also["source_id"][1:]) for also in fact.get("also_in", [])]
            for fact in run["facts"]
        }
        for fact in run["facts"]:
            if fact["verified"] and fact["question"]:
                fields = {k: v for k, v in fact.items() if k in Fact.model_fields}
                fields.update(id=int(fact["id"][1:]), source_id=int(fact["source_id"][1:]))
                if as_asked:
                    fields["question"] = run["question"]
                by_question.setdefault(fields["question"], []).append(Fact(**fields))
        asked = set(terms(run["question"]))
        tag = "UNANS" if run["unanswerable"] else ("ANSW" if run["answered"] else "miss")
        for question, facts in by_question.items():
            if len(set(terms(question)) & asked) * 2 < len(set(terms(question))):
                continue  # a fact an earlier run found for another question
            if rule == "together":
                judged = evidence.Evidence()
                by_fact = evidence.fact_titles(facts, titles, cited_in)
                evidence._judge_together(judged, [question], [facts], by_fact)
            else:
                judged = evidence.judge_evidence(
                    [question], facts, in_scope=len(facts), read=len(facts), titles=titles, cited_in=cited_in
                )
            reasons = "; ".join(why[:100] for _, why in judged.caps)
            found[f"{run['set']:20} {tag:5} {run['level']:6} {question[:70]!r}: {reasons}"] += 1
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rule", choices=["all", "together"], default="all")
    parser.add_argument(
        "--as-asked", action="store_true", help="read every verified fact as found for the run's question"
    )
    parser.add_argument("dumps", nargs="+")
    args = parser.parse_args()
    for path in args.dumps:
        for line, count in sorted(screened(path, args.rule, as_asked=args.as_asked).items()):
            print(f"{count:3} {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
