"""A small interrupt matrix (bench/interrupts.py, a few points): a run cancelled over MCP or by Ctrl-C
mid-run is recorded cancelled and, resumed, ends with the report of an uninterrupted run.

The corpus and its indexed template data folder are made once for the module (every point runs on a
copy of the template). How fast a cancel is answered is a latency, measured by the bench
(`python -m bench.interrupts`, "slowest stop"), not asserted here: that the cancel's own answer says
"cancelled", and the store does, is what shows the run was stopped mid-run and not run to its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import interrupts
from bench.interrupts import Point
from tests.conftest import SCRUBBED


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    with pytest.MonkeyPatch.context() as patch:
        for name in SCRUBBED:
            patch.delenv(name, raising=False)
        yield interrupts.prepare(tmp_path_factory.mktemp("interrupts"), paragraphs=6)


def matrix(modes: list[str], n: int, root: Path, prepared: tuple[Path, Path]) -> list[Point]:
    return interrupts.matrix(modes, n, root, quiet=True, prepared=prepared)


@pytest.mark.timeout(300)
def test_runs_cancelled_over_mcp_at_its_start_and_mid_extraction_resume_to_the_uninterrupted_report(
    tmp_path: Path, prepared: tuple[Path, Path]
) -> None:
    results = matrix(["mcp"], 2, tmp_path, prepared)

    assert [(point.trigger, point.k) for point in results] == [("events", 1), ("extracting", 4)]
    for point in results:
        assert point.error == "", point
        assert point.cancelled, point  # the cancel's answer, and the store, say "cancelled"
        assert point.equal, point


@pytest.mark.timeout(300)
def test_ctrl_c_before_any_source_is_read_resumes_without_corpus_to_the_uninterrupted_report(
    tmp_path: Path, prepared: tuple[Path, Path]
) -> None:
    """SIGINT at the run's first event; `run --resume` without --corpus still searches the run's corpus."""
    (point,) = matrix(["sigint"], 1, tmp_path, prepared)

    assert (point.trigger, point.k) == ("events", 1)
    assert point.error == "", point
    assert point.cancelled, point  # exit 130, and the store says "cancelled"
    assert point.equal, point


@pytest.mark.timeout(300)
def test_a_run_cancelled_inside_a_phase_iteration_resumes_to_the_uninterrupted_report(
    tmp_path: Path, prepared: tuple[Path, Path]
) -> None:
    """Cancelled once the iteration has started its fourth handoff (the first leaf widened, the second
    started). Before: the resumed iteration counted the sources it had chosen itself as read before and
    chose others, and the gate, judged again on a store the iteration had added to, passed at once:
    2 of 9 facts and 2 of 9 sources missing from the resumed report."""
    points = matrix(["phases"], 2, tmp_path, prepared)

    assert [(point.trigger, point.k) for point in points] == [("synthesizing", 3), ("iterating", 4)]
    for point in points:
        assert point.error == "", point
        assert point.cancelled, point
        assert point.equal, point
