"""Choose the ranker's L2 strength by leaving one set out, on dev rows only; compare with the weights kept.

    .venv/bin/python -m bench.ranker_cv [--l2 0.5,4,16] [--hotpot PATH]

Reads the rows ``bench.fit_ranker`` keeps in the bench cache (run it first: it embeds what the rows
need). For each L2 strength of the listwise stage, each set's dev rows are ranked by weights fitted
on the dev rows of every other set (leave one set out), and the top-1 and top-3 of its answering
documents are printed beside those of the weights in research_mcp/answering/weights.json on the
same rows. Held-out rows are not read here: ``bench.fit_ranker`` prints them for the weights chosen.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench import fit_ranker
from research_mcp.answering.ranker import Ranker, load_ranker


def top_k(ranker: Ranker, rows: fit_ranker.Rows) -> tuple[float, float]:
    y = np.concatenate(rows.y)
    p = np.concatenate([ranker.probabilities(m) for m in rows.x])
    (h1, n), (h3, _) = (fit_ranker.top_hits(rows, p, y, k) for k in (1, 3))
    return h1 / max(n, 1), h3 / max(n, 1)


def fitted(rows: list[fit_ranker.Rows], l2: float) -> Ranker:
    fit_ranker.FITTED.clear()
    weights, bias, mean, scale = fit_ranker.fit_listwise(rows, l2=l2)
    return Ranker(weights, bias, mean, scale, fit_ranker.FITTED["order"], fit_ranker.FITTED["margin"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--l2", default="0.5,4,16")
    parser.add_argument(
        "--hotpot",
        type=Path,
        default=fit_ranker.REPO.parent / "shared/eval/hotpotqa_dev_distractor_part_a.json",
    )
    args = parser.parse_args(argv)
    import __main__
    from bench.corpora import materialise
    from research_mcp.llm.embeddings import MiniLMEmbedder

    # The rows were pickled by `python -m bench.fit_ranker`: their classes live in its __main__.
    __main__.Rows, __main__.Document = fit_ranker.Rows, fit_ranker.Document  # type: ignore[attr-defined]
    embedder = MiniLMEmbedder()
    dev: dict[str, fit_ranker.Rows] = {}
    for name, (questions_path, spec) in fit_ranker.set_registry().items():
        questions = json.loads(questions_path.read_text())
        documents = fit_ranker.read_corpus(materialise(spec))
        dev[name] = fit_ranker.collected(name, questions, documents, embedder)["dev"]
    questions, documents = fit_ranker.hotpot_set(args.hotpot)
    dev["hotpot"] = fit_ranker.collected("hotpot", questions, documents, embedder)["dev"]
    kept = load_ranker()
    print("| weights | " + " | ".join(dev) + " | all: top-1 / top-3 |")
    print("|---|" + "---|" * (len(dev) + 1))

    def row(label: str, scores: dict[str, tuple[float, float]]) -> None:
        sizes = {
            name: sum(1 for s, e, _ in dev[name].groups if np.concatenate(dev[name].y)[s:e].any())
            for name in dev
        }
        whole = sum(sizes.values())
        mean1 = sum(scores[n][0] * sizes[n] for n in dev) / whole
        mean3 = sum(scores[n][1] * sizes[n] for n in dev) / whole
        cells = " | ".join(f"{a:.2f} / {b:.2f}" for a, b in scores.values())
        print(f"| {label} | {cells} | {mean1:.3f} / {mean3:.3f} |")

    row("kept (weights.json)", {name: top_k(kept, rows) for name, rows in dev.items()})
    for l2 in (float(v) for v in args.l2.split(",")):
        left_out = {
            name: top_k(fitted([r for other, r in dev.items() if other != name], l2), rows)
            for name, rows in dev.items()
        }
        row(f"L2 {l2}, each set left out", left_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
