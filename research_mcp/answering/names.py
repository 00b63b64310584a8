"""Names in text without a model: runs of capitalised words and quoted titles.

The second hop (runs/leads.py) follows the names its first facts give; the extractor uses them to
tell what a sentence that opens with "she" or "the band" is about (references.py).
"""

from __future__ import annotations

import re

from research_mcp.answering.terms import STOPWORDS

__all__ = ["NOT_NAMES", "WORD_TOKEN", "name_spans", "named_entities"]

#: Words that join the capitalised words of one name ("Bank of America", "Leonardo da Vinci").
_JOINERS = frozenset(
    {"of", "the", "and", "de", "da", "del", "der", "di", "du", "la", "le", "van", "von", "y", "&"}
)
WORD_TOKEN = re.compile(r"[^\W_](?:[\w'’.\-]*[^\W_])?|&", re.UNICODE)
_QUOTED = re.compile(r"[\"“]([^\"“”]{3,80})[\"”]")
MAX_NAME_WORDS = 8
#: Capitalised words that name no thing to look up on their own.
NOT_NAMES = frozenset(
    {"january", "february", "march", "april", "may", "june", "july", "august", "september", "october"}
    | {"november", "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
)
_SENTENCE_START = re.compile(r"(?:^|[.!?][\"”’)\]]?)\s*$")


def name_spans(text: str) -> list[tuple[str, int, int]]:
    """The names in a text with their character spans, in order: runs of capitalised words (joined
    by "of", "de", "&"..., broken by any punctuation), and quoted titles. A sentence's first word is
    capitalised whatever it is: a common word opening a run is dropped from it ("The Hague" keeps
    "Hague"), and a lone word opening a sentence is not taken for a name ("However", "Founded")."""
    spans = [(m.group(1).strip(), m.start(1), m.end(1)) for m in _QUOTED.finditer(text)]
    run: list[re.Match[str]] = []

    def close() -> None:
        while run and run[-1].group().casefold() in _JOINERS:
            run.pop()
        opens = bool(run) and _SENTENCE_START.search(text[: run[0].start()]) is not None
        if opens and run[0].group().casefold() in STOPWORDS:
            del run[0]
            while run and run[0].group().casefold() in _JOINERS:
                del run[0]
        elif opens and len(run) == 1:
            run.clear()
        if run and len(run) <= MAX_NAME_WORDS:
            name = text[run[0].start() : run[-1].end()].rstrip(".")
            spans.append((name, run[0].start(), run[0].start() + len(name)))
        run.clear()

    for match in WORD_TOKEN.finditer(text):
        word = match.group()
        if run and text[run[-1].end() : match.start()].strip():
            close()  # punctuation between two words ends a name: "Muncie, Indiana", "Paris. The"
        if word[:1].isupper() or (run and word.casefold() in _JOINERS):
            run.append(match)
            if word.endswith(".") and len(word) > 2 and not word[-2].isupper():
                close()  # "... in Paris. The": a sentence ends, and the name with it
        else:
            close()
    close()
    return sorted(spans, key=lambda span: span[1])


def named_entities(text: str) -> list[str]:
    """The distinct names in a text, in order (see `name_spans`)."""
    return list(dict.fromkeys(name for name, _, _ in name_spans(text)))
