"""The no-model backend as the extractive tests take it: lexical alone, and with MiniLM."""

from __future__ import annotations

from datetime import date

import pytest

from research_mcp.core.contracts import Embedder
from research_mcp.llm.embeddings import default_embedder
from research_mcp.llm.extractive import ExtractiveModel


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    embedder = default_embedder()
    embedder.embed(["probe"])
    return embedder


@pytest.fixture(params=["lexical", "lexical+minilm"])
def model(request: pytest.FixtureRequest) -> ExtractiveModel:
    embedder = request.getfixturevalue("minilm") if request.param == "lexical+minilm" else None
    return ExtractiveModel(embedder, today=lambda: date(2025, 6, 1))
