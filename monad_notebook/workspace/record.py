"""The workspace record: what the kernel holds and the files written under the notebook's directory.

Taken from the live kernel, never from conversation text: after each tool call (``take``, with
the call's id) and after each cell the user runs (``after_cell``, with the cell's number). It is
kept in memory and in the store, so no compaction can thin it and a new kernel can tell what the
last one had: a name the record holds that the kernel does not is marked lost, with the call
that made it. Names, columns and paths are redacted before anything keeps them; values never are.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_notebook.events import WORKSPACE_CHANGED, Event
from monad_notebook.store.base import WorkspaceEntry, Workspaces
from monad_notebook.workspace.block import render
from monad_notebook.workspace.description import MAX_COLUMN_CHARS, describe
from monad_notebook.workspace.file_watch import FileChange, FileWatch
from monad_notebook.workspace.snapshot import Change, Snapshot

if TYPE_CHECKING:
    from monad_notebook.redaction.redactor import Redactor

log = logging.getLogger(__name__)

GONE = ("deleted", "lost")


class WorkspaceRecord:
    """One session's record; ``namespace`` is the user namespace the agent's code runs in, ``root`` the
    directory whose files are watched (None: the working directory at each look, which ``%cd`` moves)."""

    def __init__(
        self,
        store: Workspaces,
        session: str,
        namespace: dict[str, Any],
        shell: Any = None,
        root: Any = None,
        *,
        notify: Callable[[Event], None] | None = None,
    ) -> None:
        """``notify`` is told when a user's cell changed the record (pass the session's ``EventBus.emit``: the
        panel lists the workspace again at once, not at the next step)."""
        self.store, self.session, self.notify = store, session, notify
        self.namespace, self.shell, self.root = namespace, shell, root
        self.redactor: Redactor | None = None
        self.enabled = False
        self.calls_readable = True  # read_tool_output is offered: the block says it shows a call's code
        self.turn = 0
        self.entries = {(e.kind, e.key): e for e in store.load_workspace(session)}
        self.seq = max((e.seq for e in self.entries.values()), default=0)
        self.keys: dict[str, str] = {}  # a live name -> its key in the record (the name, redacted)
        self.snapshot, self.files = Snapshot(), FileWatch()
        self.pending: dict[tuple[str, str], WorkspaceEntry] = {}
        self.started = False

    def reconfigure(self, enabled: bool, redactor: Redactor | None, *, calls_readable: bool = True) -> None:
        """The configuration in force; turned on, the namespace as it is now is the baseline."""
        self.enabled, self.redactor, self.calls_readable = enabled, redactor, calls_readable
        if not enabled:
            self.files.stop()
            self.started = False
        elif not self.started:
            self.start()

    def start(self) -> None:
        """Look at the kernel for the first time: what is there keeps the provenance the record gives it (else
        none: it was there before), and what the record holds that the kernel does not is lost."""
        self.started = True
        self.snapshot.forget()
        self.keys = {}
        changes = self.snapshot.take(self.namespace, self._hidden())
        for change, key in zip(changes, self._redact([c.name for c in changes]), strict=True):
            self.keys[change.name] = key
            known = self.entries.get(("name", key))
            state = "bound" if known is None or known.state in GONE else known.state
            self._note(self._described(change, key, state, known), keep=known)
        live = set(self.keys.values())
        for entry in list(self.entries.values()):
            if entry.kind == "name" and entry.state not in GONE and entry.key not in live:
                self._note(replace(entry, state="lost"), keep=entry)
        root = self._root()
        if root is not None:
            self.files.start(root)
        self.save()

    def take(self, made_by: str) -> list[WorkspaceEntry]:
        """What changed since the last look, each entry made by ``made_by`` (a tool call's id, "cell 14")."""
        if not self.enabled:
            return []
        if not self.started:
            self.start()
            return []
        try:
            changes = self.snapshot.take(self.namespace, self._hidden())
            root = self._root()
            files = self.files.changes(root) if root is not None else []
        except Exception as exc:  # an object whose type lies, a directory gone: the call itself still stands
            log.warning("the workspace record skipped a look at the kernel: %s", exc)
            return []
        keys = self._redact([c.name for c in changes] + [f.path for f in files])
        made = [self._name_entry(c, k, made_by) for c, k in zip(changes, keys[: len(changes)], strict=True)]
        made += [self._file_entry(f, k, made_by) for f, k in zip(files, keys[len(changes) :], strict=True)]
        return made

    def after_cell(self, result: Any) -> None:
        """IPython's ``post_run_cell``: a cell the user ran (the agent's own code runs without history: skipped)."""
        info = getattr(result, "info", None)
        if not self.enabled or (info is not None and not getattr(info, "store_history", True)):
            return
        cell = f"cell {getattr(result, 'execution_count', None) or '?'}"
        made = self.take(cell)
        self.save()
        if made and self.notify is not None:
            names = sum(1 for entry in made if entry.kind == "name")
            data = {"made_by": cell, "names": names, "files": len(made) - names}
            self.notify(Event(WORKSPACE_CHANGED, self.session, data))

    def save(self) -> None:
        """Write what changed since the last write, in one write."""
        if self.pending:  # kept until written: a failed write is tried again at the next save
            self.store.save_workspace(self.session, list(self.pending.values()))
            self.pending = {}

    def forget(self) -> None:
        """The session was reset: the record starts over from the kernel as it is."""
        self.entries, self.pending, self.seq = {}, {}, 0
        if self.enabled:
            self.start()

    # --- reading ----------------------------------------------------------------------

    def live(self) -> tuple[list[WorkspaceEntry], list[WorkspaceEntry], list[WorkspaceEntry]]:
        """Names the kernel holds now, files still there, names lost: each newest first (none while off)."""
        if not self.enabled:
            return [], [], []
        present = {key for name, key in self.keys.items() if name in self.namespace}
        root = self._root()
        names, files, lost = [], [], []
        for entry in sorted(self.entries.values(), key=lambda e: -e.seq):
            if entry.kind == "file":
                if root is not None and (root / entry.key).is_file():
                    files.append(entry)
            elif entry.state == "lost":
                lost.append(entry)
            elif entry.state != "deleted" and entry.key in present:
                names.append(entry)
        return names, files, lost

    def block(self, count_text: Callable[[str], int], max_tokens: int) -> str:
        """The ``<workspace>`` block for the next request ("" while the record is off or empty)."""
        return render(*self.live(), count_text, max_tokens, calls_readable=self.calls_readable) if self.enabled else ""

    def provenance(self, name: str) -> WorkspaceEntry | None:
        """The record's entry for a live name (what made it, at which turn), if it has one."""
        key = self.keys.get(name)
        return self.entries.get(("name", key)) if key is not None else None

    def status(self) -> dict[str, Any]:
        """What ``%monad status`` says: how much the record holds, and the names a restart lost."""
        if not self.enabled:
            return {"workspace_names": None}
        names, files, lost = self.live()
        return {
            "workspace_names": len(names),
            "workspace_files": len(files),
            "workspace_lost": [(e.key, e.made_by, e.turn) for e in lost],
        }

    # --- entries ----------------------------------------------------------------------

    def _name_entry(self, change: Change, key: str, made_by: str) -> WorkspaceEntry:
        if change.state == "deleted":
            self.keys.pop(change.name, None)
            known = self.entries.get(("name", key)) or WorkspaceEntry("name", key)
            return self._note(replace(known, state="deleted", made_by=made_by, turn=self.turn))
        self.keys[change.name] = key
        entry = self._described(change, key, change.state, None)
        return self._note(replace(entry, made_by=made_by, turn=self.turn))

    def _file_entry(self, change: FileChange, key: str, made_by: str) -> WorkspaceEntry:
        size = f"{change.size:,} byte" + ("" if change.size == 1 else "s")
        entry = WorkspaceEntry("file", key, "file", size, state=change.state)
        return self._note(replace(entry, made_by=made_by, turn=self.turn))

    def _described(self, change: Change, key: str, state: str, known: WorkspaceEntry | None) -> WorkspaceEntry:
        """The entry for a live name: its type, size and columns, each redacted whole, then shortened.

        A type is any class's name and a shape holds a dtype's field names: both are text a user
        chose, as a column's name is.
        """
        about = describe(change.value)
        kind, shape, *columns = self._redact([about.type, about.shape, *about.columns])
        columns = [column[:MAX_COLUMN_CHARS] for column in columns]
        made_by, turn = (known.made_by, known.turn) if known is not None else ("", self.turn)
        return WorkspaceEntry("name", key, kind, shape, columns, about.columns_total, state, made_by, turn)

    def _note(self, entry: WorkspaceEntry, keep: WorkspaceEntry | None = None) -> WorkspaceEntry:
        """Keep ``entry`` (to be written at the next save); one the record already held unchanged is not news."""
        if keep is not None and replace(keep, seq=0) == replace(entry, seq=0):
            return keep
        self.seq += 1
        entry = replace(entry, seq=self.seq)
        self.entries[(entry.kind, entry.key)] = self.pending[(entry.kind, entry.key)] = entry
        return entry

    def _redact(self, texts: list[str]) -> list[str]:
        """Each text on one line (the block lists one entry a line), redacted whole, all in one pass."""
        lines = [text.replace("\n", " ") for text in texts]
        return self.redactor.redact_each(lines) if self.redactor is not None else lines

    def _hidden(self) -> dict[str, Any]:
        return getattr(self.shell, "user_ns_hidden", None) or {}

    def _root(self) -> Path | None:
        """The directory watched now; None while the working directory is gone (deleted under the kernel)."""
        try:
            return Path(self.root or os.getcwd()).expanduser().resolve()
        except OSError:
            return None
