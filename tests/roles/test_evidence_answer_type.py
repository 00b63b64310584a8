"""A question asking how long, how many, when or which version is answered only by a fact stating a
number: real sentences of machine-id(5) and the e2fsprogs README, as a run would verify them."""

from __future__ import annotations

import pytest

from research_mcp.contracts import Fact
from research_mcp.roles.evidence import NOT_ESTABLISHED, judge_evidence

MACHINE_ID = "How long is the machine ID in /etc/machine-id?"


def fact(ident: int, quote: str, question: str, source: int = 1) -> Fact:
    return Fact(
        id=ident,
        statement=quote,
        quote=quote,
        source_id=source,
        location=(0, len(quote)),
        confidence=0.9,
        verified=True,
        question=question,
        corroborations=2,
    )


def test_a_quantity_question_whose_facts_state_no_number_is_a_low_gap() -> None:
    said = [
        fact(1, "The /etc/machine-id file contains the unique machine ID of the local system.", MACHINE_ID),
        fact(2, "This ID uniquely identifies the host.", MACHINE_ID, source=2),
    ]
    evidence = judge_evidence([MACHINE_ID], said, in_scope=2, read=2)

    assert f"{NOT_ESTABLISHED}{MACHINE_ID}" in evidence.gaps
    assert ("low", next(why for level, why in evidence.caps if "states a number" in why)) in evidence.caps


def test_a_fact_stating_the_number_answers_it() -> None:
    said = [
        fact(
            1,
            "The machine ID is a single newline-terminated, hexadecimal, 32-character, lowercase ID.",
            MACHINE_ID,
        ),
        fact(
            2, "The /etc/machine-id file contains the unique machine ID of the local system.", MACHINE_ID, 2
        ),
    ]
    evidence = judge_evidence([MACHINE_ID], said, in_scope=2, read=2)

    assert not any("states a number" in why for _, why in evidence.caps)
    assert f"{NOT_ESTABLISHED}{MACHINE_ID}" not in evidence.gaps


def test_a_count_joined_to_what_it_counts_counts_them() -> None:
    question = "How many characters long is the machine ID in /etc/machine-id?"
    joined = fact(
        1, "The machine ID is a single newline-terminated, hexadecimal, 32-character, lowercase ID.", question
    )
    evidence = judge_evidence([question], [joined], in_scope=1, read=1)
    assert not any("counts them" in why for _, why in evidence.caps)

    # A number joined to other things counts those.
    bytes_ = fact(1, "When decoded from hexadecimal, this corresponds to a 16-byte/128-bit value.", question)
    evidence = judge_evidence([question], [bytes_], in_scope=1, read=1)
    assert any(
        level == "low" and "asking how many characters counts them" in why for level, why in evidence.caps
    )


def test_a_name_with_a_digit_is_not_a_number() -> None:
    question = "Which version of e2fsprogs does its README describe?"
    said = [fact(1, "From time to time, I release new versions of e2fsprogs, to fix bugs in ext4.", question)]
    evidence = judge_evidence([question], said, in_scope=1, read=1)

    assert any(level == "low" and "states a number" in why for level, why in evidence.caps)


def test_a_man_page_reference_is_not_a_number() -> None:
    # machine-id(5)'s SEE ALSO line names sections of other pages, not the ID's length.
    said = [
        fact(1, "systemd(1), systemd-machine-id-setup(1), gethostid(3), hostname(5),", MACHINE_ID),
        fact(
            2, "The /etc/machine-id file contains the unique machine ID of the local system.", MACHINE_ID, 2
        ),
    ]
    evidence = judge_evidence([MACHINE_ID], said, in_scope=2, read=2)

    assert any(level == "low" and "states a number" in why for level, why in evidence.caps)
    assert f"{NOT_ESTABLISHED}{MACHINE_ID}" in evidence.gaps


WHY_LOWERCASE = "Why is the machine ID written in lowercase rather than uppercase hexadecimal?"
WHY_ISSUE = "Why does base-files not change /etc/issue at a point release?"


def test_a_why_question_whose_facts_give_no_reason_is_a_low_gap() -> None:
    # machine-id(5) says what the ID is written as, never why.
    said = [
        fact(
            1,
            "The machine ID is a single newline-terminated, hexadecimal, 32-character, lowercase ID.",
            WHY_LOWERCASE,
        ),
        fact(2, "When decoded from hexadecimal, this corresponds to a 16-byte/128-bit value.", WHY_LOWERCASE),
    ]
    evidence = judge_evidence([WHY_LOWERCASE], said, in_scope=2, read=2)

    assert any(level == "low" and "asking why gives a reason" in why for level, why in evidence.caps)
    assert f"{NOT_ESTABLISHED}{WHY_LOWERCASE}" in evidence.gaps


def test_a_reason_or_a_purpose_answers_why() -> None:
    # base-files' README and shells(5): a reason after "as", a purpose after "to".
    because = fact(
        1,
        "The release managers asked me not to touch /etc/issue, as that's a file which is often "
        "customized by the user.",
        WHY_ISSUE,
    )
    evidence = judge_evidence([WHY_ISSUE], [because], in_scope=1, read=1)
    assert not any("gives a reason" in why for _, why in evidence.caps)

    shells = "Why do some programs check whether a user's shell is listed in /etc/shells?"
    purpose = fact(
        1,
        "Be aware that there are programs which consult this file to find out if a user is a normal user;",
        shells,
    )
    evidence = judge_evidence([shells], [purpose], in_scope=1, read=1)
    assert not any("gives a reason" in why for _, why in evidence.caps)


def test_a_default_is_answered_only_by_a_fact_saying_what_is_the_default() -> None:
    # shadow(5) says what an empty warning period means, not what its default is; a README sentence
    # on "the default files" says "default" about something else.
    question = "What is the default value of the password warning period in /etc/shadow?"
    said = [
        fact(1, "An empty field and value 0 mean that there are no password warning period.", question),
        fact(
            2,
            "Changes in the default files are not important enough to warn the user, as it is also "
            "policy that prompting should be reduced to a minimum.",
            question,
            source=2,
        ),
    ]
    evidence = judge_evidence([question], said, in_scope=2, read=2)
    assert any(level == "low" and "asking for a default" in why for level, why in evidence.caps)

    shell = "What is the default command interpreter when the shell field of /etc/passwd is empty?"
    defaults = fact(1, "If this field is empty, it defaults to the value /bin/sh.", shell)
    evidence = judge_evidence([shell], [defaults], in_scope=1, read=1)
    assert not any("asking for a default" in why for _, why in evidence.caps)


def test_a_limit_is_answered_only_by_a_fact_saying_a_limit_of_the_side_asked() -> None:
    # hostname(5) gives the most a hostname may be, bc's README the least its timetest takes: each
    # answers its own side and is a near miss for the other.
    hostname = (
        "The hostname should be composed of up to 64 7-bit ASCII lower-case alphanumeric characters or "
        "hyphens forming a valid DNS domain name."
    )
    timetest = "The timetest step takes a minimum of 10 minutes to complete."
    for question, quote, answers in [
        ("What is the maximum length of a hostname in /etc/hostname?", hostname, True),
        ("What is the minimum length of a hostname in /etc/hostname?", hostname, False),
        ("How long does the timetest step of GNU bc take at minimum?", timetest, True),
        ("How long does the timetest step of GNU bc take at most?", timetest, False),
    ]:
        evidence = judge_evidence([question], [fact(1, quote, question)], in_scope=1, read=1)
        capped = [why for level, why in evidence.caps if level == "low" and "asking for a m" in why]
        assert bool(capped) is not answers, (question, capped)
        assert answers or f"{NOT_ESTABLISHED}{question}" in evidence.gaps

    # Found as a user: login.defs(5) gives the longest user name, not the longest line of the file its
    # title names (a title says the file of every line on the page).
    question = "What is the maximum length of a line in /etc/login.defs?"
    username = fact(
        1,
        "Please note that regardless of the regular expressions used to evaluate the username, it may be "
        "a maximum of 32 bytes; this may be less than 32 visual characters when using Unicode glyphs in "
        "the username.",
        question,
    )
    evidence = judge_evidence(
        [question], [username], in_scope=1, read=1, titles={1: "man/login.defs.5.txt (login.defs.5)"}
    )
    assert any(level == "low" and "asking for a maximum says one" in why for level, why in evidence.caps)


def test_a_who_question_whose_facts_name_no_one_is_a_low_gap() -> None:
    # bc's README: its first line names the program the question names, its field names the author.
    question = "Who is the author of GNU bc according to its README?"
    banner = fact(1, "GNU bc version 1.07:", question)
    evidence = judge_evidence([question], [banner], in_scope=1, read=1)
    assert any(level == "low" and "asking who names anyone" in why for level, why in evidence.caps)

    author = fact(2, "Author: Philip A. Nelson", question)
    evidence = judge_evidence([question], [banner, author], in_scope=2, read=2)
    assert not any("asking who" in why for _, why in evidence.caps)


def test_a_who_question_asking_a_part_is_answered_only_by_a_line_giving_that_part() -> None:
    # bash's copyright file names the licence's authors and its packager, not bash's first author.
    question = "Who wrote the first version of GNU bash?"
    lines = [
        fact(
            1, "You should have received a copy of the GNU General Public License along with Bash.", question
        ),
        fact(2, "This package was put together by Matthias Klose <doko@debian.org>.", question),
    ]
    evidence = judge_evidence([question], lines, in_scope=2, read=2)
    assert any(level == "low" and "asking who" in why for level, why in evidence.caps), evidence.caps

    packager = "Who put together Debian's bash package?"
    evidence = judge_evidence([packager], [fact(2, lines[1].quote, packager)], in_scope=1, read=1)
    assert not any("asking who" in why for _, why in evidence.caps), evidence.caps


@pytest.mark.parametrize(
    ("question", "near", "answer"),
    [
        # debian-archive-keyring's README names the Debian project, not who founded it.
        (
            "Who founded the Debian project?",
            "The Debian project signs its Release files that are stored on the Debian ftp-server and its "
            "mirrors with the keys contained in this packages.",
            "The Debian project was founded by Ian Murdock in 1993.",
        ),
        # fstab(5) lists ext4 among the filesystem types Linux supports, not who developed it.
        (
            "Which company developed the ext4 filesystem?",
            "Linux supports many filesystem types: ext4, xfs, btrfs, f2fs, vfat, ntfs, hfsplus, tmpfs, "
            "sysfs, proc, iso9660, udf, squashfs, nfs, cifs, and many more.",
            "The ext4 filesystem was developed by Cluster File Systems, Inc.",
        ),
    ],
)
def test_a_who_question_asking_a_part_is_answered_only_by_a_line_naming_someone_in_it(
    question: str, near: str, answer: str
) -> None:
    evidence = judge_evidence([question], [fact(1, near, question)], in_scope=1, read=1)
    assert any(level == "low" and "asking who" in why for level, why in evidence.caps), evidence.caps
    both = [fact(1, near, question), fact(2, answer, question)]
    evidence = judge_evidence([question], both, in_scope=2, read=2)
    assert not any("asking who" in why for _, why in evidence.caps), evidence.caps


def test_a_question_asking_where_a_thing_is_kept_is_answered_by_a_place_it_does_not_give() -> None:
    # e2fsprogs' README names its web page and the INSTALL file, not where the file is installed.
    question = "Where is the e2fsprogs INSTALL file installed on a Debian system?"
    lines = [
        fact(1, "The INSTALL file has instructions on building and installing e2fsprogs.", question),
        fact(
            2,
            "You can always find information about the latest version at the the e2fsprogs web page, "
            "which is: http://e2fsprogs.sourceforge.net",
            question,
        ),
    ]
    evidence = judge_evidence([question], lines, in_scope=2, read=2)
    assert any(level == "low" and "which place" in why for level, why in evidence.caps), evidence.caps
    # base-files' README gives the master copy's path; the path the question gives is no answer.
    question = "Where is the master copy that base-files installs as /root/.bashrc?"
    given = fact(3, "base-files installs a default /root/.bashrc for the root user.", question)
    evidence = judge_evidence([question], [given], in_scope=1, read=1)
    assert any("which place" in why for _, why in evidence.caps), evidence.caps
    master = fact(4, "install_from_default /usr/share/base-files/dot.bashrc /root/.bashrc", question)
    evidence = judge_evidence([question], [master], in_scope=1, read=1)
    assert not any("which place" in why for _, why in evidence.caps), evidence.caps


def test_a_how_question_whose_facts_leave_its_action_unsaid_is_a_low_gap() -> None:
    # hostname(5) says NetworkManager may set a transient hostname from a DHCP lease, not how it chooses.
    question = "How does NetworkManager choose the transient hostname from a DHCP lease?"
    said = [
        fact(
            1,
            "Otherwise, a transient hostname may be set during runtime, for example based on information "
            "in a DHCP lease, see systemd-hostnamed.service(8).",
            question,
        ),
        fact(2, "Both NetworkManager[1] and systemd-networkd.service(8) allow this.", question),
    ]
    evidence = judge_evidence([question], said, in_scope=2, read=2)
    assert any(level == "low" and "asking how" in why and "choose" in why for level, why in evidence.caps)

    hosts = "How are the fields of an entry in /etc/hosts separated?"
    separated = fact(
        1, "Fields of the entry are separated by any number of blanks and/or tab characters.", hosts
    )
    evidence = judge_evidence([hosts], [separated], in_scope=1, read=1)
    assert not any("asking how" in why for _, why in evidence.caps)

    # A verb naming no particular action ("make") is answered by a particular one ("convert").
    panels = "How do panels make electricity?"
    convert = fact(1, "Solar panels convert sunlight into electricity using photovoltaic cells.", panels)
    evidence = judge_evidence([panels], [convert], in_scope=1, read=1)
    assert not any("asking how" in why for _, why in evidence.caps)


def caps(question: str, *quotes: str) -> list[tuple[str, str]]:
    """The confidence caps of a question whose verified facts are these sentences."""
    said = [fact(number, quote, question) for number, quote in enumerate(quotes, 1)]
    return judge_evidence([question], said, in_scope=len(said), read=len(said)).caps


def test_a_when_question_answered_by_a_version_alone_is_a_low_gap_and_a_date_answers_it() -> None:
    # GNU bc's README gives versions, never a release date; the Apache License's header gives one.
    bc = "When was GNU bc version 1.07 released?"
    versions = ["Version: bc version 1.01", "GNU bc version 1.07: Extra configuration options are available."]
    assert ("low", f"no verified fact for 1 question(s) asking when states a date: {bc!r}") in caps(
        bc, *versions
    )

    apache = "When was version 2.0 of the Apache License released?"
    assert not any("date" in why for _, why in caps(apache, "Apache License Version 2.0, January 2004"))
    # Python's README.Debian says the draft will be moved "Sometime"; "one" of another line is no date.
    draft = "When will the draft of the Debian Python Policy be moved to the debian-policy package?"
    sometime = [
        "Sometime it will be moved to /usr/share/doc/debian-policy in the debian-policy package.",
        "As usual, you should always take a look at already reported bugs against debian-policy before "
        "submitting a new one.",
    ]
    assert any(level == "low" and "asking when states a date" in why for level, why in caps(draft, *sometime))
    # "When is ...?" asks for a condition, which no date need state.
    used = "When is /etc/machine-id used to decide whether a boot is the first one?"
    first = "/etc/machine-id is used to decide whether a boot is the first one."
    assert not any("date" in why for _, why in caps(used, first))


def test_what_an_abbreviation_stands_for_is_answered_only_by_a_fact_spelling_it_out() -> None:
    # passwd(5) says "the comment field, also known as the gecos field", never what GECOS stands for;
    # fstab(5) spells out GPT, motd(5) "message of the day".
    gecos = "What does GECOS stand for in the gecos field of /etc/passwd?"
    unspelled = caps(gecos, "comment field, also known as the gecos field. It is optional.")
    assert any(level == "low" and "GECOS stands for" in why for level, why in unspelled), unspelled

    for question, quote in [
        ("What does GPT stand for in the fstab manual page?", "on GPT (GUID Partition Table)"),
        ("What does the abbreviation motd stand for?", "motd - the message of the day"),
    ]:
        assert not any("stands for" in why for _, why in caps(question, quote)), question


def test_a_number_asked_for_by_a_named_kind_needs_a_number() -> None:
    port = "Which TCP port does fakeroot-tcp use for message passing?"
    passing = caps(port, "fakeroot can be built to either use SYSV IPC or TCP for message passing.")
    assert any(level == "low" and "states a number" in why for level, why in passing), passing


def test_how_many_of_a_thing_is_answered_only_by_a_fact_counting_that_thing() -> None:
    # debian-archive-keyring's README states a number ("versions 0.6 and later"), never how many keys.
    keys = "How many keys does debian-archive-keyring.gpg contain?"
    uncounted = caps(
        keys,
        'Each actively used key is placed in /etc/apt/trusted.gpg.d/ to be used by "apt" and its '
        "apt-key command in versions 0.6 and later.",
    )
    assert any(level == "low" and "how many keys counts them" in why for level, why in uncounted), uncounted

    for question, quote in [
        (
            "How many characters may the hostname in /etc/hostname have?",
            "The hostname may be a free-form string up to 64 7-bit ASCII lower-case characters in length.",
        ),
        (
            "How many fields does each line of /etc/passwd have?",
            "/etc/passwd contains one line for each user account, with seven fields delimited by colons",
        ),
        (
            "How many fields does each line of /etc/shadow contain?",
            "Each line of this file contains 9 fields",
        ),
    ]:
        assert not any("counts them" in why for _, why in caps(question, quote)), question


def test_which_directory_or_option_is_answered_only_by_a_fact_naming_one() -> None:
    # deluser.conf(5): the BACKUP entry's first sentence names no directory; BACKUP_TO's does.
    where = "In which directory does deluser put the backups of a removed user's files?"
    backed_up = caps(
        where,
        "BACKUP If REMOVE_HOME or REMOVE_ALL_FILES is activated, all files are backed up before they are removed.",
        # The page's own file is no directory (found as a user: it made the run medium).
        "/etc/deluser.conf - configuration file for deluser(8) and delgroup(8).",
    )
    assert any(level == "low" and "which directory names one" in why for level, why in backed_up), backed_up
    assert not any(
        "names one" in why
        for _, why in caps(
            where, "If BACKUP is activated, BACKUP_TO specifies the directory the backup is written to."
        )
    )

    option = "Which option of update-passwd only reports the changes it would make without applying them?"
    unnamed = caps(
        option,
        "To ensure your system is correct you can use the update-passwd utility to check it and optionally "
        "make the necessary changes.",
    )
    assert any(level == "low" and "which option names one" in why for level, why in unnamed), unnamed
    for quote in [
        "-n, --dry-run  Don't do anything but report what would be done.",
        "defaults use default options",
    ]:
        assert not any("names one" in why for _, why in caps(option, quote)), quote


def test_which_file_is_answered_by_a_name_or_a_path_not_by_the_word_file() -> None:
    # hosts(5) speaks of "this file" and "a simple text file" without naming one; securetty(5) and
    # fakeroot's README name theirs.
    question = "Which file lists the terminals on which root may log in?"
    unnamed = caps(question, "This file is a simple text file that associates IP addresses with hostnames.")
    assert any(level == "low" and "which file names one" in why for level, why in unnamed), unnamed
    for quote in [
        "The file /etc/securetty lists the terminals on which root may log in.",
        "See README_MACOSX.txt for further information.",
    ]:
        assert not any("names one" in why for _, why in caps(question, quote)), quote


def test_when_a_named_version_was_released_is_answered_only_by_a_date_beside_that_version() -> None:
    # man-db's FAQ dates its own writing, not the 2.0 release (found as a user); a NEWS line dating
    # the version answers.
    released = "When was man-db 2.0 released?"
    undated = caps(
        released, "At the time of writing (February 2012), there have been ten full releases of man-db."
    )
    assert any(level == "low" and "asking when states a date" in why for level, why in undated), undated
    assert not any("date" in why for _, why in caps(released, "man-db 2.0 (4 March 1994): first release."))


def test_which_program_does_a_thing_is_answered_only_by_a_fact_naming_another_doing_it() -> None:
    # deb-conffiles(5) names dpkg, which the question names, and dpkg-deb, doing another thing.
    question = "Which dpkg command lists the conffiles of an installed package?"
    conffiles = [
        fact(
            1,
            "Files without a flag should exist in the binary package, otherwise dpkg(1) will ignore them.",
            question,
        ),
        fact(
            2,
            "There is currently only one flag supported, remove-on-upgrade, to mark that a conffile needs to "
            "be removed on the next upgrade (since dpkg 1.20.6). These files must not exist in the binary "
            "package, as both dpkg(1) and dpkg-deb(1) will not accept building nor processing such binary "
            "packages.",
            question,
        ),
    ]

    def program_caps(question: str, *facts: Fact) -> list[str]:
        judged = judge_evidence([question], list(facts), in_scope=len(facts), read=len(facts))
        caps = [why for level, why in judged.caps if level == "low" and "which program" in why]
        if caps:
            assert f"{NOT_ESTABLISHED}{question}" in judged.gaps
        return caps

    assert program_caps(question, *conffiles)
    # A program named doing what is asked answers, by its man page reference, its "_" name or as a
    # command given an option.
    shells = "Which program consults /etc/shells when a user changes their login shell?"
    assert not program_caps(
        shells, fact(3, "This file is consulted by chsh(1) and available to be queried.", shells)
    )
    motd = "Which PAM module displays the contents of /etc/motd after a login?"
    assert not program_caps(motd, fact(4, "Dynamic content is also displayed by pam_exec.", motd))
    assert not program_caps(
        question, fact(5, "To list the conffiles, run dpkg-query --showformat.", question)
    )
    # Asked what it does, nothing is asked of a program.
    assert not program_caps("Which kernel command line parameter can set the machine ID?", *conffiles)


def test_a_reason_answers_why_only_when_given_of_what_the_question_names() -> None:
    titles = {1: "licenses/LGPL-2.1 (LGPL-2.1)", 2: "licenses/Artistic (Artistic)"}

    def unreasoned(question: str, *lines: tuple[str, int]) -> bool:
        facts = [fact(ident, text, question, source) for ident, (text, source) in enumerate(lines, 1)]
        evidence = judge_evidence([question], facts, in_scope=len(facts), read=len(facts), titles=titles)
        return any(
            level == "low" and "gives a reason, of what it names" in why for level, why in evidence.caps
        )

    artistic = "Why was the Artistic License replaced by a version 2.0?"
    # LGPL-2.1's preamble gives the reason of its own version number, not the Artistic License's.
    hence = "It also counts as the successor of the GNU Library Public License, version 2, hence the version number 2.1."
    assert unreasoned(artistic, (hence, 1))
    # The Artistic License's own lines: a definition "as specified below" and the licence's intent
    # give no reason it was replaced.
    standard = (
        '"Standard Version" refers to such a Package if it has not been modified, or has been modified in '
        "accordance with the wishes of the Copyright Holder as specified below."
    )
    intent = (
        "The intent of this document is to state the conditions under which a Package may be copied, such "
        "that the Copyright Holder maintains some semblance of artistic control over the development of the "
        "package."
    )
    assert unreasoned(artistic, (standard, 2), (intent, 2))
    because = (
        'We call this license the "Lesser" General Public License because it does Less to protect the '
        "user's freedom than the ordinary General Public License."
    )
    assert not unreasoned("Why does the LGPL 2.1 call itself the 'Lesser' license?", (because, 1))


def test_an_e_mail_address_is_answered_only_by_a_fact_giving_one() -> None:
    # debian-archive-keyring's README says what its keyrings hold; curl's copyright file gives an address.
    question = "What is the e-mail address of the maintainer of debian-archive-keyring?"
    keyring = fact(
        1,
        "/usr/share/keyrings/debian-archive-keyring.gpg: A keyring including all actively used keys to sign "
        "Release files in our supported releases is shipped in /usr/share/keyrings.",
        question,
    )
    evidence = judge_evidence([question], [keyring], in_scope=1, read=1)
    assert any(level == "low" and "e-mail address gives one" in why for level, why in evidence.caps)

    curl = "What is the e-mail address of curl's upstream contact?"
    contact = fact(2, "Upstream-Contact: Daniel Stenberg <daniel@haxx.se>", curl)
    evidence = judge_evidence([curl], [contact], in_scope=1, read=1)
    assert not any("e-mail address gives one" in why for _, why in evidence.caps)
