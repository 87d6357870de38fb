"""The spill: a tool result's full text saved before anything shortens it, so its handle keeps resolving.

Three things shorten what the window shows of a result: truncation when it arrives, eviction
when it grows old, and a compaction that folds it into the summary. Each has the full text saved
first, here: truncation queues it and the step's commit writes it with the messages (``take``);
eviction saves what its plan names; a fold saves the folded results not saved yet. A redacted
result is never saved (its handle must not lead back to the secret), and a saved text is never
overwritten (by then the window holds the truncated copy).
"""

from __future__ import annotations

from monad_notebook.messages import Message
from monad_notebook.store.base import ToolOutputs


class Spill:
    def __init__(self, store: ToolOutputs, session: str) -> None:
        self.store = store
        self.session = session
        self._queued: dict[str, str] = {}

    def queue(self, tool_call_id: str, text: str) -> None:
        """A truncated result's full text, written with the step that holds it."""
        self._queued[tool_call_id] = text

    def take(self) -> dict[str, str]:
        """The queued texts (tool-call id -> full text), handed over once."""
        queued, self._queued = self._queued, {}
        return queued

    def save(self, texts: dict[str, str]) -> None:
        """Write ``texts`` (one write; none when empty)."""
        if texts:
            self.store.save_raw_outputs(self.session, texts)

    def saved(self, tool_call_ids: list[str]) -> set[str]:
        """Which of these results have their full text saved."""
        return self.store.has_raw_outputs(self.session, tool_call_ids)

    def before_fold(self, span: list[Message]) -> None:
        """Save the full text of the span's results not saved yet, so the handles the summary names resolve."""
        results = {m.tool_call_id: m.content for m in span if m.role == "tool" and m.tool_call_id and not m.redacted}
        if results:
            saved = self.saved(list(results))
            self.save({k: v for k, v in results.items() if k not in saved})
