"""all-MiniLM-L6-v2 distilled into static token vectors: the corpus chunks' embedder
(``embeddings.py`` says why two embedders, and ``bench/embedders.py`` measures them)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from research_mcp.core.contracts import Embedder
from research_mcp.core.errors import NotConfigured
from research_mcp.llm.embeddings import VOCAB_PATH, normalised, require_files

if TYPE_CHECKING:
    from tokenizers.implementations import BaseTokenizer

__all__ = ["STATIC_PATH", "StaticEmbedder", "corpus_embedder"]

STATIC_PATH = Path(__file__).parent / "minilm" / "static.npz"


class StaticEmbedder:
    """all-MiniLM-L6-v2 distilled into static token vectors (Model2Vec's method), averaged per text.

    No network runs: a text's vector is the mean of its WordPiece tokens' rows in a 30,522 x 256
    table (``minilm/static.npz``), so embedding is one tokenizer pass and a lookup, and memory is
    the table (15 MB, float16) whatever the texts. Loads on first use; thread-safe like
    :class:`MiniLMEmbedder`.
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
    ) -> None:
        if batch_size < 1 or max_tokens < 1:
            raise ValueError(f"batch_size and max_tokens must be >= 1, not {batch_size!r}, {max_tokens!r}")
        self._table_path = table_path
        self._vocab_path = vocab_path
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._loaded: tuple[np.ndarray, BaseTokenizer, int] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str; wrap it in a list")
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return vectors
        table, tokenizer, unknown = self._load()
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            for row, encoding in enumerate(tokenizer.encode_batch(batch, add_special_tokens=False), start):
                # Unknown tokens carry no meaning; a text of nothing else (or none) gets [UNK]'s row.
                ids = [i for i in encoding.ids[: self.max_tokens] if i != unknown] or [unknown]
                vectors[row] = table[ids].mean(axis=0, dtype=np.float32)  # float16 rows, float32 sums
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
        with np.load(self._table_path) as stored:
            table = stored["vectors"]  # float16, as shipped: 15 MB resident rather than 31
            vocab = stored["vocab"].tolist()
        if vocab != self._vocab_path.read_text(encoding="utf-8").splitlines() or table.shape[1] != self.dim:
            raise NotConfigured(
                f"The static embedding table {str(self._table_path)!r} does not match the vocabulary "
                f"{str(self._vocab_path)!r}; rebuild it with scripts/distill_static_minilm.py or reinstall."
            )
        tokenizer = BertWordPieceTokenizer(str(self._vocab_path), lowercase=True)
        return table, tokenizer, tokenizer.token_to_id("[UNK]")


@functools.cache
def corpus_embedder() -> Embedder:
    """The embedder of corpus chunks (and of the queries searching them), one per process."""
    return StaticEmbedder()
