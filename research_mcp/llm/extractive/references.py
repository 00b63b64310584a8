"""What a sentence that refers back is about, so that it can be scored as what it says.

"As an adult, she was named ambassador to Ghana" says nothing, in its own words, of the Shirley
Temple the sentence before it names; a question about Shirley Temple shares no word with it, and
neither would a search. A writer names a thing once and then refers back to it: with a pronoun
("she", "it", "their") or a definite description ("the band", "this film"), at the opening of the
sentence or after a short opening phrase ("In 2013, the group ..."). Such a sentence is scored with
the name it refers back to: the first name of the nearest sentence before it, in the same
paragraph, that does not itself refer back (names.py). Nothing else is resolved: a pronoun deeper in
a sentence may point anywhere, and a sentence that names its subject needs no help.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from research_mcp.llm.extractive.sentences import Sentence
from research_mcp.matching.names import name_spans

__all__ = ["referents", "refers_back", "resolved_texts"]

_PRONOUN = r"(?:he|she|it|they|his|her|its|their|him|them)"
_DESCRIPTION = r"(?:the|this|these|that|those)\s+[a-z][\w\-]*"
#: An opening phrase of at most six words before the comma: "As an adult,", "In March 2013,".
_OPENING = r"(?:[A-Z][\w\-]*(?:\s+[\w\-]+){0,5},\s+)?"
_REFERS_BACK = re.compile(rf"^[\"“(]?{_OPENING}(?:{_PRONOUN}|{_DESCRIPTION})\b", re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def refers_back(sentence: str) -> bool:
    """Whether the sentence opens by referring back to something named before it."""
    match = _REFERS_BACK.match(sentence)
    if match is None:
        return False
    # "The Hague is ...", "This Is Spinal Tap": a capitalised word after "the" is a name, not a
    # description (the pattern ignores case, so check the word itself).
    last = match.group().split()[-1]
    opener = match.group().split()[-2].casefold() if len(match.group().split()) > 1 else ""
    return not (opener in {"the", "this", "these", "that", "those"} and last[:1].isupper())


def resolved_texts(text: str, sentences: Sequence[Sentence]) -> list[str]:
    """Each sentence's text, prefixed ("Shirley Temple Black: As an adult, she ...") with the name
    it refers back to where it does."""
    return [
        f"{name}: {sentence.text}" if name else sentence.text
        for sentence, (name, _) in zip(sentences, referents(text, sentences), strict=True)
    ]


def referents(text: str, sentences: Sequence[Sentence]) -> list[tuple[str, int | None]]:
    """Each sentence's referent: the name it refers back to and the position of the sentence that
    names it ("It augments or replaces the /etc/hosts file": "Berkeley Internet Name Domain" of "The
    Berkeley Internet Name Domain (BIND) Server implements ..."), or ("", None)."""
    found: list[tuple[str, int | None]] = []
    subject, named_at = "", None
    previous_end: int | None = None
    for position, sentence in enumerate(sentences):
        if sentence.heading or (
            previous_end is not None and _PARAGRAPH_BREAK.search(text[previous_end : sentence.start])
        ):
            subject, named_at = "", None
        previous_end = sentence.end
        if sentence.heading:
            found.append(("", None))
            continue
        if refers_back(sentence.text):
            found.append((subject, named_at) if subject else ("", None))
            continue
        names = name_spans(sentence.text)
        if names:
            subject, named_at = names[0][0], position
        found.append(("", None))
    return found
