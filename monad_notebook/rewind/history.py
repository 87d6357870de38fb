"""The user's own cells of the kernel that ran the session before this one: IPython's history, by session.

IPython keeps every kernel's inputs in its history database, each kernel a numbered history session.
The rewind journal notes, for each kernel that ran the session, its history session's number, so
after a restart the cells that made what was lost are read from the kernel that made it, by their
execution count (the number the workspace record names: "cell 14").
"""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

from monad_notebook.store.base import RewindRow


def earlier_inputs(shell: Any, kernels: Sequence[RewindRow]) -> tuple[list[str] | None, str]:
    """The inputs of the last other kernel on this machine that ran the session, indexed by execution count (0 is
    empty), or None and why."""
    manager = getattr(shell, "history_manager", None)
    current = getattr(manager, "session_number", None)
    host = socket.gethostname()
    earlier = [k for k in kernels if k.turn != current and k.host == host and k.turn > 0]
    if manager is None or not earlier:
        return None, "no earlier kernel of this session is known on this machine, so your own cells are not included"
    number = max(earlier, key=lambda k: (k.at, k.seq)).turn
    try:
        rows = list(manager.get_range(session=number, start=1, stop=None, raw=True, output=False))
    except Exception as exc:  # a history database turned off, locked or gone
        return (
            None,
            f"IPython's history of the earlier kernel cannot be read ({exc}), so your own cells are not included",
        )
    if not rows:
        return None, "IPython's history holds no cells of the earlier kernel, so your own cells are not included"
    inputs = [""] * (max(line for _, line, _ in rows) + 1)
    for _, line, text in rows:
        inputs[line] = text if isinstance(text, str) else ""
    return inputs, ""
