"""Citations are checked, not trusted: quotes are looked up in the stored source text, and a report
may cite only the fact ids it was given.

Every citation-like token of a free text (`[F12]`, `[F 12]`, `[f12]`, `(F12)`, `[F12, verified]`,
full-width brackets and digits, several ids in one bracket) is normalised to the one spelling the
server writes, `[F12]` or `[F12, unverified]`, whatever the text claimed: an id outside the
citable ones is a forgery, removed and counted. Links in free text survive only when they point at
a source of the run. A quote verifies a fact only when it is a meaningful span that bears on the
statement: a quote of "the" verifies nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from research_mcp.core.ids import fact_label

__all__ = [
    "CITATION",
    "FIELD_LINE",
    "WRITTEN_CITATION",
    "CitationCheck",
    "CitationChecker",
    "QuoteLocator",
    "check_report_citations",
    "cited_in",
    "links_in",
    "locate_quote",
    "meaningful_quote",
    "normalize",
    "same_claim",
    "whole_field_line",
]

_TRANSLATE = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u2013": "-",
        "\u2014": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u00ad": "",
        "\u2039": "<",  # framing defuses runs of angle brackets into these (roles/framing.py)
        "\u203a": ">",
    }
)
_SPACE = re.compile(r"\s+")
CITATION = re.compile(r"\[F(\d+)\]")
# A citation as the server writes it, verified or not: what a checked text can contain.
WRITTEN_CITATION = re.compile(r"\[F(\d+)(?:, unverified)?\]")


def normalize(text: str) -> str:
    """NFKC, typographic quotes and dashes folded, whitespace collapsed, case folded."""
    return _SPACE.sub(" ", unicodedata.normalize("NFKC", text).translate(_TRANSLATE)).strip().casefold()


def _normalized_with_offsets(text: str) -> tuple[str, list[int]]:
    """The normalized text and, for each of its characters, the offset in `text` it came from."""
    chars: list[str] = []
    offsets: list[int] = []
    previous_space = True
    for index, char in enumerate(text):
        folded = unicodedata.normalize("NFKC", char).translate(_TRANSLATE).casefold()
        for piece in folded:
            if piece.isspace():
                if previous_space:
                    continue
                piece = " "
                previous_space = True
            else:
                previous_space = False
            chars.append(piece)
            offsets.append(index)
    return "".join(chars), offsets


class QuoteLocator:
    """Finds quotes in one source text: verbatim first, then after normalisation (computed once)."""

    def __init__(self, source_text: str) -> None:
        self.text = source_text
        self._normalized: tuple[str, list[int]] | None = None

    def find(self, quote: str) -> tuple[int, int] | None:
        """Character span of `quote` in the text, or None when it is not there."""
        exact = quote.strip()
        if len(exact) >= 3 and (at := self.text.find(exact)) >= 0:
            return at, at + len(exact)
        needle = normalize(quote).strip(" .\"'")
        if len(needle) < 3:
            return None
        if self._normalized is None:
            self._normalized = _normalized_with_offsets(self.text)
        haystack, offsets = self._normalized
        at = haystack.find(needle)
        if at < 0:
            return None
        return offsets[at], offsets[at + len(needle) - 1] + 1


#: A "Key: value" line ("License: curl", "Upstream-Name: GNU ed"), matched whole.
FIELD_LINE = re.compile(r"[A-Z][\w-]{1,30}:[ \t]+\S[^\n]*")


def whole_field_line(text: str, span: tuple[int, int]) -> bool:
    """Whether `span` of `text` is a whole "Key: value" line ("License: curl"), indentation aside."""
    start, end = span
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return (
        not text[line_start:start].strip()
        and not text[end : len(text) if line_end < 0 else line_end].strip()
        and FIELD_LINE.fullmatch(text[start:end].strip()) is not None
    )


def locate_quote(quote: str, source_text: str) -> tuple[int, int] | None:
    """Character span of `quote` in `source_text` after normalisation, or None when it is not there."""
    return QuoteLocator(source_text).find(quote)


# Content words: what makes a quote a claim. Function words alone ("the", "it is") quote nothing.
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "which",
        "who",
        "will",
        "with",
        "you",
        "your",
        "not",
        "no",
    ]
)
_WORD = re.compile(r"[^\W_]+")
MIN_QUOTE_WORDS = 3  # content words a quote needs before it can verify anything


def _content_words(text: str) -> list[str]:
    return [word for word in _WORD.findall(normalize(text)) if word not in _FUNCTION_WORDS]


def _stem(word: str) -> str:
    return word if word.isdigit() else word[:5]


def meaningful_quote(quote: str, statement: str, *, field: bool = False) -> bool:
    """A quote that can verify `statement`: at least MIN_QUOTE_WORDS content words (or a number; two
    for a `field`, a whole "Key: value" line of its source: a Debian copyright file's "License:
    curl"), and at least one of them (compared by its first five letters, so "grows" meets
    "growth") in the statement."""
    words = _content_words(quote)
    if len(words) < MIN_QUOTE_WORDS - field and not any(word.isdigit() for word in words):
        return False
    said = {_stem(word) for word in _content_words(statement)}
    return any(_stem(word) in said for word in words)


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*\+?")
_NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|without|cannot)\b|n't\b", re.IGNORECASE)


def same_claim(a: str, b: str) -> bool:
    """What similarity blurs: two statements claim the same only with the same numbers and negation;
    a number's "or later" is part of it ("License: GPL-2+" is not "License: GPL-2")."""

    def numbers(text: str) -> list[str]:
        return sorted(number.replace(",", "") for number in _NUMBER.findall(text))

    def negated(text: str) -> bool:
        return len(_NEGATION.findall(text)) % 2 == 1

    return numbers(a) == numbers(b) and negated(a) == negated(b)


# Brackets a citation may be written in: [ ( and their full-width and CJK look-alikes.
_OPEN = "\\[(\uff3b\uff08\u3010\u3014\u27e6"
_CLOSE = "\\])\uff3d\uff09\u3011\u3015\u27e7"
_ID = r"[Ff\uff26\uff46]\s*#?\s*[0-9\uff10-\uff19]+"
# One bracket holding fact ids and, after a separator, anything short ("[F2, verified]", "[F1, F2]").
CITATION_LIKE = re.compile(rf"[{_OPEN}]\s*{_ID}\s*(?:[,;:/&][^{_CLOSE}\n]{{0,60}})?[{_CLOSE}]")
_IDS = re.compile(r"[Ff]\s*#?\s*(\d+)")
_MARKDOWN_LINK = re.compile(
    r"!?\[([^\]\n]*)\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_URL = re.compile(r"\b(?:https?|ftp|file|javascript|data):[^\s<>()\[\]\"']+", re.IGNORECASE)
LINK_REMOVED = "(link removed)"


# Where a written address or name ends: a few marks of punctuation at most ("(see
# https://a.example/b)."), then a space, a quote, an angle bracket or the end of the text.
_REF_END = re.compile(r"[.,;:!?)\]}>'\"]{0,8}(?:[\s<>\"'`]|$)")


def cited_in(text: str, ref: str) -> bool:
    """Whether `text` itself gives `ref`, whole: the reference is written there, starting at a word
    boundary and ending where the written address or name ends.

    A model may pass on what a source cites, never compose a reference of its own: an address with
    the source's words in its query (``https://sink.example/?d=<salary>``) is in no text, and one a
    page writes cut short or lengthened is not the page's. Exact, case and all, since case can carry
    bits as well as letters can. Linear in the text: each place the reference is written is looked
    at a few characters either side."""
    ref = ref.strip()
    if not ref:
        return False
    at = text.find(ref)
    while at >= 0:
        before = text[at - 1] if at else " "
        if not (before.isalnum() or before in "/_-") and _REF_END.match(text, at + len(ref)):
            return True
        at = text.find(ref, at + 1)
    return False


def links_in(text: str) -> set[str]:
    """The addresses `text` writes: what a checker of text about it may keep."""
    return {match.group(0) for match in _URL.finditer(text)}


def _link_key(url: str) -> str:
    return url.strip().rstrip(".,;:!?").split("#", 1)[0].rstrip("/").casefold()


@dataclass
class CitationCheck:
    report: str
    made: int
    verified: int
    dropped: int
    cited: list[int]
    links_dropped: int = 0


class CitationChecker:
    """Checks the free texts of one output against the fact ids it may cite and the links it may keep.

    The counts add up over every text checked, so a forgery in a gap counts like one in the report.
    `links` None keeps every link (a text with no run behind it); a set keeps only those links.
    """

    def __init__(
        self, allowed: Collection[int], verified: Collection[int], links: Collection[str] | None
    ) -> None:
        self.allowed = set(allowed)
        self.verified = set(verified)
        self.links = None if links is None else {_link_key(link) for link in links}
        self.made = self.verified_count = self.dropped = self.links_dropped = 0
        self.cited: list[int] = []

    def _citation(self, match: re.Match[str]) -> str:
        written = []
        for raw in _IDS.findall(unicodedata.normalize("NFKC", match.group(0))):
            fact_id = int(raw)
            if fact_id not in self.allowed:
                self.dropped += 1
                continue
            self.made += 1
            if fact_id not in self.cited:
                self.cited.append(fact_id)
            if fact_id in self.verified:
                self.verified_count += 1
                written.append(f"[{fact_label(fact_id)}]")
            else:
                written.append(f"[{fact_label(fact_id)}, unverified]")
        return "".join(written)

    def _kept(self, url: str) -> bool:
        if self.links is None and not url.lower().startswith(("javascript:", "data:", "file:")):
            return True
        return self.links is not None and _link_key(url) in self.links

    def _markdown_link(self, match: re.Match[str]) -> str:
        image = match.group(0).startswith("!")  # a remote image loads when shown: never kept
        if not image and self._kept(match.group(2)):
            return match.group(0)
        self.links_dropped += 1
        text = match.group(1)
        return f"[{text}]" if CITATION_LIKE.fullmatch(f"[{text}]") else text

    def _url(self, match: re.Match[str]) -> str:
        if self._kept(match.group(0)):
            return match.group(0)
        self.links_dropped += 1
        return LINK_REMOVED

    def text(self, text: str) -> str:
        """`text` with every citation in the server's spelling, forgeries and foreign links removed."""
        text = _MARKDOWN_LINK.sub(self._markdown_link, text)
        text = _URL.sub(self._url, text)
        return CITATION_LIKE.sub(self._citation, text)

    def texts(self, texts: Sequence[str]) -> list[str]:
        return [self.text(text) for text in texts]

    def result(self, report: str) -> CitationCheck:
        return CitationCheck(
            report=report,
            made=self.made,
            verified=self.verified_count,
            dropped=self.dropped,
            cited=self.cited,
            links_dropped=self.links_dropped,
        )


def check_report_citations(
    report: str, allowed: Collection[int], verified: Collection[int], links: Collection[str] | None = None
) -> CitationCheck:
    """Citations of ids outside `allowed` removed, citations of unverified facts marked as such, every
    spelling normalised; with `links`, links to anything else removed."""
    checker = CitationChecker(allowed, verified, links)
    return checker.result(checker.text(report))
