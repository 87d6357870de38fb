"""Turn claims on LanceDB: which kernel may write a session's turns now, decided by commit order.

Every commit is a new table version and versions are totally ordered, so the claims that
were live at the version just before ours are exactly the ones that came first, whatever
the kernels' clocks say. Claims are only appended (renewals too) and deleted by their own
kernel, because concurrent appends never conflict while upserts of one key can duplicate.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from monad_notebook.errors import StoreError
from monad_notebook.store.base import FORGET_AFTER_SECONDS, Claim, live_claims
from monad_notebook.store.failures import reason
from monad_notebook.store.rows import SCHEMAS, arrow_table, as_row, sql_str

if TYPE_CHECKING:
    from monad_notebook.store.tables import LanceTables


def live(rows: list[dict[str, Any]], now: float) -> list[Claim]:
    return live_claims([Claim(**row) for row in rows], now)


class LanceClaims:
    """The turn claims of every session: the ``Claims`` role, which ``TurnLease`` is handed."""

    def __init__(self, tables: LanceTables) -> None:
        self.tables = tables

    def claim_session(self, claim: Claim) -> list[Claim]:
        where = f"session = {sql_str(claim.session)}"
        row = arrow_table([as_row(claim, "claims")], SCHEMAS["claims"])
        tables = self.tables
        with tables.lock:  # the claims table is optimized under it: the version before ours stays
            version = tables.write("claims", lambda h: h.add(row))
            try:  # on a handle of its own: reads of the shared one run outside the lock
                if version is None:
                    raise StoreError("the write reported no version")
                before = tables.db.open_table("claims")
                before.checkout(version - 1)
                rows = before.search().where(where).select(SCHEMAS["claims"].names).to_arrow().to_pylist()
            except Exception as exc:
                raise StoreError(f"cannot read the claims table at {tables.uri} ({reason(exc)})") from None
        return live(rows, time.time())

    def live_claims(self, session: str) -> list[Claim]:
        return live(self.tables.read("claims", f"session = {sql_str(session)}"), time.time())

    def renew_claim(self, claim: Claim) -> None:
        self.tables.add("claims", [as_row(claim, "claims")])

    def release_claim(self, claim: Claim) -> None:
        forgotten = time.time() - FORGET_AFTER_SECONDS
        self.tables.delete(
            "claims",
            f"session = {sql_str(claim.session)} AND (id = {sql_str(claim.id)} OR expires_at < {forgotten!r})",
        )
