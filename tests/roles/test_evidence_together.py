"""A question about a technical thing (a file's path, a package, a command) is answered only by a fact
that says the thing together with what is asked of it: real lines of passwd(5), securetty(5) and
fstab(5), as a run would verify them, their sources titled by their paths as runs title them."""

from __future__ import annotations

import pytest

from research_mcp.contracts import Fact
from research_mcp.matching.terms import joined_terms
from research_mcp.roles.evidence import NOT_ESTABLISHED, judge_evidence, one_of_a_kind, technical_subjects
from tests.roles.test_evidence_answer_type import fact

TITLES = {
    1: "man/passwd.5.txt (passwd)",
    2: "man/securetty.5.txt (securetty)",
    3: "man/fstab.5.txt (fstab)",
    4: "doc/debian-archive-keyring/README (README)",
}


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


def test_the_one_of_a_kind_a_question_names_must_be_named_with_what_is_asked_of_it() -> None:
    # base-passwd's README: its ranges and its note on www-data, none saying which uid apache has.
    titles = {6: "doc/base-passwd/README"}
    ranges = fact(
        1,
        'It also supplies the utility "update-passwd", which automatically makes sure that uids and gids '
        "in the 0-99 range on your system are consistent with the Debian master copies.",
        "Which uid is reserved for the apache user in base-passwd?",
        6,
    )
    apache = judge_evidence([ranges.question], [ranges], in_scope=1, read=1, titles=titles)
    assert any(level == "low" and "apache" in why for level, why in apache.caps), apache.caps

    note = "the home directory for the www-data user is preserved"
    group = "Which group does base-passwd give the www-data user?"
    named = judge_evidence([group], [fact(2, note, group, 6)], in_scope=1, read=1, titles=titles)
    assert any(level == "low" and "www-data" in why for level, why in named.caps), named.caps
    # The same line says what is asked when it is what it says of www-data.
    kept = "What does base-passwd preserve for the www-data user?"
    home = judge_evidence([kept], [fact(2, note, kept, 6)], in_scope=1, read=1, titles=titles)
    assert not any("together with" in why for _, why in home.caps), home.caps


def test_a_named_kernel_project_or_server_must_be_named_with_what_is_asked_of_it() -> None:
    # GPL-3's preamble says which licence covers GNU software; fstab(5) names the Linux Kernel Archive.
    titles = {7: "licenses/GPL-3", 3: "man/fstab.5.txt (fstab)"}
    question = "Which licence covers the Linux kernel?"
    gnu = fact(
        1,
        "Most GNU software, including some libraries, is covered by the ordinary GNU General Public License.",
        question,
        7,
    )
    archive = fact(
        2,
        "fstab is part of the util-linux package which can be downloaded from Linux Kernel "
        "Archive <https://www.kernel.org/pub/linux/utils/util-linux/>.",
        question,
        3,
    )
    evidence = judge_evidence([question], [gnu, archive], in_scope=2, read=2, titles=titles)
    assert any(level == "low" and "(Linux)" in why for level, why in evidence.caps), evidence.caps
    # The same licence line answers for the software it names.
    gnu_question = "Which licence covers most GNU software?"
    evidence = judge_evidence(
        [gnu_question], [fact(1, gnu.quote, gnu_question, 7)], in_scope=1, read=1, titles=titles
    )
    assert not any("together with" in why for _, why in evidence.caps), evidence.caps
    assert one_of_a_kind("Which TCP port does the MySQL server listen on?") == ["MySQL"]


def test_a_package_is_named_by_its_own_name_or_folder_not_by_a_file_named_after_it() -> None:
    question = "Who maintains the adduser package?"
    # adduser.conf(5) names its file "adduser.conf", and says of another package who maintains it.
    other = fact(1, "the APT team also maintains the package apt-transport-tor", question, 7)
    titles = {7: "man/adduser.conf.5.txt", 8: "doc/adduser/copyright"}
    evidence = judge_evidence([question], [other], in_scope=1, read=1, titles=titles)
    assert any(level == "low" and "adduser" in why for level, why in evidence.caps), evidence.caps
    # Its own copyright file's folder names the package.
    own = fact(2, "Maintainer: Debian Adduser Developers", question, 8)
    evidence = judge_evidence([question], [own], in_scope=1, read=1, titles=titles)
    assert not any("together with" in why for _, why in evidence.caps), evidence.caps
    assert one_of_a_kind("Does the same package ship it, and which group has the nobody user?") == ["nobody"]
    # As a run titles its sources ("path (title)"), a file named after the one names it.
    notes = {9: "notes/bash.md (bash)"}
    own_file = fact(3, "It is maintained by Chet Ramey.", "Who maintains the bash program?", 9)
    evidence = judge_evidence([own_file.question], [own_file], in_scope=1, read=1, titles=notes)
    assert not any("together with" in why for _, why in evidence.caps), evidence.caps


@pytest.mark.parametrize(
    ("question", "near_miss", "answer", "source"),
    [
        # deb-conffiles(5) says a package's conffiles file exists, not whether it allows comments: the
        # words "package" and "file" say which thing is meant ("a package's DEBIAN/conffiles file").
        (
            "Does a package's DEBIAN/conffiles file allow comment lines starting with '#'?",
            "A package declares its list of conffiles by including a conffiles file in its control archive "
            "(i.e. DEBIAN/conffiles during package creation).",
            "Comment lines starting with '#' are allowed in DEBIAN/conffiles.",
            1,
        ),
        # debian-archive-keyring's README says where its keys are shipped, not how they sign: "keys" of
        # "the keys of debian-archive-keyring" say which things are meant, the question asks their
        # algorithm.
        (
            "Which signature algorithm do the keys of debian-archive-keyring use?",
            "/usr/share/keyrings/debian-archive-keyring.gpg: A keyring including all actively used keys to "
            "sign Release files in our supported releases is shipped in /usr/share/keyrings.",
            "The keys of debian-archive-keyring use the RSA signature algorithm.",
            4,
        ),
    ],
)
def test_whose_thing_it_is_its_kind_and_what_of_it_is_meant_are_not_what_is_asked_of_it(
    question: str, near_miss: str, answer: str, source: int
) -> None:
    assert together(question, fact(1, near_miss, question, source))
    # A line that said it (no page does) would answer.
    assert not together(question, fact(1, answer, question, source))


def test_a_question_asking_nothing_but_of_its_things_is_answered_by_a_fact_naming_them_together() -> None:
    # What it asks ("shell") is a word of the file it names: shells(5) lists shells, base-passwd's
    # README speaks of root; no line says which shell is root's.
    question = "Which shell does /etc/shells list for the root user?"
    titles = {5: "man/shells.5.txt (shells)", 6: "doc/base-passwd/README (README)"}
    listed = fact(1, "/etc/shells may contain the following paths: /bin/sh /bin/bash /bin/csh", question, 5)
    kept = fact(2, "root is never removed or changed.", question, 6)
    evidence = judge_evidence([question], [listed, kept], in_scope=2, read=2, titles=titles)
    assert any(level == "low" and "together with" in why for level, why in evidence.caps), evidence.caps

    # A line of shells(5) saying root's would answer.
    roots = fact(3, "The shell of the root user must be listed too: /bin/sh.", question, 5)
    evidence = judge_evidence([question], [listed, roots], in_scope=2, read=2, titles=titles)
    assert not any("together with" in why for _, why in evidence.caps), evidence.caps


def test_words_a_page_writes_as_one_are_said_by_it() -> None:
    # adduser.conf(5) writes "username" and fstab(5) "filesystem"; a person asks of a "user name" and
    # a "file system". The line says what is asked, together with the file it is asked of.
    titles = {10: "man/adduser.conf.5.txt (adduser.conf)", 3: "man/fstab.5.txt (fstab)"}
    question = "What is the maximum length of a user name according to adduser.conf?"
    line = (
        "Please note that regardless of the regular expressions used to evaluate the username, it may be "
        "a maximum of 32 bytes; this may be less than 32 visual characters when using Unicode glyphs in "
        "the username."
    )
    evidence = judge_evidence([question], [fact(1, line, question, 10)], in_scope=1, read=1, titles=titles)
    assert not [why for level, why in evidence.caps if level == "low"], evidence.caps

    # The same line, titled by another page, answers nothing asked of login.defs (the line is
    # adduser.conf(5)'s): the words are credited, not the file.
    of_other = "What is the maximum length of a user name according to login.defs?"
    evidence = judge_evidence([of_other], [fact(1, line, of_other, 10)], in_scope=1, read=1, titles=titles)
    assert any("together with" in why and "login.defs" in why for _, why in evidence.caps)

    fstab = "Which field of fstab describes the type of the file system?"
    typed = fact(2, "This field describes the type of the filesystem.", fstab, 3)
    assert not together(fstab, typed)

    # And the other way: hosts(5) writes "Host names may contain only alphanumeric characters".
    assert "hostname" in joined_terms(
        "Which characters may a hostname contain?", "Host names may contain only"
    )
    assert not joined_terms("Which parts are kept apart?", "a part of it is kept")  # "a part" is no compound


def test_a_name_and_a_technical_thing_asked_together_are_said_together() -> None:
    # motd(5) names a PAM module of another file; hostname(5) names the file and no module.
    titles = {4: "man/motd.5.txt (motd)", 5: "man/hostname.5.txt (hostname)"}
    motd = (
        "The contents of /etc/motd are displayed by pam_motd(8) login(1) after a successful login but "
        "just before it executes the login shell."
    )
    hostname = "The /etc/hostname file configures the name of the local system."

    def caps(question: str) -> list[str]:
        facts = [fact(1, motd, question, 4), fact(2, hostname, question, 5)]
        judged = judge_evidence([question], facts, in_scope=2, read=2, titles=titles)
        return [why for level, why in judged.caps if level == "low" and "names what it names together" in why]

    assert caps("Which PAM module reads /etc/hostname at boot?")
    # Asked of the file motd(5) names the module of, the same lines answer.
    assert not caps("Which PAM module displays the contents of /etc/motd after a login?")


def test_a_condition_a_question_puts_is_said_by_a_fact_on_what_it_names() -> None:
    # deb-conffiles(5) says what the flag does, nothing of a file the user changed; base-files' README
    # says "modified" of /etc/profile, no conffile.
    question = "What happens to a conffile flagged remove-on-upgrade if the user has modified it?"
    titles = {6: "man/deb-conffiles.5.txt (deb-conffiles)", 7: "doc/base-files/README (README)"}
    flag = (
        "There is currently only one flag supported, remove-on-upgrade, to mark that a conffile needs to "
        "be removed on the next upgrade (since dpkg 1.20.6)."
    )
    profile = (
        "Note 1: Since base-files version 6.10, /etc/profile is automatically upgraded if it has not been "
        "modified from a previous default."
    )

    def caps(question: str, *facts: Fact) -> list[str]:
        judged = judge_evidence([question], list(facts), in_scope=len(facts), read=len(facts), titles=titles)
        return [why for level, why in judged.caps if level == "low" and "condition" in why]

    assert caps(question, fact(1, flag, question, 6), fact(2, profile, question, 7))
    # Asked without the condition, the flag's line answers; a line saying the condition of the
    # file asked about answers with it.
    assert not caps("What does the remove-on-upgrade flag of a conffile do?", fact(1, flag, question, 6))
    nologin = "What happens to the logins of users other than root when /etc/nologin exists?"
    titles[8] = "man/nologin.5.txt (nologin)"
    exists = "If the file /etc/nologin exists and is readable, login(1) will allow access only to root."
    assert not caps(nologin, fact(3, exists, nologin, 8))


def test_what_held_before_an_event_is_not_answered_by_what_it_led_to() -> None:
    # dpkg's copyright file gives the licence dpkg is under now, nothing of one it moved from.
    question = "Which licence did dpkg use before it moved to GPL-2+?"
    titles = {9: "doc/dpkg/copyright (copyright)"}
    now = fact(1, "License: GPL-2+", question, 9)
    evidence = judge_evidence([question], [now], in_scope=1, read=1, titles=titles)
    assert any(level == "low" and "condition" in why for level, why in evidence.caps), evidence.caps
    # GPL-3's "after your receipt of the notice" says what the cure period runs after.
    question = "Under the GPL-3, how long do you have to cure a violation after a first notice?"
    cure = fact(
        2,
        "you cure the violation prior to 30 days after your receipt of the notice.",
        question,
        9,
    )
    evidence = judge_evidence([question], [cure], in_scope=1, read=1, titles={9: "licenses/GPL-3"})
    assert not any("condition" in why for _, why in evidence.caps), evidence.caps


def test_a_yes_or_no_question_is_answered_by_a_fact_saying_what_it_asks_of_what_it_names() -> None:
    # MPL-2.0's Exhibit A notice and Apache-2.0's appendix each name their licence, not compatibility.
    titles = {10: "licenses/MPL-2.0", 11: "licenses/Apache-2.0"}
    question = "Is the MPL-2.0 compatible with the Apache License 2.0?"
    notice = fact(
        1,
        "This Source Code Form is subject to the terms of the Mozilla Public License, v. 2.0. If a copy of "
        "the MPL was not distributed with this file, You can obtain one at http://mozilla.org/MPL/2.0/.",
        question,
        10,
    )
    appendix = fact(2, "APPENDIX: How to apply the Apache License to your work.", question, 11)
    evidence = judge_evidence([question], [notice, appendix], in_scope=2, read=2, titles=titles)
    assert any(level == "low" and "what it asks of what it names" in why for level, why in evidence.caps)
    # deb-conffiles(5) answers whether empty lines are accepted, of the file its title names.
    question = "Are empty lines accepted in a package's conffiles file?"
    empty = fact(3, "Empty lines are not accepted.", question, 12)
    titles[12] = "man/deb-conffiles.5.txt (deb-conffiles)"
    evidence = judge_evidence([question], [empty], in_scope=1, read=1, titles=titles)
    assert not any("what it asks of what it names" in why for _, why in evidence.caps), evidence.caps
