"""How a turn's messages reach the store: the question with the model's first answer, calls before they run.

A turn the model never answered (no key, a dead endpoint, a request refused as too large, an
interrupt while it was asked) leaves no question behind, so asking again never stores it twice.
An assistant message whose calls are about to run is stored before they run: a kernel that dies
during a call leaves it on record, and the next turn answers it as cut short by a crash.
"""

from __future__ import annotations

from typing import Protocol

from monad_notebook.context.window import Window
from monad_notebook.messages import Message


class TranscriptStore(Protocol):
    def append_messages(self, messages: list[Message]) -> int | None: ...
    def load_messages(self, session: str, *, after_seq: int = -1) -> list[Message]: ...


class TranscriptWriter:
    """The writes of one session's messages, and what the window holds that is not stored yet."""

    def __init__(self, window: Window, store: TranscriptStore) -> None:
        self.window = window
        self.store = store
        self.early: dict[str, bool] = {}  # in the window before their step's write -> stored
        self.unsaved: dict[str, Message] = {}  # results whose write failed, by call id: written with the next turn
        self.question: Message | None = None  # this turn's user message while the model has not answered

    def ask(self, question: Message) -> None:
        """The turn's question joins the window; it is stored with the step that holds the model's first answer."""
        self.window.extend([question])
        self.early[question.id] = False
        self.question = question

    def announce(self, assistant: Message) -> None:
        """Store an assistant message whose calls are about to run (and the question, if not yet), and put it in
        the window; ``store`` writes them no more. A write stopped midway (an interrupt) is looked up: what did not
        land is written by ``store``."""
        self.window.extend([assistant])
        self.early[assistant.id] = False
        batch = [m for m in (self.question, assistant) if m is not None and not self.early[m.id]]
        try:
            self.window.wrote(self.store.append_messages(batch))
            self.early.update(dict.fromkeys((m.id for m in batch), True))
        except BaseException:
            after = {m.id for m in self.store.load_messages(self.window.session, after_seq=batch[0].seq - 1)}
            self.early.update({m.id: m.id in after for m in batch})
            raise

    def store_step(self, messages: list[Message]) -> list[Message]:
        """Write a step's messages not stored already, in one write, the turn's question first if it is still
        waiting; those not in the window yet join it. Returns every message of the step, the question included."""
        question, self.question = self.question, None
        messages = [question, *messages] if question is not None else messages
        early = {m.id: self.early.pop(m.id) for m in messages if m.id in self.early}
        fresh = [m for m in messages if not early.get(m.id, False)]
        if fresh:
            try:
                self.window.wrote(self.store.append_messages(fresh))
            except BaseException:
                self.unsaved.update({m.tool_call_id: m for m in fresh if m.role == "tool"})
                raise
        self.window.extend([m for m in messages if m.id not in early])
        return messages

    def withdraw(self) -> Message | None:
        """The turn failed: a question never stored leaves the window. Returns the question if it was stored
        (with calls that ran), for it to be indexed."""
        question, self.question = self.question, None
        if question is None:
            return None
        if self.early.pop(question.id, False):
            return question
        self.window.withdraw(question)
        return None
