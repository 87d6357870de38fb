"""The notebook the agent works in, through whichever frontend shows it.

Two paths, chosen once per execution of a ``%%monad`` cell:

- ``extension``: JupyterLab 4 or Notebook 7 with the monad-notebook extension answered. The
  agent reads the document as open now, and each proposal waits at its cell as a diff until the
  user accepts or rejects it there; the decision is told with the next tool result or message.
- ``output``: any other frontend a user sits at (VS Code, ...). The agent reads the saved file,
  and each proposal is reviewed in the running cell's output while the tool waits (``fallback.py``).

Where nobody sits at the notebook (nbclient, papermill, a script) there is no NotebookFrontend at
all, and the notebook tools are not offered (:func:`open_notebook`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from monad_notebook.config_schema import NotebookToolConfig
from monad_notebook.notebook.agent_runs import AGENT_RUNS, Keeper
from monad_notebook.notebook.bridge import HELLO_SECONDS, Bridge, BridgeError
from monad_notebook.notebook.document import Cell, NotebookFileError, Snapshot, read_saved, saved_path
from monad_notebook.notebook.fallback import OutputReview
from monad_notebook.notebook.ownership import Identity, live_identity, saved_identity
from monad_notebook.notebook.proposals import (
    ACCEPTED,
    APPLIED,
    NO_ANSWER,
    OUTDATED,
    Decided,
    Proposal,
    ProposalBook,
    decisions_note,
    diff_lines,
)

EXTENSION, OUTPUT = "extension", "output"
ABSENT_SECONDS = 300.0  # after a frontend did not answer, how long before asking it again


class NotebookRefused(Exception):
    """The notebook cannot do what the agent asked; the message is one line for the model."""


def open_notebook(shell: Any) -> NotebookFrontend | None:
    """The notebook this kernel serves, or None where nobody sits at one (nbclient, papermill, a terminal).

    A frontend a user sits at sends the running cell's id (JupyterLab, Notebook 7, VS Code) or
    allows input; nbclient and papermill do neither.
    """
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    parent = kernel.get_parent() or {}
    cell_id = (parent.get("metadata") or {}).get("cellId")
    if not cell_id and not getattr(kernel, "_allow_stdin", False):
        return None
    return NotebookFrontend(shell, kernel)


class NotebookFrontend:
    """Reads the open notebook and puts the agent's proposals before the user, on either path."""

    def __init__(self, shell: Any, kernel: Any) -> None:
        self.shell = shell
        self.kernel = kernel
        self.config: Callable[[], NotebookToolConfig] = NotebookToolConfig
        self.proposals = ProposalBook()
        self.bridge = Bridge(kernel, self._on_frontend)
        self.review = OutputReview(shell, lambda: 600.0)
        self.seen: dict[str, str] = {}  # cell id -> the source the agent last read or had accepted
        self.told_edits: dict[str, str] = {}  # cell id -> the user's edit the agent was last told of
        self.about: dict[str, Any] = {}  # what the extension said of itself: path, app, version
        self._path: tuple[str, str] = ("", "")  # (execution, path)
        self._answered = False
        self._absent_until = 0.0
        self._lock = threading.Lock()

    def attach(self, *, emit: Callable[..., None], config: Callable[[], Any], timeout: Callable[[], float]) -> None:
        """Tie it to a session: its events, its ``tools.notebook`` settings, its question time limit."""
        self.proposals.emit = emit
        self.config = config
        self.review.timeout = timeout

    @property
    def approval(self) -> str:
        return self.config().approval

    # --- which path ---------------------------------------------------------------------

    def execution(self) -> str:
        return str(((self.kernel.get_parent() or {}).get("header") or {}).get("msg_id", ""))

    def running_cell(self) -> str:
        return str(((self.kernel.get_parent() or {}).get("metadata") or {}).get("cellId") or "")

    def path(self) -> str:
        """``extension`` when the notebook extension answered for this execution, else ``output``."""
        execution = self.execution()
        if self._path[0] == execution and execution:
            return self._path[1]
        path = EXTENSION if self._probe() else OUTPUT
        self._path = (execution, path)
        return path

    def _probe(self) -> bool:
        if not self.bridge.possible or time.monotonic() < self._absent_until:
            return False
        for _attempt in range(2 if self._answered else 1):  # once answered, a reloaded page gets a new comm
            try:
                reply = self.bridge.request("hello", timeout=HELLO_SECONDS, cell_id=self._hello_cell())
            except BridgeError:
                self.bridge.reopen()
                continue
            if reply.get("ok"):
                self._answered = True
                self.about = reply
                self._reconcile([str(p) for p in reply.get("pending") or []])
                return True
        self._absent_until = time.monotonic() + ABSENT_SECONDS
        return False

    def _hello_cell(self) -> str:
        """The cell a hello names, so that the notebook holding it answers: the running one, or between executions
        (a click in the context panel) the one that ran last."""
        info = getattr(getattr(self.shell, "last_execution_result", None), "info", None)
        return self.running_cell() or str(getattr(info, "cell_id", None) or "")

    def _reconcile(self, shown: list[str]) -> None:
        """Proposals the page no longer shows (it was reloaded) can no longer be accepted."""
        for proposal_id in [p for p in self.proposals.pending_ids() if p not in shown]:
            detail = "the notebook page was reloaded before a decision"
            self.proposals.decide(proposal_id, OUTDATED, via="reload", detail=detail)

    def _ask(self, op: str, **data: Any) -> dict[str, Any]:
        try:
            reply = self.bridge.request(op, **data)
        except BridgeError as error:
            self._path = ("", "")
            raise NotebookRefused(f"the notebook did not answer ({error}): try again") from None
        if not reply.get("ok"):
            raise NotebookRefused(str(reply.get("error") or "the notebook refused"))
        return reply

    # --- whose notebook -------------------------------------------------------------------

    def identity(self) -> Identity:
        """The open document's path and named session when the extension answers, else the saved file's.

        VS Code names its file and runs no extension: it is not asked (a hello would wait for nothing).
        """
        namespace = getattr(self.shell, "user_ns", {})
        saved = saved_identity(namespace, Path.cwd())
        if "__vsc_ipynb_file__" in namespace or self.path() != EXTENSION:
            return saved
        live = live_identity(self.about)
        return live if live.path else Identity(saved.path, live.claimed or saved.claimed)

    def name_session(self, name: str) -> None:
        """Write the session's name into the open document's metadata, so that it travels with the file."""
        if self.path() != EXTENSION:
            return
        try:
            self._ask("own", session=name)
        except NotebookRefused:
            return  # the path stands in for the name until a later kernel can write it

    # --- reading ------------------------------------------------------------------------

    def read(self, *, start: int = 0, limit: int = 20, outputs: bool = False, ids: list[str] | None = None) -> Snapshot:
        """Cells ``start`` .. ``start + limit - 1`` (or those named in ``ids``), remembered as read."""
        if self.path() == EXTENSION:
            reply = self._ask("read", start=start, limit=limit, outputs=outputs, ids=ids)
            pending = list(reply.get("pending") or [])
            cells = [
                Cell.from_wire(c, pending[i] if i < len(pending) and pending[i] else "")
                for i, c in enumerate(reply.get("cells") or [])
            ]
            snapshot = Snapshot(str(reply.get("path") or ""), int(reply.get("total") or 0), cells, live=True)
        else:
            every = self._saved_cells()
            chosen = [c for c in every if c.id in ids] if ids is not None else every[start : start + limit]
            snapshot = Snapshot(str(self._saved_file()), len(every), chosen, live=False)
        with self._lock:
            self.seen.update({cell.id: cell.source for cell in snapshot.cells})
        return snapshot

    def edits(self) -> list[tuple[str, str, str]]:
        """The cells the agent read (or had its change accepted in) that the user changed or deleted since, and was
        not told of yet: (cell id, its source now or "" when deleted, what happened). Only where the extension
        answers: the live notebook; nothing is remembered as read."""
        with self._lock:
            seen, told = dict(self.seen), dict(self.told_edits)
        if not seen or self.path() != EXTENSION:
            return []
        try:
            cells = self._ask("read", start=0, limit=len(seen), outputs=False, ids=list(seen)).get("cells") or []
        except NotebookRefused:
            return []
        now = {str(c.get("id")): str(c.get("source") or "") for c in cells}
        edits = []
        for cell_id, base in seen.items():
            source = now.get(cell_id)
            if source == base or told.get(cell_id) == (source or ""):
                continue
            if source is None:
                edits.append((cell_id, "", "deleted"))
                continue
            lines = diff_lines(base, source)
            added, removed = sum(s == "+" for s, _ in lines), sum(s == "-" for s, _ in lines)
            edits.append((cell_id, source, f"changed (+{added} \u2212{removed} lines)"))
        return edits

    def edits_told(self, edits: list[tuple[str, str, str]]) -> None:
        """The model answered a turn that told it of ``edits``: each is not told again while the cell stays so."""
        with self._lock:
            self.told_edits.update({cell_id: source for cell_id, source, _ in edits})

    def running_id(self, cells: list[Cell]) -> str:
        """The running ``%%monad`` cell among ``cells``: by its id, else (a saved file) by its source."""
        running = self.running_cell()
        if any(c.id == running for c in cells):
            return running
        code = str(((self.kernel.get_parent() or {}).get("content") or {}).get("code") or "")
        return next((c.id for c in cells if code and c.source == code), "")

    def _saved_file(self) -> Path:
        path = saved_path(getattr(self.shell, "user_ns", {}), Path.cwd())
        if path is None:
            raise NotebookRefused(
                "this frontend does not say which notebook file is open, and it has no monad-notebook "
                "extension: the notebook cannot be read here; insert_cell still proposes new cells"
            )
        return path

    def _saved_cells(self) -> list[Cell]:
        try:
            return read_saved(self._saved_file())
        except NotebookFileError as error:
            raise NotebookRefused(str(error)) from None

    # --- proposing ----------------------------------------------------------------------

    def base_of(self, cell_id: str) -> str:
        """The source the agent read of ``cell_id``; a change is refused until it has read it."""
        with self._lock:
            if cell_id not in self.seen:
                raise NotebookRefused(f"cell {cell_id} was not read yet: read_cell({cell_id!r}) first")
            return self.seen[cell_id]

    def propose(self, kind: str, cell_id: str, source: str, **fields: Any) -> str:
        """The agent's proposal (``Proposal``'s fields), numbered here and put before the user; what happened, in a
        line for the model. A change is refused while another waits on its cell."""
        waiting = self.proposals.waiting_on(cell_id) if kind == "change" else None
        if waiting:
            raise NotebookRefused(f"cell {cell_id} already has change {waiting} waiting for the user's decision")
        return self.submit(Proposal(self.proposals.next_id(), kind, cell_id, source, **fields))

    def submit(self, proposal: Proposal) -> str:
        """Put the proposal before the user; what happened, in a line for the model.

        A proposal from a call read from the model's text waits for the user whatever the approval setting.
        """
        mode = "ask" if proposal.written else self.approval
        if self.path() == EXTENSION:
            return self._submit_to_extension(proposal, mode)
        self._check_saved(proposal)
        self.proposals.proposed(proposal, path=OUTPUT, mode="auto" if mode == "auto" else "ask")
        try:
            decision, via, how, landed = self.review.decide(
                proposal, mode=mode, execution=self.execution(), now=lambda: self._saved_source(proposal.cell_id)
            )
        except KeyboardInterrupt:  # the turn stops; the proposal is over, and nothing changed
            self.proposals.record(proposal, NO_ANSWER, via="interrupt", tell=False)
            raise
        decided = self.proposals.record(landed, decision, via=via, detail=how, tell=False)
        if decision in (ACCEPTED, APPLIED):
            self._remember(landed)
        return decided.told()

    def _submit_to_extension(self, proposal: Proposal, mode: str) -> str:
        self._ask("propose", proposal=proposal.wire(mode, _shown_summary(proposal)))
        self.proposals.proposed(proposal, path=EXTENSION, mode=mode)
        if mode == "auto":
            self._remember(proposal)
            done = "shown to the user as a diff at the cell"
            return self.proposals.record(proposal, APPLIED, via="auto", detail=done, tell=False).told()
        return (
            f"proposed {proposal.id}: {proposal.summary()}, shown to the user as a diff at the cell with "
            "Accept / Reject; it is not in the notebook unless they accept. Their decision comes with a "
            "later tool result or their next message."
        )

    def _check_saved(self, proposal: Proposal) -> None:
        """On the output path the saved file stands for the notebook: the same checks as the extension's."""
        if proposal.anchor_is_running and proposal.kind == "insert":
            return
        cells = {c.id: c for c in self._saved_cells()}
        cell = cells.get(proposal.cell_id)
        if cell is None:
            raise NotebookRefused(f"no cell with id {proposal.cell_id} in the notebook: read_notebook lists the ids")
        if proposal.kind == "change" and cell.source != proposal.base:
            raise NotebookRefused(f"cell {proposal.cell_id} changed since you read it: read it again")

    def _saved_source(self, cell_id: str) -> str | None:
        """The cell's source in the saved file now, or None when it is gone or the file cannot be read."""
        try:
            return next((c.source for c in self._saved_cells() if c.id == cell_id), None)
        except NotebookRefused:
            return None

    def _remember(self, proposal: Proposal) -> None:
        with self._lock:
            if proposal.kind == "remove":
                self.seen.pop(proposal.cell_id, None)
                return
            self.seen[proposal.new_id if proposal.kind == "insert" else proposal.cell_id] = proposal.source

    def undo_landed(self, proposal_ids: list[str]) -> tuple[list[Proposal], list[str]]:
        """Put before the user, as diffs at the cells, what undoes the proposals of ``proposal_ids`` (in the order
        they landed) that this kernel put in the notebook: a cell they inserted removed, a cell they changed given
        its source from before the first of them; each waits for Accept or Reject, whatever the approval setting.
        Returns those proposed, and the cells that could not be, each with why."""
        if self.path() != EXTENSION:
            return [], ["this frontend cannot show a change at a cell: put the cells back by hand"]
        landed = [p for i in proposal_ids if (p := self.proposals.landed.get(i)) is not None]
        unknown = [i for i in proposal_ids if i not in self.proposals.landed]
        earlier: dict[str, Proposal] = {}
        for proposal in landed:
            cell = proposal.new_id if proposal.kind == "insert" else proposal.cell_id
            earlier.setdefault(cell, proposal)  # the first of them: the cell as it was before every one
        now = {cell.id: cell.source for cell in self.read(ids=list(earlier)).cells}
        made, missed = [], [f"proposal {i} was made before this kernel started" for i in unknown]
        for cell, first in reversed(earlier.items()):
            if cell not in now or (first.kind == "change" and now[cell] == first.base):
                continue  # gone already, or back as it was
            kind, source = ("remove", "") if first.kind == "insert" else ("change", first.base)
            back = Proposal(self.proposals.next_id(), kind, cell, source, base=now[cell], by="rewind")
            try:
                self._submit_to_extension(back, "ask")
            except NotebookRefused as refused:
                missed.append(f"cell {cell}: {refused}")
                continue
            made.append(back)
        return made, missed

    def check_can_run(self, cell_id: str) -> None:
        """Only the extension can run a cell for the agent."""
        if self.path() != EXTENSION:
            raise NotebookRefused(
                f"this frontend cannot run a cell for the agent: ask the user to run cell {cell_id}, "
                "or run the code with the python tool"
            )

    def run(self, cell_id: str, source: str, keeper: Keeper | None = None) -> str:
        """Queue a cell to run after the turn (the kernel is busy with it now), while it still holds ``source``;
        ``keeper`` keeps what it changes (``agent_runs.py``)."""
        self.check_can_run(cell_id)
        reply = self._ask("run", cell_id=cell_id, source=source)
        if reply.get("status") == "rendered":
            return f"markdown cell {cell_id} is rendered"
        AGENT_RUNS.queue(cell_id, keeper)
        return (
            f"queued: cell {cell_id} runs when this turn ends (the kernel is busy with the turn until then); "
            "read its outputs with read_cell at the next turn"
        )

    # --- decisions ----------------------------------------------------------------------

    def _on_frontend(self, data: dict[str, Any]) -> None:
        """What the user did at a cell (on the kernel's subshell thread, maybe while the turn runs)."""
        if data.get("type") == "merge":
            self._offer_on_top(data)
            return
        if data.get("type") != "decision":
            return
        decision = str(data.get("decision") or "")
        if decision not in (ACCEPTED, "rejected", OUTDATED):
            return
        proposal_id, edited = str(data.get("proposal") or ""), data.get("on_top")
        on_top = decision == ACCEPTED and isinstance(edited, str)
        landed = self._landed_on_top(proposal_id, str(edited)) if on_top else None
        detail = str(data.get("detail") or "")
        decided = self.proposals.decide(proposal_id, decision, via="cell", detail=detail, landed=landed)
        if decided is not None and decision == ACCEPTED and (landed is not None or not on_top):
            self._remember(decided.proposal)

    def _landed_on_top(self, proposal_id: str, edited: str) -> Proposal | None:
        """The change as it landed on top of the user's edit; None (and the cell to be read again) when unknown."""
        waiting = self.proposals.waiting(proposal_id)
        landed = waiting.on_top_of(edited) if waiting is not None else None
        if isinstance(landed, Proposal):
            return landed
        if waiting is not None:
            with self._lock:
                self.seen.pop(waiting.cell_id, None)
        return None

    def _offer_on_top(self, data: dict[str, Any]) -> None:
        """The user edited a cell whose change waits: the change on top of their edit, as a diff, or why not."""
        proposal_id = str(data.get("proposal") or "")
        waiting = self.proposals.waiting(proposal_id)
        reply: dict[str, Any] = {"type": "merged", "proposal": proposal_id, "ref": data.get("ref")}
        if waiting is None or waiting.kind != "change":
            reply["overlap"] = "the change no longer waits"
        else:
            on_top = waiting.on_top_of(str(data.get("source") or ""))
            if isinstance(on_top, str):
                reply["overlap"] = on_top
            else:
                lines = [list(row) for row in on_top.lines]
                reply.update(source=on_top.source, lines=lines, summary=_shown_summary(on_top))
        self.bridge.send(reply)

    def untold(self) -> list[Decided]:
        return self.proposals.untold()

    def with_decisions(self, message: str) -> str:
        """The user's message, after the decisions the agent has not been told yet."""
        return decisions_note(self.untold()) + message


def _shown_summary(proposal: Proposal) -> str:
    """The proposal as the user reads it at the cell, with its size."""
    if proposal.kind == "remove":
        return f"A rewind removes this cell, which an undone turn put in ({proposal.size()})"
    if proposal.kind == "change" and proposal.by:
        return f"A rewind gives this cell back its source from before the undone turns ({proposal.size()})"
    if proposal.kind == "change":
        mine = " on top of your edit" if proposal.on_top else ""
        return f"A change to this cell{mine} ({proposal.size()}){proposal.origin()}"
    return f"A new {proposal.cell_type} cell {proposal.position} this one ({proposal.size()}){proposal.origin()}"
