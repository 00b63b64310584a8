"""The embedded engine (Qdrant Edge) shared between processes and killed mid-write: processes on one
data folder take turns and never corrupt a shard; a kill -9 loses nothing a write returned from."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from research_mcp.llm.embeddings import default_embedder
from research_mcp.storage import vectors
from research_mcp.storage.vectors import KnowledgeIndex

FACTS = [
    (1, "A cat sits on the mat", {"run": "r1"}),
    (2, "Stock markets fell sharply today", {"run": "r1"}),
]

#: A process that opens the index on a folder, adds what it is told, and reports on stdout.
WRITER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from research_mcp.storage.vectors import KnowledgeIndex
    from research_mcp.llm.static_embedder import StaticEmbedder

    folder, first, count, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    hold, collection = sys.argv[5] == "hold", sys.argv[6]
    embedder = StaticEmbedder()
    index = KnowledgeIndex.open(path=folder, embedder=embedder, wait=60, idle_release=None if hold else 0.05)
    rng = np.random.default_rng(first)
    for start in range(first, first + count, batch):
        points = [(i, rng.standard_normal(embedder.dim).astype(np.float32), {"doc_id": i}) for i in range(start, start + batch)]
        index.add_vectors(collection, points)
        if collection == "chunks" and start == first:
            index.optimize("chunks")  # chunks are durable at a flush: the first batch is
        print("wrote", start + batch - first, flush=True)
        if not hold:
            time.sleep(0.1)  # idle: another process may take its turn
    if hold:
        index.optimize(collection)
        print("optimized", flush=True)
        sys.stdin.read()
    index.close()
    print("done", flush=True)
    """
)


def writer(
    folder: Path, first: int, count: int, batch: int, *, hold: bool = False, collection: str = "facts"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(folder),
            str(first),
            str(count),
            str(batch),
            "hold" if hold else "turns",
            collection,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def static_index(folder: Path, **kwargs: object) -> KnowledgeIndex:
    from research_mcp.llm.static_embedder import StaticEmbedder

    return KnowledgeIndex.open(path=folder, embedder=StaticEmbedder(), **kwargs)  # type: ignore[arg-type]


def test_two_processes_writing_to_one_folder_take_turns_and_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    first, second = writer(folder, 1, 300, 50), writer(folder, 10_001, 300, 50)

    outputs = [process.communicate(timeout=120) for process in (first, second)]

    assert [process.returncode for process in (first, second)] == [0, 0], outputs
    with static_index(folder) as after:
        assert after.count("facts") == 600
        assert after.held("facts", [1, 300, 10_001, 10_300]) == {1, 300, 10_001, 10_300}


def test_a_process_holding_the_folder_keeps_another_waiting_then_working_without_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, logger="research_mcp.storage.vectors")
    folder = tmp_path / "vectors"
    with writer(folder, 1, 100, 100, hold=True) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "wrote 100"
        assert holder.stdout.readline().strip() == "optimized"

        index = static_index(folder, wait=0.3)
        assert index.search("facts", "anything") == []  # waited 0.3 s, then went on without it
        assert not index.available  # for a while: no second wait on every call
        index.add("facts", [(500, "Kept in SQLite, indexed later", {})])

        holder.stdin.close()
        assert holder.wait(timeout=60) == 0

    messages = [record.getMessage() for record in caplog.records]
    assert any(
        f"in use by another research-mcp process (pid {holder.pid})" in m and "waiting up to 0 s" in m
        for m in messages
    ), messages
    assert sum("Research continues without it" in m for m in messages) == 1
    assert all("\n" not in m for m in messages)

    monkeypatch.setattr(vectors, "BUSY_PAUSE", 0.0)
    index._paused_until = 0.0  # the pause is over: the next call tries again and gets it
    assert index.count("facts") == 100
    index.close()


def test_an_idle_index_lets_the_folder_go_so_a_second_one_gets_it(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    with KnowledgeIndex.open(path=folder, embedder=default_embedder(), idle_release=0.1) as first:
        first.add("facts", FACTS)
        with KnowledgeIndex.open(path=folder, embedder=default_embedder(), wait=30) as second:
            assert second.count("facts") == 2  # waited until the first was idle
            second.add("facts", [(3, "The kitten slept on the rug", {"run": "r2"})])
        assert first.count("facts") == 3  # and the first has it back


def test_a_kill_during_upserts_loses_no_write_that_returned_and_the_shard_opens(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    with writer(folder, 1, 100_000, 500, hold=True) as process:
        assert process.stdout is not None
        for _ in range(4):
            reported = int(process.stdout.readline().split()[1])
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    with static_index(folder) as after:
        held = after.count("facts")
        assert held >= reported
        assert after.held("facts", [1, reported]) == {1, reported}
        assert len(after.search("facts", "anything", min_score=-1.0, limit=5)) == 5


def test_a_kill_during_chunk_upserts_keeps_what_a_flush_wrote_and_the_shard_opens(tmp_path: Path) -> None:
    # Chunk vectors go without Edge's write-ahead log: a kill loses what came after the last flush,
    # which the corpus's first check in the next process embeds again from SQLite.
    folder = tmp_path / "vectors"
    with writer(folder, 1, 100_000, 500, hold=True, collection="chunks") as process:
        assert process.stdout is not None
        for _ in range(4):
            process.stdout.readline()
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    with static_index(folder) as after:
        assert after.count("chunks") >= 500
        assert after.held("chunks", [1, 500]) == {1, 500}
        assert len(after.search("chunks", "anything", min_score=-1.0, limit=5)) == 5
        after.add_vectors(
            "chunks", [(10**6, np.ones(after.embedder_for("chunks").dim, np.float32), {"doc_id": 1})]
        )
        assert after.held("chunks", [10**6]) == {10**6}


def test_a_kill_during_optimize_leaves_a_shard_that_opens_with_every_point(tmp_path: Path) -> None:
    folder = tmp_path / "vectors"
    with writer(folder, 1, 20_000, 2_000, hold=True) as process:
        assert process.stdout is not None
        for _ in range(10):
            process.stdout.readline()  # every batch written; optimize() starts now
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    with static_index(folder) as after:
        assert after.count("facts") == 20_000
        assert len(after.search("facts", "anything", min_score=-1.0, limit=10)) == 10
        after.optimize("facts")
        assert after.count("facts") == 20_000


def test_a_check_mark_stands_until_a_write_and_is_refused_after_another_processs_write(
    tmp_path: Path,
) -> None:
    from research_mcp.storage.edge import EdgeEngine

    name, one = "research_mcp_chunks_test", np.ones(4, dtype=np.float32)
    first, second = EdgeEngine(tmp_path, wait=10), EdgeEngine(tmp_path, wait=10)
    first.create(name, 4, {}, rebuildable=True)
    first.upsert(name, [(1, one, {})])
    stamp = first.write_stamp(name)
    assert stamp is not None
    first.release()
    second.upsert(name, [(2, one, {})])  # another process writes while the first is checking
    second.release()
    assert not first.mark_checked(name, "v1", stamp)
    assert first.checked_for(name) is None

    stamp = first.write_stamp(name)
    assert stamp is not None
    first.upsert(name, [(3, one, {})])  # its own repair does not count against it
    assert first.mark_checked(name, "v2", stamp)
    first.release()
    assert second.checked_for(name) == "v2"  # seen by another process
    second.delete(name, [3])
    second.release()
    assert first.checked_for(name) is None  # any write removes it
    first.close()
    second.close()


def mapped_under(folder: Path) -> set[str]:
    """The files under `folder` this process has mapped into its memory."""
    maps = Path("/proc/self/maps").read_text().splitlines()
    return {
        line.split()[-1]
        for line in maps
        if len(line.split()) >= 6 and line.split()[-1].startswith(str(folder))
    }


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the process's mappings from /proc")
def test_a_chunk_search_leaves_no_chunk_vector_mapped_and_the_next_search_finds_them_again(
    tmp_path: Path,
) -> None:
    """A run searches the corpus a few times between long extractions; held between searches, the
    mapped chunk vectors (70 MB on /usr/share/doc) were a sixth of a no-key run's peak memory."""
    folder = tmp_path / "vectors"
    rng = np.random.default_rng(7)
    with static_index(folder, idle_release=None) as index:
        points = [
            (i, rng.standard_normal(index._embedders["chunks"].dim).astype(np.float32), {"doc_id": i})
            for i in range(1, 201)
        ]
        index.add_vectors("chunks", points)
        index.optimize("chunks")
        index.add("facts", [(1, "A cat sits on the mat", {"run": "r1"})])
        shard = folder / index._name("chunks")
        assert mapped_under(shard)  # written: open

        first = index.search_vector("chunks", points[41][1], limit=3)
        assert mapped_under(shard) == set()
        assert mapped_under(folder / index._name("facts"))  # the facts a run adds to stay open
        again = index.search_vector("chunks", points[41][1], limit=3)
        assert [hit.id for hit in again] == [hit.id for hit in first] and first[0].id == 42
        assert mapped_under(shard) == set()
