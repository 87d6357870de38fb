"""The workspace record: what the kernel holds and the files written under the notebook's directory.

Taken from the live kernel, never from conversation text: after each tool call (``take``, with
the call's id) and after each cell the user runs (``after_cell``, with the cell's number). It is
kept in memory and in the store, so no compaction can thin it and a new kernel can tell what the
last one had: a name the record holds that the kernel does not is marked lost, with the call
that made it, and a file modified while a call ran that a crash interrupted is that call's.
Names, columns and paths are redacted before anything keeps them; values never are.

What a look could not see is said once (a warning, shown at the next ``%%monad`` cell in a
kernel) and stays visible in the block and in ``%monad status``: values told by their type only,
keys that are not names, names a look that ran out of time left for the next one.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_notebook.events import WORKSPACE_CHANGED
from monad_notebook.store.base import WorkspaceEntry, Workspaces
from monad_notebook.workspace.block import Notes, render
from monad_notebook.workspace.description import MAX_COLUMN_CHARS
from monad_notebook.workspace.file_watch import FileChange, FileWatch
from monad_notebook.workspace.snapshot import Change, Look, Snapshot, mentioned

if TYPE_CHECKING:
    from monad_notebook.redaction.redactor import Redactor

log = logging.getLogger(__name__)

GONE = ("deleted", "lost")
CLOCK_SLACK_NS = 10_000_000  # a file system's clock may lag the process's by a tick


@dataclass(frozen=True)
class Interrupted:
    """The calls a crash cut short (the kernel died while they ran): who they were, at which turn, since when."""

    made_by: str
    turn: int
    since: float  # the time they were about to run, as ``time.time()``


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
        notify: Callable[..., None] | None = None,
    ) -> None:
        """``notify`` is told when a user's cell changed the record (pass the session's ``EventLog.emit``: the
        panel lists the workspace again at once, not at the next step)."""
        self.store, self.session, self.notify = store, session, notify
        self.kernel, self.alive = this_kernel(), kernel_alive  # who holds the names this record sees, and who lives
        self.namespace, self.shell, self.root = namespace, shell, root
        self.redactor: Redactor | None = None
        self.enabled = False
        self.calls_readable = True  # read_tool_output is offered: the block says it shows a call's code
        self.turn = 0
        self.interrupted: Interrupted | None = None  # told by the session before the first look
        self.snapshot, self.files = Snapshot(), FileWatch()
        self.pending: dict[tuple[str, str], WorkspaceEntry] = {}
        self.started = False
        self.deferred = False  # the last look ran out of time: the names it did not reach come next time
        self._told_odd = 0
        self._told_failure = ""
        self._load(sorted(store.load_workspace(session), key=lambda e: e.seq))

    def _load(self, entries: list[WorkspaceEntry]) -> None:
        """The record as stored; a name is listed once a look has seen it in this kernel."""
        self.entries = {(e.kind, e.key): e for e in entries}  # in the order they were touched (their seq)
        self.seq = max((e.seq for e in entries), default=0)
        self.keys: dict[str, str] = {}  # a live name -> its key in the record (the name, redacted)
        self.listed: dict[tuple[str, str], WorkspaceEntry] = {}  # live names and files, in seq order
        self.lost: dict[str, WorkspaceEntry] = {}  # names a restart lost, in seq order
        self.names_listed = 0
        for entry in entries:
            if entry.kind == "file" or entry.state == "lost":
                self._list(entry)

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
        none: it was there before), and what the record holds that the kernel does not is lost (once the first
        round over the names ends: at once, unless there are thousands)."""
        self.started = True
        self.snapshot.forget()
        self.keys = {}
        self._look("", "")
        root = self._root()
        if root is not None:
            self.files.start(root)
            self._note_interrupted(root)
        self.save()

    def take(self, made_by: str, code: str = "") -> list[WorkspaceEntry]:
        """What changed since the last look, each entry made by ``made_by`` (a tool call's id, "cell 14");
        ``code`` is what ran, whose names are looked at first."""
        if not self.enabled:
            return []
        if not self.started:
            self.start()
            return []
        made = self._look(made_by, code)
        try:
            root = self._root()
            files = self.files.changes(root) if root is not None else []
        except Exception as exc:  # a directory gone, a path that cannot be read: the names still stand
            log.warning("the workspace record skipped a look at the notebook's directory: %s", exc)
            files = []
        keys = self._redact([f.path for f in files])
        return made + [self._file_entry(f, k, made_by) for f, k in zip(files, keys, strict=True)]

    def after_cell(self, result: Any) -> None:
        """IPython's ``post_run_cell``: a cell the user ran (the agent's own code runs without history: skipped)."""
        info = getattr(result, "info", None)
        if not self.enabled or (info is not None and not getattr(info, "store_history", True)):
            return
        cell = f"cell {getattr(result, 'execution_count', None) or '?'}"
        code = getattr(info, "raw_cell", "")
        made = self.take(cell, code if isinstance(code, str) else "")
        self.save()
        if made and self.notify is not None:
            names = sum(1 for entry in made if entry.kind == "name")
            data = {"made_by": cell, "names": names, "files": len(made) - names}
            self.notify(WORKSPACE_CHANGED, **data)

    def credit(self, makers: dict[str, tuple[str, int]]) -> None:
        """Give live names back the provenance of the value they hold again (a restore put an earlier one back):
        ``makers`` is name -> (what made that value, its turn)."""
        for name, (made_by, turn) in makers.items():
            key = self.keys.get(name)
            entry = self.entries.get(("name", key)) if key is not None else None
            if entry is not None and made_by and (entry.made_by, entry.turn) != (made_by, turn):
                self._note(replace(entry, made_by=made_by, turn=turn))

    def save(self) -> None:
        """Write what changed since the last write, in one write."""
        if self.pending:  # kept until written: a failed write is tried again at the next save
            self.store.save_workspace(self.session, list(self.pending.values()))
            self.pending = {}

    def forget(self) -> None:
        """The session was reset: the record starts over from the kernel as it is."""
        self.pending = {}
        self._load([])
        if self.enabled:
            self.start()

    # --- reading ----------------------------------------------------------------------

    def live(self) -> tuple[list[WorkspaceEntry], list[WorkspaceEntry], list[WorkspaceEntry]]:
        """Names the kernel holds now, files still there, names lost: each newest first (none while off)."""
        if not self.enabled:
            return [], [], []
        root = self._root()
        newest = list(reversed(self.listed.values()))
        names = [e for e in newest if e.kind == "name"]
        files = [e for e in newest if e.kind == "file" and root is not None and (root / e.key).is_file()]
        return names, files, list(reversed(self.lost.values()))

    def block(self, count_text: Callable[[str], int], max_tokens: int) -> str:
        """The ``<workspace>`` block for the next request ("" while the record is off or empty): the entries
        are read newest first only as far as the budget goes, so 100,000 names cost what 1,000 do."""
        if not self.enabled:
            return ""
        gone: list[tuple[str, str]] = []
        counts = (self.names_listed, len(self.listed) - self.names_listed, len(self.lost))
        text = render(
            reversed(self.lost.values()), self._newest(gone), counts, count_text, max_tokens,
            calls_readable=self.calls_readable, notes=self.notes(),
        )  # fmt: skip
        for key in gone:  # files deleted since: no longer listed
            self._unlist(self.listed[key])
        return text

    def notes(self) -> Notes:
        """What the record could not see: values told by type only, keys that are not names, a look cut short."""
        typed = sorted({self.keys[n] for n in self.snapshot.skipped if n in self.keys})
        unseen = self.deferred or self.snapshot.rounds == 0
        return Notes(typed, self.snapshot.odd_keys, self.snapshot.pending if unseen else 0)

    def provenance(self, name: str) -> WorkspaceEntry | None:
        """The record's entry for a live name (what made it, at which turn), if it has one."""
        key = self.keys.get(name)
        return self.entries.get(("name", key)) if key is not None else None

    def status(self) -> dict[str, Any]:
        """What ``%monad status`` says: how much the record holds, the names a restart lost, what it could not see."""
        if not self.enabled:
            return {"workspace_names": None}
        names, files, lost = self.live()
        notes = self.notes()
        return {
            "workspace_names": len(names),
            "workspace_files": len(files),
            "workspace_lost": [(e.key, e.made_by, e.turn) for e in lost],
            "workspace_unseen": notes.sentence(),
        }

    # --- looking ----------------------------------------------------------------------

    def _look(self, made_by: str, code: str) -> list[WorkspaceEntry]:
        """One look at the namespace; in the first round, a name found was there before (it keeps its provenance)."""
        first = self.snapshot.rounds == 0
        look = self.snapshot.take(self.namespace, self._hidden(), mentioned(code) if code else ())
        keys = self._redact([c.name for c in look.changes])
        made = []
        for change, key in zip(look.changes, keys, strict=True):
            if first and change.state == "bound":
                self._found(change, key)
            else:
                made.append(self._name_entry(change, key, made_by))
        self._tell(look)
        if first and look.round_ended:
            live = set(self.keys.values())
            for entry in [e for e in self.entries.values() if e.kind == "name" and e.state not in GONE]:
                if entry.key not in live and not self._elsewhere(entry):
                    self._note(replace(entry, state="lost"), keep=entry)
        return made

    def _tell(self, look: Look) -> None:
        """Say once what this look could not see."""
        was_deferred, self.deferred = self.deferred, look.timed_out
        if look.failed and look.failed != self._told_failure:
            log.warning("the workspace record could not read the namespace: %s", look.failed)
        self._told_failure = look.failed
        if look.skipped:
            keys = self._redact([name for name, _ in look.skipped])
            for key, (_, why) in zip(keys, look.skipped, strict=True):
                log.warning("the workspace record tells %s by its type only: %s", key, why)
        if look.timed_out and not was_deferred:
            log.warning("the workspace record's look at the kernel ran out of time; the names it did not reach "
                        "are looked at after the next call")  # fmt: skip
        odd = self.snapshot.odd_keys
        if odd > self._told_odd:
            log.warning("the workspace record leaves out %d key(s) of the namespace that are not strings", odd)
        self._told_odd = max(self._told_odd, odd)  # a round begun before a key was added counts fewer: no repeat

    def _note_interrupted(self, root: Path) -> None:
        """Files modified since the calls a crash cut short began are theirs (the kernel died before saying so)."""
        cut, self.interrupted = self.interrupted, None
        if cut is None:
            return
        since = int(cut.since * 1e9) - CLOCK_SLACK_NS
        paths = sorted(p for p, (mtime, _) in self.files.seen.items() if mtime >= since)
        for path, key in zip(paths, self._redact(paths), strict=True):
            state = "modified" if ("file", key) in self.entries else "created"
            size = self.files.seen[path][1]
            entry = WorkspaceEntry("file", key, "file", _size(size), state=state, made_by=cut.made_by, turn=cut.turn)
            self._note(entry)

    # --- entries ----------------------------------------------------------------------

    def _found(self, change: Change, key: str) -> WorkspaceEntry:
        self.keys[change.name] = key
        known = self.entries.get(("name", key))
        state = "bound" if known is None or known.state in GONE else known.state
        return self._note(self._described(change, key, state, known), keep=known)

    def _name_entry(self, change: Change, key: str, made_by: str) -> WorkspaceEntry:
        if change.state == "deleted":
            self.keys.pop(change.name, None)
            known = self.entries.get(("name", key)) or WorkspaceEntry("name", key)
            return self._note(replace(known, state="deleted", made_by=made_by, turn=self.turn))
        self.keys[change.name] = key
        entry = self._described(change, key, change.state, None)
        return self._note(replace(entry, made_by=made_by, turn=self.turn))

    def _file_entry(self, change: FileChange, key: str, made_by: str) -> WorkspaceEntry:
        entry = WorkspaceEntry("file", key, "file", _size(change.size), state=change.state)
        return self._note(replace(entry, made_by=made_by, turn=self.turn))

    def _described(self, change: Change, key: str, state: str, known: WorkspaceEntry | None) -> WorkspaceEntry:
        """The entry for a live name: its type, size and columns, each redacted whole, then shortened.

        A type is any class's name and a shape holds a dtype's field names: both are text a user
        chose, as a column's name is.
        """
        about = change.about
        assert about is not None
        kind, shape, *columns = self._redact([about.type, about.shape, *about.columns])
        columns = [column[:MAX_COLUMN_CHARS] for column in columns]
        made_by, turn = (known.made_by, known.turn) if known is not None else ("", self.turn)
        return WorkspaceEntry("name", key, kind, shape, columns, about.columns_total, state, made_by, turn)

    def _elsewhere(self, entry: WorkspaceEntry) -> bool:
        """The name is held by another kernel that still runs (a notebook sharing this session): not lost here."""
        return bool(entry.kernel) and entry.kernel != self.kernel and self.alive(entry.kernel)

    def _note(self, entry: WorkspaceEntry, keep: WorkspaceEntry | None = None) -> WorkspaceEntry:
        """Keep ``entry``, a new object (to be written at the next save); one the record already held unchanged is
        not news. A name seen here is this kernel's."""
        if entry.kind == "name" and entry.state not in GONE:
            entry = replace(entry, kernel=self.kernel)
        if keep is not None and _told(keep) == _told(entry):
            self._list(keep)
            return keep
        self.seq += 1
        entry.seq = self.seq
        self.entries.pop((entry.kind, entry.key), None)  # the newest last: the dict's order is the seq's
        self.entries[(entry.kind, entry.key)] = self.pending[(entry.kind, entry.key)] = entry
        self._list(entry)
        return entry

    def _list(self, entry: WorkspaceEntry) -> None:
        """Where the block finds ``entry``: listed (a live name, a file), lost, or nowhere (deleted)."""
        self._unlist(entry)
        if entry.kind == "file" or entry.state not in GONE:
            self.listed[(entry.kind, entry.key)] = entry
            self.names_listed += entry.kind == "name"
        elif entry.state == "lost":
            self.lost[entry.key] = entry

    def _unlist(self, entry: WorkspaceEntry) -> None:
        if self.listed.pop((entry.kind, entry.key), None) is not None:
            self.names_listed -= entry.kind == "name"
        if entry.kind == "name":
            self.lost.pop(entry.key, None)

    def _newest(self, gone: list[tuple[str, str]]) -> Iterator[WorkspaceEntry]:
        """Live names and files still there, newest first; files found deleted are added to ``gone``."""
        root = self._root()
        for entry in reversed(self.listed.values()):
            if entry.kind == "file" and (root is None or not (root / entry.key).is_file()):
                gone.append((entry.kind, entry.key))
                continue
            yield entry

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


def _told(e: WorkspaceEntry) -> tuple[Any, ...]:
    """What an entry says, its place in the record's order (``seq``) aside."""
    return (e.kind, e.key, e.type, e.shape, e.columns, e.columns_total, e.state, e.made_by, e.turn, e.kernel)


def _size(size: int) -> str:
    return f"{size:,} byte" + ("" if size == 1 else "s")


def this_kernel() -> str:
    """This process, as the record names the kernel that holds a name: "host:pid"."""
    return f"{socket.gethostname()}:{os.getpid()}"


def kernel_alive(kernel: str) -> bool:
    """Whether the kernel named ``host:pid`` still runs; one on another machine is taken to (nothing here can say)."""
    host, _, pid = kernel.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except (ValueError, OverflowError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
