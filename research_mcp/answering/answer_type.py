"""The kind of answer a question asks for, where a theme asks for a number (runs/gates.py).

A question asking how many, how long, when or which version is answered by a text stating a number:
general question forms of English, naming no product or corpus.
"""

from __future__ import annotations

import re

__all__ = ["number_words", "states_number"]

_QUANTITY = re.compile(
    r"^\s*(?:how\s+(?:many|much|long|old|often|big|large|far|soon|fast)\b"
    r"|when\b|since\s+when\b"
    r"|(?:what|which|since\s+which|in\s+which|from\s+which)\s+(?:year|years|date|version|release|number|port|age|size)\b"
    # one word may name what the number is of: "Which TCP port ...?" (not "Which distribution release ...?",
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
_MAN_REFERENCE = re.compile(r"[\w.:-]+\(\d[a-z]*\)")


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
