"""The workspace record on LanceDB: appended rows, the newest of each (session, kind, key) read back.

Rows are appended, never updated in place: a step's write is an append, which never conflicts
with the background optimize (an upsert rewrites rows, and a compaction running meanwhile has
to give way), and a read keeps the row of each key the record touched last (its ``seq``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from monad_notebook.store.base import WorkspaceEntry
from monad_notebook.store.rows import sql_str, workspace_from_row, workspace_row

if TYPE_CHECKING:
    from monad_notebook.store.tables import LanceTables


class LanceWorkspace:
    """The workspace record of every session: the ``Workspaces`` role."""

    def __init__(self, tables: LanceTables) -> None:
        self.tables = tables

    def save_workspace(self, session: str, entries: list[WorkspaceEntry]) -> None:
        sql_str(session)
        now = time.time()
        latest = {(e.kind, e.key): e for e in entries}  # one row per key and write
        self.tables.add("workspace", [workspace_row(session, e, now) for e in latest.values()])

    def load_workspace(self, session: str, *, before_turn: int | None = None) -> list[WorkspaceEntry]:
        return [workspace_from_row(r) for r in self._latest(session, before_turn)]

    def drop(self, session: str) -> None:
        self.tables.delete("workspace", f"session = {sql_str(session)}")

    def _latest(self, session: str, before_turn: int | None = None) -> list[dict[str, Any]]:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        where = f"session = {sql_str(session)}" + (f" AND turn < {int(before_turn)}" if before_turn is not None else "")
        for row in self.tables.read("workspace", where):
            kept = latest.get((row["kind"], row["key"]))
            if kept is None or (row["seq"], row["updated_at"]) >= (kept["seq"], kept["updated_at"]):
                latest[(row["kind"], row["key"])] = row
        return list(latest.values())
