"""all-MiniLM-L6-v2 distilled into static token vectors: the corpus chunks' embedder
(``embeddings.py`` says why two embedders, and ``bench/embedders.py`` measures them)."""

from __future__ import annotations

import functools
import hashlib
import logging
import mmap
import os
import tempfile
import threading
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from research_mcp.core.contracts import Embedder
from research_mcp.core.errors import NotConfigured
from research_mcp.llm import saved_model
from research_mcp.llm.embeddings import VOCAB_PATH, normalised, require_files

if TYPE_CHECKING:
    from tokenizers.implementations import BaseTokenizer

__all__ = ["STATIC_PATH", "StaticEmbedder", "corpus_embedder"]

logger = logging.getLogger(__name__)

STATIC_PATH = Path(__file__).parent / "minilm" / "static.npz"


class StaticEmbedder:
    """all-MiniLM-L6-v2 distilled into static token vectors (Model2Vec's method), averaged per text.

    No network runs: a text's vector is the mean of its WordPiece tokens' rows in a 30,522 x 256
    table (``minilm/static.npz``), so embedding is one tokenizer pass and a lookup, and memory is
    the table (15 MB, float16) whatever the texts. Loads on first use; thread-safe like
    :class:`MiniLMEmbedder`. With a ``cache_dir`` the table is stored there once uncompressed and
    mapped after that: only the rows of the tokens embedded are read into memory (a run's few
    queries touch a few hundred kB of it, not the 15 MB a decompressed copy holds).
    """

    name = "all-MiniLM-L6-v2-static256"
    dim = 256

    def __init__(
        self,
        *,
        table_path: Path = STATIC_PATH,
        vocab_path: Path = VOCAB_PATH,
        batch_size: int = 256,
        max_tokens: int = 512,
        cache_dir: Path | None = None,
    ) -> None:
        if batch_size < 1 or max_tokens < 1:
            raise ValueError(f"batch_size and max_tokens must be >= 1, not {batch_size!r}, {max_tokens!r}")
        self._table_path = table_path
        self._vocab_path = vocab_path
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._cache_dir = cache_dir
        self._lock = threading.Lock()
        self._loaded: tuple[np.ndarray, BaseTokenizer, int] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str; wrap it in a list")
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return vectors
        table, tokenizer, unknown = self._load()
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start : start + self.batch_size])
                encodings = tokenizer.encode_batch(batch, add_special_tokens=False)
                for row, encoding in enumerate(encodings, start):
                    # Unknown tokens carry no meaning; a text of nothing else (or none) gets [UNK]'s row.
                    ids = [i for i in encoding.ids[: self.max_tokens] if i != unknown] or [unknown]
                    vectors[row] = table[ids].mean(axis=0, dtype=np.float32)  # float16 rows, float32 sums
        finally:
            _let_rows_go(table)
        return normalised(vectors)

    def _load(self) -> tuple[np.ndarray, BaseTokenizer, int]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._build()
        return self._loaded

    def _build(self) -> tuple[np.ndarray, BaseTokenizer, int]:
        from tokenizers import BertWordPieceTokenizer

        require_files(self._table_path, self._vocab_path, package="research-mcp")
        tokenizer = BertWordPieceTokenizer(str(self._vocab_path), lowercase=True)
        copy = self._cache_dir / self._copy_name() if self._cache_dir is not None else None
        table = _mapped(copy, (tokenizer.get_vocab_size(), self.dim)) if copy is not None else None
        if table is None:
            table = self._checked_table()
            if copy is not None:
                table = _stored(table, copy)
        return table, tokenizer, tokenizer.token_to_id("[UNK]")

    def _checked_table(self) -> np.ndarray:
        """The shipped table, decompressed, after checking that its rows are the vocabulary's tokens."""
        with np.load(self._table_path) as stored:
            table = stored["vectors"]  # float16, as shipped: 15 MB resident rather than 31
            vocab = stored["vocab"].tolist()
        if vocab != self._vocab_path.read_text(encoding="utf-8").splitlines() or table.shape[1] != self.dim:
            raise NotConfigured(
                f"The static embedding table {str(self._table_path)!r} does not match the vocabulary "
                f"{str(self._vocab_path)!r}; rebuild it with scripts/distill_static_minilm.py or reinstall."
            )
        return table

    def _copy_name(self) -> str:
        """The uncompressed copy's file name: a digest of the shipped table's members (their CRCs, from
        the archive's directory, not its 15 MB) and of the vocabulary it was checked against."""
        with zipfile.ZipFile(self._table_path) as archive:
            members = sorted((m.filename, m.CRC, m.file_size) for m in archive.infolist())
        digest = hashlib.blake2b(repr(members).encode("utf-8"), digest_size=8)
        digest.update(self._vocab_path.read_bytes())
        return f"minilm-static{self.dim}-{digest.hexdigest()}.npy"


def _let_rows_go(table: np.ndarray) -> None:
    """Unmap the pages of a mapped table that a call read (they stay in the page cache: the next call
    maps them again without reading the disk). The kernel maps 16 pages around each row read, so a
    few hundred tokens made the whole 15 MB resident until the process ended."""
    base: object = table
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):  # np.frombuffer's view of the mapping
        base = base.obj
    if isinstance(base, mmap.mmap):
        base.madvise(mmap.MADV_DONTNEED)


def _mapped(copy: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    """The uncompressed copy mapped read-only, or None if there is none of the expected form."""
    from numpy.lib import format as npy

    try:
        with copy.open("rb") as file:
            version = npy.read_magic(file)
            read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            stored, fortran_order, dtype = read_header(file)
            if stored != shape or fortran_order or dtype != np.float16:
                return None
            offset = file.tell()
            mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        return np.frombuffer(mapping, np.float16, shape[0] * shape[1], offset).reshape(shape)
    except (OSError, ValueError):
        return None


def _stored(table: np.ndarray, copy: Path) -> np.ndarray:
    """Save `table` as `copy` (whole, by a rename) and return it mapped from there; the table itself
    where the cache folder cannot be written."""
    scratch = None
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=copy.parent, prefix=f".{copy.name}.", delete=False) as out:
            scratch = Path(out.name)
            np.save(out, table)
        os.replace(scratch, copy)
    except OSError:
        if scratch is not None:
            scratch.unlink(missing_ok=True)
        logger.info(
            "the static embedding table cannot be stored in %s; it is decompressed each process", copy.parent
        )
        return table
    mapped = _mapped(copy, table.shape)
    return table if mapped is None else mapped


@functools.cache
def corpus_embedder() -> Embedder:
    """The embedder of corpus chunks (and of the queries searching them), one per process."""
    return StaticEmbedder(cache_dir=saved_model.default_cache_dir())
