"""Documents parsed in a worker process: any parser failure, a stall or a memory blow-up is a SourceError
naming the document, and the parser goes on serving the next document."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from research_mcp.core.errors import SourceError
from research_mcp.sources.parse_worker import ALARM_GRACE
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.text import MAX_PDF_PAGES
from tests.sources import hostile
from tests.sources.pdf import minimal_pdf

GOOD = minimal_pdf("Tidal stream turbines sit on the sea bed.", "Tides")


@pytest.fixture(scope="module")
def parser() -> Iterator[DocumentParser]:  # one for the module: the tests also prove it keeps serving
    with DocumentParser(timeout=5) as parser:
        yield parser


def test_a_pdf_is_parsed_into_its_title_and_text(parser: DocumentParser) -> None:
    assert parser.extract(GOOD, "application/pdf", "tides.pdf") == (
        "application/pdf",
        "Tides",
        "Tidal stream turbines sit on the sea bed.",
    )


def test_a_pdf_with_an_unknown_filter_is_a_source_error_naming_it_and_the_parser_goes_on(
    parser: DocumentParser,
) -> None:
    with pytest.raises(SourceError) as caught:
        parser.extract(hostile.unknown_filter_pdf(), "application/pdf", "broken.pdf")
    assert "'broken.pdf' could not be parsed (NotImplementedError: Unsupported filter /BogusDecode)" in str(
        caught.value
    )
    assert parser.extract(GOOD, "application/pdf", "tides.pdf")[1] == "Tides"


def test_a_pdf_with_a_10_mb_content_stream_is_stopped_at_the_time_limit() -> None:
    with DocumentParser(timeout=1.5) as parser:
        started = time.monotonic()
        with pytest.raises(
            SourceError, match=r"'stream\.pdf' took longer than 1\.5 s to parse and was stopped"
        ):
            parser.extract(hostile.huge_stream_pdf(10), "application/pdf", "stream.pdf")
        elapsed = time.monotonic() - started
        assert parser.extract(GOOD, "application/pdf", "tides.pdf")[1] == "Tides"  # a new worker
    # Unbounded, it runs for minutes; a loaded machine may take seconds to start a worker: the
    # bound tells the two apart without deciding on the machine's speed.
    assert elapsed < 60


def test_a_document_that_needs_more_memory_than_the_limit_is_a_named_source_error() -> None:
    with DocumentParser(timeout=30, memory_mb=32) as parser:
        with pytest.raises(SourceError, match=r"'bomb\.pdf' could not be parsed") as caught:
            parser.extract(hostile.flate_bomb_pdf(70), "application/pdf", "bomb.pdf")
        assert "memory" in str(caught.value)
        assert parser.extract(GOOD, "application/pdf", "tides.pdf")[1] == "Tides"


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("deep.pdf", hostile.deep_array_pdf),
        ("loop.pdf", hostile.page_tree_loop_pdf),
        ("spans.html", lambda: hostile.span_soup_html(100_000)),
        ("deep.html", hostile.deep_div_html),
        ("laughs.html", hostile.entity_bomb_html),
    ],
)
def test_a_hostile_document_ends_as_text_or_a_named_source_error(
    parser: DocumentParser, name: str, build: object
) -> None:
    assert callable(build)
    header = "application/pdf" if name.endswith(".pdf") else "text/html"
    try:
        kind, _, text = parser.extract(build(), header, name)
    except SourceError as err:
        assert repr(name) in str(err)
    else:
        assert kind == header and text
        assert len(text) < 10_000_000


def test_pages_with_invalid_encodings_are_read_with_replacement_characters(parser: DocumentParser) -> None:
    _, title, text = parser.extract(hostile.invalid_utf8_html(), "text/html", "bad.html")
    assert title == "Bad \ufffd bytes"
    assert "Valid words" in text and "\ufffd" in text
    _, _, text = parser.extract(hostile.wrong_charset_html(), "text/html", "wrong.html")
    assert text  # undecodable as declared: read as something, never an exception


def test_two_hundred_mutated_pdfs_give_text_or_a_named_source_error_and_never_anything_else(
    parser: DocumentParser,
) -> None:
    outcomes = {"text": 0, "source error": 0}
    for name, data in hostile.mutated_pdfs(200, seed=15):
        try:
            parser.extract(data, "application/pdf", name)
        except SourceError as err:
            assert repr(name) in str(err), err
            outcomes["source error"] += 1
        else:
            outcomes["text"] += 1
    assert outcomes["text"] > 0 and outcomes["source error"] > 0  # the mutations do break files
    assert parser.extract(GOOD, "application/pdf", "tides.pdf")[1] == "Tides"


def test_a_parser_that_is_shut_down_refuses_with_a_source_error() -> None:
    parser = DocumentParser(timeout=5)
    parser.close()
    with pytest.raises(SourceError, match="shut down"):
        parser.extract(GOOD, "application/pdf", "tides.pdf")


def test_a_pdf_of_more_pages_than_the_cap_is_refused_saying_so(parser: DocumentParser) -> None:
    with pytest.raises(SourceError, match=f"'tome.pdf' has {MAX_PDF_PAGES + 1} pages, more than the"):
        parser.extract(hostile.many_pages_pdf(MAX_PDF_PAGES + 1), "application/pdf", "tome.pdf")


def test_a_worker_left_parsing_by_a_dead_server_ends_itself_after_the_limit() -> None:
    # Not the huge stream above: pypdf gives that one up at its token budget, in five seconds or less
    # on a fast machine, and a worker that answers waits on stdin, which nobody closes here.
    document = hostile.slow_pdf()
    worker = subprocess.Popen(
        [sys.executable, "-m", "research_mcp.sources.parse_worker", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert worker.stdin is not None and worker.stdout is not None
    assert worker.stdout.readline() == b"ready\n"
    request = {"name": "stream.pdf", "content_type": "application/pdf", "size": len(document), "seconds": 0.5}
    worker.stdin.write(json.dumps(request).encode() + b"\n" + document)
    worker.stdin.flush()  # and nobody reads the answer or kills the worker: as if the server were gone
    started = time.monotonic()
    try:
        code = worker.wait(timeout=60)  # unbounded, the parse runs for half a minute or more
    finally:
        worker.kill()
        worker.stdin.close()
        worker.stdout.close()
    assert code == -signal.SIGALRM
    assert time.monotonic() - started < 0.5 + ALARM_GRACE + 20


def worker_pids() -> set[int]:
    """This process's children that are parse workers, from /proc (Linux)."""
    me = os.getpid()
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat[1]) == me and b"research_mcp.sources.parse_worker" in command:
                found.add(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads child processes from /proc")
def test_an_idle_worker_is_stopped_after_its_idle_time_and_a_new_one_serves_the_next_document() -> None:
    with DocumentParser(timeout=5, idle_seconds=0.5) as parser:
        before = worker_pids()
        assert parser.extract(GOOD, "application/pdf", "tides.pdf")[1] == "Tides"
        [worker] = worker_pids() - before  # kept for the next document
        deadline = time.monotonic() + 30
        while worker in worker_pids() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert worker not in worker_pids()  # stopped once idle for half a second
        assert parser.extract(GOOD, "application/pdf", "tides.pdf")[1] == "Tides"
        assert len(worker_pids() - before) == 1
