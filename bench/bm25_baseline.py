"""The plain baseline beside every figure of ``bench.answer_table``: BM25 over ~1,000-character chunks.

A corpus folder's documents are read as the server reads them (``read_document``: HTML and PDF by
``extract_text``, a man page's roff rendered, gzip opened) but in this process, then cut into
chunks on paragraph boundaries: paragraphs are packed greedily while the chunk stays within 1,000
characters, and a paragraph longer than that is cut at the last space before each 1,000th
character. Tokens are lower-cased runs of word characters; no stemming, no stopword list. Scoring is
Okapi BM25 with k1 = 0.9 and b = 0.4 (the Anserini/Pyserini defaults) and Lucene's idf,
``log(1 + (N - df + 0.5) / (df + 0.5))``. Nothing here was fitted to a question set.

A question's ranked chunks hold its answer at a budget when every answer part (one of its
alternatives) appears, normalised as ``research_mcp.core.citations.normalize`` does, in the ranked
chunks' texts joined by blank lines: the first k chunks, or that join cut to a number of bytes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from research_mcp.core.citations import normalize
from research_mcp.core.errors import SourceError
from research_mcp.sources.documents import MAX_TEXT_FILE_BYTES
from research_mcp.sources.folders import document_name, gunzip, sniff_text_file
from research_mcp.sources.parsing import DocumentParser
from research_mcp.sources.readers import read_document

CHUNK_CHARS = 1000
K1 = 0.9
B = 0.4
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_TOKEN = re.compile(r"\w+")


def document_text(path: Path, rel: str, parser: DocumentParser, folder: Path | None = None) -> str:
    """The text the server indexes for a corpus file ("" for a file it would pass over)."""
    named = document_name(path.name)
    if named is None or (named.sniffed and not sniff_text_file(path, gzipped=named.gzipped)):
        return ""
    data = path.read_bytes()
    try:
        read = read_document(
            gunzip(data, MAX_TEXT_FILE_BYTES) if named.gzipped else data,
            named,
            rel,
            parser,
            (folder, path) if folder is not None else None,
        )
    except SourceError:
        return ""
    return read[1] if read else ""


def read_corpus(folder: Path) -> dict[str, str]:
    """Each document's text by its path relative to ``folder`` (hidden files left out)."""
    texts = {}
    with DocumentParser(timeout=60) as parser:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and not any(part.startswith(".") for part in Path(rel).parts):
                text = document_text(path, rel, parser, folder)
                if text.strip():
                    texts[rel] = text
    return texts


def chunk_text(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Paragraphs packed into chunks of at most ``size`` characters (a longer paragraph cut at spaces)."""
    pieces: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text.strip()):
        rest = paragraph.strip()
        while len(rest) > size:
            cut = rest.rfind(" ", 0, size + 1)
            cut = cut if cut > size // 2 else size
            pieces.append(rest[:cut].strip())
            rest = rest[cut:].strip()
        if rest:
            pieces.append(rest)
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= size:
            chunks[-1] += "\n\n" + piece
        else:
            chunks.append(piece)
    return chunks


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Chunk:
    path: str
    text: str


class BM25:
    """An Okapi BM25 index over chunks, held as postings of numpy arrays."""

    def __init__(self, chunks: Sequence[Chunk], k1: float = K1, b: float = B) -> None:
        self.chunks = list(chunks)
        counts = [Counter(tokens(chunk.text)) for chunk in self.chunks]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        norm = k1 * (1 - b + b * lengths / max(float(lengths.mean()) if len(lengths) else 1.0, 1.0))
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for number, count in enumerate(counts):
            for term, frequency in count.items():
                where, frequencies = postings.setdefault(term, ([], []))
                where.append(number)
                frequencies.append(frequency)
        total = len(self.chunks)
        self._terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, (where, frequencies) in postings.items():
            rows, tf = np.array(where), np.array(frequencies, dtype=np.float64)
            idf = math.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5))
            self._terms[term] = (rows, idf * tf * (k1 + 1) / (tf + norm[rows]))

    @classmethod
    def of_texts(cls, texts: dict[str, str], size: int = CHUNK_CHARS) -> BM25:
        return cls([Chunk(path, piece) for path, text in texts.items() for piece in chunk_text(text, size)])

    def search(self, query: str, limit: int = 10) -> list[Chunk]:
        scores = np.zeros(len(self.chunks))
        for term in set(tokens(query)):
            if term in self._terms:
                rows, weights = self._terms[term]
                scores[rows] += weights
        ranked = np.argsort(-scores, kind="stable")[:limit]
        return [self.chunks[i] for i in ranked if scores[i] > 0]


def holds(text: str, parts: Iterable[Sequence[str]]) -> bool:
    """Whether every answer part has an alternative in ``text`` (both normalised)."""
    flat = normalize(text)
    return all(any(normalize(alternative) in flat for alternative in part) for part in parts)


def joined(chunks: Sequence[Chunk], byte_budget: int | None = None) -> str:
    """The chunks' texts joined by blank lines, cut to ``byte_budget`` bytes when one is given."""
    text = "\n\n".join(chunk.text for chunk in chunks)
    if byte_budget is None:
        return text
    return text.encode("utf-8")[:byte_budget].decode("utf-8", errors="ignore")
