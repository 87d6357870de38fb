"""What one change did to the files under the notebook's directory, and what they were just before.

A change (a tool call, an accepted cell) keeps a file's earlier state at the first moment it is about
to change in its epoch (a turn): its bytes (``kept_bytes.py``), or that it did not exist. Three
sources say a file is about to change, and a scan says what none of them saw:

- the audit hook (``file_guard.py``): every write, removal and rename made through Python;
- the paths the code hands to writers (``named_paths.py``), kept before the code runs: writers in
  C or C++ that the hook does not hear;
- after the code, a scan of the directory (``workspace/file_watch.scan``: nearest first, bounded)
  against the one taken before: a file created is known to have been absent; a file modified or
  removed by a writer nobody heard is recorded as changed with its earlier bytes not kept.

A file's earlier bytes are read once per version: a file named again unchanged (same size, time and
inode) is known by the digest it had. Files under the notebook's directory only; never notebooks
(the frontend saves them), caches, LanceDB tables, the set-aside folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monad_notebook.rewind import file_guard
from monad_notebook.rewind.kept_bytes import KeptBytes, TooLarge
from monad_notebook.rewind.named_paths import writer_paths
from monad_notebook.workspace.file_watch import scan

SET_ASIDE = ".monad-rewind"  # under the notebook's directory: what a restore moved out of the way
_SKIPPED_DIRS = frozenset({SET_ASIDE, "__pycache__", ".ipynb_checkpoints", "node_modules", "site-packages", ".git"})
MAX_BASENAME_MATCHES = 16
Stat = tuple[int, int, int]  # mtime_ns, size, inode


@dataclass
class FileState:
    """A file's state just before its first change in this change: ``before`` is ``absent``, ``kept`` (bytes under
    ``digest``), ``unkept`` (``note`` says why), or ``later`` (an earlier change of the same epoch kept it)."""

    before: str
    digest: str = ""
    size: int = 0
    note: str = ""
    caught: str = ""  # what told of the change: an audit event, "named" (the code), "scan"
    stat: Stat | None = None  # the file as it was kept (None: absent)
    added: int = 0  # bytes this keep added to the folder (0: the same bytes were kept already)


@dataclass(frozen=True)
class Touched:
    """One file a change touched: where, what it was before, what the change left (``mtime_ns:size``, "" gone)."""

    path: str  # relative to the root, with forward slashes
    state: FileState
    after: str


def stat_of(path: str | Path) -> Stat | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size, found.st_ino


def after_text(found: Stat | None) -> str:
    return "" if found is None else f"{found[0]}:{found[1]}"


def relative(root: Path, full: str) -> str | None:
    """``full`` relative to ``root`` with forward slashes; None outside it, in a skipped place, or a notebook."""
    try:
        rel = Path(full).relative_to(root)
    except ValueError:
        return None
    parts = rel.parts
    if not parts or any(p in _SKIPPED_DIRS or p.endswith(".lance") for p in parts[:-1]):
        return None
    return None if parts[-1].endswith(".ipynb") else rel.as_posix()


class FileKeeper:
    """The session's keeper: where bytes go, their bounds, and the digests of file versions already kept."""

    def __init__(self, kept: KeptBytes, max_file_bytes: int, make_room: Callable[[int], bool]) -> None:
        """``make_room(size)``: whether ``size`` more bytes may be kept for the session (it may drop old turns')."""
        self.kept, self.max_file_bytes, self.make_room = kept, max_file_bytes, make_room
        self.known: dict[str, tuple[Stat, str]] = {}  # absolute path -> (its stat, its digest) when last kept

    def begin(self, root: Path, epoch_paths: set[str], code: str, namespace: Mapping[str, Any]) -> FileChanges:
        changes = FileChanges(self, root, epoch_paths)
        changes.keep_named(code, namespace)
        file_guard.arm(changes.before)
        return changes

    def capture(self, full: str, caught: str) -> FileState:
        """The file's state now, its bytes kept if it has any and they fit."""
        found = stat_of(full)
        if found is None:
            return FileState("absent", caught=caught)
        size = found[1]
        known = self.known.get(full)
        if known is not None and known[0] == found and self.kept.has(known[1]):
            return FileState("kept", known[1], size, caught=caught, stat=found)
        if size > self.max_file_bytes:
            return FileState("unkept", size=size, note=too_large(size, self.max_file_bytes), caught=caught, stat=found)
        if not self.make_room(size):
            note = "not kept: the session's kept bytes are at rewind.maxSessionBytes even without the oldest turns'"
            return FileState("unkept", size=size, note=note, caught=caught, stat=found)
        try:
            with file_guard.quiet():
                kept = self.kept.keep(full, self.max_file_bytes)
        except TooLarge as grown:
            return FileState("unkept", size=grown.size, note=too_large(grown.size, self.max_file_bytes), caught=caught)
        except OSError as exc:
            return FileState("unkept", size=size, note=f"not kept: it could not be read ({exc.strerror or exc})")
        self.known[full] = (found, kept.digest)
        return FileState("kept", kept.digest, kept.size, caught=caught, stat=found, added=kept.size if kept.new else 0)


def too_large(size: int, bound: int) -> str:
    return f"not kept: {megabytes(size)} is over rewind.maxFileBytes ({megabytes(bound)})"


def megabytes(size: int) -> str:
    return f"{size / 1_000_000:,.1f} MB"


class FileChanges:
    """One change's files: the scan before it, each file's state at its first change, and what it touched."""

    def __init__(self, keeper: FileKeeper, root: Path, epoch_paths: set[str]) -> None:
        self.keeper, self.root, self.epoch_paths = keeper, root, epoch_paths
        with file_guard.quiet():
            self.baseline = scan(root)
        self.states: dict[str, FileState] = {}

    def before(self, full: str, caught: str) -> None:
        """A file is about to change (the audit hook, the code's writers): keep it, the first time in the epoch."""
        rel = relative(self.root, full)
        if rel is None or rel in self.states:
            return
        if rel in self.epoch_paths:
            self.states[rel] = FileState("later", caught=caught)
            return
        self.states[rel] = self.keeper.capture(full, caught)

    def keep_named(self, code: str, namespace: Mapping[str, Any]) -> None:
        """Before the code runs: the existing files its writers are handed (a folder: the files in it)."""
        for text in writer_paths(code, namespace) if code else []:
            for full in self._files_named(text):
                self.before(full, "named")

    def _files_named(self, text: str) -> Iterable[str]:
        full = os.path.abspath(os.path.expanduser(text))
        if os.path.isfile(full):
            yield full
        elif os.path.isdir(full):
            yield from file_guard.tree(full)
        elif os.sep not in text and "/" not in text:  # a file's name alone (a folder joined elsewhere)
            matches = [rel for rel in self.baseline if rel == text or rel.endswith("/" + text)]
            for rel in matches[:MAX_BASENAME_MATCHES]:
                yield str(self.root / rel)

    def finish(self) -> list[Touched]:
        """Stop listening; what the change touched, each with its state before and what it left."""
        file_guard.disarm()
        with file_guard.quiet():
            now = scan(self.root)
            found = {rel: stat_of(self.root / rel) for rel in self.states}
        touched = []
        for rel in sorted({*self.states, *now.keys() - self.baseline.keys(), *self._moved(now)}):
            after = found.get(rel) if rel in found else stat_of(self.root / rel)
            state = self.states.get(rel) or self._unheard(rel)
            if state.before != "later" and _unchanged(state, after):
                continue
            touched.append(Touched(rel, state, after_text(after)))
            self.epoch_paths.add(rel)
        return touched

    def _moved(self, now: dict[str, tuple[int, int]]) -> list[str]:
        """Files the scan found modified or gone, that neither the hook nor the code named."""
        return [rel for rel, seen in self.baseline.items() if rel not in self.states and now.get(rel) != seen]

    def _unheard(self, rel: str) -> FileState:
        if rel in self.epoch_paths:
            return FileState("later", caught="scan")
        if rel not in self.baseline:
            return FileState("absent", caught="scan")
        note = "not kept: changed by a writer the audit hook does not hear, and not named as a path in the code"
        return FileState("unkept", size=self.baseline[rel][1], note=note, caught="scan")


def _unchanged(state: FileState, after: Stat | None) -> bool:
    """The file is as it was kept (opened for writing, nothing written; created and removed again)."""
    if state.before == "absent":
        return after is None
    return state.stat is not None and after is not None and state.stat[:2] == after[:2]
