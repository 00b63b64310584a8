"""Fit the answering ranker's weights on the dev halves of every set together; check on held-out.

    .venv/bin/python -m bench.fit_ranker [--sets realdocs,hotpot,...] [--write]

For each answerable question of a set, every passage of its answering documents (the gold files)
and of the two documents a plain BM25 over whole documents ranks highest among the others is a
row: the ranker's features (research_mcp.answering.ranker) and whether the passage holds an answer
part. A logistic model (L2, Newton's method) is fitted on the dev rows of all sets together. The
script prints, per set and half: how often the top passage of the answering documents holds the
answer (top-1, top-3), beside plain BM25's order of the same passages, and the fitted weights.
``--write`` saves them to research_mcp/answering/weights.json. Held-out rows are scored, never fitted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from research_mcp.answering.lexicon import Lexicon
from research_mcp.answering.passages import split_passages
from research_mcp.answering.ranker import _WEIGHTS, FEATURES, Ranker, features, margins, passage_lexicon
from research_mcp.answering.terms import terms
from research_mcp.core.citations import normalize

REPO = Path(__file__).resolve().parents[1]
ROWS_VERSION = 1
REUSE_ROWS = False
FITTED: dict = {}  # the order weights and the margin's weight of the last listwise fit


@dataclass
class Document:
    title: str
    text: str


@dataclass
class Rows:
    x: list[np.ndarray] = field(default_factory=list)
    y: list[np.ndarray] = field(default_factory=list)
    groups: list[tuple[int, int, np.ndarray]] = field(default_factory=list)  # (start, end, bm25) per gold doc
    questions: list[tuple[int, int, bool]] = field(
        default_factory=list
    )  # (start, end, answerable) per question


def set_registry() -> dict[str, tuple[Path, Path]]:
    """name -> (questions.json, corpus root), every set of bench/corpora.py that has questions."""
    from bench import corpora

    sets = {}
    for name, spec in corpora.CORPORA.items():
        questions = REPO / "bench" / "data" / name / "questions.json"
        if questions.exists():
            sets[name] = (questions, spec)
    return sets


def read_corpus(root: Path) -> dict[str, Document]:
    """Every document of the folder as the server reads it (kept in the bench cache for the next fit)."""
    import pickle

    from bench.corpora import cache_folder
    from research_mcp.sources.readers import READER_VERSION

    kept = cache_folder() / "fit-ranker" / f"{root.name}-{READER_VERSION}.pickle"
    if kept.exists() and kept.stat().st_mtime >= max(
        p.stat().st_mtime for p in root.rglob("*") if p.is_file()
    ):
        return pickle.loads(kept.read_bytes())
    documents = _read_corpus(root)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(pickle.dumps(documents))
    return documents


def _read_corpus(root: Path) -> dict[str, Document]:
    from research_mcp.sources.folders import document_name
    from research_mcp.sources.parsing import DocumentParser
    from research_mcp.sources.readers import read_document

    documents: dict[str, Document] = {}
    with DocumentParser(timeout=60) as parser:
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            named = document_name(path.name)
            if named is None:
                continue
            data = path.read_bytes()
            if path.name.endswith(".gz"):
                import gzip

                data = gzip.decompress(data)
            rel = str(path.relative_to(root))
            try:
                read = read_document(data, named, rel, parser, (root, path))
            except Exception as error:  # a benchmark reads what it can
                print(f"  skipped {rel}: {error}", file=sys.stderr)
                continue
            if read:
                documents[rel] = Document(*read)
    return documents


def hotpot_set(path: Path) -> tuple[list[dict], dict[str, Document]]:
    data = json.loads(path.read_text())
    documents: dict[str, Document] = {}
    questions = []
    for number, item in enumerate(data):
        for title, sentences in zip(item["context"]["title"], item["context"]["sentences"], strict=True):
            documents.setdefault(title, Document(title, "".join(sentences)))
        gold = list(dict.fromkeys(item["supporting_facts"]["title"]))
        answer = item["answer"]
        parts = [] if answer.lower() in ("yes", "no") else [[answer]]
        questions.append(
            {
                "id": f"hp{number}",
                "split": "dev" if number < len(data) // 2 else "heldout",
                "question": item["question"],
                "answers": parts,
                "files": gold,
            }
        )
    return questions, documents


def holds(passage_text: str, answers: list[list[str]]) -> bool:
    said = normalize(passage_text)
    return any(normalize(alt) in said for part in answers for alt in part)


def collect(questions: list[dict], documents: dict[str, Document], embedder) -> dict[str, Rows]:
    doc_names = list(documents)
    corpus_lexicon = Lexicon([terms(f"{documents[n].title} {documents[n].text[:20000]}") for n in doc_names])
    prepared = {}
    rows = {"dev": Rows(), "heldout": Rows()}
    for question in questions:
        answerable = bool(question["answers"] and question["files"])
        half = rows["heldout" if question["split"] == "heldout" else "dev"]
        scores = corpus_lexicon.coverages(terms(question["question"]))
        others = [doc_names[i] for i in np.argsort(-scores) if doc_names[i] not in question["files"]]
        first = sum(len(x) for x in half.x)
        for name in [*question["files"], *others[: 2 if answerable else 3]]:
            document = documents.get(name)
            if document is None:
                continue
            if name not in prepared:
                passages = split_passages(document.text)
                prepared[name] = (passages, passage_lexicon(document.text, passages), {})
            passages, lexicon, vectors = prepared[name]
            if not passages:
                continue
            matrix = features(
                question["question"],
                document.text,
                document.title,
                passages,
                embedder,
                lexicon=lexicon,
                vectors=vectors,
            )
            labels = np.array(
                [holds(document.text[p.start : p.end], question["answers"]) for p in passages],
                dtype=np.float64,
            )
            start = sum(len(x) for x in half.x)
            half.x.append(matrix)
            half.y.append(labels)
            if name in question["files"]:
                half.groups.append((start, start + len(passages), matrix[:, 0]))
        half.questions.append((first, sum(len(x) for x in half.x), answerable))
    return rows


def calibration(per_set: dict[str, dict[str, Rows]], probability) -> None:
    """For thresholds of the best passage's probability: answerable questions confident and answered
    (one of the three best passages holds it), confident and missed, and unanswerable ones confident."""
    print("\n| threshold | half | confident & answered | overconfident misses | unanswerable confident |")
    print("|---|---|---|---|---|")
    for threshold in (0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6):
        for half in ("dev", "heldout"):
            right = wrong = unanswerable_confident = answerable = unanswerable = 0
            for halves in per_set.values():
                rows = halves[half]
                if not rows.x:
                    continue
                y = np.concatenate(rows.y)
                p = probability(rows)
                for start, end, is_answerable in rows.questions:
                    if end <= start:
                        continue
                    order = np.argsort(-p[start:end], kind="stable")[:3]
                    confident = p[start:end][order[0]] >= threshold
                    if is_answerable:
                        answerable += 1
                        holds_it = bool(y[start:end][order].any())
                        right += confident and holds_it
                        wrong += confident and not holds_it
                    else:
                        unanswerable += 1
                        unanswerable_confident += confident
            print(
                f"| {threshold} | {half} | {right}/{answerable} | {wrong / max(answerable, 1):.2f} "
                f"| {unanswerable_confident}/{unanswerable} |"
            )


def collected(name: str, questions: list[dict], documents: dict[str, Document], embedder) -> dict[str, Rows]:
    """`collect`, kept in the bench cache under what its rows depend on (the questions, the readers,
    the features, the embedder; bump ROWS_VERSION when `collect` changes): a refit embeds nothing again."""
    import hashlib
    import pickle

    from bench.corpora import cache_folder
    from research_mcp.sources.readers import READER_VERSION

    key = hashlib.sha256(
        json.dumps(
            [
                ROWS_VERSION,
                questions,
                READER_VERSION,
                FEATURES,
                embedder.name if embedder is not None else None,
                sorted(documents),
            ]
        ).encode()
        + (REPO / "research_mcp/answering/ranker.py").read_bytes()
        + (REPO / "research_mcp/answering/passages.py").read_bytes()
    ).hexdigest()[:16]
    kept = cache_folder() / "fit-ranker" / f"rows-{name}-{key}.pickle"
    if (
        REUSE_ROWS and not kept.exists()
    ):  # --reuse-rows: the newest rows kept for this set, whatever their key
        newest = sorted(kept.parent.glob(f"rows-{name}-*.pickle"), key=lambda path: path.stat().st_mtime)
        kept = newest[-1] if newest else kept
    if kept.exists():
        return _with_document_size(pickle.loads(kept.read_bytes()))
    rows = collect(questions, documents, embedder)
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(pickle.dumps(rows))
    return rows


def _with_document_size(rows: dict[str, Rows]) -> dict[str, Rows]:
    """Rows collected before the `passages` feature: each document's matrix gains it (log of its rows)."""
    for half in rows.values():
        half.x = [
            m if m.shape[1] == len(FEATURES) else np.column_stack([m, np.full(len(m), np.log1p(len(m)))])
            for m in half.x
        ]
    return rows


def fit(
    x: np.ndarray, y: np.ndarray, l2: float = 1.0, *, standardise: bool = True
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    mean, scale = (
        (x.mean(axis=0), x.std(axis=0)) if standardise else (np.zeros(x.shape[1]), np.ones(x.shape[1]))
    )
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    penalty = np.full(z.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-(z @ w)))
        gradient = z.T @ (p - y) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-7:
            break
    return w[:-1], float(w[-1]), mean, scale


def fit_listwise(
    rows: list[Rows], l2: float = 0.5, steps: int = 300
) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Weights that put an answer-holding passage first within each answering document (a softmax over
    the document's passages, the answer-holding ones' share maximised), then a bias that calibrates
    the score to a probability over every row (Platt scaling)."""
    x = np.vstack([m for r in rows for m in r.x])
    y = np.concatenate([m for r in rows for m in r.y])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    groups = [
        (offset + start, offset + end)
        for r, offset in zip(
            rows, np.cumsum([0] + [sum(len(m) for m in r.x) for r in rows[:-1]]), strict=True
        )
        for start, end, _ in r.groups
    ]
    groups = [(a, b) for a, b in groups if y[a:b].any() and not y[a:b].all()]
    w = np.zeros(z.shape[1])
    rate = 0.5
    for _ in range(steps):
        gradient = l2 * w
        for a, b in groups:
            s = z[a:b] @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            positive = y[a:b] > 0
            q = p * positive
            q /= q.sum()
            gradient += (p - q) @ z[a:b]
        w -= rate * gradient / max(len(groups), 1)
    # Across documents: the order's score, its margin over the document's next best passage and the
    # document-level features, calibrated together.
    score = z @ w
    offsets = np.cumsum([0] + [len(m) for r in rows for m in r.x])
    margin = np.concatenate([margins(score[a:b]) for a, b in itertools.pairwise(offsets)])
    document_level = [FEATURES.index("title"), FEATURES.index("passages")]
    stage = np.column_stack([score, margin, z[:, document_level]])
    coefficients, bias, _, _ = fit(stage, y, l2=1.0, standardise=False)
    final = w * coefficients[0]
    final[document_level] += coefficients[2:]
    FITTED["order"], FITTED["margin"] = w, float(coefficients[1])
    return final, bias, mean, scale


def _platt(score: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    a, b = 1.0, 0.0
    for _ in range(100):
        p = 1 / (1 + np.exp(-(a * score + b)))
        r = p - y
        g = np.array([r @ score, r.sum()])
        weights = p * (1 - p)
        h = np.array(
            [[weights @ score**2, weights @ score], [weights @ score, weights.sum()]]
        ) + 1e-9 * np.eye(2)
        step = np.linalg.solve(h, g)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-8:
            break
    return float(a), float(b)


def top_hits(rows: Rows, scores: np.ndarray, y: np.ndarray, k: int) -> tuple[int, int]:
    hits = total = 0
    for start, end, _ in rows.groups:
        if y[start:end].any():
            total += 1
            order = np.argsort(-scores[start:end], kind="stable")[:k]
            hits += bool(y[start:end][order].any())
    return hits, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="")
    parser.add_argument(
        "--hotpot", type=Path, default=REPO.parent / "shared/eval/hotpotqa_dev_distractor_part_a.json"
    )
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--no-dense", action="store_true")
    parser.add_argument(
        "--embedder",
        choices=("minilm", "static"),
        default="minilm",
        help="the passages' dense feature: MiniLM as the server computes it (default), or the static "
        "embedder (tried: held-out top-3 fell 0.10-0.11 on git-doc and 0.13-0.19 on postgresql-doc-15)",
    )
    parser.add_argument(
        "--pointwise", action="store_true", help="fit the probability directly (no listwise step)"
    )
    parser.add_argument(
        "--reuse-rows", action="store_true", help="the newest rows kept per set, whatever changed since"
    )
    args = parser.parse_args(argv)
    global REUSE_ROWS
    REUSE_ROWS = args.reuse_rows
    from research_mcp.llm.embeddings import MiniLMEmbedder
    from research_mcp.llm.static_embedder import StaticEmbedder

    embedder = None if args.no_dense else StaticEmbedder() if args.embedder == "static" else MiniLMEmbedder()
    registry = set_registry()
    wanted = [s for s in args.sets.split(",") if s] or [*registry, "hotpot"]
    per_set: dict[str, dict[str, Rows]] = {}
    for name in wanted:
        if name == "hotpot":
            questions, documents = hotpot_set(args.hotpot)
        else:
            from bench.corpora import materialise

            questions_path, spec = registry[name]
            questions, documents = json.loads(questions_path.read_text()), read_corpus(materialise(spec))
        print(f"{name}: {len(documents)} documents, {len(questions)} questions", file=sys.stderr)
        per_set[name] = collected(name, questions, documents, embedder)
    x = np.vstack([m for rows in per_set.values() for m in rows["dev"].x])
    y = np.concatenate([m for rows in per_set.values() for m in rows["dev"].y])
    weights, bias, mean, scale = (
        fit(x, y) if args.pointwise else fit_listwise([rows["dev"] for rows in per_set.values()])
    )
    print(f"fitted on {len(y)} dev passages ({int(y.sum())} hold an answer)")
    ranker = Ranker(weights, bias, mean, scale, FITTED.get("order"), FITTED.get("margin", 0.0))

    def probability(rows: Rows) -> np.ndarray:
        return np.concatenate([ranker.probabilities(m) for m in rows.x])

    print("| set | half | questions | ranker top-1 | ranker top-3 | BM25 top-1 | BM25 top-3 |")
    print("|---|---|---|---|---|---|---|")
    for name, halves in per_set.items():
        for half, rows in halves.items():
            if not rows.x:
                continue
            hx, hy = np.vstack(rows.x), np.concatenate(rows.y)
            logits = probability(rows)
            bm25 = hx[:, 0] + 1e-6 * hx[:, 2]
            cells = [top_hits(rows, s, hy, k) for s in (logits, bm25) for k in (1, 3)]
            total = cells[0][1]
            print(
                f"| {name} | {half} | {total} | "
                + " | ".join(f"{h / max(total, 1):.2f}" for h, _ in cells)
                + " |"
            )
    calibration(per_set, probability)
    print(
        "weights:",
        {f: round(float(w), 3) for f, w in zip(FEATURES, weights, strict=True)},
        "bias",
        round(bias, 3),
    )
    if args.write:
        _WEIGHTS.write_text(
            json.dumps(
                {
                    "features": list(FEATURES),
                    "weights": [round(float(v), 5) for v in weights],
                    "bias": round(bias, 5),
                    "mean": [round(float(v), 5) for v in mean],
                    "scale": [round(float(v), 5) for v in scale],
                    "order": [round(float(v), 5) for v in FITTED.get("order", weights)],
                    "margin": round(FITTED.get("margin", 0.0), 5),
                    "fitted_on": wanted,
                },
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {_WEIGHTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
