"""A data folder on a full or read-only disk (issue 46, items 2 and 8): `serve` keeps answering
(reads work, writes are refused saying why), `doctor` names the disk as the problem and exits 1,
`runs` and `show` read the store without a traceback and never call it damaged.

Before: `serve` and `doctor` died with SIGBUS (exit 135) in Qdrant Edge's shard load, or `serve`
exited at once calling research.db damaged ("disk I/O error", SQLite unable to grow its shared-memory
index); `doctor` exited 0 blaming a running server; `runs` printed a traceback.

Each case runs in a private mount namespace (`unshare -m` as root, else `unshare -r -m`): the data folder,
made by a real `research-mcp run`, is copied onto a 24 MB tmpfs filled to the last byte with `dd`,
or bind-mounted read-only. Where namespaces cannot be made, the module is skipped and says why.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import QUESTION, cli, cli_env, write_corpus
from tests.reliability.killharness import SCRIPT, StdioServer, text_of


def _namespace() -> tuple[list[str], str]:
    """How to enter a private mount namespace here (as root, or as a user mapped to root), or why
    none can be made."""
    if shutil.which("unshare") is None:
        return [], "unshare is not installed"
    why = ""
    for prefix in (["unshare", "-m"], ["unshare", "-r", "-m"]):
        probe = subprocess.run(
            [*prefix, "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt && umount /mnt"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0:
            return prefix, ""
        why = probe.stderr.strip()
    return [], f"cannot mount in a private mount namespace here (root or user namespaces needed): {why}"


UNSHARE, NO_NAMESPACE = _namespace()
pytestmark = pytest.mark.skipif(not UNSHARE, reason=NO_NAMESPACE)


def full(home: Path) -> str:
    """Shell commands that put `home` on a small tmpfs, then fill it to the last byte."""
    stash = home.parent / f"{home.name}.stash"
    return (
        f"cp -a --sparse=always {home} {stash} && mount -t tmpfs -o size=24m tmpfs {home}"
        f" && cp -a --sparse=always {stash}/. {home}/"
        f" && {{ dd if=/dev/zero of={home}/filler bs=64k 2>/dev/null; df -k {home} >&2; true; }}"
    )


def read_only(home: Path) -> str:
    return f"mount --bind {home} {home} && mount -o remount,ro,bind {home}"


SETUPS = {"full": full, "read-only": read_only}
COMMANDS = {"doctor": "doctor", "runs": "runs", "show": "show last"}


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    """A data folder with a finished run (facts, their vectors, a corpus index), and its env."""
    home = tmp_path / "home"
    env = cli_env(home, RESEARCH_MCP_CORPUS=str(write_corpus(tmp_path / "notes")))
    done = cli("run", QUESTION, env=env)
    assert done.returncode == 0, done.stderr
    run_id = cli("runs", "--json", env=env).stdout.split('"id": "')[1].split('"')[0]
    return home, env, run_id


@pytest.mark.parametrize("disk", list(SETUPS))
def test_doctor_names_the_disk_and_runs_and_show_read_the_store(
    disk: str, seeded: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    home, env, run_id = seeded
    out = tmp_path / "out"
    out.mkdir()
    commands = " ; ".join(
        f"{SCRIPT} {args} >{out}/{name}.out 2>{out}/{name}.err; echo $? >{out}/{name}.rc"
        for name, args in COMMANDS.items()
    )
    subprocess.run(
        [*UNSHARE, "sh", "-c", f"{SETUPS[disk](home)} && {commands}"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=300,
        check=True,
    )
    said = {name: (out / f"{name}.out").read_text() + (out / f"{name}.err").read_text() for name in COMMANDS}
    codes = {name: int((out / f"{name}.rc").read_text()) for name in COMMANDS}

    assert codes == {"doctor": 1, "runs": 0, "show": 0}, said
    words = "is full" if disk == "full" else "is read-only"
    [problem] = [line for line in said["doctor"].splitlines() if line.startswith("problem:")]
    assert str(home) in problem and words in problem, said["doctor"]
    assert "a running server holds it" not in said["doctor"]
    assert run_id in said["runs"] and "citations" in said["show"]
    assert all("Traceback" not in text and "damaged" not in text for text in said.values()), said


@pytest.mark.parametrize("disk", list(SETUPS))
def test_serve_answers_reads_and_refuses_writes_saying_why(
    disk: str, seeded: tuple[Path, dict[str, str], str], tmp_path: Path
) -> None:
    home, env, run_id = seeded
    log = tmp_path / "serve.log"
    server = StdioServer(
        env, stderr=log, argv=[*UNSHARE, "sh", "-c", f"{SETUPS[disk](home)} && exec {SCRIPT} serve"]
    )
    try:
        server.initialize()
        report = server.call("report_results", {"id": run_id, "view": "report"})
        write = server.call(
            "extract_source",
            {"source": "Ferries have crossed the harbour since 1840.", "questions": ["Since when?"]},
        )
        again = server.call("report_results", {"id": run_id, "view": "sources"})
    finally:
        server.close()
    stderr = log.read_text()

    assert server.process.returncode == 0, stderr  # not 135, not -7: no SIGBUS
    assert not report.get("isError") and "harbour" in text_of(report).lower(), text_of(report)
    words = "is full" if disk == "full" else "read-only"
    assert write.get("isError") and str(home) in text_of(write) and words in text_of(write), text_of(write)
    assert not again.get("isError")
    assert "Knowledge index unavailable" in stderr and "Traceback" not in stderr, stderr
