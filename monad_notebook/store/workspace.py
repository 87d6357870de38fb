"""The workspace record on LanceDB: one row per (session, kind, key), upserted, the newest read back.

Concurrent upserts of one key can leave duplicates (``tables.py``), so a read keeps the row
written last of each key.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from monad_notebook.store.base import WorkspaceEntry
from monad_notebook.store.rows import SCHEMAS, arrow_table, sql_str, workspace_from_row, workspace_row

if TYPE_CHECKING:
    from monad_notebook.store.tables import LanceTables

KEY = ["session", "kind", "key"]


class LanceWorkspace:
    """The workspace methods of the Store protocol, and the copy a branch takes."""

    def __init__(self, tables: LanceTables) -> None:
        self.tables = tables

    def save_workspace(self, session: str, entries: list[WorkspaceEntry]) -> None:
        if not entries:
            return
        sql_str(session)
        now = time.time()
        latest = {(e.kind, e.key): e for e in entries}  # one row per key: a merge refuses a batch repeating one
        self._upsert([workspace_row(session, e, now) for e in latest.values()])

    def load_workspace(self, session: str) -> list[WorkspaceEntry]:
        return [workspace_from_row(r) for r in self._latest(session)]

    def copy(self, source: str, target: str) -> None:
        """The source's entries under ``target`` (a branch), in one write."""
        sql_str(target)
        self._upsert([{**row, "session": target} for row in self._latest(source)])

    def _latest(self, session: str) -> list[dict[str, Any]]:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.tables.read("workspace", f"session = {sql_str(session)}"):
            kept = latest.get((row["kind"], row["key"]))
            if kept is None or row["updated_at"] >= kept["updated_at"]:
                latest[(row["kind"], row["key"])] = row
        return list(latest.values())

    def _upsert(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        data = arrow_table(rows, SCHEMAS["workspace"])
        self.tables.write(
            "workspace",
            lambda h: h.merge_insert(KEY).when_matched_update_all().when_not_matched_insert_all().execute(data),
        )
