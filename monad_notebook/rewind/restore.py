"""A restore: every file and name the undone epochs changed, put back as it was before the first of them.

Only what the journal says the undone epochs changed is touched; a file or name they never touched is
never read, moved or written. For each file, the state before its earliest change among them is the
target: bytes kept (written back whole, byte for byte), absent (the file they created is moved aside,
never deleted), or not kept (left as it is, and said why). Nothing is overwritten in place: what a
file holds now is first moved aside into ``.monad-rewind/<restore>/`` under the notebook's directory
(a rename: any size, no copy), so the restore is itself undone by restoring to before it. A file
changed since the last undone change (by the user, by code outside the session) is handled the same
way, and said: the user's bytes are in the set-aside folder and come back with an undo.

Names the same way, in memory: bound by the undone epochs, removed; rebound, deleted or changed in
place, given back the value kept; not kept, left as they are and listed with what made the earlier
value. What a name holds now is kept by the restore (a reference), so an undo brings it back.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monad_notebook.rewind import file_guard
from monad_notebook.rewind.file_keeper import SET_ASIDE, FileState, Touched, after_text, stat_of
from monad_notebook.rewind.journal import Epoch, NameRecord
from monad_notebook.rewind.kept_bytes import KeptBytes
from monad_notebook.rewind.kept_values import MISSING, NameChange, is_tracked
from monad_notebook.store.base import RewindRow


@dataclass(frozen=True)
class NotRestored:
    """A file or name left as it is: why, and what made its earlier value (a call's id, "cell 7", "")."""

    key: str
    why: str
    made_by: str = ""
    turn: int = 0
    code: str = ""  # the code that made the earlier value, where this kernel knows it


@dataclass
class RestoreReport:
    """What a restore did and could not do. ``epoch`` is the restore's own: ``undo`` restores to before it."""

    epoch: int
    to: Epoch
    files_restored: list[str] = field(default_factory=list)
    files_set_aside: list[tuple[str, str]] = field(default_factory=list)  # (file, where its bytes are now)
    files_not_restored: list[NotRestored] = field(default_factory=list)
    files_yours: list[str] = field(default_factory=list)  # changed since the undone epochs: set aside, said
    names_removed: list[str] = field(default_factory=list)
    names_restored: list[str] = field(default_factory=list)
    names_not_restored: list[NotRestored] = field(default_factory=list)
    names_yours: list[str] = field(default_factory=list)  # changed since: the restore keeps the value for an undo
    aside_folder: str = ""
    makers: dict[str, tuple[str, int]] = field(default_factory=dict)  # name given back -> what made that value

    @property
    def complete(self) -> bool:
        """Everything the undone epochs changed is back as it was."""
        return not self.files_not_restored and not self.names_not_restored

    def lines(self) -> list[str]:
        """The report as a user reads it, one sentence a line."""
        out = []
        if self.files_restored:
            out.append(f"files restored: {', '.join(self.files_restored)}")
        if self.files_set_aside:
            out.append(f"moved aside (in {self.aside_folder}): {', '.join(f for f, _ in self.files_set_aside)}")
        if self.files_yours:
            out.append(f"changed since by someone else, that version set aside too: {', '.join(self.files_yours)}")
        out += [f"not restored: {n.key}: {n.why}" for n in self.files_not_restored]
        if self.names_removed:
            out.append(f"names removed: {', '.join(self.names_removed)}")
        if self.names_restored:
            out.append(f"names given their earlier value: {', '.join(self.names_restored)}")
        if self.names_yours:
            yours = ", ".join(self.names_yours)
            out.append(f"changed since the undone turns (what they hold now is kept by this restore): {yours}")
        for note in self.names_not_restored:
            maker = f"; its earlier value was made by {_maker(note)}" if note.made_by else ""
            out.append(f"changed by an undone turn, earlier value not kept: {note.key} ({note.why}{maker})")
            out += [f"    {line}" for line in _shown(note.code)]
        return out or ["nothing to restore: the undone turns changed no file or name"]


MAX_CODE_LINES = 12


def _maker(note: NotRestored) -> str:
    if note.made_by.startswith("cell "):
        return f"your {note.made_by}"
    return f"{note.made_by}, turn {note.turn}" if note.turn else note.made_by


def _shown(code: str) -> list[str]:
    """The code that made an earlier value, as the report shows it: its first lines, and how many more."""
    lines = code.strip().splitlines()
    more = [f"... ({len(lines) - MAX_CODE_LINES} more lines)"] if len(lines) > MAX_CODE_LINES else []
    return lines[:MAX_CODE_LINES] + more


class FileRestore:
    """The files part of one restore: acts on the undone rows, returns the restore's own touched files."""

    def __init__(self, kept: KeptBytes, report: RestoreReport, real_path: Callable[[RewindRow], str | None]):
        self.kept, self.report, self.real_path = kept, report, real_path
        self.stamp = time.strftime("%Y-%m-%d_%H-%M-%S") + f"_r{report.epoch}"
        self.touched: dict[str, list[Touched]] = {}  # root -> what the restore did there

    def run(self, rows: list[RewindRow]) -> dict[str, list[Touched]]:
        groups: dict[tuple[str, str], list[RewindRow]] = {}
        for row in rows:
            groups.setdefault((row.root, row.path_ref or row.key), []).append(row)
        with file_guard.quiet():
            for (root, _), group in sorted(groups.items()):
                group.sort(key=lambda r: r.seq)
                try:
                    self._one(Path(root), group[0], group[-1])
                except OSError as exc:
                    why = f"it could not be moved or written ({exc.strerror or exc})"
                    self.report.files_not_restored.append(NotRestored(group[0].key, why))
        return self.touched

    def _one(self, root: Path, first: RewindRow, last: RewindRow) -> None:
        rel = self.real_path(first)
        if rel is None:
            self.report.files_not_restored.append(NotRestored(first.key, "its real path is not on this machine"))
            return
        full = root / rel
        current = stat_of(full)
        if after_text(current) != last.after and not (current is None and not last.after):
            self.report.files_yours.append(rel)
        if first.before == "absent":
            if current is not None:
                self._aside(root, rel, current)
            return
        if first.before == "aside":
            self._back(root, rel, current, first)
            return
        if first.before != "kept":
            why = first.note or "its state before the undone turns was not recorded"
            self.report.files_not_restored.append(NotRestored(rel, why.removeprefix("not kept: "), first.label))
            return
        if not self.kept.has(first.digest):
            where = f" (kept on {first.host})" if first.host else ""
            self.report.files_not_restored.append(NotRestored(rel, f"its kept bytes are not on this machine{where}"))
            return
        if current is not None and current[1] == first.size and _digest(full) == first.digest:
            return  # already as it was
        if current is not None:
            self._aside(root, rel, current, restoring=True)
        self.kept.write_to(first.digest, full)
        self.report.files_restored.append(rel)
        self._did(root, rel, "absent" if current is None else "", stat_of(full))

    def _aside(self, root: Path, rel: str, current: tuple[int, int, int], *, restoring: bool = False) -> None:
        """Move what ``rel`` holds now into the set-aside folder (a rename), recorded so an undo moves it back."""
        folder = Path(SET_ASIDE) / self.stamp
        target = root / folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(root / rel, target)
        self.report.aside_folder = str(root / folder)
        if not restoring:
            self.report.files_set_aside.append((rel, str(target)))
        state = FileState("aside", (folder / rel).as_posix(), current[1])
        self.touched.setdefault(str(root), []).append(Touched(rel, state, ""))

    def _back(self, root: Path, rel: str, current: tuple[int, int, int] | None, first: RewindRow) -> None:
        """Undo a move aside: the file comes back from the set-aside folder."""
        source = root / first.digest
        if not source.is_file():
            self.report.files_not_restored.append(NotRestored(rel, f"it is no longer at {source}"))
            return
        if current is not None:
            self._aside(root, rel, current, restoring=True)
        full = root / rel
        full.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, full)
        self.report.files_restored.append(rel)
        self._did(root, rel, "absent" if current is None else "", stat_of(full))

    def _did(self, root: Path, rel: str, before: str, after: tuple[int, int, int] | None) -> None:
        """Record that the restore put a file at ``rel`` (where nothing was: ``before`` is absent)."""
        if before:
            self.touched.setdefault(str(root), []).append(Touched(rel, FileState(before), after_text(after)))
        else:  # the moved-aside row is there already: it gets the restore's result as what it left
            items = self.touched[str(root)]
            items[-1] = Touched(rel, items[-1].state, after_text(after))


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as reader:
        while block := reader.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def restore_names(
    records: list[NameRecord],
    namespace: MutableMapping[str, Any],
    hidden: Mapping[str, Any],
    report: RestoreReport,
    provenance: Callable[[str], tuple[str, int]],
) -> list[NameChange]:
    """Put the names back; the restore's own changes (what each held before it, and what made that), for an undo.
    ``provenance(name)`` says what made the value a name holds now."""
    groups: dict[str, list[NameRecord]] = {}
    for record in records:
        groups.setdefault(record.change.name, []).append(record)
    done = []
    for name, group in groups.items():
        group.sort(key=lambda r: r.seq)
        first, last = group[0].change, group[-1].change
        now = namespace.get(name, MISSING)
        if (None if now is MISSING else id(now)) != last.left:
            report.names_yours.append(name)
        before = NameChange(name, "absent") if now is MISSING else NameChange(name, "kept", now, first.size)
        before.earlier_made_by, before.earlier_turn = provenance(name) if now is not MISSING else ("", 0)
        if first.before == "absent":
            if now is not MISSING and is_tracked(name, hidden, now):
                del namespace[name]
                report.names_removed.append(name)
                done.append(_left(before, None))
        elif first.before == "kept":
            namespace[name] = first.value
            report.names_restored.append(name)
            report.makers[name] = (first.earlier_made_by, first.earlier_turn)
            done.append(_left(before, id(first.value)))
        else:
            report.names_not_restored.append(NotRestored(name, first.why, first.earlier_made_by, first.earlier_turn))
    return done


def _left(change: NameChange, left: int | None) -> NameChange:
    change.left = left
    return change
