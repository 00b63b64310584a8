"""Which sources are the same document: copies count once.

Two texts are one document when

- their normalised word sequences are identical (a byte-identical copy, or the same text with
  other spacing, case or punctuation), or
- their word 5-shingles resemble each other almost wholly (`NEAR_IDENTICAL`: a copy with a line
  changed), or
- they share a stem (``git-reset.txt`` and ``git-reset.html``, ``/docs/intro`` and ``intro.pdf``)
  and still resemble each other mostly (`SAME_STEM`): the same page in two formats, where markup
  words (``linkgit``, a rendered table of contents) make the word sequences differ a little; or
  the shorter is held almost whole in the other (`CONTAINED`: a page's source whose ``include::``
  directives the rendered page fills in).

Texts of fewer than `MIN_SHINGLES` shingles are copies only when identical. Resemblance is the
Jaccard index of the two texts' shingle sets, estimated from a bottom-k sketch
of their 64-bit hashes (MinHash-style; exact for texts of fewer than `SKETCH` shingles). Measured
on Debian's licence and git documentation: ``GPL`` and ``GPL-3`` 1.00, ``git-reset.txt`` and
``git-reset.html`` 0.85, ``git-commit.txt`` and its HTML 0.70, while two versions of one licence
(``GFDL-1.2`` and ``GFDL-1.3``: 0.85, ``LGPL-2`` and ``LGPL-2.1``: 0.72) have stems of their own
and stay two documents, as do unrelated pages (``git-reset`` and ``git-revert``: 0.00).

Used by the knowledge base (a fact's corroborations count independent sources only), by the
confidence code (two sources backing an answer are two only when they are not copies) and by the
scout (copies are listed as one cluster).
"""

from __future__ import annotations

import hashlib
import heapq
import re
import unicodedata
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "CONTAINED",
    "MIN_SHINGLES",
    "NEAR_IDENTICAL",
    "SAME_STEM",
    "Fingerprint",
    "containment",
    "copy_clusters",
    "fingerprint",
    "independent_count",
    "representatives",
    "resemblance",
    "same_document",
    "stem_of",
]

#: Resemblance at or above which two texts are one document whatever their names.
NEAR_IDENTICAL = 0.9
#: Resemblance at or above which two texts sharing a stem are one document in two formats; or
#: the share of the shorter one the other holds (a page's source without the parts it includes).
SAME_STEM = 0.5
CONTAINED = 0.8
#: Shingles both texts need before resemblance can make them one: shorter texts are copies only
#: when their words are identical.
MIN_SHINGLES = 50
#: Words per shingle, and the hashes a fingerprint keeps (the smallest ones).
SHINGLE = 5
SKETCH = 1024

_WORD = re.compile(r"\w+")
_SUFFIX = re.compile(r"\.[a-z0-9]{1,5}$")

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Fingerprint:
    """What decides whether two texts are the same document: the digest of their normalised words,
    a bottom-k sketch of their shingle hashes (sorted), how many shingles there were, and the stem
    of the name they came under ("" when none)."""

    digest: str
    sketch: tuple[int, ...]
    shingles: int
    stem: str = ""

    @property
    def empty(self) -> bool:
        return not self.sketch


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def stem_of(name: str) -> str:
    """A name's stem: its last path segment (of a path or an address) without its format and
    compression suffixes, casefolded: ``docs/git-reset.html`` and ``git-reset.txt.gz`` give
    ``git-reset``. A suffix of digits is a version, not a format, and stays (``GPL-2.0``)."""
    last = name.strip().split("?")[0].split("#")[0].rstrip("/").rsplit("/", 1)[-1].casefold()
    for _ in range(2):  # "page.txt.gz": the compression suffix, then the format's
        suffix = _SUFFIX.search(last)
        if suffix is None or suffix.group().strip(".").isdigit() or suffix.start() == 0:
            break
        last = last[: suffix.start()]
    return last


def fingerprint(text: str, name: str = "") -> Fingerprint:
    """A text's fingerprint; `name` (a path or an address) gives the stem used as a hint."""
    words = _words(text)
    digest = hashlib.sha256(" ".join(words).encode()).hexdigest()
    hashes = {
        int.from_bytes(hashlib.blake2b(" ".join(words[i : i + SHINGLE]).encode(), digest_size=8).digest())
        for i in range(max(1, len(words) - SHINGLE + 1))
        if words
    }
    return Fingerprint(digest, tuple(sorted(heapq.nsmallest(SKETCH, hashes))), len(hashes), stem_of(name))


def resemblance(a: Fingerprint, b: Fingerprint) -> float:
    """The estimated Jaccard index of two texts' shingle sets, 0..1 (0 when either is empty)."""
    if a.empty or b.empty:
        return 0.0
    if a.digest == b.digest:
        return 1.0
    first, second = set(a.sketch), set(b.sketch)
    union = heapq.nsmallest(SKETCH, first | second)
    return sum(1 for value in union if value in first and value in second) / len(union)


def same_document(a: Fingerprint, b: Fingerprint) -> bool:
    """Whether two texts are copies of one document (see the module's docstring)."""
    if a.empty or b.empty:
        return False
    if a.digest == b.digest:
        return True
    if min(a.shingles, b.shingles) < MIN_SHINGLES:
        return False  # a few lines: one word more is another text
    similar = resemblance(a, b)
    if similar >= NEAR_IDENTICAL:
        return True
    return bool(a.stem) and a.stem == b.stem and (similar >= SAME_STEM or containment(a, b) >= CONTAINED)


def containment(a: Fingerprint, b: Fingerprint) -> float:
    """How much of the shorter text's shingles the other holds, 0..1, from the resemblance and the
    two sizes (|A∩B| = J·(|A|+|B|)/(1+J)): a page's source whose included parts the rendered page
    adds resembles it little but is held in it whole."""
    similar = resemblance(a, b)
    shared = similar * (a.shingles + b.shingles) / (1 + similar)
    return min(1.0, shared / max(1, min(a.shingles, b.shingles)))


def copy_clusters(items: Iterable[tuple[K, Fingerprint]]) -> list[list[K]]:
    """The items grouped by document, in the order given: each cluster starts with its first item
    (the one to keep), and an item joins the first cluster whose first item it copies."""
    clusters: list[tuple[Fingerprint, list[K]]] = []
    for key, print_ in items:
        home = next((members for first, members in clusters if same_document(first, print_)), None)
        if home is None:
            clusters.append((print_, [key]))
        else:
            home.append(key)
    return [members for _, members in clusters]


def representatives(items: Iterable[tuple[K, Fingerprint]]) -> dict[K, K]:
    """Each item's cluster's first item (itself when it copies nothing before it)."""
    return {key: members[0] for members in copy_clusters(items) for key in members}


def independent_count(keys: Sequence[K] | set[K], representative: Mapping[K, K]) -> int:
    """How many independent documents these keys stand for: copies count once (a key missing from
    `representative` stands for itself)."""
    return len({representative.get(key, key) for key in keys})
