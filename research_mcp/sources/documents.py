"""A corpus file's bytes, capped, decoded, and its text cut into chunks (``readers.py`` reads it).

Text is decoded tolerantly (undecodable bytes become U+FFFD).

Chunks are ~800-1,200 characters cut on paragraph, then sentence, then word boundaries, each with
its offsets into the document text, so quotes can be located.
"""

from __future__ import annotations

import os
import re
import stat as stat_mode
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from research_mcp.core.errors import SourceError

if TYPE_CHECKING:
    pass

__all__ = [
    "CHUNK_MAX_CHARS",
    "CHUNK_MIN_CHARS",
    "MAX_FILE_BYTES",
    "MAX_TEXT_FILE_BYTES",
    "chunk_spans",
    "decode_text",
    "describe_file_kind",
    "embedding_text",
    "read_regular_file",
    "size_cap",
]

CHUNK_MIN_CHARS = 800
CHUNK_MAX_CHARS = 1200
MAX_FILE_BYTES = 50 * 1024 * 1024
#: Text, Markdown and HTML are read whole into memory (several times over while decoded and
#: chunked); 10 MB is some 1.5 million words, more than any hand-written document.
MAX_TEXT_FILE_BYTES = 10 * 1024 * 1024

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = re.compile(r"([.!?…][\"'”’)\]]*)\s+")


def decode_text(data: bytes) -> str:
    """A plain text file's text: UTF-8; or, when most of its non-ASCII bytes are no UTF-8 at all, the
    Latin-1 of older READMEs and changelogs (read as cp1252, its Windows superset)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8-sig", errors="replace")
    wide = sum(1 for char in text if ord(char) > 127)
    if text.count("\ufffd") * 2 > wide:
        return data.decode("cp1252", errors="replace")
    return text


def size_cap(suffix: str) -> int:
    """The largest file of this kind that is read (compressed, and again uncompressed): PDFs 50 MB,
    text, Markdown and HTML 10 MB."""
    return MAX_FILE_BYTES if suffix == ".pdf" else MAX_TEXT_FILE_BYTES


def read_regular_file(path: Path, cap: int) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes; SourceError for anything else.

    Opened without blocking (a FIFO swapped in after the walk cannot hang the open) and checked on
    the open descriptor, so a file replaced between the walk and the read is still judged by what
    is actually read. At most ``cap`` + 1 bytes are read, so a file that grows meanwhile is refused,
    not read without end.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb", buffering=0) as handle:
        mode = os.fstat(fd).st_mode
        if not stat_mode.S_ISREG(mode):
            raise SourceError(f"{describe_file_kind(mode)}, not a regular file; skipped")
        data = _read_at_most(handle, cap + 1)
    if len(data) > cap:
        raise SourceError(f"larger than {cap // 2**20} MB; skipped")
    return data


def _read_at_most(handle: IO[bytes], limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = handle.read(min(1 << 20, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def describe_file_kind(mode: int) -> str:
    """What a non-regular file is, for a note saying why it was skipped."""
    if stat_mode.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat_mode.S_ISCHR(mode):
        return "a character device"
    if stat_mode.S_ISBLK(mode):
        return "a block device"
    if stat_mode.S_ISSOCK(mode):
        return "a socket"
    if stat_mode.S_ISDIR(mode):
        return "a folder"
    return "a special file"


def embedding_text(title: str, chunk: str) -> str:
    # The title gives a chunk cut from the middle of a document the context it lacks.
    return f"{title}\n\n{chunk}"


def chunk_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of chunks of ``text``: paragraphs packed to 800-1,200 characters.

    A chunk is closed once it reaches the minimum, or when the next piece would push it past the
    maximum. Paragraphs longer than the maximum are cut at sentence ends, sentences longer than it
    at spaces, and unbroken runs at the maximum itself.

    One pass over the pieces, in linear time: a 10 MB text file of a single paragraph (some 130,000
    sentences) is cut in a fraction of a second (``python -m bench.hostile_docs``).
    """
    chunks: list[tuple[int, int]] = []
    first = last = -1  # the open chunk
    for start, end in _pieces(text):
        if first >= 0 and last - first < CHUNK_MIN_CHARS and end - first <= CHUNK_MAX_CHARS:
            last = end
            continue
        if first >= 0:
            chunks.append((first, last))
        first, last = start, end
    if first >= 0:
        chunks.append((first, last))
    return chunks


def _pieces(text: str) -> Iterator[tuple[int, int]]:
    """The pieces chunks are packed from, in order: paragraphs, or the sentences of a paragraph longer
    than the maximum, or the space-cut parts of a sentence longer than it; each trimmed of spaces."""
    for start, end in _paragraphs(text):
        if end - start <= CHUNK_MAX_CHARS:
            yield start, end
            continue
        # Sentences: each ends at its punctuation (the spaces after it are the separator, and the
        # next sentence starts past them, as the paragraph itself starts trimmed).
        position = start
        for match in _SENTENCE_END.finditer(text, start, end):
            stop = match.end(1)
            if stop - position > CHUNK_MAX_CHARS:
                yield from _cut_at_spaces(text, position, stop)
            elif stop > position:
                yield position, stop
            position = match.end()
        if position < end:
            yield from _cut_at_spaces(text, position, end)


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """The paragraphs of ``text``, trimmed: what lies between blank lines (the break's own spaces
    are part of it, so a paragraph after one starts on a non-space character)."""
    position = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        stop = match.start()
        while stop > position and text[stop - 1].isspace():
            stop -= 1
        while position < stop and text[position].isspace():
            position += 1
        if stop > position:
            yield position, stop
        position = match.end()
    yield from _trimmed(text, position, len(text))


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end


def _cut_at_spaces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while end - start > CHUNK_MAX_CHARS:
        cut = text.rfind(" ", start + 1, start + CHUNK_MAX_CHARS)
        cut = cut if cut > start else start + CHUNK_MAX_CHARS
        yield from _trimmed(text, start, cut)
        start = cut
    yield from _trimmed(text, start, end)
