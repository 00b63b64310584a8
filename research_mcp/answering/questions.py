"""Whether a text reads as a question a person would ask ("What does zlib's licence require?"),
not as a search's working words ("GPL: GPL-3 say", "README: handle")."""

from __future__ import annotations

import re

__all__ = ["QUESTION_OPENERS", "reads_as_question"]

QUESTION_OPENERS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "has",
        "have",
        "had",
    ]
)
_WORD = re.compile(r"[^\W_][\w'’-]*")
#: Words a question needs: an opener, a verb or subject, and what it asks about.
MIN_WORDS = 3


def reads_as_question(text: str) -> bool:
    """A question mark at the end, an interrogative or auxiliary first, and at least MIN_WORDS words;
    no "name: words" label before it."""
    text = text.strip()
    words = _WORD.findall(text)
    if not text.endswith("?") or len(words) < MIN_WORDS:
        return False
    head = text.split("?", 1)[0]
    if re.match(r"^[^\s:]{1,40}:\s", head):
        return False
    return words[0].casefold() in QUESTION_OPENERS
