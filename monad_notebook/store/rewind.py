"""The rewind journal on LanceDB: appended rows, read back in journal order.

A row says what a file under the notebook's directory was before the session's code changed it,
and names its bytes by digest; the bytes themselves live in a content-addressed folder on the
machine that holds the files (``rewind/kept_bytes.py``), so a branch copies rows, not bytes, and a
deleted session's bytes go once no session's rows name them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monad_notebook.store.base import RewindRow
from monad_notebook.store.rows import journal_order, kept_by_rows, rewind_from_row, rewind_row, sql_str

if TYPE_CHECKING:
    from monad_notebook.store.tables import LanceTables


class LanceRewind:
    """The rewind journal (``RewindJournal``), a part of the store handed over whole to the rewind service."""

    def __init__(self, tables: LanceTables) -> None:
        self.tables = tables

    def save_rewind(self, session: str, rows: list[RewindRow]) -> None:
        sql_str(session)
        self.tables.add("rewind", [rewind_row(session, row) for row in rows])

    def load_rewind(self, session: str) -> list[RewindRow]:
        return journal_order(rewind_from_row(r) for r in self.tables.read("rewind", f"session = {sql_str(session)}"))

    def kept_digests(self) -> set[str]:
        by_session: dict[str, list[RewindRow]] = {}
        for row in self.tables.read("rewind", "kind IN ('file', 'dropped') OR path_ref != ''"):
            by_session.setdefault(row["session"], []).append(rewind_from_row(row))
        return {digest for rows in by_session.values() for digest in kept_by_rows(rows)}

    def drop(self, session: str) -> None:
        self.tables.delete("rewind", f"session = {sql_str(session)}")
