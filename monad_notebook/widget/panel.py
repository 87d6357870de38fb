"""MonadPanel: the live context panel (the only module that imports anywidget).

The panel listens to the session's events (from the turn, or from the background worker
between cells) and mirrors a PanelState into synced traits. The frontend never writes
traits; it sends small custom messages (save, dismiss, forget, undo, run, skip, inspect, rewind) handled here.

A rewind from the timeline is done by whoever opened the panel (``Rewinds``: the magic, the way ``%monad rewind``
does it), which moves the panel to the session the conversation goes on in (``follow``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import anywidget
import traitlets as t

from monad_notebook import events as ev
from monad_notebook.approval.asking import PanelApprover
from monad_notebook.approval.busy import (
    PendingAnswer,
    current_kernel,
    owned_subshell,
    route_to_subshell,
    supports_busy_routing,
)
from monad_notebook.approval.code_view import approval_view
from monad_notebook.approval.gate import PYTHON, wording
from monad_notebook.events import Event
from monad_notebook.widget.memory_actions import MemoryActions
from monad_notebook.widget.report import records_of, render_text, state_from_session, thresholds_of, workspace_of
from monad_notebook.widget.report import text_report as _text_report
from monad_notebook.widget.source import PanelSource, Rewinds
from monad_notebook.widget.state import FIELDS, PanelState

HERE = Path(__file__).resolve().parent

# Frontend messages that must be handled even while a cell runs (see approval.py).
BUSY_SAFE = frozenset({"approval", "inspect", "notice.dismiss"})

_panels: weakref.WeakKeyDictionary[Any, MonadPanel] = weakref.WeakKeyDictionary()
_panels_lock = threading.Lock()


def _busy_safe(data: Any) -> bool:
    if not isinstance(data, dict) or data.get("method") != "custom":
        return False
    content = data.get("content")
    return isinstance(content, dict) and content.get("type") in BUSY_SAFE


class MonadPanel(anywidget.AnyWidget):
    """Occupancy, timeline, compactions, memory suggestions, approvals and a prompt inspector for one session."""

    _esm = HERE / "panel.js"  # the one module the browser loads, built from js/panel/ and committed
    _css = HERE / "panel.css"

    session_name = t.Unicode("").tag(sync=True)
    usage = t.Dict().tag(sync=True)
    thresholds = t.Dict().tag(sync=True)
    composition = t.List().tag(sync=True)
    timeline_base = t.List().tag(sync=True)
    timeline_tail = t.List().tag(sync=True)
    markers = t.List().tag(sync=True)
    compaction = t.Dict().tag(sync=True)
    notices = t.List().tag(sync=True)
    suggestions = t.List().tag(sync=True)
    facts = t.List().tag(sync=True)
    receipt = t.Dict().tag(sync=True)
    decisions = t.List().tag(sync=True)
    workspace = t.List().tag(sync=True)
    records = t.List().tag(sync=True)
    inspected = t.Dict().tag(sync=True)
    activity = t.Unicode("idle").tag(sync=True)
    approval = t.Dict().tag(sync=True)
    rewind = t.Dict().tag(sync=True)  # {"turns", "undo": {"from", "turn"}, "result": {"id", "ok", "lines"}}; {} off

    handlers: ClassVar[dict[str, str]] = {
        "approval": "_answer_approval",
        "memory.save": "_save_memory",
        "memory.dismiss": "_dismiss_memory",
        "memory.forget": "_forget_memory",
        "memory.undo": "_undo_memory",
        "inspect": "_inspect",
        "notice.dismiss": "_dismiss_notice",
        "rewind": "_rewind",
    }

    def __init__(
        self, session: PanelSource, *, memory_scope: str | None = None, rewinds: Rewinds | None = None, **kwargs: Any
    ) -> None:
        self.memory_scope = memory_scope
        self.rewinds = rewinds
        self._results = 0
        self._bind(session)
        self._pending: PendingAnswer | None = None
        self.busy_note = ""
        super().__init__(session_name=session.name, rewind=self._rewind_view(), **self._state.snapshot(), **kwargs)
        self.on_msg(self._on_frontend_msg)
        self.answers_while_busy = self._route_busy_messages()
        self._unsubscribe = session.events.subscribe(self._on_event)

    @classmethod
    def for_session(cls, session: PanelSource, **kwargs: Any) -> MonadPanel:
        """The session's panel (one per session, so events are not listened to twice)."""
        with _panels_lock:
            panel = _panels.get(session)
            if panel is None or panel.comm is None:
                panel = cls(session, **kwargs)
                _panels[session] = panel
            return panel

    @staticmethod
    def text_report(session: PanelSource) -> str:
        """The panel's information as plain text, for terminal IPython and logs."""
        return _text_report(session)

    @property
    def timeline(self) -> list[dict[str, Any]]:
        """Every point the panel holds (base + tail), oldest first."""
        return self._state.timeline

    def report(self) -> str:
        """This panel's live state as text (includes transient notices the store never saw)."""
        return render_text(self._state)

    def offer_rewinds(self, rewinds: Rewinds) -> None:
        """Let the timeline rewind the session (``%monad panel`` hands the magic's rewind here)."""
        self.rewinds = rewinds
        self.rewind = self._rewind_view(self.rewind.get("result"))

    def follow(self, session: PanelSource) -> None:
        """Show ``session`` from now on: the session the conversation goes on in after a rewind or its undo."""
        if session is self.session:
            return
        self._unsubscribe()
        with _panels_lock:
            if _panels.get(self.session) is self:
                del _panels[self.session]
            _panels[session] = self
        self._bind(session)
        self._unsubscribe = session.events.subscribe(self._on_event)
        with self._state.lock, self.hold_sync():
            self.session_name = session.name
            for name, value in self._state.snapshot().items():
                setattr(self, name, value)
            self.rewind = self._rewind_view()

    def _bind(self, session: PanelSource) -> None:
        """Mirror ``session``: its state read from the store, the memory actions on it."""
        self.session = session
        self._state: PanelState = state_from_session(session)
        self._memory = MemoryActions(session, self._state, self.memory_scope)

    def approver(self, *, timeout: float = 600.0, fallback: Any = None) -> PanelApprover:
        return PanelApprover(self, timeout=timeout, fallback=fallback)

    def close(self) -> None:
        self._unsubscribe()
        if self._pending is not None:
            self._pending.resolve(False)
        super().close()

    # --- kernel side -----------------------------------------------------------------

    def _route_busy_messages(self) -> bool:
        """True when clicks can reach us while a cell runs (or there is no kernel to wait behind)."""
        kernel = current_kernel()
        if kernel is None or self.comm is None or not hasattr(self.comm, "kernel"):
            return True
        if not supports_busy_routing(kernel):
            self.busy_note = "this kernel cannot deliver clicks while a cell runs (needs ipykernel >= 7.3)"
            return False
        try:
            route_to_subshell(self.comm, _busy_safe, owned_subshell(kernel))
        except Exception as exc:  # an unexpected kernel: degrade to the fallback approver
            self.busy_note = f"could not set up a kernel subshell for the panel: {exc}"
            return False
        return True

    def _on_event(self, event: Event) -> None:
        session = self.session
        changed = self._state.apply(event, turn=session.turn, step=session.step)
        if event.kind == ev.USAGE:
            changed |= self._state.set_records(records_of(session))
            changed |= self._state.set_thresholds(thresholds_of(session))
            changed |= self._state.set_workspace(workspace_of(session))
        elif event.kind == ev.WORKSPACE_CHANGED:  # a user's cell: listed at once, not at the next step
            changed |= self._state.set_workspace(workspace_of(session))
        elif event.kind in (ev.TURN_FINISHED, ev.MEMORY_SUGGESTION, ev.MEMORY_SAVED):
            changed |= self._memory.refresh()
        elif event.kind == ev.RESET:
            with self._state.lock:
                self._state.usage = session.usage_snapshot()
            changed |= self._state.set_records(records_of(session)) | self._memory.refresh()
            changed |= self._state.clear_receipt() | self._state.set_workspace(workspace_of(session))
        if event.kind in (ev.TURN_FINISHED, ev.RESET) and self.rewinds is not None:
            self.rewind = self._rewind_view(self.rewind.get("result"))
        self._push(changed)

    def _push(self, names: set[str]) -> None:
        if not names:
            return
        with self._state.lock, self.hold_sync():
            for name, value in self._state.snapshot(n for n in FIELDS if n in names).items():
                setattr(self, name, value)

    def request_approval(self, code: str, *, timeout: float, subject: str = PYTHON) -> bool | None:
        """Show ``code`` with Run / Skip and block until a click, or None after ``timeout`` seconds.

        The frontend draws ``lines`` (hidden characters as markers), never the raw ``code``.
        """
        pending = PendingAnswer()
        clear = self.show_approval(pending, code, timeout=timeout, subject=subject)
        try:
            return pending.wait(timeout)
        finally:
            clear()

    def show_approval(
        self, pending: PendingAnswer, code: str, *, timeout: float, subject: str = PYTHON
    ) -> Callable[[], None]:
        """Show a question someone else may also show (the cell that asked); a click here resolves it.

        Returns the function that takes the question down once it is answered anywhere, and adds
        its outcome to the panel's list of decisions.
        """
        view = approval_view(code)
        with self._state.lock:
            previous, self._pending = self._pending, pending
            words = wording(subject)
            self.approval = {
                "id": pending.id,
                "code": code,
                **view,
                "timeout": timeout,
                "action": words.action,
                "allow": words.allow,
            }
        if previous is not None and previous is not pending:
            previous.resolve(False, via="panel")

        def clear() -> None:
            with self._state.lock:
                if self._pending is pending:
                    self._pending = None
                    self.approval = {}
            self.note_decision(view, pending.answer)

        return clear

    def note_decision(self, view: dict[str, Any], answer: bool | None) -> None:
        """Add an approval's outcome to the panel's list of decisions (``view``: ``approval_view(code)``)."""
        self._push(self._state.add_decision(view, answer))

    # --- frontend messages -----------------------------------------------------------

    def _on_frontend_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        name = self.handlers.get(str(content.get("type")))
        if name is not None:
            getattr(self, name)(content)

    def _answer_approval(self, content: dict[str, Any]) -> None:
        pending = self._pending
        if pending is not None and content.get("id") == pending.id:
            pending.resolve(bool(content.get("run")), always=bool(content.get("always")), via="panel")

    def _save_memory(self, content: dict[str, Any]) -> None:
        self._push(self._memory.save(content))

    def _dismiss_memory(self, content: dict[str, Any]) -> None:
        self._push(self._memory.dismiss(content))

    def _forget_memory(self, content: dict[str, Any]) -> None:
        self._push(self._memory.forget(content))

    def _undo_memory(self, content: dict[str, Any]) -> None:
        self._push(self._memory.undo(content))

    def _inspect(self, content: dict[str, Any]) -> None:
        """The inspector opened, closed, or picked a step (turn/step None: follow the latest)."""
        self._state.inspector_open = bool(content.get("open", True))
        if not self._state.inspector_open:
            return
        records = records_of(self.session)
        turn, step = content.get("turn"), content.get("step")
        changed = self._state.set_records(records)
        if turn is None or step is None:
            changed |= self._state.inspect(records, None, None)
        else:
            changed |= self._state.inspect(records, int(turn), int(step))
        self._push(changed)

    def _dismiss_notice(self, content: dict[str, Any]) -> None:
        self._push(self._state.dismiss_notice(str(content.get("id", ""))))

    def _rewind_view(self, result: dict[str, Any] | None = None) -> dict[str, Any]:
        """What the timeline offers: a rewind to before each turn, and the undo when this session is a rewind's copy."""
        if self.rewinds is None:
            return {}
        undo = self.rewinds.rewound_from(self.session.name)
        return {"turns": self.session.turn, "undo": undo, **({"result": result} if result else {})}

    def _rewind(self, content: dict[str, Any]) -> None:
        """A confirmed click on the timeline: rewind to before a turn (``turn``) or undo the rewind (``undo``)."""
        rewinds, name = self.rewinds, self.session.name
        if rewinds is None:
            return
        if content.get("undo"):
            ok, lines = rewinds.undo(name)
        else:
            turn = content.get("turn")
            ok, lines = rewinds.rewind(name, turn) if isinstance(turn, int) else (False, ["no turn named"])
        self._results += 1
        result = {"id": f"w{self._results}", "ok": ok, "undo": bool(content.get("undo")), "lines": lines}
        self.rewind = self._rewind_view(result)
