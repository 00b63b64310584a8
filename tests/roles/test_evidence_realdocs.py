"""Whether the facts extracted for a question say what it asks about: real lines of the Debian
copyright files in tests/fixtures/realdocs, as a run would verify them."""

from __future__ import annotations

from pathlib import Path

import pytest

from research_mcp.contracts import Fact
from research_mcp.roles.evidence import NEVER_MENTIONED, NOT_ESTABLISHED, judge_evidence, never_mentioned_cap
from research_mcp.roles.synthesizer import (
    NOT_ANSWERED_HERE,
    NOT_ESTABLISHED_HERE,
    _marked_unanswered,
    _unanswered,
    _unestablished,
)

DOCS = Path(__file__).resolve().parents[1] / "fixtures" / "realdocs"
#: The whole documents of bench.answers, for a line the excerpts above leave out.
CORPUS = Path(__file__).resolve().parents[2] / "bench" / "data" / "realdocs" / "corpus"
ZSTD = "Under which licence is zstd distributed according to its copyright file?"
ZLIB = "What does zlib's licence require?"


def line(name: str, text: str, folder: Path = DOCS) -> str:
    """`text`, checked to be what the document says (its whitespace aside)."""
    assert " ".join(text.split()) in " ".join((folder / name).read_text(encoding="utf-8").split())
    return text


def fact(ident: int, quote: str, question: str) -> Fact:
    return Fact(
        id=ident,
        statement=quote,
        quote=quote,
        source_id=ident,
        location=(0, len(quote)),
        confidence=0.95,
        verified=True,
        question=question,
        corroborations=2,
    )


def faq_on_zstd() -> Fact:
    """zlib's copyright file's FAQ line, found for the zstd question: it shares "distribution"."""
    faq = "Please read the FAQ for more information on the distribution of modified source versions."
    return fact(1, line("zlib1g.copyright", faq), ZSTD)


def unsaid_caps(evidence_caps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(level, why) for level, why in evidence_caps if why.startswith("most terms of")]


def test_facts_that_say_little_of_what_a_question_asks_leave_it_low() -> None:
    # zlib's copyright file shares "distribution" and its title "copyright" with the question, and
    # says nothing of zstd, a licence or a file.
    said = [
        faq_on_zstd(),
    ]
    evidence = judge_evidence([ZSTD], said, in_scope=1, read=1, titles={1: "copyright"})

    assert f"{NOT_ESTABLISHED}{ZSTD}" in evidence.gaps
    [(level, why)] = unsaid_caps(evidence.caps)
    assert level == "low"
    assert "(license, zstd, file)" in why


def test_the_lines_that_answer_say_most_of_it() -> None:
    said = [
        fact(1, line("libzstd1.copyright", "License: BSD-3-clause or GPL-2"), ZSTD),
        fact(
            2, line("libzstd1.copyright", "Comment: Starting from 1.3.1 zstd's patent claim is removed"), ZSTD
        ),
    ]
    evidence = judge_evidence([ZSTD], said, in_scope=2, read=2, titles={1: "copyright", 2: "copyright"})

    assert not unsaid_caps(evidence.caps)
    assert f"{NOT_ESTABLISHED}{ZSTD}" not in evidence.gaps


def test_one_question_of_two_unsaid_is_a_gap_and_medium() -> None:
    said = [
        faq_on_zstd(),
        fact(
            2,
            line(
                "zlib1g.copyright",
                "If you use this software in a product, an acknowledgment in the product documentation "
                "would be appreciated but is not required.",
            ),
            ZLIB,
        ),
        fact(3, line("zlib1g.copyright", "License: Zlib"), ZLIB),
    ]
    evidence = judge_evidence(
        [ZSTD, ZLIB], said, in_scope=3, read=3, titles=dict.fromkeys((1, 2, 3), "copyright")
    )

    assert [level for level, _ in unsaid_caps(evidence.caps)] == ["medium"]
    assert f"{NOT_ESTABLISHED}{ZSTD}" in evidence.gaps
    assert f"{NOT_ESTABLISHED}{ZLIB}" not in evidence.gaps


def test_framing_words_are_not_what_a_question_asks_about() -> None:
    # The line and its title say "licence" and "copyright", not "zstd" or "file": half of what the
    # question asks about, not most of it, once its "say" is left out.
    question = "What does the copyright file of zstd say about its licence?"
    said = [fact(1, line("libzstd1.copyright", "License: BSD-3-clause or GPL-2"), question)]
    evidence = judge_evidence([question], said, in_scope=1, read=1, titles={1: "copyright"})

    assert not unsaid_caps(evidence.caps)


def test_facts_saying_every_name_a_question_gives_are_on_its_subject() -> None:
    # Most of its words go unsaid (government, position, woman, wrote, hold), but the line is on the
    # one thing it names: how that relates is the answer's to say, not a sign of another subject.
    question = "Which government position did the woman who wrote Jean-loup's library hold?"
    written = "The library has been entirely written by Jean-loup Gailly and Mark Adler; it does not include third-party code."
    said = [fact(1, line("zlib1g.copyright", written), question)]
    evidence = judge_evidence([question], said, in_scope=1, read=1, titles={1: "copyright"})

    assert not unsaid_caps(evidence.caps)
    # Without the name, nothing says the line is on its subject.
    unnamed = question.replace("Jean-loup's", "their")
    evidence = judge_evidence(
        [unnamed], [fact(1, written, unnamed)], in_scope=1, read=1, titles={1: "copyright"}
    )
    assert [level for level, _ in unsaid_caps(evidence.caps)] == ["low"]


def test_a_name_after_a_version_number_is_said() -> None:
    question = "In which BSD release did the ancestor of the fstab file format appear?"
    ancestor = line("man/fstab.5.txt", "The ancestor of this fstab file format appeared in 4.0BSD.", CORPUS)
    evidence = judge_evidence(
        [question], [fact(1, ancestor, question)], in_scope=1, read=1, titles={1: "fstab.5"}
    )

    assert not any(level == "low" for level, _ in evidence.caps), evidence.caps
    assert f"{NOT_ESTABLISHED}{question}" not in evidence.gaps


def test_one_common_name_said_does_not_put_facts_on_the_subject() -> None:
    # The corpus has no netplan: hosts(5) says "IP address", and nothing of configuring netplan.
    question = "How do I configure a static IP address with netplan?"
    address = line("man/hosts.5.txt", "The IP address can conform to either IPv4 or IPv6.", CORPUS)
    evidence = judge_evidence(
        [question], [fact(1, address, question)], in_scope=1, read=1, titles={1: "hosts.5"}
    )

    assert [level for level, _ in unsaid_caps(evidence.caps)] == ["low"]
    assert f"{NOT_ESTABLISHED}{question}" in evidence.gaps


@pytest.mark.parametrize(
    ("words", "question", "level"),
    [
        # A name the question gives that no document holds: the documents are about other things.
        ("'PASS_WARN_AGE'", "How many days are new accounts warned (the PASS_WARN_AGE setting)?", "low"),
        ("'capital', 'australia'", "What is the capital of Australia?", "low"),
        # A word saying which one of a name: a release the documents never mention.
        ("'bookworm'", "Which key signs the Release file of Debian bookworm?", "low"),
        # A technical term, outside common English in every spelling: what the question is about.
        ("'umask'", "What is the default umask for new users?", "low"),
        ("'noatime'", "What does the noatime mount option do in fstab?", "low"),
        ("'ext4'", "What is the maximum file size on an ext4 filesystem?", "low"),
        # A common word: a small folder may answer without it ("people" of the harbour notes).
        ("'people'", "How do people cross the harbour?", "medium"),
        ("'hashing'", "Which hashing scheme do the notes use?", "medium"),
        # Two English words run together: the documents may write them apart.
        ("'timeframe'", "The manager managed the club during what timeframe?", "medium"),
    ],
)
def test_a_word_no_document_holds_caps_low_when_it_is_a_name_or_a_technical_term(
    words: str, question: str, level: str
) -> None:
    note = f"{NEVER_MENTIONED}{words} (asked: {question})"
    assert never_mentioned_cap(note) == level
    assert never_mentioned_cap(f"Part one: {note}") == level  # carried up under a part's title


def test_facts_not_saying_the_technical_term_a_question_is_about_leave_it_low() -> None:
    """ "fakeroot" is what the question is about (no English word, though not capitalised): licence
    lines of other documents, however well they match "licence" and "distributed", answer nothing
    of it. The same lines from the package's own copyright file do."""
    question = "Which licence is fakeroot distributed under?"
    apache = line(
        "Apache-2.0",
        "Unless required by applicable law or agreed to in writing, software distributed under the "
        'License is distributed on an "AS IS" BASIS,',
        CORPUS / "licenses",
    )
    elsewhere = judge_evidence(
        [question], [fact(1, apache, question)], in_scope=1, read=1, titles={1: "licenses/Apache-2.0"}
    )
    assert f"{NOT_ESTABLISHED}{question}" in elsewhere.gaps
    assert (
        "low",
        f"no verified fact for 1 question(s) mentions what it names (fakeroot): {question!r}",
    ) in elsewhere.caps

    own = judge_evidence(
        [question], [fact(1, apache, question)], in_scope=1, read=1, titles={1: "doc/fakeroot/copyright"}
    )
    assert f"{NOT_ESTABLISHED}{question}" not in own.gaps
    # Said within a longer name: the copyright file of the library package libzstd1 is zstd's.
    zstd = "Which licence is zstd distributed under?"
    library = judge_evidence(
        [zstd], [fact(1, apache, zstd)], in_scope=1, read=1, titles={1: "doc/libzstd1/copyright"}
    )
    assert f"{NOT_ESTABLISHED}{zstd}" not in library.gaps


def test_a_name_qualifying_a_package_is_said_by_the_package_folder_of_the_facts_source() -> None:
    """ "GNU bc": bc's README says the timetest line without "GNU", its folder names bc; the same line
    from another package's folder does not make up for the name."""
    question = "How long does the timetest step of GNU bc take at minimum?"
    timetest = line("bc.README", "The timetest step takes a minimum of 10 minutes to complete.")
    why = f"no verified fact for 1 question(s) mentions what it names (gnu): {question!r}"
    for title, named in [("doc/bc/README (README)", True), ("doc/fakeroot/README (README)", False)]:
        evidence = judge_evidence(
            [question], [fact(1, timetest, question)], in_scope=1, read=1, titles={1: title}
        )
        assert (("low", why) not in evidence.caps) is named, title


def test_a_fact_bears_on_the_question_its_source_title_names() -> None:
    """ "This is the new version (1.47.0) ..." shares only "version" with the question, which names
    e2fsprogs and its README: the source's title says the rest, and the version stated answers it,
    though "I release new versions of e2fsprogs" says more of the question's words."""
    question = "Which version of e2fsprogs does its README describe?"
    folder = CORPUS / "doc" / "e2fsprogs"
    version = line(
        "README",
        "This is the new version (1.47.0) of the second extended file system management programs.",
        folder,
    )
    releases = line("README", "From time to time, I release new versions of e2fsprogs, to fix bugs", folder)
    evidence = judge_evidence(
        [question],
        [fact(1, version, question), fact(2, releases, question)],
        in_scope=2,
        read=2,
        titles={1: "doc/e2fsprogs/README", 2: "doc/e2fsprogs/README"},
    )

    assert not any("states a number" in why for _, why in evidence.caps), evidence.caps


def test_only_a_name_or_technical_term_no_document_holds_marks_a_part_not_answered() -> None:
    # man-db's FAQ says "safe" (and answers why), never "safer"; no document says "umask".
    safer = "Why is man-db's command execution safer than man's?"
    umask = "What is the default umask?"
    notes = [f"{NEVER_MENTIONED}'safer' (asked: {safer})", f"{NEVER_MENTIONED}'umask' (asked: {umask})"]
    report = (
        f"# Two\n\n## {safer}\n- man-db has been redesigned ... [F1]\n\n## {umask}\n- The defaults ... [F2]"
    )

    marked = _marked_unanswered(report, _unanswered([safer, umask], [], notes))
    assert marked.split(f"## {umask}", 1)[1].strip().startswith(NOT_ANSWERED_HERE)
    assert NOT_ANSWERED_HERE not in marked.split(f"## {umask}", 1)[0]


def test_a_part_the_checks_found_not_established_is_marked_softly_and_an_answered_part_not_at_all() -> None:
    # The run's gaps name the part whose lines share its words but answer something else (procps's
    # maintainer: only perl's README and the GPL notice were found); the answered part has no gap.
    who = "Who maintains the procps Debian package?"
    what = "What is pgrep?"
    gaps = [f"{who}: {NOT_ESTABLISHED}{who}"]
    report = (
        f"# Two\n\n## {what}\n- pgrep is a new program ... [F1]\n\n"
        f"## {who}\n- Perl is maintained by ... [F2]\n- This program is free software ... [F3]"
    )

    marked = _marked_unanswered(report, _unanswered([what, who], gaps, []), _unestablished(gaps))
    under_who = marked.split(f"## {who}", 1)[1]
    assert under_who.strip().startswith(NOT_ESTABLISHED_HERE)
    assert NOT_ANSWERED_HERE not in marked
    assert NOT_ESTABLISHED_HERE not in marked.split(f"## {who}", 1)[0]


def test_a_line_several_files_share_is_judged_as_found_in_each_whichever_stored_it_first() -> None:
    # zstd's copyright file quotes zlib's licence; parallel extractions store the shared line under
    # whichever file finished first, and the other file's copy is merged into it.
    question = "What does the zlib licence say about the origin of the software?"
    shared = line(
        "libzstd1.copyright",
        "The origin of this software must not be misrepresented; you must not claim that you wrote the "
        "original software.",
    )
    assert line("zlib1g.copyright", shared)
    titles = {1: "doc/libzstd1/copyright (copyright)", 2: "doc/zlib1g/copyright (copyright)"}

    def caps(first: int, cited_in: dict[int, list[int]]) -> list[tuple[str, str]]:
        found = fact(7, shared, question).model_copy(update={"source_id": first})
        return judge_evidence([question], [found], in_scope=1, read=1, titles=titles, cited_in=cited_in).caps

    # Stored under zstd's file alone, the line says nothing of zlib.
    assert any(level == "low" and "zlib" in why for level, why in caps(1, {}))
    # Read as found in both files, it is judged alike whichever file's copy was stored first.
    assert caps(1, {7: [1, 2]}) == caps(2, {7: [2, 1]})
    assert not any(level == "low" for level, _ in caps(1, {7: [1, 2]}))
