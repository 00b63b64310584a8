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

OUT: Path | None = None


async def research(client, question: str, root: Path) -> answer_table.Outcome:  # type: ignore[no-untyped-def]
    """answer_table.research, keeping the finished run's verified facts."""
    outcome, document = await answer_table.researched(client, question, root)
    if OUT is not None and document is not None:
        facts = [
            {
                "source": fact["source_id"],
                "p": fact["confidence"],
                "asked": fact["question"],
                "quote": fact["quote"][:300],
                "cited": f"[{fact['id']}]" in outcome.report,
            }
            for fact in document["facts"]
            if fact["verified"]
        ]
        record = {
            "root": root.name,
            "question": question,
            "level": outcome.level,
            "reasoning": document["confidence"]["reasoning"][:400],
            "facts": facts,
        }
        with OUT.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    return outcome


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
