"""What the magics say of rewind: the rebuild offered after a restart, the kept bytes swept after a deletion."""

from __future__ import annotations

from collections.abc import Sequence

from monad_notebook.rewind.kept_bytes import KeptBytes, kept_folder
from monad_notebook.store.base import RewindJournal, WorkspaceEntry

SHOWN = 5


def rebuild_offer(lost: Sequence[WorkspaceEntry]) -> str:
    """The line the first monad command in a new kernel prints when the session's record lists lost names."""
    names = [entry.key for entry in lost]
    if not names:
        return ""
    more = f", +{len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return (
        f"monad: this kernel lost {len(names)} name(s) the session's record lists ({', '.join(names[:SHOWN])}{more}): "
        "%monad rebuild reruns the code that made them, after you approve it"
    )


def sweep_kept(store: RewindJournal, configured: str | None) -> int:
    """Remove the kept bytes no session's journal names any more (a deleted session's); bytes freed."""
    uri = getattr(store, "uri", "")
    return KeptBytes(kept_folder(uri if isinstance(uri, str) else "", configured)).sweep(store.kept_digests())
