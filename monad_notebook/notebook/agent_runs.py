"""The cells the agent queued to run, and the executions they became: no turn starts inside one.

``execute_cell`` queues a cell behind the running turn. When its turn in the kernel comes, IPython's
``pre_run_cell`` names the cell (ipykernel passes its id), and that execution is remembered. A turn
asked for during it, whichever way its code asks (a ``%%monad`` magic, ``run_cell_magic('monad', ...)``,
``Session.ask``), is refused: otherwise a turn could queue a cell that starts the next turn, which
queues it again, with nobody asking for any of it. The tool refuses a cell that visibly calls monad
before it is queued (``execute_cell``); this is what holds for any other way code can reach it.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from typing import Any

from monad_notebook.errors import UsageError

REFUSED = (
    "this cell was run by the agent (execute_cell), and no turn starts from a cell the agent ran, so no turn "
    "can start another: run a %%monad cell yourself"
)
_REMEMBERED = 256  # executions of queued cells kept; a request id is never reused


def current_execution() -> str:
    """The id of the request the kernel runs now; "" outside a kernel."""
    ipython_module = sys.modules.get("IPython")
    shell = ipython_module.get_ipython() if ipython_module is not None else None
    kernel = getattr(shell, "kernel", None)
    parent = kernel.get_parent() if kernel is not None else None
    return str(((parent or {}).get("header") or {}).get("msg_id") or "")


class AgentRuns:
    """Kernel-wide: the agent of any session queues cells into the one kernel."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queued: set[str] = set()
        self._executions: deque[str] = deque(maxlen=_REMEMBERED)

    def queue(self, cell_id: str) -> None:
        """The agent asked the notebook to run ``cell_id`` once the turn ends."""
        with self._lock:
            self._queued.add(cell_id)

    def before_cell(self, info: Any) -> None:
        """IPython's ``pre_run_cell``: a queued cell starting to run marks this execution as the agent's."""
        cell_id = getattr(info, "cell_id", None)
        if not cell_id:
            return
        with self._lock:
            if cell_id not in self._queued:
                return
            self._queued.discard(cell_id)
        execution = current_execution()
        if execution:
            with self._lock:
                self._executions.append(execution)

    def started_by_agent(self) -> bool:
        """True while the kernel runs a cell the agent queued."""
        with self._lock:
            if not self._executions:
                return False
            executions = set(self._executions)
        return current_execution() in executions

    def refuse_turn(self) -> None:
        """Raise the one-line refusal when a turn is asked for inside a cell the agent ran."""
        if self.started_by_agent():
            raise UsageError(REFUSED)


AGENT_RUNS = AgentRuns()
