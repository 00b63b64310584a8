"""The extractive backend: research without a language model, and honest about it.

Each role's output is built by classical retrieval from the role's typed payload (never from the
prose prompt): the planner splits the query by its structure, the extractor quotes the source's
best sentences for each question, the synthesizer groups, merges and cites those facts, and the
scout ranks search results by their scores and metadata. The host's own model writes the prose
from the structured facts it pulls. Usage reports one call, no tokens and no cost.

The same payload gives the same output: there is no sampling, ties break by position, and scores
are rounded before they are compared. (The scout's recency is measured from `today()`.)

The work runs in a worker thread that a cancelled run abandons at once: a Ctrl-C or an MCP cancel
does not wait for it. The thread itself stops at its next batch of embeddings (`CancellableEmbedder`),
so an interrupted process exits within about a second instead of finishing every extraction first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import date
from functools import partial
from typing import Any

import anyio.from_thread
import anyio.to_thread
import numpy as np
from pydantic import BaseModel

from research_mcp.core.contracts import Embedder, ExtractorOutput, PlannerOutput, ScoutOutput, SynthesisOutput
from research_mcp.core.errors import ModelError
from research_mcp.core.role_inputs import ExtractorPayload, PlannerInput, ScoutInput, SynthesisPayload
from research_mcp.llm.base import Generation, ModelRequest, OutputT, Usage
from research_mcp.llm.extractive.extractor import extract
from research_mcp.llm.extractive.planner import plan
from research_mcp.llm.extractive.scout import scout
from research_mcp.llm.extractive.synthesizer import synthesize

__all__ = ["CancellableEmbedder", "ExtractiveModel"]

MODEL_NAME = "extractive"
# Texts embedded between two checks for cancellation (~1 s of CPU on a busy machine for MiniLM).
CANCEL_CHECK_TEXTS = 8


class CancellableEmbedder:
    """An embedder that, in a worker thread whose task was cancelled, stops between small batches."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) <= CANCEL_CHECK_TEXTS:
            _stop_if_cancelled()
            return self.inner.embed(texts)
        parts = []
        for start in range(0, len(texts), CANCEL_CHECK_TEXTS):
            _stop_if_cancelled()
            parts.append(self.inner.embed(texts[start : start + CANCEL_CHECK_TEXTS]))
        return np.concatenate(parts)


def _stop_if_cancelled() -> None:
    """Raise the cancellation of the task that started this worker thread, if it was cancelled."""
    with contextlib.suppress(anyio.NoEventLoopError):  # not in a worker thread: called directly
        anyio.from_thread.check_cancelled()


class ExtractiveModel:
    """A model backend that builds every role output from its payload by retrieval and selection.

    `embedder` adds embedding similarity to lexical (BM25) scoring; without one, scoring is lexical
    only. `today` dates the scout's recency.
    """

    name = "extractive"

    def __init__(self, embedder: Embedder | None = None, *, today: Callable[[], date] = date.today) -> None:
        self.embedder = embedder
        self.today = today
        embedder = CancellableEmbedder(embedder) if embedder is not None else None
        # output model -> (payload model it reads, function building the output from the payload)
        self._registry: dict[type[BaseModel], tuple[type[BaseModel], Callable[[Any], BaseModel]]] = {
            PlannerOutput: (PlannerInput, plan),
            ExtractorOutput: (ExtractorPayload, partial(extract, embedder=embedder)),
            SynthesisOutput: (SynthesisPayload, partial(synthesize, embedder=embedder)),
            ScoutOutput: (ScoutInput, partial(scout, embedder=embedder, today=today)),
        }

    def model_for(self, role: str) -> str:
        return ""  # no model: the same for every role (cache keys made before model_for stay valid)

    async def generate(self, request: ModelRequest[OutputT]) -> Generation[OutputT]:
        entry = self._registry.get(request.output_type)
        if entry is None:
            raise ModelError(
                f"The extractive backend cannot produce {request.output_type.__name__!r} "
                f"(role {request.role!r}); configure a language model backend (anthropic or sampling) for it."
            )
        payload_type, build = entry
        payload = request.payload
        if not isinstance(payload, payload_type):
            got = type(payload).__name__ if payload is not None else "no payload"
            raise ModelError(
                f"The extractive backend needs a {payload_type.__name__} payload for role {request.role!r}, "
                f"got {got}; it works from the role's typed input, not from the prompt."
            )
        # Abandoned on cancel: the run records itself cancelled at once; the thread stops on its own.
        output = await anyio.to_thread.run_sync(build, payload, abandon_on_cancel=True)
        if not isinstance(output, request.output_type):
            raise ModelError(
                f"The extractive backend built {type(output).__name__}, not {request.output_type.__name__}."
            )
        return Generation(output=output, usage=Usage(model=MODEL_NAME, calls=1))
