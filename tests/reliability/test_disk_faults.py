"""A data folder on a full disk, or read-only: clear isError results naming the folder, nothing half-written.

The tests run as root, so file modes stop nothing: each server runs in a private mount namespace
(`unshare -m`) where its data folder is a real read-only bind mount, or a small tmpfs filled to the
last byte (a real ENOSPC, so SQLite's own SQLITE_FULL path). The harness reads the store through
/proc/<pid>/root while the server lives, and the wrapper copies the folder out when it exits, so the
file is checked (`PRAGMA integrity_check`, every earlier row present) after the fault.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from research_mcp.storage.store import Store
from tests.reliability.killharness import (
    SCRIPT,
    HeldTeam,
    StdioServer,
    TeamMessagesAPI,
    integrity,
    plan_tree,
    read_only,
    snapshot,
    source_text,
    text_of,
)


def _namespaces_work() -> str | None:
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt && umount /mnt"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"cannot mount in a private mount namespace here (needs root): {probe.stderr.strip()}"
    return None


pytestmark = pytest.mark.skipif(_namespaces_work() is not None, reason=str(_namespaces_work()))

NO_QDRANT = "http://127.0.0.1:9"  # refused at once: the knowledge index is off, the store is what is tested


@pytest.fixture
def team() -> Iterator[TeamMessagesAPI]:
    with TeamMessagesAPI(plan_tree(1, 3, 2), delay=0.2) as api:
        yield api


def env_for(home: Path, api: TeamMessagesAPI, **extra: str) -> dict[str, str]:
    return {
        "RESEARCH_MCP_HOME": str(home),
        "RESEARCH_MCP_MODEL": "anthropic",
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": api.url,
        **extra,
    }


def counts(database: Path) -> dict[str, int]:
    with read_only(database) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("plans", "runs", "nodes", "handoffs", "sources", "facts", "events")
        }


def until_finished(server: StdioServer, result: dict[str, Any], bound_s: float = 240) -> dict[str, Any]:
    """``result`` of execute_plan, or once its run has left 'running' (each call waits 30 s at most,
    which a loaded machine may need more than once); ``bound_s`` only stops a hang."""
    deadline = time.monotonic() + bound_s
    while (
        not result.get("isError")
        and result["structuredContent"]["status"] == "running"
        and time.monotonic() < deadline
    ):
        run_id = result["structuredContent"]["id"]
        result = server.call("execute_plan", {"run_id": run_id, "wait_seconds": 30})
    return result


def seed(home: Path, api: TeamMessagesAPI) -> dict[str, Any]:
    """A finished run and an extraction, committed by a normal server."""
    log = home.parent / "seed.stderr"
    server = StdioServer(env_for(home, api), stderr=log)
    try:
        try:
            server.initialize()
        except RuntimeError as error:  # say why: the server's own last words, not only "server exited"
            raise RuntimeError(
                f"{error}; the seed server's stderr ends:\n{log.read_text()[-3000:]}"
            ) from None
        plan = server.call("plan_research", {"query": "records", "suggested_plan": plan_tree(1, 1, 1)})
        run = server.call("execute_plan", {"plan_id": plan["structuredContent"]["id"], "wait_seconds": 30})
        run = until_finished(server, run)
        assert run["structuredContent"]["status"] == "done", text_of(run)
        extraction = server.call("extract_source", {"source": source_text(3, 1, 1), "questions": ["When?"]})
        assert not extraction.get("isError"), text_of(extraction)
    finally:
        server.close()
    return {"run": run["structuredContent"]["id"], "extraction": extraction["structuredContent"]["id"]}


@dataclasses.dataclass(frozen=True)
class Seeded:
    """A data folder holding a finished run and an extraction; tests copy it, never change it."""

    home: Path
    run: str
    extraction: str
    counts: dict[str, int]

    def copy_to(self, home: Path) -> None:
        # Sparse copies: the vector engine preallocates its WAL and storage files as sparse files.
        subprocess.run(["cp", "-a", "--sparse=always", f"{self.home}/.", str(home)], check=True)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """One normal server's run for the module (a server start and a run fewer per test)."""
    home = tmp_path_factory.mktemp("seeded") / "home"
    home.mkdir()
    with TeamMessagesAPI(plan_tree(1, 1, 1), delay=0) as api:
        ids = seed(home, api)
    return Seeded(home, ids["run"], ids["extraction"], counts(home / "research.db"))


@pytest.fixture
def held_team() -> Iterator[HeldTeam]:
    """The team for a root with three leaves, the third ("leaf 0.2") held at its synthesis."""
    with HeldTeam(plan_tree(1, 3, 2), held="leaf 0.2") as api:
        try:
            yield api
        finally:
            api.release.set()  # a held answer never outlives the test


def in_namespace(setup: str, home: Path, env: dict[str, str], log: Path) -> StdioServer:
    """`research-mcp serve` in a private mount namespace after `setup`; the folder is copied to
    <home>.after when it exits."""
    after = home.parent / f"{home.name}.after"
    after.mkdir()
    script = f"{setup} && {SCRIPT} serve; rm -f {home}/filler; cp -a --sparse=always {home}/. {after}/"
    server = StdioServer(env, stderr=log, argv=["unshare", "-m", "sh", "-c", script])
    server.initialize()
    return server


def is_store_error(result: dict[str, Any], folder: Path, words: str) -> bool:
    text = text_of(result)
    return bool(result.get("isError")) and str(folder) in text and words in text


def run_says_full(result: dict[str, Any], folder: Path) -> bool:
    """A run handle (or an isError result) that says the disk holding `folder` is full."""
    text = text_of(result)
    failed = result.get("isError") or result.get("structuredContent", {}).get("status") == "failed"
    # The handle's lines are bounded: it says the disk is full and where, the path perhaps cut short.
    return bool(failed) and "is full" in text and str(folder)[:24] in text


def test_a_read_only_data_folder_still_reads_earlier_results_and_refuses_writes_naming_the_folder(
    team: TeamMessagesAPI, research_home: Path, seeded: Seeded
) -> None:
    research_home.mkdir(parents=True)
    seeded.copy_to(research_home)
    before = seeded.counts
    setup = f"mount --bind {research_home} {research_home} && mount -o remount,ro,bind {research_home}"
    server = in_namespace(
        setup,
        research_home,
        env_for(research_home, team, QDRANT_URL=NO_QDRANT),
        research_home.parent / "ro.log",
    )
    try:
        report = server.call("report_results", {"id": seeded.run, "view": "report"})
        writes = {
            "plan_research": server.call("plan_research", {"query": "records again"}),
            "extract_source": server.call(
                "extract_source", {"source": source_text(4, 1, 1), "questions": ["When?"]}
            ),
            "execute_plan": server.call("execute_plan", {"run_id": seeded.run, "wait_seconds": 1}),
        }
    finally:
        server.close()
    after = research_home.parent / f"{research_home.name}.after" / "research.db"
    refused = {name: is_store_error(result, research_home, "read-only") for name, result in writes.items()}
    print(
        f"\nread-only folder: report read {not report.get('isError')}; writes refused with the folder named "
        f"{refused} (execute_plan of a finished run writes nothing); integrity {integrity(after)}; rows "
        f"before {before}, after {counts(after)}"
    )
    assert not report.get("isError") and "Record" in text_of(report)
    assert refused["plan_research"] and refused["extract_source"]
    assert "make the folder and research.db writable" in text_of(writes["plan_research"]).lower()
    assert writes["execute_plan"]["structuredContent"]["status"] == "done"
    assert integrity(after) == "ok"
    assert counts(after) == before


def test_serve_starts_on_a_read_only_data_folder_with_the_local_knowledge_index(
    team: TeamMessagesAPI, research_home: Path
) -> None:
    (research_home / "qdrant").mkdir(parents=True)
    Store(research_home / "research.db").close()
    setup = f"mount --bind {research_home} {research_home} && mount -o remount,ro,bind {research_home}"
    server = in_namespace(setup, research_home, env_for(research_home, team), research_home.parent / "ro.log")
    try:
        report = server.call("report_results", {"id": "run_000000000000"})
    finally:
        server.close()
    assert "No run with id" in text_of(report)
    assert "Knowledge index unavailable" in (research_home.parent / "ro.log").read_text()


def test_serve_starts_on_a_read_only_data_folder_when_the_corpus_changed_and_says_its_index_is_stale(
    team: TeamMessagesAPI, research_home: Path, tmp_path: Path
) -> None:
    research_home.mkdir(parents=True)
    Store(research_home / "research.db").close()
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "tides.md").write_text("# Tides\n\nSpring tides follow the new and the full moon.\n")
    setup = f"mount --bind {research_home} {research_home} && mount -o remount,ro,bind {research_home}"
    env = env_for(research_home, team, QDRANT_URL=NO_QDRANT, RESEARCH_MCP_CORPUS=str(corpus))
    log = research_home.parent / "ro.log"
    server = in_namespace(setup, research_home, env, log)
    try:
        report = server.call("report_results", {"id": "run_000000000000"})
    finally:
        server.close()
    assert "No run with id" in text_of(report)  # started and serving
    stderr = log.read_text()
    assert "Traceback" not in stderr
    [line] = [line for line in stderr.splitlines() if "corpus index not updated" in line]
    assert str(research_home) in line and "read-only" in line


def test_serve_on_a_read_only_folder_without_a_store_exits_with_one_line_saying_what_to_do(
    research_home: Path,
) -> None:
    research_home.mkdir(parents=True)
    setup = f"mount --bind {research_home} {research_home} && mount -o remount,ro,bind {research_home}"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"{setup} && {SCRIPT} serve"],
        env={"PATH": "/usr/bin:/bin", "RESEARCH_MCP_HOME": str(research_home), "QDRANT_URL": NO_QDRANT},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the protocol channel
    assert "Traceback" not in done.stderr
    (message,) = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert str(research_home) in message and "RESEARCH_MCP_HOME" in message


def test_a_full_disk_mid_run_is_a_clear_error_and_the_run_resumes_once_space_is_freed(
    research_home: Path, seeded: Seeded, held_team: HeldTeam
) -> None:
    """Two of three leaves finished, the third held at its synthesis (HeldTeam) while the disk fills:
    the run is mid-run when it meets the full disk on any machine, not only on one fast enough."""
    research_home.mkdir(parents=True)
    before = seeded.counts
    stash, signals = seeded.home, research_home.parent / "signals"
    signals.mkdir()
    # Inside the namespace a watcher fills the tmpfs when told (a file outside it appears), then frees it.
    watcher = (
        f"(while [ ! -e {signals}/fill ]; do sleep 0.02; done; dd if=/dev/zero of={research_home}/filler bs=64k;"
        f" touch {signals}/filled; while [ ! -e {signals}/free ]; do sleep 0.02; done;"
        f" rm -f {research_home}/filler; touch {signals}/freed) </dev/null >/dev/null 2>&1 &"
    )
    setup = f"mount -t tmpfs -o size=48m tmpfs {research_home} && cp -a --sparse=always {stash}/. {research_home}/ && {watcher} true"
    team = held_team
    server = in_namespace(
        setup, research_home, env_for(research_home, team), research_home.parent / "full.log"
    )

    def signal(name: str, done: str) -> None:
        (signals / name).touch()
        deadline = time.monotonic() + 60
        while not (signals / done).exists():
            assert time.monotonic() < deadline, f"the watcher in the namespace did not say {done!r}"
            time.sleep(0.02)  # paces the look

    try:
        plan = server.call("plan_research", {"query": "records", "suggested_plan": plan_tree(1, 3, 2)})
        run_id = server.call("execute_plan", {"plan_id": plan["structuredContent"]["id"], "wait_seconds": 0})[
            "structuredContent"
        ]["id"]
        done_before, deadline = 0, time.monotonic() + 240  # the deadline only stops a hang
        while done_before < 2:  # two leaves finished; the third cannot finish while it is held
            assert time.monotonic() < deadline, "two leaves did not finish"
            handle = server.call("execute_plan", {"run_id": run_id, "wait_seconds": 0.2})
            done_before = handle["structuredContent"]["metrics"]["nodes_done"]
        signal("fill", "filled")
        team.release.set()
        # The run stops at its first write that finds the disk full; a resume on the full disk too.
        stopped = until_finished(server, server.call("execute_plan", {"run_id": run_id, "wait_seconds": 1}))
        retried = until_finished(server, server.call("execute_plan", {"run_id": run_id, "wait_seconds": 5}))
        extraction = server.call("extract_source", {"source": source_text(4, 1, 1), "questions": ["When?"]})
        report = server.call("report_results", {"id": seeded.run, "view": "report"})
        signal("free", "freed")
        resumed = until_finished(server, server.call("execute_plan", {"run_id": run_id, "wait_seconds": 30}))
    finally:
        server.close()
    after = research_home.parent / f"{research_home.name}.after" / "research.db"
    final = snapshot(after, run_id)
    print(
        f"\nfull disk mid-run ({done_before} nodes done when it filled): the run "
        f"{stopped.get('structuredContent', {}).get('status')} saying so {run_says_full(stopped, research_home)}, "
        f"resumed on a full disk {retried.get('structuredContent', {}).get('status')} saying so "
        f"{run_says_full(retried, research_home)}; extract_source refused "
        f"{is_store_error(extraction, research_home, 'is full')}, earlier report read {not report.get('isError')}; "
        f"after freeing space the run is {resumed.get('structuredContent', {}).get('status')} with "
        f"{len(final.nodes)} nodes done; integrity {integrity(after)}; rows before {before}, after {counts(after)}"
    )
    assert run_says_full(stopped, research_home), text_of(stopped)
    assert run_says_full(retried, research_home), text_of(retried)
    assert is_store_error(extraction, research_home, "is full"), text_of(extraction)
    assert "free some disk space" in text_of(extraction).lower()
    assert not report.get("isError")
    assert resumed["structuredContent"]["status"] == "done", text_of(resumed)
    assert integrity(after) == "ok"
    assert all(counts(after)[table] >= n for table, n in before.items())
    assert len(final.nodes) == 5
