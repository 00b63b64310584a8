"""The no-model extractor on real documents (excerpts in tests/fixtures/realdocs): what it quotes is
what the document says, never its furniture, and a heading's answer is the text under it."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from research_mcp.contracts import Embedder, ExtractorOutput, SynthesisOutput
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.extractive import ExtractiveModel
from research_mcp.llm.extractive.sentences import split_sentences
from research_mcp.matching.boilerplate import is_boilerplate
from research_mcp.role_inputs import ExtractorPayload, SynthesisFact, SynthesisPayload

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "realdocs"


def document(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def verified(
    ident: int,
    text: str,
    question: str | None,
    *,
    confidence: float,
    source: int = 1,
    quote: str | None = None,
    corroborations: int = 1,
) -> SynthesisFact:
    """A verified fact as a synthesis is given it: `text` quoted (or `quote`), found for `question`."""
    return SynthesisFact(
        id=ident,
        statement=text,
        quote=quote or text,
        source_id=source,
        verified=True,
        confidence=confidence,
        corroborations=corroborations,
        question=question,
    )


async def synthesis(
    model: ExtractiveModel, title: str, question: str, facts: list[SynthesisFact]
) -> SynthesisOutput:
    """What the no-model synthesizer makes of `facts` for `question`."""
    payload = SynthesisPayload(title=title, questions=[question], input_handoffs=[], facts=facts)
    request = ModelRequest(role="test", system="", prompt="", output_type=SynthesisOutput, payload=payload)
    return (await model.generate(request)).output


async def quotes(model: ExtractiveModel, name: str, question: str, text: str | None = None) -> list[str]:
    """What the extractor quotes of the fixture `name` (or of `text`, titled `name`), first first."""
    payload = ExtractorPayload(
        source_id=1,
        source_ref="corpus:1",
        source_title=name,
        questions=[question],
        source_text=document(name) if text is None else text,
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
        "Author: Jean-loup Gailly <jloup@gzip.org>",
        "-------- Original comp.sources.reviewed README --------",
        "Everyone is permitted to copy and distribute verbatim copies of this license document, "
        "but changing it is not allowed.",
        "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION",
        'Licensed under the Apache License, Version 2.0 (the "License"); you may not use this file except '
        "in compliance with the License.",
        "See the License for the specific language governing permissions and limitations under the License.",
        "To apply the Apache License to your work, attach the following boilerplate notice, with the fields "
        'enclosed by brackets "[]" replaced with your own identifying information.',
        "See the GNU Lesser General Public License for more details.",
        "deb-conffiles(5) dpkg suite deb-conffiles(5)",
        "util-linux 2.38.1 2022-05-11 FSTAB(5)",
        "systemd 252 MACHINE-ID(5)",
        "/etc/machine-id",
        "/etc/motd /etc/pam.d/login",
        "systemd(1), sethostname(2), hostname(1), hostname(7), machine-id(5), machine-info(5), hostnamectl(1), "
        "systemd-hostnamed.service(8), systemd-",
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
        # A README's field naming who wrote the program (bc's), with no address to contact.
        "Author: Philip A. Nelson",
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
    said = await quotes(model, "zlib1g.copyright", "Who wrote the zlib library?")
    assert said and not any(is_boilerplate(quote) for quote in said), said
    # What answers this is the copyright lines themselves: nothing, rather than one of them (the
    # lexical scorer alone quoted "2007-2008 Even Rouault 2009-2010 Mathias Svensson License: Zlib"
    # when a continued "Copyright:" field ran into the "License:" line after it).
    said = await quotes(model, "zlib1g.copyright", "Who holds the copyright of zlib?")
    assert not any(is_boilerplate(quote) or "Svensson" in quote for quote in said), said
    said = await quotes(model, "deb-conffiles.5.txt", "What is the remove-on-upgrade conffile flag?")
    assert not any("deb-conffiles(5)" in quote for quote in said)


async def test_a_contact_line_answers_only_who_has_the_part_it_gives(model: ExtractiveModel) -> None:
    # bash's copyright file: "This package was put together by Matthias Klose <doko@debian.org>." is
    # boilerplate to every question but one asking who put it together; e2fsprogs' README's "please
    # contact Ted Ts'o at tytso@mit.edu" answers whom bugs are reported to.
    said = await quotes(model, "bash.copyright", "Who put together Debian's bash package?")
    assert "This package was put together by Matthias Klose <doko@debian.org>." in said, said
    said = await quotes(model, "e2fsprogs.README", "Whom should bugs in e2fsprogs be reported to?")
    assert any("please contact Ted Ts'o" in quote for quote in said), said
    for question in ("Who wrote GNU bash?", "What is GNU bash?", "Who holds the copyright of bash?"):
        said = await quotes(model, "bash.copyright", question)
        assert not any(is_boilerplate(quote) for quote in said), (question, said)


async def test_a_license_field_line_answers_what_licence_a_package_is_under(model: ExtractiveModel) -> None:
    # A Debian copyright file's "License: Zlib" is a field line standing over the licence text: it
    # is quoted, and the question's British "licence" finds the document's "License".
    assert "License: Zlib" in await quotes(model, "zlib1g.copyright", "What licence is zlib under?")
    assert not is_boilerplate("License: BSD-3-clause or GPL-2")
    sentences = split_sentences(document("libzstd1.copyright"))
    assert any(s.field and s.text == "License: BSD-3-clause or GPL-2" for s in sentences)


async def test_a_report_cut_short_leaves_no_heading_over_nothing(
    model: ExtractiveModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from research_mcp.llm.extractive import synthesizer

    question = "What does the sixth field of fstab determine?"
    said = [
        "This field is used by fsck(8) to determine the order in which filesystem checks are done at boot time.",
        "The root filesystem should be specified with a fs_passno of 1.",
        "The deflate format used by zlib was defined by Phil Katz.",  # answers nothing asked
    ]
    facts = [
        verified(i + 1, t, q, confidence=0.8)
        for i, (t, q) in enumerate(zip(said, [question, question, None], strict=True))
    ]
    payload = SynthesisPayload(title="fstab", questions=[question], input_handoffs=[], facts=facts)
    request = ModelRequest(role="test", system="", prompt="", output_type=SynthesisOutput, payload=payload)
    whole = (await model.generate(request)).output.report
    assert "## Other findings" in whole
    # Cut just after the heading of the last section: the heading goes with its lines.
    monkeypatch.setattr(
        synthesizer, "MAX_REPORT", whole.index("## Other findings") + len("## Other findings") + 3
    )
    cut = (await model.generate(request)).output.report

    lines = [line for line in cut.splitlines() if line.strip()]
    assert lines[-1] == "_(report truncated)_"
    assert not lines[-2].startswith("#")
    assert "Other findings" not in cut


async def test_a_fact_found_for_another_question_lends_it_no_evidence(model: ExtractiveModel) -> None:
    # An earlier run's fact on zlib, scored 0.95 against "Who wrote the zlib library?", is cited under
    # the question on its licence, but its score says nothing of what that licence requires.
    question = "What does zlib's licence require?"
    zlib = document("zlib1g.copyright")
    own = "an acknowledgment in the product documentation would be appreciated but is not required."
    other = "If you use the zlib library in a product, we would appreciate *not* receiving lengthy legal documents to sign."
    assert own in " ".join(zlib.split()) and other in " ".join(zlib.split())
    facts = [
        verified(1, own, question, confidence=0.5),
        verified(2, other, "Who wrote the zlib library?", confidence=0.95),
    ]
    output = await synthesis(model, "zlib", question, facts)

    assert "[F1]" in output.report and "[F2]" in output.report
    assert output.confidence.level == "low"
    assert "best evidence per question 0.50" in output.confidence.reasoning


async def test_a_question_asking_how_long_is_given_the_sentence_stating_a_number(minilm: Embedder) -> None:
    """The answer type: "How long ...?" is answered by a sentence stating a number, even where the
    man page's synopsis line "/etc/machine-id" and sentences naming the file score higher. (Without
    an embedder, lexical relevance alone scores that sentence below what any further fact needs.)"""
    model = ExtractiveModel(minilm, today=lambda: date(2025, 6, 1))
    said = await quotes(model, "machine-id.5.txt", "How long is the machine ID in /etc/machine-id?")
    assert any("32-character" in quote for quote in said), said


async def test_a_package_licence_is_its_every_file_paragraph(model: ExtractiveModel) -> None:
    """A Debian machine-readable copyright file: the licence of "Files: *" is the package's, not
    the zlib licence of its zlibWrapper files (whose name and text share more with "zstd")."""
    said = await quotes(
        model,
        "libzstd1.copyright",
        "Under which licence is zstd distributed according to its copyright file?",
    )
    assert said[0] == "License: BSD-3-clause or GPL-2", said


async def test_a_stanza_whose_files_are_listed_under_its_key_gives_their_licence(
    model: ExtractiveModel,
) -> None:
    """dpkg's copyright file lists each paragraph's files on the indented lines under "Files:": the
    "License:" line of start-stop-daemon.c's paragraph, and the notice under it, answer for it, not
    the key line "Copyright:" run together with the file name above it, nor the package's GPL-2+."""
    said = await quotes(
        model, "dpkg.copyright", "Under which licence is dpkg's start-stop-daemon distributed?"
    )
    assert "License: public-domain-s-s-d" in said[:2], said
    assert not any(quote.endswith("Copyright:") or quote == "License: GPL-2+" for quote in said), said
    said = await quotes(model, "dpkg.copyright", "Which options did Ben Collins add to start-stop-daemon?")
    assert said[0].startswith("Changes by Ben Collins <bcollins@debian.org>, added --chuid"), said


async def test_what_to_do_instead_is_quoted_with_what_not_to_do(model: ExtractiveModel) -> None:
    """machine-id(5) says an application must not use the machine ID directly, then what to do
    instead: the answer is that second sentence, which shares fewer words with the question."""
    said = await quotes(
        model,
        "machine-id.5.txt",
        "What should an application do with the machine ID when it needs a stable unique identifier?",
    )
    assert any(quote.startswith("Instead the machine ID should be") for quote in said), said


async def test_a_word_the_source_says_once_anchors_the_answer(model: ExtractiveModel) -> None:
    """ "nofail" is one entry of the fstab page's list of options: its entry is quoted, though
    sentences naming "fstab" and "entry" share more words with the question."""
    said = await quotes(
        model, "fstab.5.txt", "What is the effect of adding the nofail option to an fstab entry?"
    )
    assert any(quote.startswith("nofail do not report errors") for quote in said), said


async def test_a_sentence_announcing_a_list_is_quoted_with_its_items(model: ExtractiveModel) -> None:
    """ "... include the items listed below." is no answer without the items: it is quoted with them,
    verbatim, and the items are not quoted again on their own."""
    said = await quotes(
        model,
        "fakeroot.README",
        "For which kinds of programs has fakeroot-tcp been seen to work where the SYSV IPC version fails?",
    )
    assert said[0].startswith("Cases for which the SYSV IPC version fails"), said
    assert said[0].endswith(
        "* Multithreaded applications (using pthread) * Running under realtime-preempt kernel"
    ), said
    assert "Multithreaded applications (using pthread)" not in said


async def test_a_sentence_a_blank_line_cuts_off_runs_on_to_the_line_indented_under_it(
    model: ExtractiveModel,
) -> None:
    """README.Debian ends its sentence "... in the directory" and gives the directory indented on the
    next paragraph: the quote holds the directory."""
    said = await quotes(
        model,
        "python3.README.Debian",
        "Where is the upstream Python documentation found once the python-doc package is installed?",
    )
    assert said[0] == (
        "The upstream documentation can be found after installation of the python-doc package in "
        "the directory /usr/share/doc/python3/html"
    ), said


async def test_a_sentence_referring_back_brings_the_name_a_which_question_asks_for(
    model: ExtractiveModel,
) -> None:
    """ "It augments or replaces the /etc/hosts file ..." answers "Which name server ...?" only with
    the sentence before it, which names the server; a question that is not asking for a name takes
    the sentence alone."""
    which = await quotes(
        model, "hosts.5.txt", "Which name server can augment or replace /etc/hosts for hostname lookup?"
    )
    augments = next(i for i, quote in enumerate(which) if quote.startswith("It augments or replaces"))
    assert which[augments - 1].startswith("The Berkeley Internet Name Domain (BIND) Server implements"), which

    how = await quotes(
        model, "hosts.5.txt", "How can a name server augment or replace /etc/hosts for hostname lookup?"
    )
    assert any(quote.startswith("It augments or replaces") for quote in how), how
    assert not any(quote.startswith("The Berkeley Internet Name Domain") for quote in how), how


async def test_a_field_whose_key_the_question_asks_for_answers_it(model: ExtractiveModel) -> None:
    # bc's README: "Author: Philip A. Nelson" shares one word with the question, its banner two.
    said = await quotes(model, "bc.README", "Who is the author of GNU bc according to its README?")
    assert "Author: Philip A. Nelson" in said
    assert not any(quote.startswith("-----") for quote in said)
    # Its "Version:" field is bc's: no answer to a question about another program's version.
    other = await quotes(model, "bc.README", "Which version of e2fsprogs does its README describe?")
    assert "Version: bc version 1.01" not in other


async def test_a_definition_is_quoted_with_the_short_sentence_completing_it(model: ExtractiveModel) -> None:
    # adduser.conf(5): "DSHELL The login shell to be used for all new users.  Defaults to\n /bin/bash."
    # The default is what is asked; alone, "Defaults to /bin/bash." says nothing of a shell.
    said = await quotes(
        model, "adduser.conf.5.txt", "What login shell does adduser give new users by default?"
    )
    assert any("login shell" in quote and "Defaults to /bin/bash." in quote for quote in said), said
    said = await quotes(
        model, "adduser.conf.5.txt", "What permissions does adduser give the home directories of new users?"
    )
    assert any("home directories" in quote and "Defaults to 0700." in quote for quote in said), said
    # A long sentence after it is a claim of its own, not part of the quote.
    assert not any(
        "Note that there are potential configurations" in quote for quote in said if "0700" in quote
    )


def test_a_number_closing_a_parenthesis_at_a_line_start_opens_no_list_item() -> None:
    # apt_preferences(5), as `man -P cat` wraps it: "100)" continues the sentence, it is no item "100)".
    text = (
        "       In a typical situation, the installed version of a package (priority\n"
        "       100) is not as recent as one of the versions available from the sources\n"
        "       listed in the sources.list(5) file (priority 500 or 990). Then the\n"
        "       package will be upgraded when apt-get install some-package or apt-get\n"
        "       upgrade is executed.\n"
        "\n"
        "       Steps:\n"
        "       1) Read the file.\n"
        "       2) Write it back.\n"
    )
    said = [" ".join(sentence.text.split()) for sentence in split_sentences(text)]
    assert said[0] == (
        "In a typical situation, the installed version of a package (priority 100) is not as recent as "
        "one of the versions available from the sources listed in the sources.list(5) file (priority 500 or 990)."
    )
    assert "Read the file." in said and "Write it back." in said  # items of a list stay items


async def test_a_field_after_the_indented_lines_continuing_another_is_a_field_of_its_own(
    model: ExtractiveModel,
) -> None:
    # ed's Debian copyright file aligns a second copyright holder under the first; its "License:"
    # line follows at the margin, and is what "Under which licence ...?" asks of every file ("*").
    text = (
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
        "Upstream-Name: GNU ed\n"
        "Upstream-Contact: bug-ed@gnu.org\n"
        "Source: https://www.gnu.org/software/ed/\n"
        "\n"
        "Files: *\n"
        "Copyright: 2006-2017 Free Software Foundation, Inc\n"
        "           2006-2023 Antonio Diaz Diaz <antonio@gnu.org>\n"
        "License: GPL-2+\n"
        "\n"
        "Files: doc/ed.1\n"
        "Copyright: 2020 Antonio Diaz Diaz <antonio@gnu.org>\n"
        "License: GFDL-NIV-1.3+\n"
    )
    assert "License: GPL-2+" in [sentence.text for sentence in split_sentences(text)]
    said = await quotes(model, "doc/ed/copyright", "Under which licence is GNU ed distributed?", text)
    assert said and said[0] == "License: GPL-2+", said


async def test_a_report_gives_first_the_lines_found_for_its_question_strongest_first(
    model: ExtractiveModel,
) -> None:
    # ed's Debian copyright file answers with "License: GPL-2+"; warranty lines of other packages'
    # files share more of the question's words and are repeated across files (corroborated).
    question = "Under which licence is GNU ed distributed?"
    warranty = (
        "GNU Libtool is distributed in the hope that it will be useful, but WITHOUT ANY WARRANTY; "
        "without even the implied warranty of MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE."
    )
    facts = [
        verified(1, warranty, question, confidence=0.7, source=2, corroborations=3),
        verified(2, "License: GPL-2+", question, confidence=0.95),
        verified(
            3,
            "GNU ed is distributed under the GNU GPL.",
            "Who wrote GNU ed?",
            confidence=0.9,
            source=3,
            quote="distributed under the GNU GPL",
            corroborations=2,
        ),
    ]
    report = (await synthesis(model, question, question, facts)).report
    lines = [line for line in report.splitlines() if line.startswith("- ")]
    assert [line[-4:] for line in lines] == ["[F2]", "[F1]", "[F3]"], lines
