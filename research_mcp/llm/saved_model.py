"""The optimized embedding model, saved once and mapped by every later process.

onnxruntime folds MiniLM's int8 weights into float32 when it builds a session: about 250 MB of
transient memory and a second each process. The first build saves the optimized graph, its weights
in a file of their own at aligned offsets, in a cache folder; a later session maps that file
(`MiniLMEmbedder._session`). The folder is named by what the optimized model depends on, and
written beside its final place and renamed into it, so a reader never sees half of one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import tempfile
from pathlib import Path

__all__ = [
    "GRAPH",
    "SOURCE",
    "WEIGHTS",
    "default_cache_dir",
    "folder_for",
    "load_errors",
    "publish",
    "staging_folder",
]

logger = logging.getLogger(__name__)


def load_errors() -> tuple[type[Exception], ...]:
    """What a model file onnxruntime cannot read or write raises (its own types are no OSError)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    return (
        state.Fail,
        state.InvalidProtobuf,
        state.NoSuchFile,
        state.InvalidArgument,
        state.RuntimeException,
        OSError,
    )


#: The optimized model's graph and its weights, as the first build saves them in the cache folder.
GRAPH = "model.onnx"
WEIGHTS = "model.weights"
#: The rewritten model a build optimizes (integer_model.py), removed once the build saved GRAPH.
SOURCE = "source.onnx"


def default_cache_dir() -> Path:
    """Where the optimized embedding model is kept between processes: RESEARCH_MCP_CACHE_DIR, else
    the user's cache folder (not the data folder: it is derived, and as large as the model)."""
    configured = os.environ.get("RESEARCH_MCP_CACHE_DIR")
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("research-mcp", appauthor=False))


def folder_for(cache_dir: Path, model_path: Path, kind: str = "") -> Path:
    """The folder of the optimized model made from `model_path`: named by the model file's digest,
    onnxruntime's version and the machine (an optimized graph may hold kernels of this CPU's kind),
    and by `kind`, the form it was rewritten to before optimizing ("" for none)."""
    import onnxruntime

    digest = hashlib.sha256()
    with model_path.open("rb") as model:
        for block in iter(lambda: model.read(1 << 20), b""):
            digest.update(block)
    name = f"minilm-{kind + '-' if kind else ''}{digest.hexdigest()[:16]}-ort{onnxruntime.__version__}"
    name += f"-{platform.machine()}"
    return cache_dir / name


def staging_folder(saved: Path) -> Path | None:
    """A fresh folder beside `saved` for a build to write into, or None where nothing can be written."""
    try:
        saved.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{saved.name}.", dir=saved.parent))
    except OSError:
        logger.info("no cache folder for the embedding model at %s; it is built each process", saved.parent)
        return None


def publish(staging: Path, saved: Path) -> None:
    """Move a complete saved model into place in one rename; another process may have done it first."""
    try:
        if (staging / GRAPH).is_file() and (staging / WEIGHTS).is_file():
            (staging / SOURCE).unlink(missing_ok=True)  # the rewritten input, folded into GRAPH now
            staging.chmod(0o755)  # mkdtemp made it private; the cache folder's others are not
            staging.rename(saved)
            return
    except OSError:
        pass  # published by another process meanwhile, or not writable: this one's copy goes
    shutil.rmtree(staging, ignore_errors=True)
