"""The corpus folders: which of their files are documents, and whether a path lies inside them.

A document is named for what it holds: ``.md``, ``.markdown``, ``.txt``, ``.text``, ``.rst``,
``.adoc``, ``.asciidoc``, ``.html``, ``.htm`` or ``.pdf``, or a name with no such suffix at all (``README``, ``COPYING``,
``GPL-3``, ``LGPL-2.1``, ``README.Debian``), or one that begins with a documentation word whatever
its suffix (``README.source``, ``README.api``, ``NEWS.old``, ``changelog.Debian``): those are read
when their first 8 KB look like text (no NUL byte, UTF-8 or else Latin-1/cp1252, almost no control
characters), so a licence or a README is found and a program or an image is passed over (and
counted). Any of them may be gzip-compressed (``changelog.Debian.gz``, ``guide.txt.gz``, as Debian
ships its docs); the uncompressed size is capped like the file's. Other suffixes (``.py``,
``.json``, ``.png``) and hidden files and folders are not documents; the walk counts the files it
passes over by suffix, so ``index`` can say what it skipped.

Path safety: every path is resolved (symlinks followed, ``..`` collapsed) and must then lie inside
a configured folder, tested with ``Path.is_relative_to`` on resolved paths (a string prefix test
would let ``/data/corpus-secret`` pass for ``/data/corpus``). The walk does not follow symlinked
folders and skips, reporting it, any symlink that points outside the corpus folders.
"""

from __future__ import annotations

import codecs
import os
import stat as stat_mode
import zlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from research_mcp.core.errors import InvalidInput, SourceError, shown
from research_mcp.sources.documents import size_cap

__all__ = [
    "SUFFIXES",
    "CorpusFolders",
    "DocumentName",
    "document_name",
    "gunzip",
    "looks_like_text",
    "sniff_text_file",
    "storable_name",
    "why_not_a_document",
]

SUFFIXES = frozenset(
    {".md", ".markdown", ".txt", ".text", ".rst", ".adoc", ".asciidoc", ".html", ".htm", ".pdf"}
)
COMPRESSED = ".gz"
#: Bytes looked at to tell a text file named without a suffix from a binary one.
SNIFF_BYTES = 8192
#: Control characters (other than tab, newline, carriage return, form feed) a text may hold, per byte.
MAX_CONTROL_SHARE = 0.01
_TEXT_CONTROLS = frozenset("\t\n\r\f")
#: Names that begin with one of these words (any case, then a dot, a dash or nothing) are
#: documentation whatever their suffix: ``README.source``, ``NEWS.old``, ``INSTALL.unix``.
DOC_WORDS = frozenset(
    "readme news changelog changes copying copyright license licence install authors thanks todo "  # noqa: SIM905
    "hacking notice history faq bugs credits".split()
)
#: Suffixes of code, data and media: never documents, whatever word a name begins with.
CODE_OR_DATA = frozenset(
    ".py .pyc .js .ts .json .yaml .yml .toml .ini .cfg .xml .csv .c .h .cc .cpp .java .go .rs .rb .sh "  # noqa: SIM905
    ".pl .php .css .svg .png .jpg .jpeg .gif .ico .zip .tar .tgz .bz2 .xz .so .o .a .exe .dll .bin".split()
)
#: The kind a passed-over file is counted under when its name has no suffix.
NO_SUFFIX = "(no suffix)"


@dataclass(frozen=True)
class DocumentName:
    """How a file's name says to read it.

    ``kind`` is the document suffix (``.md``, ``.html``, ``.pdf``, ...) or ``""`` for a name
    without one, read as plain text if it looks like text; ``title`` is the name without its
    document suffixes, the title of a document that declares none.
    """

    kind: str
    gzipped: bool
    title: str

    @property
    def sniffed(self) -> bool:
        """True when only the content can tell whether this is a document."""
        return self.kind == ""


def document_name(name: str) -> DocumentName | None:
    """How to read a file of this name, or None when it is no document."""
    if name.startswith("."):
        return None
    gzipped = name.lower().endswith(COMPRESSED)
    inner = name[: -len(COMPRESSED)] if gzipped else name
    if not inner:
        return None
    suffix = PurePosixPath(inner).suffix
    if suffix.lower() in SUFFIXES:
        return DocumentName(kind=suffix.lower(), gzipped=gzipped, title=inner[: -len(suffix)] or inner)
    if _not_a_file_type(suffix[1:]) or _documentation_word(inner):
        return DocumentName(kind="", gzipped=gzipped, title=inner)
    return None


def _documentation_word(name: str) -> bool:
    """A name beginning with a documentation word, not of a code or data type: ``README.source``,
    ``changelog.old``, not ``license.py``."""
    head = name.split(".", 1)[0].split("-", 1)[0].split("_", 1)[0]
    return head.lower() in DOC_WORDS and PurePosixPath(name).suffix.lower() not in CODE_OR_DATA


def storable_name(name: str) -> str:
    """A file name or path as the index stores and shows it: itself when it is valid UTF-8; otherwise
    (``m\\xe9moire.md``, a Latin-1 name) its undecodable bytes written as ``\\xe9`` escapes, so the file
    is indexed, found and cited under a name every database, terminal and JSON encoder takes."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name


def file_type(name: str) -> str:
    """What a name says a file is, as the skipped files are counted: ``.py``, ``.json.gz``, ``(no suffix)``."""
    lower = name.lower()
    gzipped = lower.endswith(COMPRESSED) and len(lower) > len(COMPRESSED)
    inner = lower[: -len(COMPRESSED)] if gzipped else lower
    suffix = PurePosixPath(inner).suffix or (NO_SUFFIX if not gzipped else "")
    return suffix + (COMPRESSED if gzipped else "")


def _not_a_file_type(suffix: str) -> bool:
    """A dotted tail that names no file type: none, a version (``LGPL-2.1``) or a capitalised word
    (``README.Debian``); file types are lower-case words (``.py``, ``.json``)."""
    return not suffix or suffix.isdigit() or (suffix.isalpha() and suffix != suffix.lower())


def looks_like_text(head: bytes) -> bool:
    """Whether the first bytes of a file are text: no NUL, UTF-8 (or else Latin-1/cp1252, as older
    READMEs and changelogs are), almost no control characters."""
    if not head.strip() or b"\x00" in head:
        return False
    try:
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
    except UnicodeDecodeError:
        text = head.decode("cp1252", errors="replace")
    controls = sum(1 for char in text if char < " " and char not in _TEXT_CONTROLS)
    return controls <= MAX_CONTROL_SHARE * max(len(text), 1)


def sniff_text_file(path: Path, *, gzipped: bool = False) -> bool:
    """Whether a regular file (uncompressed first, when gzipped) begins like text; False for anything
    that is not a regular file or cannot be read. Opened without blocking, like every corpus read."""
    try:
        if not stat_mode.S_ISREG(os.stat(path).st_mode):  # never open a device or a FIFO to look
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat_mode.S_ISREG(os.fstat(fd).st_mode):
            return False
        try:
            head = handle.read(SNIFF_BYTES)
        except OSError:
            return False
    if gzipped:
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, SNIFF_BYTES)
        except zlib.error:
            return False
    return looks_like_text(head)


def why_not_a_document(path: str | Path, resolved: Path) -> str | None:
    """Why the file at ``resolved`` (given as ``path``) is never indexed: it is no document
    research-mcp reads, it holds binary data, or it is over its size cap; None when it is a document."""
    named = document_name(resolved.name)
    if not resolved.is_file() or named is None:
        return (
            f"{str(path)!r} is not a document research-mcp reads ({', '.join(sorted(SUFFIXES))} files, "
            "text files named without a suffix, and any of them gzipped)."
        )
    if named.sniffed and not sniff_text_file(resolved, gzipped=named.gzipped):
        return f"{str(path)!r} is not a text document (it holds binary data); give a document."
    cap = size_cap(named.kind)
    if resolved.stat().st_size > cap:
        return (
            f"{shown(str(path))} is larger than {cap // 2**20} MB, the most research-mcp reads of a "
            f"{named.kind or 'text'} file, so it is never indexed; give a smaller file or an extract of its text."
        )
    return None


def gunzip(data: bytes, cap: int) -> bytes:
    """The uncompressed bytes of a gzip file (every member), at most ``cap`` of them: a file that
    would grow past it (a bomb) is refused before it is all uncompressed; SourceError otherwise."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        member = zlib.decompressobj(wbits=31)
        try:
            chunk = member.decompress(rest, cap + 1 - size)
        except zlib.error as err:
            raise SourceError(f"is not a valid gzip file ({err}); skipped") from None
        size += len(chunk)
        out.append(chunk)
        if size > cap or member.unconsumed_tail:
            raise SourceError(f"holds more than {cap // 2**20} MB once uncompressed; skipped")
        if not member.eof:
            raise SourceError("is a truncated gzip file; skipped")
        rest = member.unused_data.lstrip(b"\x00")  # members may be padded with NULs
    return b"".join(out)


class CorpusFolders:
    """The configured folders, resolved: what lies inside them and which of their files to index."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = [Path(root).expanduser().resolve() for root in roots]

    def resolve(self, path: str | Path) -> Path:
        """The resolved path, if it lies inside a configured folder; InvalidInput otherwise.

        A relative path is taken relative to each folder in turn.
        """
        if not self.roots:
            raise InvalidInput("No corpus folders are configured: set RESEARCH_MCP_CORPUS to your folders.")
        raw = Path(path).expanduser()
        candidates = [raw] if raw.is_absolute() else [root / raw for root in self.roots]
        for candidate in candidates:
            try:
                resolved = candidate.resolve()
            except (OSError, RuntimeError, ValueError):  # symlink loops, NUL bytes
                continue
            if self.owner(resolved) is not None:
                return resolved
        raise InvalidInput(
            f"{str(path)!r} is outside the corpus folders ({', '.join(str(r) for r in self.roots)}); "
            f"give a path inside one of them (symlinks are followed before the check)."
        )

    def owner(self, resolved: Path) -> Path | None:
        """The most specific configured folder holding a resolved path."""
        owners = [root for root in self.roots if resolved.is_relative_to(root)]
        return max(owners, key=lambda root: len(root.parts)) if owners else None

    def walk(
        self, root: Path, top: Path, errors: list[str], passed: Counter[str] | None = None
    ) -> Iterator[Path]:
        """Files named as documents under ``top``, resolved, in a stable order; escaping symlinks
        reported; the other (not hidden) files counted in ``passed`` by their suffix. Whether one
        named without a suffix is text is for the indexer to look (only at a file new or changed
        since it last looked)."""

        def unreadable(err: OSError) -> None:
            errors.append(f"{err.filename}: cannot be listed ({err.strerror}); skipped")

        for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable, followlinks=False):
            here = Path(dirpath)
            for name in sorted(dirnames):
                if not name.startswith(".") and (here / name).is_symlink():
                    self._check_link(here / name, errors)  # never followed; its target is walked if ours
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                path = here / name
                if document_name(name) is None:
                    if passed is not None and not name.startswith("."):
                        passed[file_type(name)] += 1
                    continue
                if path.is_symlink():
                    target = self._check_link(path, errors)
                    # A target that is not a regular file (a FIFO, a device) is reported by the indexer.
                    if target is None or target.is_dir() or document_name(target.name) is None:
                        continue
                    path = target
                if self.owner(path) == root:  # a file of a nested corpus folder belongs to that one
                    yield path

    def _check_link(self, link: Path, errors: list[str]) -> Path | None:
        """The target of a symlink inside the corpus folders; None (reported) for one outside or broken."""
        try:
            target = link.resolve(strict=True)
        except (OSError, RuntimeError):
            errors.append(f"{link}: broken symlink; skipped")
            return None
        if self.owner(target) is None:
            errors.append(f"{link}: symlink points outside the corpus folders ({target}); skipped")
            return None
        return target
