"""The knowledge index against real Qdrant: in memory, on disk, and when Qdrant cannot be had."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.static_embedder import StaticEmbedder
from research_mcp.storage.vectors import IndexedHit, KnowledgeIndex
from tests.fake_qdrant import fake_qdrant_server

FACTS = [
    (1, "A cat sits on the mat", {"run": "r1", "source": 10}),
    (2, "Stock markets fell sharply today", {"run": "r1", "source": 11}),
    (3, "The kitten slept on the rug all afternoon", {"run": "r2", "source": 10}),
    (4, "Photosynthesis turns sunlight into chemical energy", {"run": "r2", "source": 12}),
]
KITTEN_QUERY = "A kitten is sitting on a rug"


@pytest.fixture(params=["memory", "disk", "server"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KnowledgeIndex]:
    """The same behaviour from each engine: Edge in a temporary folder, Edge in a folder, and a Qdrant
    server at QDRANT_URL through qdrant-client (a loopback fake over a real engine: tests/fake_qdrant.py)."""
    if request.param == "server":
        with (
            fake_qdrant_server() as (url, _),
            KnowledgeIndex.open(url=url, embedder=default_embedder()) as opened,
        ):
            assert opened.available
            yield opened
        return
    if request.param == "memory":
        opened = KnowledgeIndex.open(location=":memory:", embedder=default_embedder())
    else:
        opened = KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=default_embedder())
    with opened:
        yield opened


def unavailable_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.name == "research_mcp.storage.vectors" and record.levelno == logging.WARNING
    ]


def assert_same_hits(actual: list[IndexedHit], expected: list[IndexedHit]) -> None:
    """Same ids, payloads and order; scores equal up to float rounding."""
    assert [(hit.id, hit.payload) for hit in actual] == [(hit.id, hit.payload) for hit in expected]
    np.testing.assert_allclose([hit.score for hit in actual], [hit.score for hit in expected], atol=1e-6)


def test_search_returns_the_nearest_facts_first_with_their_cosine_scores(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)
    vectors = default_embedder().embed([text for _, text, _ in FACTS] + [KITTEN_QUERY])
    cosines = {fact_id: float(vectors[i] @ vectors[-1]) for i, (fact_id, _, _) in enumerate(FACTS)}

    hits = index.search("facts", KITTEN_QUERY, min_score=-1.0)

    assert [hit.id for hit in hits] == sorted(cosines, key=cosines.__getitem__, reverse=True)
    assert {hit.id for hit in hits[:2]} == {1, 3}  # the two cat sentences, before markets and plants
    np.testing.assert_allclose([hit.score for hit in hits], [cosines[hit.id] for hit in hits], atol=1e-5)
    assert {hit.id: hit.payload for hit in hits}[1] == {"run": "r1", "source": 10}


def test_limit_caps_the_number_of_hits(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)

    assert len(index.search("facts", KITTEN_QUERY, limit=1, min_score=-1.0)) == 1


def test_where_keeps_only_items_whose_payload_matches_every_condition(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)

    in_r2 = index.search("facts", KITTEN_QUERY, where={"run": "r2"})
    from_source_10_in_r1 = index.search("facts", KITTEN_QUERY, where={"run": "r1", "source": 10})

    assert {hit.id for hit in in_r2} <= {3, 4}
    assert in_r2[0].id == 3
    assert [hit.id for hit in from_source_10_in_r1] == [1]


def test_min_score_drops_matches_weaker_than_it(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)

    hits = index.search("facts", KITTEN_QUERY, min_score=0.4)

    assert {hit.id for hit in hits} == {1, 3}
    assert all(hit.score >= 0.4 for hit in hits)


def test_reindex_gives_the_same_search_results(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)
    before = index.search("facts", KITTEN_QUERY, limit=4, min_score=-1.0)

    index.reset("facts")
    assert index.count("facts") == 0
    assert index.search("facts", KITTEN_QUERY) == []
    index.add("facts", list(reversed(FACTS)))

    assert_same_hits(index.search("facts", KITTEN_QUERY, limit=4, min_score=-1.0), before)


def test_count_follows_adds_replacements_and_deletes(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)
    index.add("facts", [(2, "Bond yields rose", {"run": "r3"})])
    assert index.count("facts") == 4

    index.delete("facts", [2, 4, 999])

    assert index.count("facts") == 2
    assert {hit.id for hit in index.search("facts", "markets", min_score=-1.0)} == {1, 3}


def test_an_added_id_that_exists_is_replaced_not_duplicated(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)

    index.add("facts", [(2, "A puppy naps on the carpet", {"run": "r3"})])

    hit = next(hit for hit in index.search("facts", KITTEN_QUERY) if hit.id == 2)
    assert hit.payload == {"run": "r3"}
    assert hit.score > 0.3


def test_held_values_give_each_held_id_its_payload_value_under_a_key(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)
    index.add("facts", [(9, "no run recorded", {"source": 13})])

    assert index.held_values("facts", [1, 3, 9, 99], "run") == {1: "r1", 3: "r2", 9: None}


def test_facts_and_chunks_are_separate_collections(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)
    index.add("chunks", [(1, "Chunk about interest rates and central banks", {"document": "d1"})])

    assert (index.count("facts"), index.count("chunks")) == (4, 1)
    assert [hit.payload for hit in index.search("chunks", KITTEN_QUERY, min_score=-1.0)] == [
        {"document": "d1"}
    ]


def test_a_collection_never_written_searches_empty_and_counts_zero(index: KnowledgeIndex) -> None:
    assert index.search("chunks", KITTEN_QUERY) == []
    assert index.count("chunks") == 0
    index.delete("chunks", [1])


def test_search_vector_finds_what_search_finds_and_checks_the_dimension(index: KnowledgeIndex) -> None:
    index.add("facts", FACTS)
    vector = default_embedder().embed([KITTEN_QUERY])[0]

    assert_same_hits(
        index.search_vector("facts", vector, limit=3), index.search("facts", KITTEN_QUERY, limit=3)
    )
    with pytest.raises(ValueError, match=r"shape \(384,\)"):
        index.search_vector("facts", np.zeros(3, dtype=np.float32))


def test_an_index_on_disk_keeps_its_items_after_it_is_closed_and_reopened(tmp_path: Path) -> None:
    with KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=default_embedder()) as first:
        first.add("facts", FACTS)
        before = first.search("facts", KITTEN_QUERY)

    with KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=default_embedder()) as reopened:
        assert reopened.count("facts") == 4
        assert_same_hits(reopened.search("facts", KITTEN_QUERY), before)


class DimensionEmbedder:
    """Vectors of a chosen dimension under a chosen name: the embedder seam, for what the index does with them."""

    def __init__(self, name: str, dim: int) -> None:
        self.name, self.dim = name, dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = np.ones((len(texts), self.dim), dtype=np.float32)
        return vectors / np.sqrt(self.dim)


def test_chunks_use_the_chunk_embedder_and_each_collection_records_its_embedder(tmp_path: Path) -> None:
    chunk_embedder = StaticEmbedder()
    with KnowledgeIndex.open(
        path=tmp_path / "qdrant", embedder=default_embedder(), chunk_embedder=chunk_embedder
    ) as index:
        index.add("facts", FACTS[:1])
        index.add("chunks", [(7, "Tide pools shelter anemones on rocky shores", {"doc_id": 1})])

        (hit,) = index.search("chunks", "anemones in rock pools")
    recorded = {
        meta.stem: (
            json.loads(meta.read_text()),
            json.loads((meta.with_suffix("") / "edge_config.json").read_text()),
        )
        for meta in (tmp_path / "qdrant").glob("*.json")
    }
    sizes = {name: edge["vectors"]["dense"]["size"] for name, (_, edge) in recorded.items()}

    assert hit.id == 7
    assert index.embedder_for("chunks") is chunk_embedder
    described = ("embedder", "dim", "rebuildable")  # beside the write stamp and check mark
    assert {name: {key: meta[key] for key in described} for name, (meta, _) in recorded.items()} == {
        "research_mcp_facts_all-MiniLM-L6-v2-int8": {
            "embedder": "all-MiniLM-L6-v2-int8",
            "dim": 384,
            "rebuildable": False,
        },
        "research_mcp_chunks_all-MiniLM-L6-v2-static256": {
            "embedder": "all-MiniLM-L6-v2-static256",
            "dim": 256,
            "rebuildable": True,
        },
    }
    assert sizes == {
        "research_mcp_facts_all-MiniLM-L6-v2-int8": 384,
        "research_mcp_chunks_all-MiniLM-L6-v2-static256": 256,
    }
    # Facts exist only here and in SQLite's rows the healer reads: logged. Chunks, re-read from
    # SQLite by the corpus's check, do without the log's two 32 MB segments.
    wal = {name: edge.get("wal_enabled", True) for name, (_, edge) in recorded.items()}
    assert wal == {
        "research_mcp_facts_all-MiniLM-L6-v2-int8": True,
        "research_mcp_chunks_all-MiniLM-L6-v2-static256": False,
    }


def test_a_chunk_collection_made_with_a_write_ahead_log_is_made_again_without(tmp_path: Path) -> None:
    name = "research_mcp_chunks_all-MiniLM-L6-v2-static256"
    with KnowledgeIndex.open(
        path=tmp_path / "v", embedder=default_embedder(), chunk_embedder=StaticEmbedder()
    ) as index:
        index.add("chunks", [(7, "Tide pools shelter anemones on rocky shores", {"doc_id": 1})])
    meta = tmp_path / "v" / f"{name}.json"
    meta.write_text(json.dumps({"embedder": "all-MiniLM-L6-v2-static256", "dim": 256}))  # as 0.2 wrote it

    with KnowledgeIndex.open(
        path=tmp_path / "v", embedder=default_embedder(), chunk_embedder=StaticEmbedder()
    ) as index:
        assert index.count("chunks") == 0  # to be filled again from SQLite, as after a new embedder
        index.add("chunks", [(8, "Kelp forests grow in cold water", {"doc_id": 2})])
        assert [hit.id for hit in index.search("chunks", "kelp in cold seas")] == [8]
    assert json.loads(meta.read_text())["rebuildable"] is True


def test_a_collection_whose_dimension_no_longer_matches_its_embedder_starts_again_empty(
    tmp_path: Path,
) -> None:
    with KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=DimensionEmbedder("same-name", 4)) as first:
        first.add("facts", FACTS)
        assert first.count("facts") == 4

    with KnowledgeIndex.open(path=tmp_path / "qdrant", embedder=DimensionEmbedder("same-name", 8)) as second:
        assert second.count("facts") == 0
        second.add("facts", FACTS[:2])
        assert second.count("facts") == 2
        assert [hit.id for hit in second.search("facts", "anything", limit=5)] != []


def test_an_unreachable_server_gives_an_unavailable_index_and_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the index tries it

    index = KnowledgeIndex.open(url=f"http://127.0.0.1:{port}", embedder=default_embedder())

    assert not index.available
    assert index.search("facts", KITTEN_QUERY) == []
    [warning] = unavailable_warnings(caplog)
    assert f"127.0.0.1:{port}" in warning.getMessage()


class _ServerThatFailsAfterConnecting(BaseHTTPRequestHandler):
    """Answers the connection probe, then fails every request, like a server going down mid-run."""

    def do_GET(self) -> None:
        if self.path.startswith("/collections?") or self.path == "/collections":
            self._send(200, {"result": {"collections": []}, "status": "ok", "time": 0.0})
        else:
            self._send(503, {"status": {"error": "service unavailable"}, "time": 0.0})

    do_PUT = do_POST = do_DELETE = do_GET

    def _send(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_server_failing_mid_run_makes_the_index_a_no_op_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ServerThatFailsAfterConnecting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        index = KnowledgeIndex.open(url=f"http://127.0.0.1:{server.server_port}", embedder=default_embedder())
        assert index.available

        index.add("facts", FACTS)
        results = (index.search("facts", KITTEN_QUERY), index.count("facts"))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()

    assert (index.available, results) == (False, ([], 0))
    [warning] = unavailable_warnings(caplog)
    assert "stopped answering" in warning.getMessage()


def test_open_without_a_destination_is_refused() -> None:
    with pytest.raises(ValueError, match="path, a url or a location"):
        KnowledgeIndex.open(embedder=default_embedder())


def test_a_hit_is_a_plain_value() -> None:
    assert IndexedHit(id=1, score=0.5, payload={"run": "r1"}) == IndexedHit(1, 0.5, {"run": "r1"})


def test_on_a_server_the_index_speaks_qdrants_api_and_leaves_other_embedders_collections_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="research_mcp.storage.vectors")
    with fake_qdrant_server() as (url, requests):
        with KnowledgeIndex.open(url=url, embedder=DimensionEmbedder("older-model", 4)) as older:
            older.add("facts", FACTS[:1])
        with KnowledgeIndex.open(url=url, embedder=default_embedder()) as index:
            index.add("facts", FACTS)
            hits = index.search("facts", KITTEN_QUERY, limit=2)
            page, following = index.id_page("facts", limit=3)
            held = index.held("facts", [1, 2, 99])

    assert {hit.id for hit in hits} == {1, 3}
    assert (page, following, held) == ([1, 2, 3], 4, {1, 2})
    assert "PUT /collections/research_mcp_facts_all-MiniLM-L6-v2-int8/points" in requests
    assert "POST /collections/research_mcp_facts_all-MiniLM-L6-v2-int8/points/query" in requests
    assert "DELETE /collections/research_mcp_facts_older-model" not in requests
    assert any("left on the shared server" in record.getMessage() for record in caplog.records)
