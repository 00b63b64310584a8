"""A question about a technical thing (a file's path, a package, a command) is answered only by a fact
that says the thing together with what is asked of it: real lines of passwd(5), securetty(5) and
fstab(5), as a run would verify them, their sources titled by their paths as runs title them."""

from __future__ import annotations

from research_mcp.contracts import Fact
from research_mcp.roles.evidence import NOT_ESTABLISHED, judge_evidence, technical_subjects
from tests.roles.test_evidence_answer_type import fact

TITLES = {1: "man/passwd.5.txt (passwd)", 2: "man/securetty.5.txt (securetty)", 3: "man/fstab.5.txt (fstab)"}


def together(question: str, *facts: Fact) -> list[tuple[str, str]]:
    """The caps this rule puts on a synthesis of `facts` for `question`; the question is a gap with them."""
    evidence = judge_evidence([question], list(facts), in_scope=len(facts), read=len(facts), titles=TITLES)
    caps = [(level, why) for level, why in evidence.caps if "together with" in why]
    if caps:
        assert f"{NOT_ESTABLISHED}{question}" in evidence.gaps
    return caps


def test_a_line_saying_what_is_asked_of_another_file_does_not_answer_for_this_one() -> None:
    question = "Where is the backup file of /etc/group kept?"
    sibling = fact(1, "/etc/passwd- Backup file for /etc/passwd.", question, 1)

    caps = together(question, sibling)

    assert caps and caps[0][0] == "low"
    assert "/etc/group" in caps[0][1]
    # The same line answers the question about the file it names.
    assert not together("Where is the backup file of /etc/passwd kept?", sibling)


def test_a_line_about_the_file_that_leaves_what_is_asked_unsaid_does_not_answer() -> None:
    question = "What happens when /etc/securetty does not exist?"
    about = [
        fact(
            1,
            "The file /etc/securetty contains the names of terminals (one per line, without leading "
            "/dev/) which are considered secure for the transmission of certain authentication tokens.",
            question,
            2,
        ),
        fact(2, "securetty - list of terminals on which root is allowed to login", question, 2),
    ]

    assert together(question, *about)
    # Asked what the file restricts, the same page answers.
    restricts = "What does /etc/securetty restrict?"
    answer = fact(
        3,
        "It is used by (some versions of) login(1) to restrict the terminals on which root is allowed to login.",
        restricts,
        2,
    )
    assert not together(restricts, answer)


def test_the_source_path_names_the_thing_and_a_name_in_parentheses_need_not_be_repeated() -> None:
    question = "What does the sixth field of fstab (fs_passno) determine?"
    answer = fact(
        1,
        "This field is used by fsck(8) to determine the order in which filesystem checks are done at boot time.",
        question,
        3,
    )

    assert not together(question, answer)


def test_the_things_a_question_names_are_paths_packages_and_technical_words_in_lower_case() -> None:
    assert technical_subjects("Which uid does base-passwd reserve for the grsec-tpe user?") == [
        "base-passwd",
        "grsec-tpe",
    ]
    assert technical_subjects("How many keys does debian-archive-keyring.gpg contain?") == [
        "debian-archive-keyring.gpg"
    ]
    assert technical_subjects("Where is the backup file of /etc/group kept, e.g. by shadow?") == [
        "/etc/group"
    ]
    # English compounds and capitalized names are not: the subject and identifier rules judge those.
    assert technical_subjects("Which British first-generation jet-powered medium bomber was used?") == []
    assert technical_subjects("Which version of the GPL-3 does the FSF publish?") == []


def test_an_identifier_of_one_kind_is_not_answered_by_lines_on_another() -> None:
    # machine-id(5) gives the machine ID's length and speaks of boots, never of a "boot ID".
    question = "Is the boot ID longer or shorter than the 32-character machine ID?"
    lines = [
        fact(
            1,
            "The machine ID is a single newline-terminated, hexadecimal, 32-character, lowercase ID.",
            question,
            4,
        ),
        fact(2, "/etc/machine-id is used to decide whether a boot is the first one.", question, 4),
    ]
    evidence = judge_evidence([question], lines, in_scope=2, read=2, titles={4: "man/machine-id.5.txt"})

    assert any(level == "low" and "boot ID" in why for level, why in evidence.caps), evidence.caps
    assert technical_subjects("Which user ID and which group ID does base-passwd give?") == [
        "user ID",
        "group ID",
        "base-passwd",
    ]


def test_a_files_name_is_named_whole() -> None:
    # Found as a user: access.conf(5)'s "login access control table" says "login", not login.defs.
    question = "How many fields does each line of login.defs have?"
    other = fact(
        1,
        'Each line of the login access control table has three fields separated by a ":" character (colon)',
        question,
        5,
    )
    evidence = judge_evidence([question], [other], in_scope=1, read=1, titles={5: "access.conf.5.txt"})

    assert any(level == "low" and "login.defs" in why for level, why in evidence.caps), evidence.caps
