"""Citations are checked, not trusted: quotes are looked up in the stored source text, and a report
may cite only the fact ids it was given."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["CitationCheck", "QuoteLocator", "check_report_citations", "locate_quote", "normalize"]

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


def locate_quote(quote: str, source_text: str) -> tuple[int, int] | None:
    """Character span of `quote` in `source_text` after normalisation, or None when it is not there."""
    return QuoteLocator(source_text).find(quote)


@dataclass
class CitationCheck:
    report: str
    made: int
    verified: int
    dropped: int
    cited: list[int]


def check_report_citations(report: str, allowed: set[int], verified: set[int]) -> CitationCheck:
    """Remove citations of ids outside `allowed`; mark citations of unverified facts as such."""
    made = dropped = verified_count = 0
    cited: list[int] = []

    def replace(match: re.Match[str]) -> str:
        nonlocal made, dropped, verified_count
        fact_id = int(match.group(1))
        if fact_id not in allowed:
            dropped += 1
            return ""
        made += 1
        if fact_id not in cited:
            cited.append(fact_id)
        if fact_id in verified:
            verified_count += 1
            return match.group(0)
        return f"[F{fact_id}, unverified]"

    checked = CITATION.sub(replace, report)
    return CitationCheck(report=checked, made=made, verified=verified_count, dropped=dropped, cited=cited)
