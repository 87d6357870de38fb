"""The rewind journal of one session: its epochs, and what each change found just before it acted.

An epoch is a turn, a restore or a rebuild, numbered by the journal's own clock (``seq``), which
also orders every change. Turn numbers may come back (a conversation rewound to before turn 5 goes
on with a new turn 5), so a restore to before turn T starts at the latest epoch of turn T, and
undoes every epoch from there on, whatever they were. A file's rows are written to the store (a
rewind works after a kernel restart: the files are still there); what names held is kept in this
kernel's memory only (a restart loses the values anyway: ``rebuild.py`` is the way back then).

Rows are written in one append per change that touched a file, with the epochs begun since the last
write; a turn that touched no file writes nothing. A kernel that dies during a call loses the rows
of that call (its kept bytes stay, and are swept once no row names them).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from monad_notebook.rewind.file_keeper import Touched
from monad_notebook.rewind.kept_values import NameChange
from monad_notebook.store.base import RewindJournal, RewindRow

DROPPED_BYTES = "its bytes were dropped to keep the session's kept bytes within rewind.maxSessionBytes"
DROPPED_VALUE = "dropped to keep the session's kept values within rewind.maxValuesBytes"


@dataclass(frozen=True)
class Epoch:
    """A turn, a restore or a rebuild: ``seq`` orders it, ``turn`` is the turn it belongs to."""

    seq: int
    kind: str  # turn | restore | rebuild
    turn: int
    at: float


@dataclass
class NameRecord:
    """One name one change touched, in this kernel's memory."""

    seq: int
    epoch: int
    made_by: str
    change: NameChange


class Journal:
    """Epochs, file rows (as stored) and name records (in memory) of one session, in journal order."""

    def __init__(self, store: RewindJournal, session: str) -> None:
        self.store, self.session = store, session
        self.host = socket.gethostname()
        self.pending: list[RewindRow] = []
        self.load()

    def load(self) -> None:
        rows = self.store.load_rewind(self.session)
        dropped = {r.epoch for r in rows if r.kind == "dropped"}
        self.epochs = [Epoch(r.seq, r.label, r.turn, r.at) for r in rows if r.kind == "epoch"]
        self.files = [
            replace(r, before="unkept", note=DROPPED_BYTES) if r.seq in dropped else r for r in rows if r.kind == "file"
        ]
        self.kernels = [r for r in rows if r.kind == "kernel"]
        self.names: list[NameRecord] = []
        self.codes: dict[str, str] = {}  # a call's id or "cell 12" -> the code it ran (this kernel's)
        self.seq = max((r.seq for r in rows), default=0)
        self.added: dict[int, int] = {}  # epoch -> bytes its keeps added to the folder (this kernel's)
        self.paths: dict[int, set[str]] = {}  # epoch -> the real paths it touched (this kernel's)

    def tick(self) -> int:
        self.seq += 1
        return self.seq

    # --- epochs -----------------------------------------------------------------------

    @property
    def current(self) -> Epoch | None:
        return self.epochs[-1] if self.epochs else None

    def begin(self, kind: str, turn: int) -> Epoch:
        epoch = Epoch(self.tick(), kind, turn, time.time())
        self.epochs.append(epoch)
        self.pending.append(RewindRow("epoch", epoch.seq, epoch.seq, turn, kind, host=self.host, at=epoch.at))
        return epoch

    def running(self, turn: int) -> Epoch:
        """The epoch of the turn running now: the current one if it is that turn's, else a new one."""
        current = self.current
        if current is not None and current.kind == "turn" and current.turn == turn:
            return current
        return self.begin("turn", turn)

    def of_turn(self, turn: int) -> Epoch:
        """The latest epoch of ``turn`` (a cell it proposed runs after it ended), begun if there is none."""
        found = [e for e in self.epochs if e.kind == "turn" and e.turn == turn]
        return found[-1] if found else self.begin("turn", turn)

    def before_turn(self, turn: int) -> Epoch | None:
        """Where a restore to before ``turn`` starts: its latest epoch; if it changed nothing, the first epoch of a
        later turn after the last epoch of an earlier one; None when nothing came after."""
        turns = [i for i, e in enumerate(self.epochs) if e.kind == "turn"]
        labelled = [i for i in turns if self.epochs[i].turn == turn]
        if labelled:
            return self.epochs[labelled[-1]]
        earlier = [i for i in turns if self.epochs[i].turn < turn]
        start = earlier[-1] + 1 if earlier else 0
        return next((e for e in self.epochs[start:] if e.kind != "turn" or e.turn > turn), None)

    def epoch(self, seq: int) -> Epoch | None:
        return next((e for e in self.epochs if e.seq == seq), None)

    # --- changes ----------------------------------------------------------------------

    def add_files(
        self, epoch: Epoch, made_by: str, root: str, touched: list[Touched], key_of: Callable[[str], tuple[str, str]]
    ) -> list[RewindRow]:
        """Rows for the files a change touched; ``key_of(path)`` is (the key to store, the real path's ref)."""
        rows = []
        for item in touched:
            key, ref = key_of(item.path)
            state = item.state
            rows.append(
                RewindRow(
                    "file", self.tick(), epoch.seq, epoch.turn, made_by, key, root, state.before, state.digest,
                    state.size, item.after, state.note, ref, self.host, time.time(),
                )
            )  # fmt: skip
            self.added[epoch.seq] = self.added.get(epoch.seq, 0) + state.added
            self.paths.setdefault(epoch.seq, set()).add(item.path)
        self.files.extend(rows)
        self.pending.extend(rows)
        return rows

    def add_names(self, epoch: Epoch, made_by: str, changes: list[NameChange]) -> None:
        self.names.extend(NameRecord(self.tick(), epoch.seq, made_by, change) for change in changes)

    def epoch_paths(self, epoch: Epoch) -> set[str]:
        """The files an epoch has touched already (their state before it is kept), by real path; the set itself,
        which a change adds to."""
        return self.paths.setdefault(epoch.seq, set())

    def since(self, epoch: Epoch) -> tuple[list[RewindRow], list[NameRecord]]:
        """The file rows and name records of ``epoch`` and every epoch after it."""
        after = {e.seq for e in self.epochs if e.seq >= epoch.seq}
        return [r for r in self.files if r.epoch in after], [n for n in self.names if n.epoch in after]

    def note_kernel(self, history_session: int, pid: int) -> None:
        """This kernel runs the session: its IPython history session is where a rebuild finds the user's cells."""
        row = RewindRow(
            "kernel", self.tick(), 0, turn=history_session, label=f"pid {pid}", host=self.host, at=time.time()
        )
        self.kernels.append(row)
        self.pending.append(row)

    def flush(self) -> None:
        """Write what is pending, in one write; kept for the next flush if it fails."""
        if self.pending:
            rows, self.pending = self.pending, []
            try:
                self.store.save_rewind(self.session, rows)
            except BaseException:
                self.pending = rows + self.pending
                raise

    # --- bounds -----------------------------------------------------------------------

    def kept_file_bytes(self) -> int:
        """Bytes of the distinct objects this session's rows keep."""
        return sum({r.digest: r.size for r in self.files if r.before == "kept"}.values())

    def drop_oldest_files(self, keep: Epoch | None) -> list[str]:
        """Drop the kept bytes of the oldest epoch that has any (never ``keep``'s); the digests no row keeps now."""
        epochs = sorted({r.epoch for r in self.files if r.before == "kept" and (keep is None or r.epoch != keep.seq)})
        if not epochs:
            return []
        oldest = epochs[0]
        dropped = [r for r in self.files if r.epoch == oldest and r.before == "kept"]
        for row in dropped:
            self.pending.append(RewindRow("dropped", self.tick(), row.seq, row.turn, digest=row.digest, at=time.time()))
        gone = {r.seq for r in dropped}
        self.files = [replace(r, before="unkept", note=DROPPED_BYTES) if r.seq in gone else r for r in self.files]
        still = {r.digest for r in self.files if r.before == "kept"}
        return sorted({r.digest for r in dropped} - still)

    def kept_value_bytes(self) -> int:
        return sum(n.change.size for n in self.names if n.change.before == "kept")

    def drop_oldest_values(self, keep: Epoch | None) -> bool:
        """Let go of the kept values of the oldest epoch that has any (never ``keep``'s); False when none is left."""
        epochs = sorted(
            {n.epoch for n in self.names if n.change.before == "kept" and (keep is None or n.epoch != keep.seq)}
        )
        if not epochs:
            return False
        for record in self.names:
            if record.epoch == epochs[0] and record.change.before == "kept":
                record.change = replace(record.change, before="unkept", value=None, why=DROPPED_VALUE)
        return True
