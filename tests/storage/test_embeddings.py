"""The embedders: offline, deterministic, bounded, unit vectors that put paraphrases close together."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from research_mcp.core.contracts import Embedder
from research_mcp.core.errors import NotConfigured
from research_mcp.llm import embeddings, integer_model
from research_mcp.llm.embeddings import MiniLMEmbedder, default_embedder
from research_mcp.llm.static_embedder import STATIC_PATH, StaticEmbedder, corpus_embedder

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


def test_an_idle_model_is_let_go_and_loads_again_with_the_same_vectors(embedder: MiniLMEmbedder) -> None:
    import time

    idle = MiniLMEmbedder(idle_seconds=0.2)
    first = idle.embed([CAT, STOCKS])
    assert idle.loaded
    deadline = time.monotonic() + 30
    while idle.loaded and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not idle.loaded  # an idle server does not hold the session's memory

    again = idle.embed([CAT, KITTEN])  # a new text loads the session again
    assert idle.loaded
    np.testing.assert_allclose(again[0], first[0], atol=1e-6)
    np.testing.assert_allclose(again, embedder.embed([CAT, KITTEN]), atol=1e-6)


def test_each_text_becomes_one_unit_length_row(embedder: MiniLMEmbedder) -> None:
    texts = [CAT, KITTEN, STOCKS, "", "x" * 5000]

    vectors = embedder.embed(texts)

    assert vectors.shape == (len(texts), embedder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_text_embeds_the_same_alone_again_or_in_any_batch(embedder: MiniLMEmbedder) -> None:
    long_text = "The history of the Roman Empire spans many emperors, wars and reforms. " * 20
    texts = [f"Sentence number {i} is about something else entirely." for i in range(70)] + [CAT, long_text]

    alone = embedder.embed([CAT])[0]
    batched = MiniLMEmbedder().embed(texts)  # a fresh embedder: nothing recalled from the line above
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


def test_batches_from_several_threads_run_on_one_thread_with_the_vectors_of_one(
    monkeypatch: pytest.MonkeyPatch, embedder: MiniLMEmbedder
) -> None:
    # A batch's working memory stays in the heap of the thread that ran it: three extractors
    # embedding long passages in their own threads held twice what one thread running them all did.
    ran_on: set[int] = set()
    run = embeddings._pooled

    def recorded(*args: Any) -> np.ndarray:
        ran_on.add(threading.get_ident())
        return run(*args)

    monkeypatch.setattr(embeddings, "_pooled", recorded)
    texts = [
        [f"{subject} number {i} is discussed at some length here. " * 8 for i in range(5)]
        for subject in ("cats", "stocks", "tides")
    ]
    shared = MiniLMEmbedder()
    results: dict[int, np.ndarray] = {}
    callers = [
        threading.Thread(target=lambda k=k: results.update({k: shared.embed(texts[k])})) for k in range(3)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()

    assert len(ran_on) == 1 and ran_on.isdisjoint(caller.ident for caller in callers)
    for k in range(3):
        np.testing.assert_allclose(results[k], embedder.embed(texts[k]), atol=1e-6)


def test_the_default_embedder_runs_long_passages_one_at_a_time_in_an_arena_it_reuses() -> None:
    assert default_embedder().batch_tokens == 256  # type: ignore[attr-defined]
    assert default_embedder()._memory_arena  # type: ignore[attr-defined]


def _rss_mb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith(field + ":"))


def test_a_long_passage_after_another_runs_in_the_memory_the_first_left_and_embeds_the_same() -> None:
    # The default embedder reuses onnxruntime's arena: without it each 256-token text's buffers came
    # from glibc's heap afresh, 20-60 MB above what the last one left, until the calls went quiet.
    clear_refs = Path("/proc/self/clear_refs")
    if not clear_refs.exists():
        pytest.skip("needs Linux's /proc/self/clear_refs to reset the peak")
    cache = default_embedder()._cache_dir  # type: ignore[attr-defined]
    arena = MiniLMEmbedder(cache_dir=cache, batch_tokens=256, memory_arena=True)
    passages = [" ".join(f"{word}{i} copies licence" for i in range(90)) for word in ("alpha", "beta")]
    arena.embed(passages[:1])
    before = _rss_mb("VmRSS")
    clear_refs.write_text("5")  # VmHWM from now on
    second = arena.embed(passages[1:])

    assert _rss_mb("VmHWM") - before < 8
    heap = MiniLMEmbedder(cache_dir=cache, batch_tokens=256, memory_arena=False)
    assert np.array_equal(second, heap.embed(passages[1:]))
    assert arena._options().enable_cpu_mem_arena and not arena._options().enable_mem_pattern


def test_the_onnx_session_keeps_no_arena_so_memory_follows_the_batch_at_hand(
    embedder: MiniLMEmbedder,
) -> None:
    embedder.embed([CAT])
    session = embedder._load()[0]

    assert session.get_session_options().enable_cpu_mem_arena is False
    assert (embedder.batch_size, embedder.batch_tokens, embedder.max_tokens) == (16, 512, 256)


def test_a_later_embedder_maps_the_optimized_model_the_first_saved_and_embeds_the_same(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    first = MiniLMEmbedder(cache_dir=tmp_path)
    built = first.embed([CAT, STOCKS])
    [saved] = tmp_path.iterdir()  # one folder, published whole: no staging left beside it
    later = MiniLMEmbedder(cache_dir=tmp_path)
    mapped = later.embed([CAT, STOCKS])

    assert (first.session_source, later.session_source) == ("built", "saved")
    assert sorted(path.name for path in saved.iterdir()) == ["model.onnx", "model.weights"]
    weights = saved / "model.weights"
    assert any(str(weights) in line for line in Path("/proc/self/maps").read_text().splitlines())
    np.testing.assert_allclose(mapped, built, atol=1e-5)
    np.testing.assert_allclose(mapped, embedder.embed([CAT, STOCKS]), atol=1e-5)


def test_a_damaged_saved_model_is_built_and_saved_again(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    MiniLMEmbedder(cache_dir=tmp_path).embed([CAT])
    [saved] = tmp_path.iterdir()
    (saved / "model.weights").write_bytes(b"not weights")

    again = MiniLMEmbedder(cache_dir=tmp_path)
    vectors = again.embed([CAT, KITTEN])

    assert again.session_source == "built"
    np.testing.assert_allclose(vectors, embedder.embed([CAT, KITTEN]), atol=1e-5)
    assert MiniLMEmbedder(cache_dir=tmp_path).embed([CAT]).shape == (1, 384)
    assert (saved / "model.weights").stat().st_size > 20_000_000  # the int8 weights, whole again


PASSAGES = [
    "git rebase --onto newbase upstream branch replays the commits of branch that are not in upstream "
    "on top of newbase, so a topic branch forked from another can be moved onto master.",
    "To undo the last commit but keep its changes in the working tree, run git reset HEAD~1: the "
    "branch moves back one commit and the files stay as they were, ready to be committed again.",
    "The configuration variable core.autocrlf makes Git convert line endings when files are checked "
    "out and committed; set it to input on systems that use LF line endings.",
    CAT,
    STOCKS,
]


def test_the_int8_graph_agrees_with_the_shipped_float_one_and_is_saved_smaller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INTEGER_MINILM", "1")
    integer = MiniLMEmbedder(cache_dir=tmp_path / "int")
    vectors = integer.embed(PASSAGES)
    alone = integer.embed([CAT])[0]  # one text a call: its vector is its own, whatever the batch
    monkeypatch.setattr(integer_model, "available", lambda: False)  # as where onnx is not installed
    shipped = MiniLMEmbedder(cache_dir=tmp_path / "float")
    reference = shipped.embed(PASSAGES)

    assert (integer.integer, shipped.integer) == (True, False)
    assert np.min(np.sum(vectors * reference, axis=1)) > 0.99
    np.testing.assert_allclose(vectors[PASSAGES.index(CAT)], alone, atol=1e-6)
    [int_folder] = (tmp_path / "int").iterdir()
    [float_folder] = (tmp_path / "float").iterdir()
    assert int_folder.name.startswith("minilm-integer") and float_folder.name.startswith("minilm-")
    assert (int_folder / "model.weights").stat().st_size < (float_folder / "model.weights").stat().st_size / 3


def test_a_model_the_rewrite_does_not_know_is_used_as_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_INTEGER_MINILM", "1")
    unknown = tmp_path / "model.onnx"
    unknown.write_bytes(b"not a model")
    assert integer_model.rewrite(unknown, tmp_path / "out.onnx") is False

    embedder = MiniLMEmbedder(cache_dir=tmp_path / "cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(integer_model, "rewrite", lambda model, target, products: False)
        vectors = embedder.embed([CAT, KITTEN])
    [folder] = (tmp_path / "cache").iterdir()

    assert embedder.integer is False and embedder.session_source == "built"
    assert not folder.name.startswith("minilm-integer")  # saved under the shipped graph's name
    assert float(vectors[0] @ vectors[1]) > 0.5


def test_a_cache_folder_that_cannot_be_made_leaves_the_embedder_working(tmp_path: Path) -> None:
    blocked = tmp_path / "a file"
    blocked.write_text("in the way")

    embedder = MiniLMEmbedder(cache_dir=blocked / "cache")

    assert embedder.embed([CAT]).shape == (1, 384)
    assert embedder.session_source == "built"


def test_a_text_embedded_again_is_recalled_not_run_through_the_model_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The knowledge base embeds each new fact; the synthesis embeds the same statements again.
    embedder = MiniLMEmbedder()
    through_the_model: list[str] = []
    run = embedder._embed

    def counted(texts: list[str], vectors: np.ndarray) -> np.ndarray:
        through_the_model.extend(texts)
        return run(texts, vectors)

    monkeypatch.setattr(embedder, "_embed", counted)
    first = embedder.embed([CAT, KITTEN])
    again = embedder.embed([KITTEN, STOCKS, CAT])

    assert through_the_model == [CAT, KITTEN, STOCKS]
    np.testing.assert_array_equal(again[[0, 2]], first[[1, 0]])
    np.testing.assert_allclose(again[1], MiniLMEmbedder().embed([STOCKS])[0], atol=1e-6)

    monkeypatch.setattr(embeddings, "REMEMBERED_TEXTS", 2)  # the oldest text is let go past the bound
    embedder.embed(["one", "two", "three"])
    through_the_model.clear()
    embedder.embed(["three", "one"])
    assert through_the_model == ["one"]


def test_long_texts_go_two_at_a_time_and_short_ones_sixteen_so_a_batch_stays_small() -> None:
    # A batch's working memory follows its padded tokens (16 texts of 256 tokens: 330 MB).
    embedder = MiniLMEmbedder()
    lengths = [256] * 5 + [20] * 40 + [100] * 6

    batches = embedder._batches(lengths)

    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert all(len(batch) * max(lengths[i] for i in batch) <= 512 for batch in batches)
    assert all(len(batch) <= 16 for batch in batches)
    assert [len(b) for b in batches] == [16, 16, 8, 5, 2, 2, 2]


def test_batch_and_token_bounds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        MiniLMEmbedder(batch_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        StaticEmbedder(max_tokens=0)


# --- the static embedder of corpus chunks ----------------------------------------------------------

TIDES = "Tide pools shelter anemones and sea stars on rocky shores"
ROCK_POOLS = "Marine life in rock pools along the coast"


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder()


def test_the_static_embedder_loads_and_embeds_with_networking_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the embedder tried to use the network")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)

    vectors = StaticEmbedder().embed([TIDES, STOCKS])

    assert vectors.shape == (2, 256)
    assert vectors.dtype == np.float32


def test_every_static_row_has_unit_length_even_for_empty_and_unknown_text(static: StaticEmbedder) -> None:
    texts = [TIDES, "", "   ", "\u2603\u2604", "x" * 5000]

    vectors = static.embed(texts)

    assert vectors.shape == (len(texts), 256)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_static_vector_does_not_depend_on_the_batch_it_comes_in(static: StaticEmbedder) -> None:
    texts = [f"Paragraph {i} on a subject of its own, number {i * 7}." for i in range(600)] + [TIDES]

    batched = static.embed(texts)
    small_batches = StaticEmbedder(batch_size=7).embed(texts)

    np.testing.assert_allclose(small_batches, batched, atol=1e-6)
    np.testing.assert_allclose(static.embed([TIDES])[0], batched[-1], atol=1e-6)


def test_static_vectors_put_a_passage_on_the_same_subject_closer_than_an_unrelated_one(
    static: StaticEmbedder,
) -> None:
    tides, pools, stocks = static.embed([TIDES, ROCK_POOLS, STOCKS])

    assert tides @ pools > 0.5
    assert tides @ pools - tides @ stocks > 0.4


def test_a_static_table_that_does_not_match_the_vocabulary_is_refused_clearly(tmp_path: Path) -> None:
    table = tmp_path / "static.npz"
    with np.load(STATIC_PATH) as shipped:
        np.savez(table, vectors=shipped["vectors"][:100], vocab=shipped["vocab"][:100])

    with pytest.raises(NotConfigured, match="does not match the vocabulary"):
        StaticEmbedder(table_path=table).embed([TIDES])
    with pytest.raises(NotConfigured, match="is missing; reinstall"):
        StaticEmbedder(table_path=tmp_path / "gone.npz").embed([TIDES])


def _resident_kb(mapped: Path) -> int:
    """How much of a file this process maps is resident; fails if it is not mapped at all."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    headers = [n for n, line in enumerate(lines) if line.endswith(" " + str(mapped))]
    assert headers, f"{mapped} is not mapped"
    # Each region's header line is followed by its fields: Size first, then Rss.
    return sum(int(next(x for x in lines[n:] if x.startswith("Rss:")).split()[1]) for n in headers)


def test_a_later_static_embedder_maps_the_copy_the_first_stored_and_embeds_the_same(
    tmp_path: Path, static: StaticEmbedder
) -> None:
    texts = [TIDES, "", "\u2603", "x" * 5000]
    first = StaticEmbedder(cache_dir=tmp_path)
    stored = first.embed(texts)
    [copy] = tmp_path.iterdir()  # renamed into place whole: no scratch file beside it
    later = StaticEmbedder(cache_dir=tmp_path)
    mapped = later.embed(texts)

    assert np.array_equal(stored, static.embed(texts)) and np.array_equal(mapped, stored)
    assert _resident_kb(copy) == 0  # mapped, and the pages a call read are let go after it
    copy.write_bytes(copy.read_bytes()[:1000])  # damaged: stored again whole
    assert np.array_equal(StaticEmbedder(cache_dir=tmp_path).embed(texts), stored)
    assert [path.stat().st_size for path in tmp_path.iterdir()] == [15_627_392]


def test_a_static_embedder_whose_cache_folder_cannot_be_made_decompresses_the_table(
    tmp_path: Path, static: StaticEmbedder
) -> None:
    (tmp_path / "file").write_text("in the way")

    vectors = StaticEmbedder(cache_dir=tmp_path / "file" / "cache").embed([TIDES])

    assert np.array_equal(vectors, static.embed([TIDES]))
    assert [path.name for path in tmp_path.iterdir()] == ["file"]


def test_the_corpus_embedder_is_one_shared_static_embedder_that_meets_the_interface() -> None:
    embedder: Embedder = corpus_embedder()

    assert corpus_embedder() is embedder
    assert (embedder.name, embedder.dim) == ("all-MiniLM-L6-v2-static256", 256)
