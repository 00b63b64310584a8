"""A document or a file name holding terminal control sequences: every command prints them as text."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import NOTES, cli, cli_env
from tests.test_printable import CLIPBOARD, TITLE_AND_CLEAR

CONTROLS = ("\x1b", "\x07", "\x9b", "\x9d", "\x90", "\r")


def test_a_clipboard_heading_and_a_screen_clearing_file_name_reach_no_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "bridge.md").write_text(NOTES["bridge.md"])
    (folder / "tides.md").write_text(
        f"# Harbour tides{CLIPBOARD}\n\nThe harbour ferry waits for the tide twice a day.\n"
    )
    (folder / f"notes{TITLE_AND_CLEAR}.pdf").write_bytes(b"%PDF-1.4 not really")
    env = cli_env(tmp_path / "home")

    indexed = cli("index", str(folder), env=env)
    ran = cli("run", "How do ferries cross the harbour?", "--corpus", str(folder), env=env)
    sources = cli("show", "last", "--view", "sources", env=env)
    listed = cli("runs", env=env)

    for done in (indexed, ran, sources, listed):
        assert done.returncode == 0, done.stderr
        for stream in (done.stdout, done.stderr):
            assert not any(control in stream for control in CONTROLS), repr(stream)
    assert "skipped: notes.pdf: " in indexed.stderr  # named, without its title and clear-screen sequences
    assert "Harbour tides" in sources.stdout  # the heading's text is shown; the clipboard write is not
