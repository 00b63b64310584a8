"""The embedded vector engine's settings, measured: Qdrant Edge shards of synthetic vectors, one
process per configuration (and per size), as a table.

Run from the repository root:

    .venv/bin/python -m bench.vector_engine [--points 85000] [--dim 256] [--configs disk ram disk-int8]
    .venv/bin/python -m bench.vector_engine --scaling [--sizes 85000 250000 500000]

Points are seeded unit vectors clustered around 2,000 topics, with a payload like a corpus chunk's (``doc_id``, ``kind``),
upserted in batches of 256 as the index does, then ``optimize()`` (the HNSW index) and ``close()``.
A second process opens the shard and runs 50 queries of the 10 nearest (the first one, which maps
the files, is counted). Figures:

- build s: upserts + optimize + close; open s: ``EdgeShard.load``;
- p50 / p95 ms: one query; recall@10: against an exact (brute-force) search of the same query;
- peak MB: the building process's peak resident memory (VmHWM); open MB: the querying process's
  resident memory after opening and 50 queries (before it: the Python interpreter with numpy and
  qdrant_edge imported, printed as "base MB");
- disk MB: the shard's folder, in blocks used (the WAL's files are sparse).

The configurations: ``disk`` (vectors and payload memory-mapped), ``ram`` (vectors in RAM), ``disk-int8`` (vectors on disk, int8
scalar quantization kept in RAM, rescored from the originals), ``disk-plain`` (as ``disk``, vectors as float16, no
HNSW graph built below 150,000 KB of vectors a segment: searches score every vector; what the index
uses for corpus chunks, and what ``--scaling`` measures).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BATCH = 256
QUERIES = 50


def _vm(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _config(name: str, dim: int) -> Any:
    import qdrant_edge as qe

    quantization = None
    if name == "disk-int8":
        quantization = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, always_ram=True)
    params = qe.EdgeVectorParams(
        size=dim,
        distance=qe.Distance.Cosine,
        on_disk=name != "ram",
        quantization_config=quantization,
        datatype=qe.VectorStorageDatatype.Float16 if name == "disk-plain" else None,
    )
    optimizers = None
    if name == "disk-plain":  # no HNSW graph until a segment holds ~150,000 256-d vectors
        optimizers = qe.EdgeOptimizersConfig(indexing_threshold=150_000)
    return qe.EdgeConfig(vectors={"v": params}, on_disk_payload=True, optimizers=optimizers)


def _vectors(count: int, dim: int, seed: int) -> Any:
    """Unit vectors around 2,000 topics (seeded), as text embeddings cluster; uniform random vectors,
    which no index can search well, would understate what HNSW finds."""
    import numpy as np

    topics = np.random.default_rng(0).standard_normal((2_000, dim)).astype(np.float32)
    rng = np.random.default_rng(seed)
    block = topics[rng.integers(0, len(topics), count)] + 0.6 * rng.standard_normal((count, dim)).astype(
        np.float32
    )
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    return block


def build(path: str, config: str, points: int, dim: int) -> dict[str, float]:
    import qdrant_edge as qe

    started = time.perf_counter()
    shard = qe.EdgeShard.create(path, _config(config, dim))
    for start in range(0, points, BATCH):
        count = min(BATCH, points - start)
        block = _vectors(count, dim, seed=start)
        batch = [
            qe.Point(start + i + 1, {"v": block[i].tolist()}, {"doc_id": (start + i) // 20, "kind": "chunk"})
            for i in range(count)
        ]
        shard.update(qe.UpdateOperation.upsert_points(batch))
    upserted = time.perf_counter()
    shard.optimize()
    shard.close()
    finished = time.perf_counter()
    return {
        "upsert_s": upserted - started,
        "build_s": finished - started,
        "peak_mb": _vm("VmHWM"),
    }


def _params(search: str) -> Any:
    import qdrant_edge as qe

    if search == "exact":
        return qe.SearchParams(exact=True)
    if search.startswith("ef"):
        return qe.SearchParams(hnsw_ef=int(search[2:]))
    return None


def query(path: str, points: int, dim: int, search: str) -> dict[str, float]:
    import numpy as np
    import qdrant_edge as qe

    base = _vm("VmRSS")
    started = time.perf_counter()
    shard = qe.EdgeShard.load(path)
    opened = time.perf_counter() - started
    queries = _vectors(QUERIES, dim, seed=10**9)
    timings, recalls = [], []
    for vector in queries:
        t = time.perf_counter()
        hits = shard.query(
            qe.QueryRequest(
                limit=10,
                query=qe.Query.Nearest(vector.tolist(), using="v"),
                with_payload=True,
                params=_params(search),
            )
        )
        timings.append((time.perf_counter() - t) * 1000)
        exact = shard.query(
            qe.QueryRequest(
                limit=10,
                query=qe.Query.Nearest(vector.tolist(), using="v"),
                params=qe.SearchParams(exact=True),
            )
        )
        recalls.append(len({h.id for h in hits} & {h.id for h in exact}) / 10)
    after = _vm("VmRSS")
    shard.close()
    timings.sort()
    return {
        "open_s": opened,
        "p50_ms": statistics.median(timings),
        "p95_ms": timings[int(len(timings) * 0.95) - 1],
        "recall": float(np.mean(recalls)),
        "base_mb": base,
        "open_mb": after,
    }


def _child(args: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.vector_engine", *args], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _disk_mb(path: Path) -> float:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 1e6  # sparse WAL files


def measure(config: str, points: int, dim: int, searches: list[str]) -> list[dict[str, Any]]:
    folder = Path(tempfile.mkdtemp(prefix="bench-edge-"))
    try:
        shard = str(folder / "shard")
        built = _child(["--child-build", shard, config, str(points), str(dim)])
        rows = []
        for search in searches:
            row: dict[str, Any] = {**built, "search": search, "disk_mb": _disk_mb(folder)}
            row.update(_child(["--child-query", shard, str(points), str(dim), search]))
            rows.append(row)
        return rows
    finally:
        shutil.rmtree(folder, ignore_errors=True)


HEADER = (
    f"{'config':>10} {'search':>7} {'points':>9} {'dim':>4} {'build s':>8} {'open s':>7} {'p50 ms':>7} {'p95 ms':>7} "
    f"{'recall':>6} {'peak MB':>8} {'base MB':>8} {'open MB':>8} {'disk MB':>8}"
)


def line(config: str, points: int, dim: int, r: dict[str, Any]) -> str:
    return (
        f"{config:>10} {r['search']:>7} {points:>9,} {dim:>4} {r['build_s']:>8.1f} {r['open_s']:>7.2f} {r['p50_ms']:>7.1f} "
        f"{r['p95_ms']:>7.1f} {r['recall']:>6.2f} {r['peak_mb']:>8.0f} {r['base_mb']:>8.0f} "
        f"{r['open_mb']:>8.0f} {r['disk_mb']:>8.0f}"
    )


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child-build":
        print(json.dumps(build(argv[1], argv[2], int(argv[3]), int(argv[4]))))
        return
    if argv and argv[0] == "--child-query":
        print(json.dumps(query(argv[1], int(argv[2]), int(argv[3]), argv[4])))
        return
    parser = argparse.ArgumentParser(prog="python -m bench.vector_engine")
    parser.add_argument("--points", type=int, default=85_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--configs", nargs="+", default=["disk", "ram", "disk-int8"])
    parser.add_argument(
        "--search", nargs="+", default=["default", "ef128", "exact"], help="HNSW default, hnsw_ef=N, or exact"
    )
    parser.add_argument("--scaling", action="store_true", help="the index's own setting at several sizes")
    parser.add_argument("--sizes", nargs="+", type=int, default=[85_000, 250_000, 500_000])
    args = parser.parse_args(argv)
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    print(HEADER, flush=True)
    if args.scaling:
        for points in args.sizes:
            for row in measure("disk-plain", points, args.dim, args.search):
                print(line("disk-plain", points, args.dim, row), flush=True)
    else:
        for config in args.configs:
            for row in measure(config, args.points, args.dim, args.search):
                print(line(config, args.points, args.dim, row), flush=True)
    print(f"# load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
