"""The embedder: offline, deterministic, unit vectors that put paraphrases close together."""

from __future__ import annotations

import socket

import numpy as np
import pytest

from research_mcp.contracts import Embedder
from research_mcp.llm.embeddings import MiniLMEmbedder, default_embedder

CAT = "A cat sits on the mat"
KITTEN = "A kitten is sitting on a rug"
STOCKS = "Stock markets fell sharply today"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_the_embedder_loads_and_embeds_with_networking_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the embedder tried to use the network")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)

    vectors = MiniLMEmbedder().embed([CAT, STOCKS])  # a fresh instance, so the model loads here

    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32


def test_each_text_becomes_one_unit_length_row(embedder: MiniLMEmbedder) -> None:
    texts = [CAT, KITTEN, STOCKS, "", "x" * 5000]

    vectors = embedder.embed(texts)

    assert vectors.shape == (len(texts), embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_text_embeds_the_same_alone_again_or_in_any_batch(embedder: MiniLMEmbedder) -> None:
    long_text = "The history of the Roman Empire spans many emperors, wars and reforms. " * 20
    texts = [f"Sentence number {i} is about something else entirely." for i in range(70)] + [CAT, long_text]

    alone = embedder.embed([CAT])[0]
    batched = embedder.embed(texts)
    small_batches = MiniLMEmbedder(batch_size=3).embed(texts)

    np.testing.assert_allclose(embedder.embed([CAT])[0], alone, atol=1e-6)
    np.testing.assert_allclose(batched[-2], alone, atol=1e-5)
    np.testing.assert_allclose(small_batches, batched, atol=1e-5)


def test_a_paraphrase_is_clearly_closer_than_an_unrelated_sentence(embedder: MiniLMEmbedder) -> None:
    cat, kitten, stocks = embedder.embed([CAT, KITTEN, STOCKS])

    assert cat @ kitten > 0.5
    assert cat @ stocks < 0.2
    assert cat @ kitten - cat @ stocks > 0.3


def test_a_text_longer_than_256_tokens_is_truncated_not_refused(embedder: MiniLMEmbedder) -> None:
    start = "Photosynthesis converts light into chemical energy in plants. "
    long_text = start + "Unrelated filler about the weather and the sea. " * 100

    vectors = embedder.embed([long_text, long_text + "More filler at the very end that falls past the cut."])

    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_no_texts_give_an_empty_matrix(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed([]).shape == (0, 384)


def test_a_bare_string_is_refused_rather_than_embedded_letter_by_letter(embedder: MiniLMEmbedder) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        embedder.embed(CAT)


def test_the_default_embedder_is_one_shared_minilm_that_meets_the_interface() -> None:
    embedder: Embedder = default_embedder()

    assert default_embedder() is embedder
    assert (embedder.name, embedder.dim) == ("all-MiniLM-L6-v2-int8", 384)
