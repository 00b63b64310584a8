"""The closed-class words English questions open with, and whether a text reads as a question a
person would ask ("What does the library's licence require?"), not as a search's working words
("config: defaults say", "setup: handle")."""

from __future__ import annotations

import re

__all__ = ["AUXILIARIES", "BE", "DO", "QUESTION_OPENERS", "WH_WORDS", "reads_as_question"]

WH_WORDS = ("what", "which", "who", "whom", "whose", "how", "why", "when", "where", "whether")
BE = ("is", "are", "was", "were")
DO = ("do", "does", "did")
MODAL = ("can", "could", "should", "would", "will", "shall", "may", "might", "must", "has", "have", "had")
AUXILIARIES = (*BE, *DO, *MODAL)
QUESTION_OPENERS = frozenset(WH_WORDS[:-1] + AUXILIARIES)
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
    if re.match(r"^[^\s:]{1,40}:\s", text.split("?", 1)[0]):
        return False
    return words[0].casefold() in QUESTION_OPENERS
