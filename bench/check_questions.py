"""Check a question set against its corpus: every answer is verbatim in the text the server reads.

Run from the repository root:

    PYTHONPATH=$PWD .venv/bin/python -m bench.check_questions realdocs
    PYTHONPATH=$PWD .venv/bin/python -m bench.check_questions <set> --root /path/to/corpus

The set is ``bench/data/<set>/questions.json`` (the format of ``bench/data/realdocs/questions.json``).
The corpus folder is ``--root``, else the set's ``root`` in the corpus registry (``bench/corpora.py``),
else ``bench/data/<set>/corpus``.

Checked, for every question:

- the shape: a unique ``id``, a ``split``, a known ``kind``, a non-empty ``question``, ``answers`` a
  list of parts each a non-empty list of strings, ``files`` a list of paths inside the corpus;
- an unanswerable question has no answers and no files; any other has both;
- each file exists, and each answer part has an alternative that occurs in the text read from one of
  the question's files, compared as the benchmark compares (``research_mcp.core.citations.normalize``:
  NFKC, typographic quotes and dashes folded, whitespace collapsed, case folded).

The text is what the server reads from the file: HTML and PDF through ``extract_text`` (with the
content type the corpus reader passes), Markdown and plain text decoded as the corpus decodes them,
a ``.gz`` file uncompressed first. Prints one line per failure, then the counts per split and kind;
exits 1 when anything failed. A failing question is fixed in the question file, never here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from research_mcp.core.citations import normalize
from research_mcp.core.errors import SourceError
from research_mcp.sources.documents import decode_text
from research_mcp.sources.text import extract_text

DATA = Path(__file__).resolve().parent / "data"
KINDS = frozenset({"single", "comparison", "multi", "unanswerable"})
PARSED_TYPES = {".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf"}


def corpus_root(name: str, given: str | None) -> Path:
    """The folder the set's ``files`` are relative to."""
    if given:
        return Path(given)
    try:
        from bench.corpora import CORPORA  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # a branch without the registry
        return DATA / name / "corpus"
    return Path(CORPORA[name].root) if name in CORPORA else DATA / name / "corpus"


@cache
def document_text(path: Path) -> str:
    """The normalised text the server reads from one corpus file."""
    data = path.read_bytes()
    name = path.name
    if name.endswith(".gz"):
        data, name = gzip.decompress(data), name[: -len(".gz")]
    suffix = Path(name).suffix.lower()
    if suffix in PARSED_TYPES:
        _, _, text = extract_text(data, PARSED_TYPES[suffix], str(path))
    else:
        text = decode_text(data)
    return normalize(text)


def shape_errors(item: dict[str, Any], seen: set[str]) -> list[str]:
    errors = []
    ident = item.get("id")
    if not isinstance(ident, str) or not ident or ident in seen:
        errors.append(f"id {ident!r} missing or repeated")
    if not isinstance(item.get("split"), str) or not item["split"]:
        errors.append("no split")
    if item.get("kind") not in KINDS:
        errors.append(f"kind {item.get('kind')!r} is not one of {sorted(KINDS)}")
    if not isinstance(item.get("question"), str) or not item["question"].strip():
        errors.append("no question")
    answers, files = item.get("answers"), item.get("files")
    if not isinstance(answers, list) or not all(
        isinstance(part, list) and part and all(isinstance(a, str) and a.strip() for a in part)
        for part in answers
    ):
        errors.append("answers must be a list of non-empty lists of strings")
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        errors.append("files must be a list of paths")
    if errors:
        return errors
    if item["kind"] == "unanswerable" and (answers or files):
        errors.append("an unanswerable question has answers [] and files []")
    if item["kind"] != "unanswerable" and not (answers and files):
        errors.append("an answerable question needs answers and files")
    return errors


def answer_errors(item: dict[str, Any], root: Path) -> list[str]:
    errors, texts = [], []
    for rel in item["files"]:
        path = root / rel
        if not path.is_file():
            errors.append(f"file {rel!r} is not in {root}")
            continue
        try:
            texts.append(document_text(path))
        except SourceError as exc:
            errors.append(f"file {rel!r} could not be read: {exc}")
    if errors:
        return errors
    for part in item["answers"]:
        if not any(normalize(alt) in text for alt in part for text in texts):
            errors.append(f"no alternative of {part!r} occurs in {item['files']}")
    return errors


def check(questions: Path, root: Path) -> int:
    """Print each failure and the counts per split and kind; 1 when anything failed, else 0."""
    items = json.loads(questions.read_text(encoding="utf-8"))
    seen: set[str] = set()
    failed = 0
    counts: Counter[tuple[str, str]] = Counter()
    for item in items:
        errors = shape_errors(item, seen) or answer_errors(item, root)
        seen.add(str(item.get("id")))
        counts[(str(item.get("split")), str(item.get("kind")))] += 1
        for error in errors:
            print(f"{item.get('id')}: {error}")
        failed += bool(errors)
    for (split, kind), count in sorted(counts.items()):
        print(f"{split:10} {kind:13} {count}")
    print(f"{questions}: {len(items)} questions, {failed} failed (corpus {root})")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("set", help="the question set: bench/data/<set>/questions.json")
    parser.add_argument("--root", help="the corpus folder the files are relative to")
    args = parser.parse_args(argv)
    return check(DATA / args.set / "questions.json", corpus_root(args.set, args.root))


if __name__ == "__main__":
    sys.exit(main())
