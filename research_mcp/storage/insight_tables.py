"""What sources leave open, kept in the knowledge base with the source: the SQL of `source_insights`.

Each extraction's insights (the follow-up questions its extractor raised, the gaps the source names
itself, the sources it cites) are kept with the source they came from (its id and address), the
extraction and run that found them, their kind and when: once per source, kind and text (a source
read again, by a later run or an iteration, adds nothing new). A later run reads them back
(runs/prior.py) for a leaf whose questions they bear on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from research_mcp.core.citations import normalize
from research_mcp.storage.database import StoreDatabase, marks, now
from research_mcp.storage.models import InsightKind, KnownInsight, NewInsight

__all__ = ["MAX_SCANNED", "InsightTables"]

#: The newest insights a leaf's look-up reads (term matching is done on these, in code).
MAX_SCANNED = 2000

_INSERT = (
    "INSERT OR IGNORE INTO source_insights (source_id, ref, kind, text, context, key, run_id, handoff_id,"
    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class InsightTables(StoreDatabase):
    def add_insights(self, run_id: str | None, handoff_id: str, insights: Sequence[NewInsight]) -> int:
        """Keep one extraction's insights with their source; those the source gave before are not
        kept twice. Returns how many are new."""
        added = 0
        with self.write() as conn:
            for item in insights:
                if not item.text.strip():
                    continue
                cursor = conn.execute(
                    _INSERT,
                    (
                        item.source_id,
                        item.ref,
                        item.kind,
                        item.text,
                        item.context,
                        normalize(item.text),
                        run_id,
                        handoff_id,
                        now(),
                    ),
                )
                added += cursor.rowcount
        return added

    def get_insights(self, insight_ids: Sequence[int]) -> list[KnownInsight]:
        """These insights, in the order given, with their source's title and the questions asked."""
        if not insight_ids:
            return []
        rows = self._rows(f"i.id IN ({marks(insight_ids)})", list(insight_ids), limit=len(insight_ids))
        by_id = {row.id: row for row in rows}
        return [by_id[i] for i in insight_ids if i in by_id]

    def known_insights(
        self, *, kinds: Sequence[InsightKind], not_run: str | None = None
    ) -> list[KnownInsight]:
        """The newest insights of these kinds (at most MAX_SCANNED), but those found by `not_run`."""
        where = f"i.kind IN ({marks(kinds)}) AND (i.run_id IS NULL OR i.run_id != ?)"
        return self._rows(where, [*kinds, not_run or ""], limit=MAX_SCANNED)

    def count_insights(self, run_id: str | None = None) -> int:
        """How many insights the knowledge base keeps (found by `run_id`, when given)."""
        if run_id is None:
            row = self._one("SELECT COUNT(*) AS n FROM source_insights")
        else:
            row = self._one("SELECT COUNT(*) AS n FROM source_insights WHERE run_id = ?", (run_id,))
        return int(row["n"]) if row else 0

    def _rows(self, where: str, params: list[Any], *, limit: int) -> list[KnownInsight]:
        rows = self._all(
            "SELECT i.id, i.source_id, i.ref, i.kind, i.text, i.context, i.run_id, i.handoff_id, i.created_at,"
            " s.title, h.input, COALESCE(r.caller, h.caller) AS owner FROM source_insights i"
            " LEFT JOIN sources s ON s.id = i.source_id LEFT JOIN handoffs h ON h.id = i.handoff_id"
            f" LEFT JOIN runs r ON r.id = i.run_id WHERE {where} ORDER BY i.id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            KnownInsight.model_validate(
                {**row, "title": row["title"] or "", "questions": _questions(row["input"])}
            )
            for row in rows
        ]


def _questions(handoff_input: str | None) -> list[str]:
    questions = json.loads(handoff_input or "{}").get("questions", [])
    return [str(question) for question in questions]
