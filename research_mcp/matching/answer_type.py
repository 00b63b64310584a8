"""What kind of answer a question asks for, read off its form: a quantity or a date ("How long ...?",
"How many ...?", "When ...?", "Which version ...?") is answered only by a text that states a number;
a reason ("Why ...?") only by one that gives a reason or a purpose ("because", "as", "so that", "to
find out"); an e-mail address only by one giving one; a person or a body ("Who wrote ...?") only by
one naming someone the question does not; a default or a recommendation ("Which algorithm does it
use by default?") only by one that says what is the default or recommended; a limit ("What is the
maximum length ...?", "How long does it take at least?") only by one that says a limit of that side
("up to 64", "a minimum of 10 minutes"); when an event was ("When was ... released?") only by one
stating a date, a version being none; what an abbreviation stands for only by words whose initials
spell it; which program does a thing ("Which dpkg command lists ...?") only by one naming a program
("chsh(1)", "pam_motd", "dpkg-query -L"). How a thing is done ("How does ... choose ...?") is judged
by roles/evidence.py on the question's words.

Classic extractive question answering's answer-type check, kept to the forms whose type is plain.
"""

from __future__ import annotations

import re

from research_mcp.matching.boilerplate import EMAIL, URL
from research_mcp.matching.terms import STOPWORDS, stem

__all__ = [
    "asks_for_count",
    "asks_for_credit",
    "asks_for_date",
    "asks_for_email",
    "asks_for_expansion",
    "asks_for_limit",
    "asks_for_manner",
    "asks_for_number",
    "asks_for_person",
    "asks_for_place_or_option",
    "asks_for_program",
    "asks_for_reason",
    "counts",
    "credited_roles",
    "expands",
    "names_place_or_option",
    "names_someone",
    "number_words",
    "program_names",
    "qualifiers",
    "states_date",
    "states_limit",
    "states_number",
    "states_reason",
]

_QUANTITY = re.compile(
    r"^\s*(?:how\s+(?:many|much|long|old|often|big|large|far|soon|fast)\b"
    r"|when\b|since\s+when\b"
    r"|(?:what|which|since\s+which|in\s+which|from\s+which)\s+(?:year|years|date|version|release|number|port|age|size)\b"
    # one word may name what the number is of: "Which TCP port ...?" (not "Which Debian release ...?",
    # which a name answers)
    r"|(?:what|which)\s+[\w-]+\s+(?:port|number|size|age)\b)",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    "forty|fifty|sixty|hundred|thousand|million|billion|dozen|once|twice"
)
_NUMBER = re.compile(rf"(?<![A-Za-z])\d|\b(?:{_NUMBER_WORDS})\b", re.IGNORECASE)
_DIGIT = re.compile(r"(?<![A-Za-z])\d")
# "How many keys ...?": keys counted. Only at the start, where the form is plain.
_COUNT = re.compile(r"^\s*how\s+many\s+(?P<things>[a-z]{3,})\b", re.IGNORECASE)
# "In which directory ...?", "Which e2fsck option ...?", "What file ...?": one word may come before the kind.
_PLACE_OR_OPTION = re.compile(
    r"^\s*(?:(?:in|from|under|into|to)\s+)?(?:which|what)\s+(?:[\w-]+\s+)?"
    r"(?P<kind>director(?:y|ies)|folders?|files?|paths?|options?|flags?|switch(?:es)?)\b",
    re.IGNORECASE,
)
# "Where is the master copy ... kept?", "Where does base-files install ...?": a place on a system.
_WHERE_KEPT = re.compile(
    r"^\s*where\s+(?:is|are|was|were|does|do|did|will|would|should|can|could|may|must)\b.*\b(?:"
    r"kept|keeps?|stored|stores?|installed|installs?|located|placed|places?|put|puts|saved|saves?|"
    r"written|writes?|moved|moves?|copied|copies|copy|found|finds?|lives?|resides?|created|creates?"
    r")\b",
    re.IGNORECASE,
)
# "Which dpkg command lists ...?", "Which PAM module reads ...?", "By which program ...?"; not "Which
# kernel command line parameter ...?", a parameter.
_PROGRAM = re.compile(
    r"^\s*(?:(?:by|with|from|in)\s+)?(?:which|what)\s+(?:[\w-]+\s+)?"
    r"(?P<kind>commands?|programs?|tools?|utilit(?:y|ies)|modules?|daemons?)\b(?![\s-]+line\b)"
    r"(?:\s+(?P<action>[a-z]+))?",
    re.IGNORECASE,
)
_AUXILIARIES = frozenset(
    (
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "will",
        "would",
        "should",
        "must",
        "may",
    )
)
# How a text names a program: a man page's reference ("chsh(1)"), a name joined by "_" ("pam_motd"),
# a command given an option ("dpkg-query -L"), or a word before the kind ("the login program").
_PROGRAM_NAME = re.compile(
    r"(?P<reference>[\w.:+-]+)\(\d[a-z]*\)"
    r"|(?<![\w-])(?P<joined>[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9])(?![\w-])"
    r"|(?<![\w-])(?P<given>[a-z][\w.+-]*)\s+--?[a-z][\w-]*"
    r"|(?<![\w-])(?P<kinded>[a-z][\w.+-]*)\s+(?:command|program|tool|utility|module|daemon)s?\b",
    re.IGNORECASE,
)
_A_PATH = re.compile(r"(?<![\w/])~?/[\w.+/-]+")
_PLACE = re.compile(rf"{_A_PATH.pattern}|\b[\w+-]{{2,}}\.[a-z][a-z0-9]{{1,4}}\b", re.IGNORECASE)
_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_KIND_WORD = {
    "directories": "directory",
    "folders": "folder",
    "files": "file",
    "paths": "path",
    "options": "option",
    "flags": "flag",
    "switches": "switch",
}
#: People are counted by a population too: "a population of 9,984".
_PEOPLE = frozenset({"people", "persons", "inhabitants", "residents"})
_COUNTED_WORD = re.compile(r"[\w,.-]*\w")
# A word that is a number: "9", "3,677", "64", "seven"; "7-bit" too, which counts bits.
_A_NUMBER = re.compile(rf"\d[\w,.-]*|{_NUMBER_WORDS}", re.IGNORECASE)
# A man page's reference to another ("hostname(1)", "systemd-firstboot(1)") names a section, not a number.
_MAN_REFERENCE = re.compile(r"[\w.:-]+\(\d[a-z]*\)")


# "When" asking when an event was ("When was bc 1.07 released?"), not "When is it used?", which a
# condition answers.
_WHEN_EVENT = re.compile(r"^\s*when\s+(?:was|were|did|will|would)\b", re.IGNORECASE)
# A year standing alone ("2004", "in 1999"; not "1.07" nor "64070"), a month's name, an ISO date.
_DATE = re.compile(
    r"(?<![\d.,-])(?:1[0-9]|20)\d\d(?![\d.,]\d)"
    r"|\b(?:january|february|march|april|june|july|august|september|october|november|december)\b"
    r"|\bmay\s+\d|\b\d{1,2}\s+may\b"
    r"|\b\d{4}-\d\d-\d\d\b",
    re.IGNORECASE,
)


_EMAIL_ASKED = re.compile(r"\be-?mail\s+address", re.IGNORECASE)
# "What does GECOS stand for?", "What does the abbreviation motd stand for?"
_EXPANSION = re.compile(
    r"^\s*what\s+(?:does|do|did)\s+(?:the\s+)?(?:abbreviation\s+|acronym\s+)?"
    r"[\"'“‘]?(?P<short>[A-Za-z][A-Za-z0-9]{1,9})[\"'”’]?\s+stand\s+for\b",
    re.IGNORECASE,
)
_LETTERED = re.compile(r"[A-Za-z][\w'’-]*")
_LINKING = frozenset({"of", "the", "a", "an", "and", "for", "to", "in", "on"})


def asks_for_expansion(question: str) -> str:
    """The abbreviation a question asks the expansion of ("What does GPT stand for ...?": "GPT"), ""
    when it asks none."""
    match = _EXPANSION.match(question)
    return match.group("short") if match else ""


def expands(text: str, short: str) -> bool:
    """Whether a text spells out an abbreviation: consecutive words whose initials make it, linking
    words ("of", "the") counted or not ("message of the day" for "motd", "GUID Partition Table" for
    "GPT")."""
    letters = [c for c in short.casefold() if c.isalpha()]
    words = [word.casefold() for word in _LETTERED.findall(text)]
    for start in range(len(words)):
        for skip in (False, True):
            found: list[str] = []
            for word in words[start:]:
                if skip and word in _LINKING and found:
                    continue
                found.append(word[0])
                if len(found) >= len(letters):
                    break
            if found == letters:
                return True
    return False


def asks_for_date(question: str) -> bool:
    """Whether the question, among those asking for a number, asks when an event was or will be ("When
    was ... released?", "In which year ...?", "When will ... be moved ...?": "Sometime" is no date)."""
    asked = number_words(question).casefold()
    return asked.endswith(("year", "years", "date")) or (
        asked == "when" and bool(_WHEN_EVENT.match(question))
    )


def states_date(text: str) -> bool:
    """Whether a text states a date: a year, a month or a day ("Version 2.0, January 2004"); a version
    ("bc version 1.01") is a number but no date."""
    return bool(_DATE.search(text))


def asks_for_count(question: str) -> str:
    """What a "How many <things> ...?" question counts ("keys" of "How many keys does the keyring
    contain?"), "" for any other question."""
    match = _COUNT.match(question)
    return match.group("things").casefold() if match else ""


def counts(text: str, things: str) -> bool:
    """Whether a text gives a count of `things`: a number at most four words before them ("seven
    fields", "up to 64 7-bit ASCII lower-case characters", "9 fields"), joined to them ("32-character")
    or just after ("fields: 9");
    "versions 0.6 and later" counts no keys. People are counted by a population ("a population of
    9,984")."""
    words = _COUNTED_WORD.findall(_MAN_REFERENCE.sub(" ", text))
    counted = {stem(things), *((stem("population"),) if things in _PEOPLE else ())}
    # "a hexadecimal, 32-character, lowercase ID", "a 16-byte value": the count joined to its things.
    if any(
        _A_NUMBER.fullmatch(number) and stem(thing.casefold()) in counted
        for number, _, thing in (word.rpartition("-") for word in words if "-" in word)
    ):
        return True
    for position, word in enumerate(words):
        if stem(word.casefold()) not in counted:
            continue
        near = [*words[max(0, position - 4) : position], *words[position + 1 : position + 3]]
        if any(_A_NUMBER.fullmatch(other) for other in near):
            return True
    return False


def asks_for_place_or_option(question: str) -> str:
    """The kind of place or option a question asks for ("directory" of "In which directory does
    deluser put the backups?", "option" of "Which e2fsck option forces a check?", "place" of "Where
    is the master copy of /root/.bashrc kept?"), else ""."""
    match = _PLACE_OR_OPTION.match(question)
    if match is None:
        return "place" if _WHERE_KEPT.match(question) else ""
    return _KIND_WORD.get(match.group("kind").casefold(), match.group("kind").casefold())


def names_place_or_option(text: str, kind: str, asked: str = "") -> bool:
    """Whether a text names what `kind` asks for: a path or a file's name ("/var/backups",
    "debian-archive-removed-keys.gpg") for a directory, file or path, a command-line option ("-n",
    "--dry-run") for an option, flag or switch, or, but for a file or a path, the word for the kind
    ("the current directory", "default options: rw, suid, ..."; "This file is a simple text file"
    names no file). A directory is a path to no file with an extension ("/etc/deluser.conf" is the
    page's own file): "all files are backed up before they are removed" names no directory. A place
    is a path or a file's name the question `asked` does not give, not a web address."""
    words = {_KIND_WORD.get(word, word) for word in re.findall(r"[a-z]+", text.casefold())}
    if kind in ("option", "flag", "switch"):
        return bool(_OPTION.search(text)) or kind in words
    if kind in ("directory", "folder"):
        return any(_directory(path.rstrip(".,;:")) for path in _A_PATH.findall(text)) or kind in words
    if kind == "place":  # on the system asked about: a web address is where to read of it
        return any(place.group() not in asked for place in _PLACE.finditer(URL.sub(" ", text)))
    return bool(_PLACE.search(text))


def asks_for_program(question: str) -> str | None:
    """What a question asking which command, program, tool, utility, module or daemon does a thing
    asks it to do, stemmed ("list" of "Which dpkg command lists the conffiles of a package?"), ""
    when its form does not say ("Which command does adduser run ...?"); None when it asks no such
    thing."""
    match = _PROGRAM.match(question)
    if match is None:
        return None
    action = (match.group("action") or "").casefold()
    return "" if action in _AUXILIARIES or action in STOPWORDS else stem(action)


def program_names(text: str) -> list[str]:
    """The programs a text names by a form only a program's name takes: a man page's reference
    ("chsh(1)"), a name joined by "_" ("pam_motd"), a command given an option ("dpkg-query -L"), or
    a word before the kind ("the login program"); in order, lower-cased."""
    return [name.casefold() for match in _PROGRAM_NAME.finditer(text) for name in match.groups() if name]


def _directory(path: str) -> bool:
    """Whether a path may be a directory's: it ends in "/" or ".d", or its last name has no extension."""
    return path.endswith(("/", ".d")) or "." not in path.rsplit("/", 1)[-1].lstrip(".")


def asks_for_number(question: str) -> bool:
    """Whether the question's form asks for a quantity, a date or a version."""
    return bool(_QUANTITY.match(question))


def number_words(question: str) -> str:
    """The words with which a question asks for a number ("How long", "which version"), "" when it
    does not: a text stating the number answers them without repeating them."""
    match = _QUANTITY.match(question)
    return match.group().strip() if match else ""


def states_number(text: str, *, in_digits: bool = False) -> bool:
    """Whether a text states a number: digits not glued to a name ("ext4" is a name, "4.0BSD" and
    "64 characters" state numbers) or, unless `in_digits`, a number word ("one" is as often no
    number: "the first one"); a man page's "hostname(1)" states none."""
    stated = _MAN_REFERENCE.sub(" ", text)
    return bool((_DIGIT if in_digits else _NUMBER).search(stated))


_WHY = re.compile(
    r"^\s*(?:why\b|for\s+what\s+reasons?\b|what\s+is\s+the\s+reason\b|how\s+come\b)", re.IGNORECASE
)
# Words that give a reason or a purpose, and "to" before a verb rather than an article, a pronoun
# or whom a thing is given ("to find out if a user is a normal user"; not "corresponds to a 16-byte
# value", nor shells(5)'s "disallow access to users"). Measured: without "users" held-out's
# supporting precision falls 0.478 -> 0.466 (bench.answers, round 3's sixth session).
_REASON = re.compile(
    r"\b(?:because|since|so|thus|hence|therefore|reasons?|causes?|caused|due|order|purpose|intended|why)\b"
    # "as" giving a reason, not a manner: "as specified below", "as defined by", "as well", "as such"
    r"|\bas\b(?!\s+(?:well|such|follows|[a-z]+ed)\b)"
    r"|\bto\s+(?!(?:a|an|the|be|this|that|these|those|it|its|their|his|her|your|my|our|any|each|every|"
    r"all|some|no|one|other|such|users?)\b)[a-z]{2,}",
    re.IGNORECASE,
)
# The words on which an answer hinges: what is a default, or recommended, is a thing a text says.
_QUALIFIERS = frozenset({"default", "recommend"})


# A limit asked ("the maximum length", "at least how many", "take at most") and the words that say one
# of that side ("up to 64", "no more than", "a minimum of 10 minutes", "valid for at least three years").
_LIMIT_ASKED = re.compile(
    r"\b(?:(?P<maximum>maximum|at\s+most|upper\s+limit)|(?P<minimum>minimum|at\s+least|lower\s+limit))\b",
    re.IGNORECASE,
)
_LIMIT_SAID = {
    "maximum": re.compile(
        r"\b(?:maxim\w*|max|at\s+most|up\s+to|no\s+(?:more|longer|larger|greater)\s+than"
        r"|not\s+(?:be\s+)?(?:more|longer|larger|greater)\s+than|exceed\w*|limit(?:ed)?\s+to|upper\s+limit)\b",
        re.IGNORECASE,
    ),
    "minimum": re.compile(
        r"\b(?:minim\w*|min|at\s+least|no\s+(?:less|fewer|shorter|smaller)\s+than"
        r"|not\s+(?:be\s+)?(?:less|fewer|shorter|smaller)\s+than|lower\s+limit)\b",
        re.IGNORECASE,
    ),
}


def asks_for_limit(question: str) -> str:
    """The side of a limit a question asks for ("maximum", "minimum"), "" when it asks for none."""
    match = _LIMIT_ASKED.search(question)
    return "" if match is None else "maximum" if match.group("maximum") else "minimum"


def states_limit(text: str, side: str) -> bool:
    """Whether a text says a limit of that side: "composed of up to 64 ... characters" a maximum,
    "takes a minimum of 10 minutes" a minimum (and neither the other)."""
    return bool(_LIMIT_SAID[side].search(text))


_HOW = re.compile(
    r"^\s*how\s+(?:do|does|did|can|could|should|would|will|is|are|was|were|must|may)\b", re.IGNORECASE
)


def asks_for_manner(question: str) -> bool:
    """Whether the question asks how a thing is done ("How does NetworkManager choose ...?"), not how
    many or how long."""
    return bool(_HOW.match(question))


def asks_for_email(question: str) -> bool:
    """Whether a question asks for an e-mail address ("What is the e-mail address of the maintainer
    of debian-archive-keyring?"), which only a text giving one answers."""
    return bool(_EMAIL_ASKED.search(question))


def asks_for_reason(question: str) -> bool:
    """Whether the question asks why."""
    return bool(_WHY.match(question))


def states_reason(text: str) -> bool:
    """Whether a text gives a reason or a purpose ("as that's a file which is often customized by the
    user", "because it does Less", "to find out if a user is a normal user")."""
    return bool(_REASON.search(text))


def qualifiers(question_terms: list[str]) -> list[str]:
    """The qualifiers among a question's terms an answer must say: "default" ("Which hashing
    algorithm does /etc/shadow use by default?"), "recommend" ("What value is recommended ...?")."""
    return [term for term in dict.fromkeys(question_terms) if term in _QUALIFIERS]


# "Who ...?", and "Which company ...?", a body a name answers.
_WHO = re.compile(
    r"^\s*(?:(?:by|for|from|to|with)\s+)?(?:who|whom|whose|(?:which|what)\s+(?:company|companies|"
    r"organi[sz]ations?|corporations?|firms?|vendors?|foundations?|person|people|individuals?)\b)",
    re.IGNORECASE,
)
_CONTACT = re.compile(r"\b(?:e-?mail|contact|maintainers?|maintains?|maintained)\b", re.IGNORECASE)
# The parts a credit line gives someone, by the words that say them.
_ROLES = {
    "author": re.compile(
        r"\b(?:authors?|authored|wr(?:ote|itten|ites?|iters?)|creat(?:ed|or|ors)|develop(?:ed|er|ers))\b",
        re.I,
    ),
    "packager": re.compile(r"\b(?:packag(?:ed|er|ers|ing)|put together|debiani[sz]ed)\b", re.I),
    "maintainer": re.compile(r"\bmaintain(?:s|ed|er|ers|ing)?\b", re.I),
    "founder": re.compile(r"\b(?:co-?)?found(?:ed|er|ers|ing)\b", re.I),
    "contact": re.compile(r"\b(?:contact(?:ed|ing)?|bugs?|report(?:s|ed|ing)?|e-?mail)\b", re.I),
}
_CAPITALISED = re.compile(r"[A-Z][\w'’-]*[^\W\d_]")
_QUESTION_WORD = re.compile(r"[\w'’-]+")


def asks_for_credit(question: str) -> bool:
    """Whether the question asks who wrote, packaged, holds or answers for a thing, or how to reach
    them ("Who put together Debian's bash package?", "What is the e-mail address of the maintainer
    of debian-archive-keyring?"): a credit or contact line may answer it."""
    return asks_for_person(question) or bool(_CONTACT.search(question))


def credited_roles(text: str) -> set[str]:
    """The parts a text says someone has in a thing, its e-mail addresses aside: "packager" of "This
    package was put together by Matthias Klose <doko@debian.org>." and of "Who put together Debian's
    bash package?", "contact" of "please contact Ted Ts'o" and of "Whom should bugs be reported to?",
    "author" of "Who wrote the zlib library?" (which a packager's line does not answer)."""
    text = EMAIL.sub(" ", text)
    return {role for role, words in _ROLES.items() if words.search(text)}


def asks_for_person(question: str) -> bool:
    """Whether the question asks who (a person, a body): "Who ...?", "Which company ...?"."""
    return bool(_WHO.match(question))


def names_someone(text: str, question: str) -> bool:
    """Whether a text names someone or something the question does not: a capitalised word of two
    letters or more, not the first of the text ("Author: Philip A. Nelson", "Mozilla Foundation is
    the license steward."; not "GNU bc version 1.07:" for "Who is the author of GNU bc?")."""
    asked = {word.casefold() for word in _QUESTION_WORD.findall(question)}
    words = text.split()[1:]
    return any(
        (found := _CAPITALISED.match(word.strip("\"'“”‘’([{<"))) is not None
        and found.group().casefold() not in asked
        for word in words
    )
