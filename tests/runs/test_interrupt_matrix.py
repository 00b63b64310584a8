"""A small interrupt matrix (bench/interrupts.py, a few points): a run cancelled over MCP mid-run is
recorded cancelled at once and, resumed, ends with the report of an uninterrupted run."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.interrupts import matrix


@pytest.mark.timeout(600)
def test_runs_cancelled_over_mcp_at_its_start_and_mid_extraction_resume_to_the_uninterrupted_report(
    tmp_path: Path,
) -> None:
    results = matrix(["mcp"], 2, tmp_path, paragraphs=6, quiet=True)

    assert [(point.trigger, point.k) for point in results] == [("events", 1), ("extracting", 4)]
    for point in results:
        assert point.error == "", point
        assert point.cancelled, point  # recorded cancelled, and the cancel answered so
        assert point.stop_s < 6, point
        assert point.equal, point


@pytest.mark.timeout(600)
def test_ctrl_c_before_any_source_is_read_resumes_without_corpus_to_the_uninterrupted_report(
    tmp_path: Path,
) -> None:
    """SIGINT at the run's first event; `run --resume` without --corpus still searches the run's corpus."""
    (point,) = matrix(["sigint"], 1, tmp_path, paragraphs=6, quiet=True)

    assert (point.trigger, point.k) == ("events", 1)
    assert point.error == "", point
    assert point.cancelled, point
    assert point.stop_s < 10, point
    assert point.equal, point


@pytest.mark.timeout(600)
def test_a_run_cancelled_inside_a_phase_iteration_resumes_to_the_uninterrupted_report(tmp_path: Path) -> None:
    """Cancelled once the iteration has started its fourth handoff (the first leaf widened, the second
    started). Before: the resumed iteration counted the sources it had chosen itself as read before and
    chose others, and the gate, judged again on a store the iteration had added to, passed at once:
    2 of 9 facts and 2 of 9 sources missing from the resumed report."""
    points = matrix(["phases"], 2, tmp_path, paragraphs=6, quiet=True)

    assert [(point.trigger, point.k) for point in points] == [("synthesizing", 3), ("iterating", 4)]
    for point in points:
        assert point.error == "", point
        assert point.cancelled, point
        assert point.equal, point
