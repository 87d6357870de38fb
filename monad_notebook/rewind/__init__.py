"""Rewind, kernel side: the files and names a session's code changed, kept at the moment of change and put back;
and the rebuild of what a kernel restart lost.

How the conversation side calls it (``session.rewind`` is the session's ``KernelRewind``):

- **At the start of a turn**: nothing is required. Every change asks ``turn()`` (the window's turn)
  and a new turn number begins a new epoch. Call ``session.rewind.begin_turn(turn)`` to begin it
  explicitly (for instance when a conversation rewind leaves the window's counter where it was).
- **At each tool call**: the tool runner already does it: ``with session.rewind.change(call.id, code):``
  around every call of a tool that may change anything (``change`` returns None while rewind is off).
  A cell the agent runs with ``execute_cell`` is kept as the turn that queued it: the tool hands the
  notebook ``session.rewind.cell_keeper()``, which IPython's ``pre_run_cell`` and ``post_run_cell``
  open and finish around the cell (``notebook/agent_runs.py``); ``change.notes`` are the lines to
  show (a file too large to keep).
- **To restore to before turn T**: ``report = session.rewind.restore(before_turn=T)``. It puts back
  every file under the notebook's directory and every name in the kernel that turn T and everything
  after it changed (restores, rebuilds and later turns included), and returns a ``RestoreReport``:
  what was restored, removed, moved aside (and where: ``.monad-rewind/<stamp>_r<n>/`` under the
  notebook's directory), what was changed since by someone else, and what could not be restored
  and why (``report.lines()``: one sentence each; ``report.complete``).
- **To undo a restore**: ``session.rewind.undo(report)`` (or ``restore_to(report.epoch)``): a
  restore keeps what it replaced (files moved aside, names referenced), so undoing it is a restore
  to before it, which returns its own report and can be undone in turn.
- ``session.rewind.journal.epochs`` are the turns, restores and rebuilds in order (``Epoch``: its
  ``seq``, ``kind``, ``turn``, time); ``journal.added[epoch.seq]`` the bytes its keeps added.

What is kept where, and the bounds: files' earlier bytes in a content-addressed folder beside the
store (``kept_bytes.py``; rows in the store say which file had which bytes), names' earlier values
in this kernel's memory (``kept_values.py``); ``rewind.*`` in agents.json, docs/rewind.md.
"""

from __future__ import annotations

from monad_notebook.rewind.journal import Epoch
from monad_notebook.rewind.restore import NotRestored, RestoreReport
from monad_notebook.rewind.service import Change, KernelRewind

__all__ = ["Change", "Epoch", "KernelRewind", "NotRestored", "RestoreReport"]
