"""Ranking corpus documents: query words, FTS5 MATCH expressions, title links and rank fusion.

The retrievers themselves (BM25 over FTS5, vector search) are ``Corpus`` methods in ``corpus.py``;
this module holds what turns their rankings into one.

Up to three rankings of documents, fused by reciprocal rank fusion (RRF),
``score = sum 1 / (60 + rank)`` (Cormack, Clarke and Büttcher, SIGIR 2009):

1. BM25 over the FTS5 index of chunk text and document title (title weighted 2). The MATCH
   expression is the query's word tokens, stopwords dropped, each quoted and OR-ed, so no user
   punctuation can be read as FTS5 syntax.
2. Cosine similarity of MiniLM vectors in the knowledge index's ``chunks`` collection (each
   chunk embedded with its document's title in front, the context a chunk cut from the middle
   of a document lacks).
3. Title links: the documents whose title (less a trailing "(...)" disambiguator) the query
   names, then those named in the best passages of the top 3 documents of the fusion of 1 and 2.
   It follows references the way a reader does: a passage that answers part of a question often
   names the document that answers the rest (multi-hop questions; notes that refer to other
   notes by title). It needs no model call and no labelled data.

Chunk rankings become document rankings by each document's best chunk. RRF rather than a weighted
sum of scores because the scores live on unrelated scales: bm25 is unbounded and shifts with query
length and corpus statistics, cosine similarity is bunched in a narrow band that depends on the
model, and title links have no score at all; a weighted sum needs per-query normalisation and
weights fitted to labelled data, which a user's corpus does not have. RRF uses ranks only, has one
constant whose published default is robust, and rewards documents that several signals place high.
Without a vector index, rankings 1 and 3 are fused. `bench/retrieval.py` measures each part.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import PurePosixPath
from typing import TypeVar

from research_mcp.sources.folders import document_name

__all__ = [
    "STOPWORDS",
    "WORD",
    "Fusion",
    "Page",
    "TitleIndex",
    "best_per_document",
    "fts_query",
    "one_per_page",
    "page_of",
    "query_words",
    "snippet",
]

T = TypeVar("T")
#: A page whatever its format: (folder, directory, the name without its format's suffix).
Page = tuple[str, str, str]

#: The RRF constant of Cormack et al. (2009); it damps the weight of the very top ranks.
RRF_K = 60
#: Titles of more words than this are not names and are not looked for in texts.
MAX_NAME_WORDS = 12
SNIPPET_CHARS = 300

# A common English stopword list (after NLTK's), question words included.
_STOPWORD_LIST = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())

WORD = re.compile(r"[^\W_]+")
_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)\s*$")


def query_words(query: str) -> list[str]:
    """The query's distinct word tokens, lower-cased, stopwords dropped (kept if nothing else is left)."""
    words = list(dict.fromkeys(w.lower() for w in WORD.findall(query)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:64]


def fts_query(query: str) -> str | None:
    """An FTS5 MATCH expression: the query's words, each quoted, OR-ed; None when there are none.

    Tokens are letters and digits only, so the quotes can hold nothing FTS5 would parse.
    """
    words = query_words(query)
    return " OR ".join(f'"{word}"' for word in words) if words else None


class Fusion:
    """Reciprocal rank fusion of document rankings ``[(doc_id, chunk_id or None)]``."""

    def __init__(self, rankings: Sequence[Sequence[tuple[int, int | None]]]) -> None:
        self.score: dict[int, float] = {}
        self.chunk: dict[int, int | None] = {}  # the chunk of the document's best-ranked passage
        top: dict[int, int] = {}
        for ranking in rankings:
            for rank, (doc_id, chunk_id) in enumerate(ranking, start=1):
                self.score[doc_id] = self.score.get(doc_id, 0.0) + 1.0 / (RRF_K + rank)
                if chunk_id is not None and (self.chunk.get(doc_id) is None or rank < top[doc_id]):
                    self.chunk[doc_id] = chunk_id
                self.chunk.setdefault(doc_id, None)
                top[doc_id] = min(top.get(doc_id, rank), rank)
        self.order = sorted(self.score, key=lambda d: (-self.score[d], top[d], d))


class TitleIndex:
    """Document titles as word sequences, to find the documents a text names.

    A title's trailing parenthetical ("Ed Wood (film)") is a disambiguator, not part of the name.
    Titles of stopwords only, or under three characters, name nothing. Where names overlap the
    longest wins ("Esma Sultan Mansion", not "Esma Sultan"); a name shared by several documents
    lists the one titled exactly so first.
    """

    def __init__(self, titles: Iterator[tuple[int, str]]) -> None:
        self._exact: dict[tuple[str, ...], list[int]] = {}
        self._folded: dict[tuple[str, ...], list[int]] = {}
        self._longest = 0
        entries = []
        for doc_id, title in titles:
            name = _DISAMBIGUATOR.sub("", title).strip()
            words = tuple(WORD.findall(name))
            folded = tuple(w.lower() for w in words)
            if not words or len(words) > MAX_NAME_WORDS or len("".join(words)) < 3:
                continue
            if all(w in STOPWORDS for w in folded):
                continue
            entries.append((name != title, doc_id, words, folded))
            self._longest = max(self._longest, len(words))
        for _, doc_id, words, folded in sorted(entries):
            self._exact.setdefault(words, []).append(doc_id)
            self._folded.setdefault(folded, []).append(doc_id)

    def named_in(self, text: str, *, ignore_case: bool) -> list[int]:
        """Documents whose names occur in ``text``, in order of first mention."""
        words = [w.lower() for w in WORD.findall(text)] if ignore_case else WORD.findall(text)
        table = self._folded if ignore_case else self._exact
        found: list[int] = []
        i = 0
        while i < len(words):
            for n in range(min(self._longest, len(words) - i), 0, -1):
                docs = table.get(tuple(words[i : i + n]))
                if docs:
                    found.extend(docs)
                    i += n
                    break
            else:
                i += 1
        return list(dict.fromkeys(found))


def best_per_document(chunks: Iterator[tuple[int, int]]) -> list[tuple[int, int]]:
    """Reduce a ranked list of ``(doc_id, chunk_id)`` to each document's first (best) chunk."""
    seen: dict[int, int] = {}
    for doc_id, chunk_id in chunks:
        seen.setdefault(doc_id, chunk_id)
    return list(seen.items())


def snippet(text: str, words: Sequence[str]) -> str:
    """About SNIPPET_CHARS of ``text`` around the first query word it contains."""
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    lowered = flat.lower()
    found = [i for i in (lowered.find(w) for w in words) if i >= 0]
    start = max(0, min(found) - SNIPPET_CHARS // 3) if found else 0
    if start:
        space = flat.find(" ", start)
        start = space + 1 if 0 <= space < start + 40 else start
    end = min(len(flat), start + SNIPPET_CHARS)
    if end < len(flat):
        space = flat.rfind(" ", start, end)
        end = space if space > start + SNIPPET_CHARS // 2 else end
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def page_of(root: str, path: str) -> Page | None:
    """The page a document is, whatever its format: documents of one folder named alike but for
    their format (``git-reset.txt`` and ``git-reset.html``, ``guide.md`` and ``guide.rst``) are one
    page. None for a document named without a document suffix (``README``, ``fstab.5.gz``): it is
    its own page."""
    named = document_name(PurePosixPath(path).name)
    if named is None or not named.kind:
        return None
    return (root, str(PurePosixPath(path).parent), named.title)


def one_per_page(
    items: Sequence[T], page: Callable[[T], Page | None], seen: Iterable[Page | None] = ()
) -> list[T]:
    """`items` with each page kept once (`page_of`; None: an item that is its own page), the first
    standing for its other formats, and none of the pages `seen` already."""
    taken = {known for known in seen if known is not None}
    kept: list[T] = []
    for item in items:
        found = page(item)
        if found is not None:
            if found in taken:
                continue
            taken.add(found)
        kept.append(item)
    return kept
