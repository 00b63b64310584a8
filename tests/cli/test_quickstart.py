"""The README's quick start, run line by line in bash as a newcomer would, in a checkout of their own."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.cli.conftest import SCRIPT
from tests.conftest import SCRUBBED

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
(BLOCK,) = re.findall(r"```sh\n(.*?)```", SECTION, re.S)

KELP = {
    "kelp.md": "# Giant kelp\n\nGiant kelp can grow up to 60 centimetres a day in good conditions. "
    "It is one of the fastest-growing organisms on Earth.\n",
    "forests.md": "# Kelp forests\n\nKelp forests grow in cold, nutrient-rich coastal water. "
    "Warm water from El Niño years slows kelp growth sharply.\n",
}


def newcomer_checkout(folder: Path) -> Path:
    """A checkout as `make install` leaves it: the Makefile and the installed .venv of this one."""
    folder.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt", ".venv"):
        (folder / name).symlink_to(ROOT / name)
    return folder


def test_the_quick_start_gives_a_cited_report_and_an_html_export_with_no_key(tmp_path: Path) -> None:
    assert SCRIPT.exists(), "the research-mcp console script is not installed: run `make test`"
    checkout = newcomer_checkout(tmp_path / "research-mcp")
    home = tmp_path / "user"
    (home / "notes").mkdir(parents=True)
    for name, text in KELP.items():
        (home / "notes" / name).write_text(text, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if name not in SCRUBBED}
    env.update(
        HOME=str(home),  # ~/notes in the snippet
        RESEARCH_MCP_HOME=str(home / "data"),
        PATH="/usr/bin:/bin",  # research-mcp only once the snippet activates the venv
        HF_HUB_OFFLINE="1",
    )
    env.pop("VIRTUAL_ENV", None)

    # Nothing is configured yet when the quick start runs doctor: it names that problem and exits 1.
    block = BLOCK.replace("research-mcp doctor ", "research-mcp doctor || test $? -eq 1 ", 1)
    assert block != BLOCK
    done = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=checkout,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert "no API key set" in done.stdout  # doctor said which backend and why
    assert "problem: nothing to search" in done.stdout
    report = (checkout / "report.md").read_text(encoding="utf-8")
    assert "60 centimetres a day" in report and re.search(r"\[F\d+\]", report), report
    (run,) = re.findall(r"^(run_[0-9a-f]{12})\s+done\b", done.stdout, re.M)
    page = (checkout / "report.html").read_text(encoding="utf-8")
    assert run in page and re.search(r'href="#F\d+"', page)
    exported = subprocess.run(
        [str(SCRIPT), "export", "last", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(exported.stdout)["run"]["id"] == run
