"""Small builders for knowledge-base tests: sources, extraction handoffs and facts in a real store."""

from __future__ import annotations

import hashlib

from research_mcp.core.contracts import Fact, Source
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.store import Store


def source(store: Store, ref: str, text: str, *, kind: str = "text") -> Source:
    digest = hashlib.sha256(text.encode()).hexdigest()
    return store.add_source(ref=ref, kind=kind, title=ref, text=text, content_hash=digest)


def extraction(store: Store, questions: list[str], *, run_id: str | None = None) -> str:
    """An extractor handoff asking `questions` (what the facts it finds are cited by)."""
    return store.start_handoff(
        role="extractor", input={"questions": questions}, backend="test", run_id=run_id
    )


def record(
    knowledge: KnowledgeBase,
    found_in: Source,
    statement: str,
    *,
    questions: list[str] | None = None,
    verified: bool = True,
    confidence: float = 0.8,
) -> int:
    """One fact whose quote is the statement itself, found by a new extraction of `found_in`."""
    start = found_in.text.find(statement)
    handoff_id = extraction(knowledge.store, questions or ["What is known?"])
    [fact_id] = knowledge.record_facts(
        None,
        handoff_id,
        [
            Fact(
                source_id=found_in.id,
                statement=statement,
                quote=statement,
                location=(start, start + len(statement)) if verified else None,
                question=(questions or [None])[0],
                confidence=confidence,
                verified=verified,
            )
        ],
    )
    return fact_id
