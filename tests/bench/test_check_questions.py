"""bench/check_questions.py: a question set passes only when every answer is in its file's text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.check_questions import check

PAGE = b"""<!DOCTYPE html><html><head><title>port</title></head><body><nav>Home | Next</nav>
<main><h1>Connections</h1><p>The TCP port the server listens on; 5432 by default. Note that the
same port number is used for all addresses the server listens on.</p></main></body></html>"""
NOTES = "# Logging\n\nThe default location of the logs is a directory named `_logs`\ninside the cache.\n"


def question(ident: str, answers: list[list[str]], files: list[str], kind: str = "single") -> dict:
    return {"id": ident, "split": "dev", "kind": kind, "question": "?", "answers": answers, "files": files}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "port.html").write_bytes(PAGE)
    (root / "logging.md").write_text(NOTES, encoding="utf-8")
    return root


def run(tmp_path: Path, corpus: Path, items: list[dict]) -> int:
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return check(path, corpus)


def test_answers_found_across_line_breaks_and_case_pass(tmp_path: Path, corpus: Path) -> None:
    items = [
        question("a1", [["5432 BY DEFAULT"]], ["docs/port.html"]),
        question("a2", [["nope", "named `_logs` inside the cache"]], ["logging.md"]),
        question("a3", [], [], kind="unanswerable"),
    ]
    assert run(tmp_path, corpus, items) == 0


def test_an_answer_missing_from_its_file_fails_and_is_named(
    tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [question("b1", [["5432 by default"], ["listens on port 6432"]], ["docs/port.html"])]
    assert run(tmp_path, corpus, items) == 1
    assert "b1: no alternative of ['listens on port 6432']" in capsys.readouterr().out


@pytest.mark.parametrize(
    "item",
    [
        question("c1", [["5432 by default"]], ["docs/missing.html"]),
        question("c2", [["5432 by default"]], [], kind="unanswerable"),
        question("c3", [], ["logging.md"]),
        question("c4", [["5432 by default"]], ["docs/port.html"], kind="yes-no"),
        question("c5", ["5432 by default"], ["docs/port.html"]),  # type: ignore[list-item]
    ],
)
def test_malformed_questions_fail(tmp_path: Path, corpus: Path, item: dict) -> None:
    assert run(tmp_path, corpus, [item]) == 1


def test_a_repeated_id_fails(tmp_path: Path, corpus: Path) -> None:
    items = [question("d1", [["5432 by default"]], ["docs/port.html"])] * 2
    assert run(tmp_path, corpus, items) == 1
