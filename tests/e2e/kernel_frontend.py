"""A kernel driven as a frontend drives it (jupyter_client), with every message it sent and when."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

WIDGET = "application/vnd.jupyter.widget-view+json"


class Frontend:
    """One kernel and what it sent, with the time each message arrived."""

    def __init__(self, workdir) -> None:
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="python3", cwd=str(workdir))
        self.seen: list[tuple[float, dict[str, Any]]] = []

    def run(self, code: str, *, stdin: Callable[[dict], None] | None = None, on_iopub=None, cell_id: str = "") -> dict:
        """Execute ``code``; with ``cell_id`` the request carries it, as JupyterLab, Notebook 7 and VS Code send it."""

        def output(msg: dict) -> None:
            self.seen.append((time.monotonic(), msg))
            if on_iopub is not None:
                on_iopub(msg)

        def answer(msg: dict) -> None:
            self.seen.append((time.monotonic(), msg))
            if stdin is not None:
                stdin(msg)

        session, plain = self.kc.session, self.kc.session.msg
        if cell_id:
            session.msg = lambda kind, content=None, **rest: plain(kind, content, **rest, metadata={"cellId": cell_id})
        try:
            return self.kc.execute_interactive(
                code, timeout=90, output_hook=output, allow_stdin=stdin is not None, stdin_hook=answer
            )["content"]
        finally:
            session.msg = plain

    def first(self, predicate: Callable[[dict], bool]) -> float:
        return next(at for at, msg in self.seen if predicate(msg))

    def text(self) -> str:
        parts = []
        for _, msg in self.seen:
            content = msg["content"]
            if msg["msg_type"] == "stream":
                parts.append(content["text"])
            elif msg["msg_type"] in ("display_data", "update_display_data"):
                parts.append(content["data"].get("text/plain", ""))
        return "\n".join(parts)

    def custom(self, comm_id: str, content: dict) -> None:
        """A click or a report from the widget's view, as a browser sends it."""
        data = {"method": "custom", "content": content}
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def is_widget(msg: dict) -> bool:
    return msg["msg_type"] == "display_data" and WIDGET in msg["content"]["data"]


def is_input(msg: dict) -> bool:
    return msg["msg_type"] == "input_request"


class Views:
    """The widget side of a frontend that draws widgets: it draws a question once the cell displays it."""

    def __init__(self) -> None:
        self.requests: dict[str, str] = {}  # comm id -> question id, from the widget's opening state

    def drawn(self, msg: dict) -> tuple[str, str] | None:
        """(comm id, question id) when ``msg`` displays the in-cell question, as a browser would then draw it."""
        content = msg["content"]
        if msg["msg_type"] == "comm_open":
            request = content["data"].get("state", {}).get("request")
            if isinstance(request, dict) and "id" in request:
                self.requests[content["comm_id"]] = request["id"]
        elif is_widget(msg):
            comm_id = content["data"][WIDGET].get("model_id")
            if comm_id in self.requests:
                return comm_id, self.requests[comm_id]
        return None
