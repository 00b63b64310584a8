"""Tokens spent: model input tokens of a run against designs that pass children's outputs up whole.

Input tokens are counted as the scripted model counts them (and the store records them):
(characters of the system prompt + the prompt) / 4. The naive designs are computed from the same
run's stored handoffs with the same rule; an extractor's prompt (its source and questions) is the
same in every design, so only the synthesizers differ:

- store-mediated (this server): a synthesizer's prompt holds the facts in its scope (capped at 150,
  each with statement and quote) and its children's report texts, read from the store;
- naive, children's whole outputs: a synthesizer's prompt holds the whole output of each child,
  as each child returned it (an extractor's facts, answers and confidence; a synthesis's report,
  findings, gaps, follow-ups and fact lists), instead of facts and reports;
- naive, passed up whole: as above, but with no store a child's output must carry everything it
  was given for its parent to cite and check it, so each child's output includes its own
  children's whole outputs, recursively.

The runs are those of bench.model_time (10, 50, 200 nodes); run alone, this module runs the three
trees itself with a zero-latency model.

Run alone: .venv/bin/python -m bench.tokens
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import anyio

from bench.scenarios import SHAPES, RunRecord, execute_tree
from research_mcp.roles.base import load_prompt
from research_mcp.storage.store import Store

CHARS_PER_TOKEN = 4


@dataclass
class TokenFigures:
    size: str
    calls: int
    extractor_tokens: int
    synth_actual: int
    synth_direct: int
    synth_recursive: int

    @property
    def actual(self) -> int:
        return self.extractor_tokens + self.synth_actual

    @property
    def direct(self) -> int:
        return self.extractor_tokens + self.synth_direct

    @property
    def recursive(self) -> int:
        return self.extractor_tokens + self.synth_recursive


def account(record: RunRecord) -> TokenFigures:
    store = Store(record.home / "research.db")
    try:
        rows = store.db.execute(
            "SELECT id, role, input, output, tokens_in FROM handoffs WHERE run_id = ? AND status = 'done'",
            [record.run_id],
        ).fetchall()
    finally:
        store.close()
    handoffs = {row[0]: row for row in rows}
    system = len(load_prompt("synthesizer"))

    @cache
    def whole(handoff_id: str) -> int:
        """Characters of a child's output returned whole, with what it was given (passed up whole)."""
        _, role, raw_input, output, _ = handoffs[handoff_id]
        size = len(output or "")
        if role == "synthesizer":
            size += sum(whole(child) for child in json.loads(raw_input)["input_handoffs"])
        return size

    extractor = synth_actual = synth_direct = synth_recursive = 0
    for _, role, raw_input, _, tokens_in in rows:
        if role == "extractor":
            extractor += tokens_in
        elif role == "synthesizer":
            given = json.loads(raw_input)
            header = len(f"Node: {given['title']}\nQuestions:\n") + sum(
                len(f"- {q}\n") for q in given["questions"]
            )
            children = given["input_handoffs"]
            synth_actual += tokens_in
            synth_direct += (
                system + header + sum(len(handoffs[c][3] or "") for c in children)
            ) // CHARS_PER_TOKEN
            synth_recursive += (system + header + sum(whole(c) for c in children)) // CHARS_PER_TOKEN
    return TokenFigures(record.shape.name, len(rows), extractor, synth_actual, synth_direct, synth_recursive)


def report(records: list[RunRecord]) -> list[TokenFigures]:
    print("== Tokens spent: model input tokens, store-mediated vs naive ==")
    figures = [account(record) for record in records]
    print(
        f"{'tree':<10} {'calls':>5} {'extractors':>11} {'synth (this)':>12} {'synth naive':>12}"
        f" {'synth whole':>12} {'run (this)':>11} {'run naive':>10} {'run whole':>10}"
        f" {'this/naive':>10} {'this/whole':>10}"
    )
    for f in figures:
        print(
            f"{f.size:<10} {f.calls:>5} {f.extractor_tokens:>11,} {f.synth_actual:>12,} {f.synth_direct:>12,}"
            f" {f.synth_recursive:>12,} {f.actual:>11,} {f.direct:>10,} {f.recursive:>10,}"
            f" {f.actual / f.direct:>10.2f} {f.actual / f.recursive:>10.2f}"
        )
    print(
        "synth: synthesizer calls only; run: every call (extractor prompts are the same in every design).\n"
        "naive: children's whole outputs in the parent's prompt; whole: outputs passed up whole, recursively.\n"
        "this/naive and this/whole: the run's input tokens as a share of the naive design's."
    )
    for f in figures:
        print(
            f"  {f.size}: synthesizers use {f.synth_actual / f.synth_direct:.2f}x the tokens of children's whole"
            f" outputs and {f.synth_actual / f.synth_recursive:.3f}x those of outputs passed up whole"
        )
    print()
    return figures


async def run() -> list[TokenFigures]:
    with tempfile.TemporaryDirectory(prefix="research-mcp-bench-") as tmp:
        records = [
            await execute_tree(SHAPES[size], Path(tmp) / str(SHAPES[size].nodes), latency=0.0, concurrency=4)
            for size in ("10 nodes", "50 nodes", "200 nodes")
        ]
        return report(records)


if __name__ == "__main__":
    anyio.run(run)
