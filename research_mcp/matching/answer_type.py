"""What kind of answer a question asks for, read off its form: a quantity or a date ("How long ...?",
"How many ...?", "When ...?", "Which version ...?") is answered only by a text that states a number.

Classic extractive question answering's answer-type check, kept to the forms whose type is plain.
"""

from __future__ import annotations

import re

__all__ = ["asks_for_number", "number_words", "states_number"]

_QUANTITY = re.compile(
    r"^\s*(?:how\s+(?:many|much|long|old|often|big|large|far|soon|fast)\b"
    r"|when\b|since\s+when\b"
    r"|(?:what|which|since\s+which|in\s+which|from\s+which)\s+(?:year|years|date|version|release|number|port|age|size)\b)",
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![A-Za-z])\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"forty|fifty|sixty|hundred|thousand|million|billion|dozen|once|twice)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"(?<![A-Za-z])\d")
# A man page's reference to another ("hostname(1)", "systemd-firstboot(1)") names a section, not a number.
_MAN_REFERENCE = re.compile(r"[\w.:-]+\(\d[a-z]*\)")


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
