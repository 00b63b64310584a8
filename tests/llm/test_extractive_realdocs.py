"""The no-model extractor on real documents (excerpts in tests/fixtures/realdocs): what it quotes is
what the document says, never its furniture, and a heading's answer is the text under it."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_mcp.contracts import ExtractorOutput
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.llm.extractive.sentences import split_sentences
from research_mcp.matching.boilerplate import is_boilerplate
from research_mcp.role_inputs import ExtractorPayload

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "realdocs"


def document(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


async def quotes(model: ExtractiveModel, name: str, question: str) -> list[str]:
    payload = ExtractorPayload(
        source_id=1,
        source_ref="corpus:1",
        source_title=name,
        questions=[question],
        source_text=document(name),
    )
    request = ModelRequest(role="test", system="", prompt="", output_type=ExtractorOutput, payload=payload)
    return [" ".join(fact.quote.split()) for fact in (await model.generate(request)).output.facts]


@pytest.mark.parametrize(
    "furniture",
    [
        "(link removed)",
        "Version 2.0, January 2004 (link removed)",
        "http://www.apache.org/licenses/",
        "Copyright: 1995-2013 Jean-loup Gailly and Mark Adler",
        "Copyright © 1994 Ian Murdock <imurdock@debian.org>",
        "This package was originally put together by Michael Alan Dorman <mdorman@debian.org>",
        "Jean-loup Gailly Mark Adler jloup@gzip.org madler@alumni.caltech.edu",
        "Everyone is permitted to copy and distribute verbatim copies of this license document, "
        "but changing it is not allowed.",
        "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
        "deb-conffiles(5) dpkg suite deb-conffiles(5)",
        "util-linux 2.38.1 2022-05-11 FSTAB(5)",
        "Grant of Patent License.",
        "1. Definitions.",
    ],
)
def test_document_furniture_is_boilerplate(furniture: str) -> None:
    assert is_boilerplate(furniture)


@pytest.mark.parametrize(
    "statement",
    [
        # Sentences that mention copyright, addresses or manual pages, and say something.
        "1. Redistributions of source code must retain the above copyright notice, this list of "
        "conditions and the following disclaimer.",
        "This field is used by fsck(8) to determine the order in which filesystem checks are done at boot time.",
        "See mount(8), blkid(8) or lsblk(8) for more details about device identifiers.",
        "The deflate format used by zlib was defined by Phil Katz.",
        "Blank lines are ignored.",
        "allow a user to mount",
        "Gardens line the river banks.",
    ],
)
def test_statements_are_not_boilerplate(statement: str) -> None:
    assert not is_boilerplate(statement)


def test_man_page_titles_and_run_in_headings_are_headings_and_definitions_stay_whole() -> None:
    sentences = split_sentences(document("fstab.5.txt"))
    headings = {" ".join(s.text.split()) for s in sentences if s.heading}
    assert {"NAME", "The second field (fs_file).", "The sixth field (fs_passno)."} <= headings
    texts = [" ".join(s.text.split()) for s in sentences if not s.heading]
    # a definition list's term and its definition are one sentence
    assert "defaults use default options: rw, suid, dev, exec, auto, nouser, and async." in texts
    licence = split_sentences(document("Apache-2.0"))
    assert "Grant of Patent License." in {s.text for s in licence if s.heading}


async def test_a_headings_answer_is_the_text_under_it(model: ExtractiveModel) -> None:
    said = await quotes(model, "fstab.5.txt", "What does the sixth field of fstab (fs_passno) determine?")
    assert said[0].startswith("This field is used by fsck(8) to determine the order")
    assert not any(is_boilerplate(quote) for quote in said)
    grant = await quotes(model, "Apache-2.0", "What does the patent license of the Apache License grant?")
    assert any("patent license to make, have made, use, offer to sell" in quote for quote in grant)
    assert "Grant of Patent License." not in grant


async def test_copyright_and_contact_lines_are_never_quoted(model: ExtractiveModel) -> None:
    for question in ("Who wrote the zlib library?", "Who holds the copyright of zlib?"):
        said = await quotes(model, "zlib1g.copyright", question)
        assert said
        assert not any(is_boilerplate(quote) for quote in said), said
    said = await quotes(model, "deb-conffiles.5.txt", "What is the remove-on-upgrade conffile flag?")
    assert not any("deb-conffiles(5)" in quote for quote in said)
