"""The ``%%monad`` cell's live view of a turn, drawn in the order things happened.

A rich frontend gets one output per piece: streamed answer text (Markdown, always through
``sanitize_markdown``), a collapsible block per tool call, a note per context event, then the
footer. A new piece opens a new output below the last, so whatever the python tool's code
prints or displays appears right under its tool block and above the text that follows. A
terminal gets the same story as plain lines.

Events from worker threads are not drawn here: a thread cannot tell which cell is showing, so
``background.Inbox`` keeps what they say and this view shows it at its next drawing point.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from IPython.display import display

from monad_notebook import events as ev
from monad_notebook.cell.background import Inbox, Notice, on_worker_thread
from monad_notebook.cell.html import Footer, ToolBlock, note_html, one_line
from monad_notebook.events import Event
from monad_notebook.safe_markdown import sanitize_markdown

DRAW_EVERY = 0.1  # seconds between redraws of streamed text
NOTE_TAGS = {"warning": "warning", "error": "warning"}


def _flush_streams() -> None:
    """Send what the code printed so far before anything is drawn below it."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or odd stream must not fail the turn
            continue


def note_for(event: Event) -> tuple[str, str, str] | None:
    """(tag, text, kind) for a context event the cell reports, or None."""
    data = event.data
    if event.kind == ev.EVICTED:
        text = f"{data['count']} old tool result(s), {data['reclaimed']:,} tokens (recoverable by handle)"
        return "cleared", text, "info"
    if event.kind == ev.ERROR:
        return "warning", str(data.get("message", "")), "warning"
    if event.kind == ev.HANDOFF_SUGGESTED:
        return "tip", str(data.get("message", "")), "info"
    if event.kind == ev.TEXT_CALLS_UNUSED:
        return "tool calls", str(data.get("message", "")), "warning"
    if event.kind == ev.COMPACTION_APPLIED:
        unit = "tokens" if data.get("exact") else "tokens, estimated"
        text = (
            f"{data.get('messages', 0)} older messages folded into the summary"
            + (" (prepared in the background)" if data.get("background") else "")
            + f": window {data['tokens_before']:,} -> {data['tokens_after']:,} {unit}"
        )
        if data.get("replaced"):
            text += f"; extractive summary used, the fast model's was not kept: {data['replaced']}"
        return "summarized", text, "info"
    return None


def _answer(text: str) -> dict[str, str]:
    """The answer so far: Markdown made safe for a renderer, the text itself for a frontend that shows plain text."""
    return {"text/markdown": sanitize_markdown(text) or "…", "text/plain": text or "…"}


class CellView:
    """One turn's output. ``rich``: a Jupyter frontend (HTML and Markdown); else plain text on stdout."""

    def __init__(
        self,
        rich: bool,
        inbox: Inbox | None = None,
        show: Callable[..., Any] = display,
        redact: Callable[[str], str] = lambda text: text,
    ) -> None:
        """``redact``: the session's redaction, applied to the whole answer so far at each drawing (the model may
        write a key it read off an image; a stream's pieces are too short to judge alone)."""
        self.rich = rich
        self.inbox = inbox
        self.show = show
        self.redact = redact
        self.text = ""  # the whole answer so far (every text piece)
        self._piece = ""  # the text piece being streamed
        self._piece_handle: Any = None
        self._last_draw = 0.0
        self._tools: dict[str, tuple[ToolBlock, Any]] = {}
        self.notes: list[str] = []
        self._show_background()

    # --- text ------------------------------------------------------------------------

    def on_text(self, delta: str) -> None:
        self.text += delta
        if not self.rich:
            sys.stdout.write(delta)
            sys.stdout.flush()
            return
        if self._piece_handle is None:
            _flush_streams()
            self._piece_handle = self.show(_answer(""), raw=True, display_id=True)
        self._piece += delta
        self._draw_piece()

    def _draw_piece(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._piece_handle is None or (not force and now - self._last_draw < DRAW_EVERY):
            return
        self._last_draw = now
        self._piece_handle.update(_answer(self.redact(self._piece)), raw=True)

    def _end_piece(self) -> None:
        """Whatever comes next is drawn below the text streamed so far."""
        if self._piece_handle is not None:
            self._draw_piece(force=True)
        elif not self.rich and self.text and not self.text.endswith("\n"):
            print(flush=True)
        self._piece, self._piece_handle = "", None

    # --- events ----------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if on_worker_thread():
            return  # kept by the inbox, shown from this thread
        self._show_background()
        data = event.data
        if event.kind == ev.TOOL_STARTED:
            block = ToolBlock(
                str(data.get("name", "")), str(data.get("arguments", "")), recovered=str(data.get("recovered") or "")
            )
            self._tool_started(str(data.get("tool_call_id", "")), block)
        elif event.kind == ev.TEXT_CALLS:
            self._keep_prose(int(data.get("prose_chars") or 0))
        elif event.kind == ev.TOOL_FINISHED:
            self._tool_finished(str(data.get("tool_call_id", "")), data)
        else:
            note = note_for(event)
            if note is not None:
                self._note(*note)

    def _keep_prose(self, chars: int) -> None:
        """The text just streamed ended with tool calls written as text, now shown as tool blocks:
        only the words before them (their first ``chars`` characters) stay."""
        if self._piece_handle is None:
            return
        text = self._piece.strip()[:chars]
        self.text = self.text[: len(self.text) - len(self._piece)] + text
        self._piece_handle.update(_answer(self.redact(text)) if text.strip() else {"text/plain": ""}, raw=True)
        self._piece, self._piece_handle = "", None

    def _tool_started(self, call_id: str, block: ToolBlock) -> None:
        self._end_piece()
        _flush_streams()
        handle = None
        if self.rich:
            handle = self.show({"text/html": block.html(), "text/plain": block.text()}, raw=True, display_id=True)
        else:
            print(block.header(), flush=True)
        self._tools[call_id] = (block, handle)

    def _tool_finished(self, call_id: str, data: dict[str, Any]) -> None:
        found = self._tools.get(call_id)
        if found is None:
            return
        block, handle = found
        seconds = data.get("seconds")
        took = float(seconds) if isinstance(seconds, (int, float)) else None
        block.finish(str(data.get("preview", "")), took, str(data.get("outcome") or ""))
        if self.rich:
            handle.update({"text/html": block.html(), "text/plain": block.text()}, raw=True)
        else:
            _flush_streams()
            print(block.outcome(), flush=True)

    def _note(self, tag: str, text: str, kind: str = "info") -> None:
        self._end_piece()
        _flush_streams()
        self.notes.append(f"{tag}: {one_line(text, 400)}")
        if self.rich:
            self.show({"text/html": note_html(tag, text, kind), "text/plain": self.notes[-1]}, raw=True)
        else:
            print(self.notes[-1], flush=True)

    def _show_background(self) -> None:
        if self.inbox is None:
            return
        for notice in self.inbox.drain():
            self._background(notice)

    def _background(self, notice: Notice) -> None:
        self._note(f"background {NOTE_TAGS.get(notice.kind, notice.kind)}", notice.text, "warning")

    # --- the end ---------------------------------------------------------------------

    def finish(self, footer: Footer) -> None:
        self._show_background()
        self._end_piece()
        _flush_streams()
        if self.rich:
            self.show({"text/html": footer.html(), "text/plain": footer.text()}, raw=True)
        else:
            print(f"\n{footer.text()}", flush=True)
