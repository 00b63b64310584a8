"""Fit the confidence thresholds on dev: each question's verified facts as the research kept them.

    .venv/bin/python -m bench.evidence_rows --out EV.jsonl --split dev --dump DUMP.jsonl   # once
    .venv/bin/python -m bench.fit_confidence --evidence EV.jsonl --dump DUMP.jsonl

For every question (``bench.evidence_rows``: its verified facts, their sources and probabilities;
``bench.answer_table --dump``: whether the report holds its answer), the level the rule of
research_mcp.answering.confidence gives at each pair of thresholds (CLEAR, RIVAL_SHARE) is compared
with the truth: per set, overconfident misses (medium or high, the report without the answer) of
the answerable, answered questions left low, unanswerable questions said medium or high. The pair
kept is the one with the fewest answered-but-low over every set together, among those whose
overconfident misses stay within `MAX_OVERCONFIDENT` of the answerable on every set (the issue's
target) and that leave every unanswerable question low. Only dev rows are fitted; held-out rows are printed as figures.

The levels are those of the question's own facts (those found for it; a question the planner split
is judged on its parts, its level the lowest); a question with no fact of its own is low. The level
does not change what the research reads or shows, so the figures are those of a run at that rule.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from research_mcp.answering import confidence
from research_mcp.core.citations import normalize

MAX_OVERCONFIDENT = 0.10
CLEARS = (0.1, 0.15, 0.2, 0.25, 0.3)
SHARES = (0.1, 0.15, 0.2, 0.25, 0.3)


def load(evidence: Path, dump: Path) -> list[dict]:
    """The evidence rows joined with the dump's outcome of the same question."""
    outcomes = {}
    for line in dump.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if "set" in row and "question" in row:
            outcomes[row["question"]] = row
    rows = []
    for line in evidence.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        outcome = outcomes.get(row["question"])
        if outcome is not None:
            row.update(
                set=outcome["set"],
                split=outcome["split"],
                answerable=bool(outcome["answers"] and outcome["files"]),
                selected=bool(outcome.get("selected")),
            )
            rows.append(row)
    return rows


def parts(row: dict, asked: set[str]) -> list[list[dict]]:
    """The facts found for the question itself; else for each part the planner made of it (a fact
    found for another of the set's questions, or for a search's own query, is no part of it)."""
    own = [f for f in row["facts"] if normalize(f["asked"] or "") == normalize(row["question"])]
    if own:
        return [own]
    grouped: dict[str, list[dict]] = defaultdict(list)
    for fact in row["facts"]:
        key = normalize(fact["asked"] or "")
        if key and key not in asked and ":" not in key.split()[0]:
            grouped[key].append(fact)
    return list(grouped.values())


def evidence(facts: list[dict]) -> tuple[float, float, int]:
    """Best probability, the best of another source (a copy of its text is no other), agreeing sources."""
    best = max(facts, key=lambda f: f["p"])
    said = normalize(best["quote"])
    rival = max(
        (f["p"] for f in facts if f["source"] != best["source"] and normalize(f["quote"]) != said),
        default=0.0,
    )
    agreeing = len({f["source"] for f in facts if f["p"] >= confidence.ANSWERED})
    return best["p"], rival, agreeing


def level(row: dict, asked: set[str], clear: float, share: float) -> str:
    found = parts(row, asked)
    if not found:
        return "low"
    saved = confidence.CLEAR, confidence.RIVAL_SHARE
    confidence.CLEAR, confidence.RIVAL_SHARE = clear, share
    try:
        levels = []
        for facts in found:
            best, rival, agreeing = evidence(facts)
            levels.append(confidence.level_of(best, agreeing=agreeing, rival=rival))
    finally:
        confidence.CLEAR, confidence.RIVAL_SHARE = saved
    return confidence.lowest(levels)


def estimated(row: dict, asked: set[str], clear: float, share: float) -> str:
    """The level a run at the rule would end with: the rule's, unless the run's own level differs
    from what the rule before gives (the evidence rules capped it, or the question was split in a
    way the facts do not show): then the run's."""
    before = level(row, asked, 1.0, 0.0)
    return level(row, asked, clear, share) if (before != "low") == (row["level"] != "low") else row["level"]


def tally(
    rows: list[dict], asked: set[str], clear: float, share: float, *, as_run: bool = False
) -> dict[str, list[int]]:
    """Per set: answerable, overconfident, answered, answered but low, unanswerable, unanswerable confident."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0] * 6)
    for row in rows:
        sure = (estimated if as_run else level)(row, asked, clear, share) != "low"
        cell = counts[row["set"]]
        if row["answerable"]:
            cell[0] += 1
            cell[1] += sure and not row["selected"]
            cell[2] += row["selected"]
            cell[3] += row["selected"] and not sure
        else:
            cell[4] += 1
            cell[5] += sure
    return counts


def line(name: str, counts: dict[str, list[int]]) -> str:
    total = [sum(cell[i] for cell in counts.values()) for i in range(6)]
    cells = [
        f"{s} {c[1] / max(c[0], 1):.2f}/{c[3] / max(c[2], 1):.2f}/{c[5]}" for s, c in sorted(counts.items())
    ]
    return (
        f"| {name} | {total[1] / max(total[0], 1):.3f} | {total[3] / max(total[2], 1):.3f} | "
        f"{total[5]}/{total[4]} | {' · '.join(cells)} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--evidence", type=Path, required=True)
    parser.add_argument("--dump", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = load(args.evidence, args.dump)
    asked = {normalize(row["question"]) for row in rows}
    dev = [row for row in rows if row["split"] == "dev"]
    print(f"{len(dev)} dev questions; overconfident / answered-but-low / unanswerable confident")
    print("| rule | overconfident | answered but low | unanswerable confident | per set (oc/low/unans) |")
    print("|---|---|---|---|---|")
    print(line(f"before (ANSWERED {confidence.ANSWERED} only)", tally(dev, asked, 1.0, 0.0)))
    best = None
    for clear in CLEARS:
        for share in SHARES:
            counts = tally(dev, asked, clear, share)
            print(line(f"CLEAR {clear}, RIVAL_SHARE {share}", counts))
            over = max(c[1] / max(c[0], 1) for c in counts.values())
            low = sum(c[3] for c in counts.values())
            if over <= MAX_OVERCONFIDENT and not sum(c[5] for c in counts.values()):
                # the fewest answered-but-low; among equals the cautious (higher CLEAR, lower share)
                key = (low, -clear, share)
                best = min(best, (key, clear, share)) if best else (key, clear, share)
    if best:
        print(f"\nfitted: CLEAR {best[1]}, RIVAL_SHARE {best[2]}")
    module = confidence.CLEAR, confidence.RIVAL_SHARE
    print(line("dev, the run's levels", tally(dev, asked, 1.0, 0.0, as_run=True)))
    print(
        line(
            f"dev, a run at CLEAR {module[0]}, RIVAL_SHARE {module[1]}",
            tally(dev, asked, *module, as_run=True),
        )
    )
    held = [row for row in rows if row["split"] != "dev"]
    if held:
        print(line("held-out, the run's levels", tally(held, asked, 1.0, 0.0, as_run=True)))
        print(
            line(
                f"held-out, a run at CLEAR {module[0]}, RIVAL_SHARE {module[1]}",
                tally(held, asked, *module, as_run=True),
            )
        )
        print(
            line(
                f"held-out at the module's CLEAR {confidence.CLEAR}, RIVAL_SHARE {confidence.RIVAL_SHARE}",
                tally(held, asked, confidence.CLEAR, confidence.RIVAL_SHARE),
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
