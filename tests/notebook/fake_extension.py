"""The notebook extension's side of the bridge, in Python: a document of cells and the proposals shown in it.

It answers the requests ``js/src/link.ts`` and ``js/src/review.ts`` answer, with the same checks
(an unknown cell, a cell changed since it was read, a change already waiting), so the kernel side
can be tested in-process; the real extension is driven in a browser in ``tests/e2e``.
"""

from __future__ import annotations

import threading
from typing import Any

from monad_notebook.notebook.frontend import NotebookFrontend


class FakeKernel:
    """What the notebook reads of a kernel: the running request's header and metadata."""

    def __init__(self, cell_id: str = "monad", code: str = "%%monad\nhelp", allow_stdin: bool = True) -> None:
        self._allow_stdin = allow_stdin
        self.execution = 1
        self.cell_id = cell_id
        self.code = code

    def get_parent(self) -> dict[str, Any]:
        metadata = {"cellId": self.cell_id} if self.cell_id else {}
        return {"header": {"msg_id": f"exec-{self.execution}"}, "metadata": metadata, "content": {"code": self.code}}


class FakeExtension:
    """A notebook open in a fake JupyterLab: cells by id, and the proposals waiting at them."""

    possible = True

    def __init__(self, frontend: NotebookFrontend, cells: list[tuple[str, str, str]], path: str = "work.ipynb") -> None:
        self.frontend = frontend
        self.path = path
        self.cells = [
            {"id": cid, "type": kind, "source": source, "execution_count": None, "outputs": []}
            for cid, kind, source in cells
        ]
        self.pending: dict[str, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.offers: dict[str, dict[str, Any]] = {}  # proposal id -> the kernel's last answer to "merge"
        self._asked: dict[Any, str] = {}  # ref -> the source a merge was asked for
        frontend.bridge = self  # type: ignore[assignment]

    def find(self, cell_id: str) -> int | None:
        return next((i for i, c in enumerate(self.cells) if c["id"] == cell_id), None)

    def request(self, op: str, *, timeout: float = 0.0, **data: Any) -> dict[str, Any]:
        self.requests.append({"op": op, **data})
        if op == "hello":
            if self.find(data.get("cell_id", "")) is None:
                raise AssertionError("the fake notebook does not hold the running cell")
            return {"ok": True, "path": self.path, "app": "JupyterLab", "pending": list(self.pending)}
        if op == "read":
            chosen = (
                [i for cid in data["ids"] if (i := self.find(cid)) is not None]
                if data.get("ids") is not None
                else list(range(len(self.cells)))[data["start"] : data["start"] + data["limit"]]
            )
            cells = [{**self.cells[i], "index": i} for i in chosen]
            pending = [self.pending_for(c["id"]) for c in cells]
            return {"ok": True, "total": len(self.cells), "cells": cells, "pending": pending, "path": self.path}
        if op == "propose":
            return self.propose(data["proposal"])
        if op == "run":
            at = self.find(data["cell_id"])
            if at is None or self.cells[at]["source"] != data["source"]:
                return {"ok": False, "error": f"cell {data['cell_id']} changed since it was read: read it again"}
            return {"ok": True, "status": "queued"}
        return {"ok": False, "error": f"unknown request {op}"}

    def reopen(self) -> None:
        """Nothing to reopen: the fake never loses its connection."""

    def pending_for(self, cell_id: str) -> str | None:
        return next((p["id"] for p in self.pending.values() if p["kind"] != "insert" and p["cell_id"] == cell_id), None)

    def propose(self, proposal: dict[str, Any]) -> dict[str, Any]:
        at = self.find(proposal["cell_id"])
        if at is None:
            return {"ok": False, "error": f"no cell with id {proposal['cell_id']} in the notebook"}
        if proposal["kind"] in ("change", "remove"):
            if self.pending_for(proposal["cell_id"]):
                return {"ok": False, "error": f"cell {proposal['cell_id']} already has a change waiting"}
            if self.cells[at]["source"] != proposal["base"]:
                return {"ok": False, "error": f"cell {proposal['cell_id']} changed since you read it: read it again"}
        if proposal["mode"] == "auto":
            self.apply(proposal)
            return {"ok": True, "status": "applied"}
        self.pending[proposal["id"]] = proposal
        return {"ok": True, "status": "pending"}

    def apply(self, proposal: dict[str, Any]) -> None:
        at = self.find(proposal["cell_id"])
        assert at is not None
        if proposal["kind"] == "change":
            self.cells[at]["source"] = proposal["source"]
            return
        if proposal["kind"] == "remove":
            del self.cells[at]
            return
        cell = {"id": proposal["new_id"], "type": proposal["cell_type"], "source": proposal["source"]}
        self.cells.insert(at + (1 if proposal["position"] == "below" else 0), {**cell, "execution_count": None})

    def tell(self, message: dict[str, Any]) -> None:
        """A message from the page reaches the kernel on its subshell's thread, never the turn's."""
        thread = threading.Thread(target=self.frontend._on_frontend, args=(message,))
        thread.start()
        thread.join()

    def click(self, proposal_id: str, accept: bool) -> None:
        """The user's Accept or Reject, told to the kernel as the extension tells it."""
        proposal = self.pending.pop(proposal_id)
        if accept:
            self.apply(proposal)
        decision = "accepted" if accept else "rejected"
        self.tell({"type": "decision", "proposal": proposal_id, "decision": decision, "detail": ""})

    def send(self, message: dict[str, Any]) -> None:
        """What the kernel tells the page unasked: its answer to a merge the page asked for."""
        assert message["type"] == "merged"
        self.offers[message["proposal"]] = {**message, "edited": self._asked.pop(message["ref"])}

    def type_into(self, cell_id: str, source: str) -> None:
        """The user edits a cell; a change waiting on it is set aside and the kernel asked for it on top of the edit."""
        at = self.find(cell_id)
        assert at is not None
        self.cells[at]["source"] = source
        waiting = self.pending_for(cell_id)
        if waiting and source != self.pending[waiting]["base"]:
            ref = len(self.requests) + len(self._asked)
            self._asked[ref] = source
            self.tell({"type": "merge", "proposal": waiting, "source": source, "ref": ref})

    def apply_on_top(self, proposal_id: str) -> None:
        """The user clicks "Apply on top": the merged source the kernel offered goes into the cell holding the edit."""
        offer = self.offers.pop(proposal_id)
        proposal = self.pending.pop(proposal_id)
        at = self.find(proposal["cell_id"])
        assert at is not None and self.cells[at]["source"] == offer["edited"] and "source" in offer
        self.cells[at]["source"] = offer["source"]
        self.tell({"type": "decision", "proposal": proposal_id, "decision": "accepted", "on_top": offer["edited"]})

    def dismiss(self, proposal_id: str) -> None:
        """The user clicks "Dismiss" on a change set aside by their edit."""
        self.pending.pop(proposal_id)
        self.offers.pop(proposal_id, None)
        detail = "the user edited the cell while the change waited"
        self.tell({"type": "decision", "proposal": proposal_id, "decision": "outdated", "detail": detail})
