"""The subject a later part of a split question needs back when it names only the first part's kind of
thing: "Which fields does an fstab line have?" then "What does the sixth field do?" asks "What does
the sixth field of an fstab line do?"."""

from __future__ import annotations

import re

from research_mcp.matching.terms import same_term, stem, terms

__all__ = ["LEADING_PREPOSITION", "PROGRAM_KINDS", "asked_subject", "led_subject", "of_subject"]

_AUXILIARY = r"(?:do|does|did|can|could|will|would|should|must|may)"
_BE = r"(?:is|are|was|were)"
_PREPOSITION = r"(?:under|about|for|in|on|from|of|with|by|at)"
# "Which fields does an fstab line have?": fields of an fstab line.
_DOES = re.compile(
    rf"^(?:what|which)\s+(?P<kind>[\w'’-]+)\s+{_AUXILIARY}\s+(?P<subject>.+?)\s+[\w'’-]+\s*\??$",
    re.IGNORECASE,
)
# "What licence is zlib under?": the licence of zlib.
_IS = re.compile(
    rf"^(?:what|which)\s+(?P<kind>[\w'’-]+)\s+{_BE}\s+(?P<subject>.+?)(?:\s+{_PREPOSITION})?\s*\??$",
    re.IGNORECASE,
)
# "What does the first field of an fstab line describe?": fields of an fstab line.
_OF_DOES = re.compile(
    rf"^(?:what|which|how|why|when|where|who)\s+{_AUXILIARY}\s+(?:the\s+|an?\s+)?(?:[\w'’-]+\s+)?"
    r"(?P<kind>[\w'’-]+)\s+of\s+(?P<subject>.+?)\s+[\w'’-]+\s*\??$",
    re.IGNORECASE,
)
# "What is the first field of an fstab line?": fields of an fstab line.
_OF_IS = re.compile(
    rf"^(?:what|which|who)\s+{_BE}\s+(?:the\s+|an?\s+)?(?:[\w'’-]+\s+)?"
    r"(?P<kind>[\w'’-]+)\s+of\s+(?P<subject>.+?)\s*\??$",
    re.IGNORECASE,
)
# "What causes the race condition between the netbase and procps startup scripts?": the race condition.
_CAUSES = re.compile(
    rf"^(?:what|who)\s+(?!(?:{_AUXILIARY}|{_BE}|has)\b)[a-z]+s\s+(?P<subject>(?:the|an?)\s+[^?]+?)\s*\??$",
    re.IGNORECASE,
)
#: The kinds of software a name is of, said after it ("the adduser package", "the bash command"):
#: one vocabulary for the question forms that read a name with its kind.
PROGRAM_KINDS = r"(?:packages?|commands?|programs?|utility|utilities|tools?|daemons?|services?|modules?)"
#: A preposition that may lead a question: "Under which licence ...?", "Since which version ...?".
LEADING_PREPOSITION = rf"(?:{_PREPOSITION}|since|to)"
# "Under which licence is bzip2 distributed?", "On which operating system does fakeroot only work ...?":
# the subject after the auxiliary, a name (with the kind it is of: "the adduser package").
# A name, perhaps capitalized words before it and the kind it is of after: "adduser", "the MySQL
# server", "the adduser package".
_NAMED = (
    r"(?P<subject>(?:the\s+)?(?:(?-i:[A-Z])[\w'’-]*\s+)?[\w.+/'’-]+"
    rf"(?:\s+(?:{PROGRAM_KINDS}|library|file|suite|servers?|users?|groups?))?)\s"
)
_LED = re.compile(
    rf"^{LEADING_PREPOSITION}\s+(?:which|what|whose)\s+[\w'’-]+(?:\s+[\w'’-]+)?\s+(?:{_AUXILIARY}|{_BE})\s+"
    + _NAMED,
    re.IGNORECASE,
)
# "Which directory does adduser copy skeleton files from?": its verb is not its last word, and its
# subject ends where the name does.
_STRANDED = re.compile(
    rf"^(?:what|which)\s+[\w'’-]+\s+{_AUXILIARY}\s+{_NAMED}.*\s(?:{_PREPOSITION}|to|into)\s*\??$",
    re.IGNORECASE,
)
_ARTICLE_OR_VERB = re.compile(rf"(?:the|an?|{_AUXILIARY}|{_BE}|has|have|had|not|only|also)", re.IGNORECASE)
# A noun phrase's head before what follows it ("the race condition" of "the race condition between ...").
_POST_MODIFIER = re.compile(r"\s+(?:between|of|in|on|for|with|from|to|at|by|under|about|that|which)\s", re.I)
_WORD = re.compile(r"[\w'’-]+")
_VERB = re.compile(rf"{_AUXILIARY}|{_BE}|has|have|had", re.IGNORECASE)
#: A longer subject is a clause, not a name to carry.
MAX_SUBJECT_WORDS = 6


def asked_subject(question: str) -> str | None:
    """What a "Which <kind> <aux> <subject> <verb>?" question asks about ("Which characters may host
    names in /etc/hosts contain?": "host names in /etc/hosts"; "adduser" of "Which directory does
    adduser copy skeleton files from?", its verb before a preposition), or a "What <verb>s <subject>?" one
    ("What causes the race condition between the netbase and procps startup scripts?": "the race
    condition"), for a later part's pronoun; None when the question has another form or the subject
    is a clause."""
    match = _STRANDED.match(question.strip()) or _DOES.match(question.strip())
    if match:
        subject = match.group("subject").strip()
        return subject if len(subject.split()) <= MAX_SUBJECT_WORDS else None
    # "What causes <subject>?": a long subject is carried by its head ("the race condition").
    match = _CAUSES.match(question.strip())
    if not match:
        return None
    subject = match.group("subject").strip()
    if len(subject.split()) > MAX_SUBJECT_WORDS:
        subject = _POST_MODIFIER.split(subject, maxsplit=1)[0]
    return subject if len(subject.split()) <= MAX_SUBJECT_WORDS else None


def led_subject(question: str) -> str | None:
    """What a question led by a preposition asks about: "bzip2" of "Under which licence is bzip2
    distributed?", "fakeroot" of "On which operating system does fakeroot only work ...?"; None when
    it has another form."""
    match = _LED.match(question.strip())
    if match is None:
        return None
    subject = match.group("subject").strip()
    return None if _ARTICLE_OR_VERB.fullmatch(subject.split()[-1]) else subject


def of_subject(part: str, first: str) -> str:
    """`part` with "of <subject>" after the word naming the first question's kind of thing, when
    `part` names that kind but not the subject; else `part` unchanged."""
    first = first.strip()
    match = _OF_DOES.match(first) or _OF_IS.match(first) or _DOES.match(first) or _IS.match(first)
    if not match:
        return part
    subject = match.group("subject").strip()
    subject_terms = terms(subject)
    if not subject_terms or len(subject.split()) > MAX_SUBJECT_WORDS:
        return part
    said = terms(part)
    if any(same_term(term, other) for term in subject_terms for other in said):
        return part
    kind = stem(match.group("kind").casefold())
    words = list(_WORD.finditer(part))
    for position, word in enumerate(words):
        # The kind word heads its phrase: the next word is a verb ("the fourth field hold?", "field
        # does"), not another noun ("preamble paragraph").
        after = words[position + 1].group(0) if position + 1 < len(words) else ""
        heads = not after or position + 2 == len(words) or _VERB.fullmatch(after)
        if stem(word.group(0).casefold()) == kind and heads:
            return f"{part[: word.end()]} of {subject}{part[word.end() :]}"
    return part
