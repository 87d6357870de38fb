"""``KernelRewind``: the session's service that keeps what its code changes in the kernel, and puts it back.

The session makes one, the tool runner opens a ``Change`` around each call that may change anything,
and a restore undoes every change from a turn on (``restore.py``). See the package's docstring for
how the conversation side calls it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_notebook.config_schema import RewindConfig
from monad_notebook.errors import StoreError
from monad_notebook.rewind import file_guard
from monad_notebook.rewind.file_keeper import FileChanges, FileKeeper
from monad_notebook.rewind.journal import Epoch, Journal
from monad_notebook.rewind.kept_bytes import KeptBytes, kept_folder
from monad_notebook.rewind.kept_values import ValueNotes
from monad_notebook.rewind.restore import FileRestore, RestoreReport, restore_names
from monad_notebook.store.base import RewindJournal, RewindRow

if TYPE_CHECKING:
    from monad_notebook.redaction.redactor import Redactor
    from monad_notebook.workspace.record import WorkspaceRecord

log = logging.getLogger(__name__)
DROP_GRACE = 60.0  # seconds: an object dropped from this session may still be kept by another kernel meanwhile


class Change:
    """One change of the kernel by the session's code (a tool call, an accepted cell): open while it runs.

    Use it as a context manager, or call ``finish()`` once the code is done (IPython's ``post_run_cell``).
    ``notes`` are the lines the user and the model should read (a file too large to keep).
    """

    def __init__(self, rewind: KernelRewind, epoch: Epoch, made_by: str, code: str) -> None:
        self.rewind, self.epoch, self.made_by, self.code = rewind, epoch, made_by, code
        self.notes: list[str] = []
        self.done = False
        self.root = rewind.root_now()
        ns = rewind.namespace
        self.values = ValueNotes(ns, rewind.hidden(), code, rewind.config.max_value_bytes)
        self.earlier = {name: rewind.provenance(name) for name in self.values.noted}  # before the code remakes them
        self.files: FileChanges | None = None
        if self.root is not None:
            self.files = rewind.keeper.begin(self.root, rewind.journal.epoch_paths(epoch), code, ns)

    def __enter__(self) -> Change:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()

    def finish(self) -> None:
        """What the code did, recorded (the files' rows written in one write); a second call does nothing. A
        problem of the keeping's own is logged, never raised into the call it kept."""
        if self.done:
            return
        self.done = True
        try:
            self._record()
        except Exception as exc:
            file_guard.disarm()
            log.warning("rewind could not record what %s changed: %s", self.made_by, exc)

    def _record(self) -> None:
        rewind, journal = self.rewind, self.rewind.journal
        touched = self.files.finish() if self.files is not None else []
        changes = self.values.changes()
        for change in changes:
            change.earlier_made_by, change.earlier_turn = self.earlier.get(change.name, ("", 0))
        journal.add_names(self.epoch, self.made_by, changes)
        if changes and self.code:
            journal.codes[self.made_by] = self.code
        rewind.bound_values(self.epoch)
        if touched and self.root is not None:
            journal.add_files(self.epoch, self.made_by, str(self.root), touched, rewind.key_of)
            self.notes = [f"{t.path}: {t.state.note}; a rewind cannot bring back its earlier bytes"
                          for t in touched if t.state.before == "unkept"]  # fmt: skip
            rewind.flush()  # a call that touched no file writes nothing: its epoch goes with the next write


class KernelRewind:
    """One session's rewind, kernel side: files under the notebook's directory and names in its namespace."""

    def __init__(
        self,
        store: RewindJournal,
        session: str,
        namespace: dict[str, Any],
        shell: Any = None,
        root: str | Path | None = None,
        *,
        turn: Callable[[], int] = lambda: 0,
        workspace: WorkspaceRecord | None = None,
    ) -> None:
        """``turn()`` is the number of the turn running now (the window's); ``workspace`` tells who made a name."""
        self.store, self.session, self.namespace, self.shell, self.root = store, session, namespace, shell, root
        self.turn, self.workspace = turn, workspace
        self.config = RewindConfig()
        self.enabled = False
        self.redactor: Redactor | None = None
        self.journal = Journal(store, session)
        self.kept = KeptBytes(kept_folder("", None))
        self.keeper = FileKeeper(self.kept, self.config.max_file_bytes, self.room_for)
        self._kernel_noted = False

    def reconfigure(self, config: RewindConfig, redactor: Redactor | None, store_uri: str) -> None:
        """The configuration in force (``rewind``), the session's redactor, and where the store is."""
        self.config, self.enabled, self.redactor = config, config.enabled, redactor
        self.kept.folder = kept_folder(store_uri, config.kept_dir)
        self.keeper.max_file_bytes = config.max_file_bytes
        if self.enabled and not self._kernel_noted:
            self._note_kernel()

    # --- the turn -----------------------------------------------------------------------

    def begin_turn(self, turn: int) -> Epoch:
        """A turn begins (optional: a change finds its turn through ``turn()``); its epoch."""
        return self.journal.running(turn)

    def change(self, made_by: str, code: str = "", *, turn: int | None = None) -> Change | None:
        """Open a change around code about to run: ``made_by`` a call's id or "cell 12", ``code`` what runs,
        ``turn`` the turn it belongs to (default: the one running now). None while rewind is off."""
        if not self.enabled:
            return None
        epoch = self.journal.running(self.turn()) if turn is None else self.journal.of_turn(turn)
        return self._opened(epoch, made_by, code)

    def _opened(self, epoch: Epoch, made_by: str, code: str) -> Change | None:
        """A change opened, or None when the keeping itself failed (logged: the code runs all the same)."""
        try:
            return Change(self, epoch, made_by, code)
        except Exception as exc:
            file_guard.disarm()
            log.warning("rewind keeps nothing of what %s changes: %s", made_by, exc)
            return None

    def cell_keeper(self) -> Callable[[str], Callable[[], None] | None]:
        """For a cell the agent queues in this turn: when it runs (after the turn), what it changes is kept as this
        turn's, made by "cell N"; the keeper returns what ends the keeping (None while rewind is off)."""
        turn = self.turn()

        def keep(code: str) -> Callable[[], None] | None:
            number = getattr(self.shell, "execution_count", None)
            change = self.change(f"cell {number if type(number) is int else '?'}", code, turn=turn)
            return change.finish if change is not None else None

        return keep

    def change_in(self, epoch: Epoch, made_by: str, code: str = "") -> Change | None:
        """A change of a given epoch (a rebuild's steps); None while rewind is off."""
        return self._opened(epoch, made_by, code) if self.enabled else None

    def begin_rebuild(self) -> Epoch:
        return self.journal.begin("rebuild", self.turn())

    # --- restoring ----------------------------------------------------------------------

    def restore(self, before_turn: int) -> RestoreReport:
        """Put back every file and name turn ``before_turn`` and the epochs after it changed (see ``restore.py``)."""
        epoch = self.journal.before_turn(before_turn)
        if epoch is None:
            return RestoreReport(0, self.journal.current or _NOTHING)
        return self.restore_to(epoch.seq)

    def restore_to(self, epoch_seq: int) -> RestoreReport:
        """Undo every epoch from ``epoch_seq`` on (a turn's, or a restore's: that undoes the restore)."""
        epoch = self.journal.epoch(epoch_seq)
        if epoch is None:
            raise ValueError(f"no epoch {epoch_seq} in this session's rewind journal")
        files, names = self.journal.since(epoch)
        own = self.journal.begin("restore", self.turn())
        report = RestoreReport(own.seq, epoch)
        for root, touched in FileRestore(self.kept, report, self.real_path).run(files).items():
            self.journal.add_files(own, f"restore r{own.seq}", root, touched, self.key_of)
        self.journal.add_names(
            own, f"restore r{own.seq}", restore_names(names, self.namespace, self.hidden(), report, self.provenance)
        )
        report.names_not_restored = [replace(n, code=self.code_of(n.made_by)) for n in report.names_not_restored]
        self.bound_values(own)
        self.flush()
        return report

    def undo(self, report: RestoreReport) -> RestoreReport:
        """Undo a restore: everything it moved, wrote or removed goes back as it was just before it."""
        return self.restore_to(report.epoch) if report.epoch else RestoreReport(0, report.to)

    # --- what the parts ask -------------------------------------------------------------

    def provenance(self, name: str) -> tuple[str, int]:
        """Who made the value a name holds now, and at which turn (the workspace record's word)."""
        entry = self.workspace.provenance(name) if self.workspace is not None else None
        return (entry.made_by, entry.turn) if entry is not None else ("", 0)

    def code_of(self, made_by: str) -> str:
        """The code a call or cell of this kernel ran ("" when not known here): what made an earlier value."""
        if made_by in self.journal.codes:
            return self.journal.codes[made_by]
        history = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        number = made_by.removeprefix("cell ")
        known = isinstance(history, list) and number.isdigit() and int(number) < len(history)
        return str(history[int(number)]) if made_by.startswith("cell ") and known else ""

    def hidden(self) -> dict[str, Any]:
        return getattr(self.shell, "user_ns_hidden", None) or {}

    def root_now(self) -> Path | None:
        try:
            return Path(self.root or os.getcwd()).expanduser().resolve()
        except OSError:
            return None

    def key_of(self, path: str) -> tuple[str, str]:
        """The key a path is stored under (redacted whole) and, when redaction changed it, its real path's digest
        in the kept folder (the real path stays on this machine)."""
        key = self.redactor.redact(path).text if self.redactor is not None else path
        return (key, "") if key == path else (key, self.kept.keep_text(path))

    def real_path(self, row: RewindRow) -> str | None:
        return self.kept.read_text(row.path_ref) if row.path_ref else row.key

    def room_for(self, size: int) -> bool:
        """Whether ``size`` more bytes may be kept; the oldest turns' bytes are dropped to make room."""
        journal, dropped = self.journal, []
        while journal.kept_file_bytes() + size > self.config.max_session_bytes:
            gone = journal.drop_oldest_files(keep=journal.current)
            if not gone and journal.kept_file_bytes() + size > self.config.max_session_bytes:
                break
            dropped += gone
        if dropped:
            self.flush()
            self.kept.sweep(self.store.kept_digests(), only=dropped, grace=DROP_GRACE)
        return journal.kept_file_bytes() + size <= self.config.max_session_bytes

    def bound_values(self, current: Epoch) -> None:
        """Keep the kept values within ``rewind.maxValuesBytes``, the oldest turns' let go first."""
        while self.journal.kept_value_bytes() > self.config.max_values_bytes:
            if not self.journal.drop_oldest_values(keep=current):
                break

    def flush(self) -> None:
        try:
            self.journal.flush()
        except StoreError as exc:  # kept pending: the next change's write takes them along
            log.warning("the rewind journal was not saved (tried again after the next change): %s", exc)

    def forget(self) -> None:
        """The session was reset: its journal starts over (its rows went with the reset)."""
        self.journal.load()

    def _note_kernel(self) -> None:
        history = getattr(self.shell, "history_manager", None)
        number = getattr(history, "session_number", None)
        if type(number) is int and number > 0:
            self.journal.note_kernel(number, os.getpid())
            self.flush()
        self._kernel_noted = True


_NOTHING = Epoch(0, "turn", 0, 0.0)
