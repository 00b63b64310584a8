"""A run of the real `research-mcp serve` killed with SIGKILL at many points resumes without losing or redoing work.

Each chain starts one run and kills the server again and again (by elapsed time, and just after, or a
few ms after, the store holds a given number of finished handoffs, so some kills land inside store
writes), restarting and resuming it each time, until it is done. The figures printed are those of
`bench/kill9.py`, on fewer points.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.reliability.killharness import KillReport, kill_chain, kill_points, uninterrupted_report

if (
    shutil.which("research-mcp") is None
    and not Path(__file__).parents[2].joinpath(".venv/bin/research-mcp").exists()
):
    pytest.skip("the research-mcp console script is not installed: run `make test`", allow_module_level=True)

# A run of the plan lasts about 2 s at the chains' fake model latency (0.25 s); 22 model calls, 21 handoffs.
RUN_SECONDS = 2.0
HANDOFFS = 21


@pytest.fixture(scope="module")
def clean_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    return uninterrupted_report(tmp_path_factory.mktemp("clean") / "home")


def check(report: KillReport, clean: str) -> None:
    print(
        f"\nkill -9: {report.kills} kills at {report.points}; acknowledged {report.acknowledged}, "
        f"lost {report.lost}; nodes repeated {report.nodes_repeated}; requests repeated "
        f"{report.requests_repeated}; resume failures {report.resume_failures}; integrity {report.integrity}"
    )
    assert report.kills >= 1
    assert report.final_status == "done", report.errors
    assert report.resume_failures == 0, report.errors
    assert report.lost == 0
    assert report.nodes_repeated == 0
    assert report.requests_repeated == 0
    assert report.stale_running == 0
    assert set(report.integrity) == {"ok"}
    assert report.report == clean


def test_a_run_killed_four_times_resumes_to_the_report_of_an_uninterrupted_run(
    tmp_path: Path, clean_report: str
) -> None:
    points = kill_points(4, seed=7, run_seconds=RUN_SECONDS, handoffs=HANDOFFS)
    check(kill_chain(tmp_path / "chain", points), clean_report)


@pytest.mark.long
@pytest.mark.parametrize("seed", [11])
def test_more_kill_points_lose_no_acknowledged_handoff_and_repeat_no_finished_node(
    tmp_path: Path, clean_report: str, seed: int
) -> None:
    points = kill_points(4, seed=seed, run_seconds=RUN_SECONDS, handoffs=HANDOFFS)
    check(kill_chain(tmp_path / "chain", points), clean_report)
