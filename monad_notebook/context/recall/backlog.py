"""What the recall index holds of each session and what still waits for it.

Per session: the messages whose words are in the full-text index and those with all their
vectors, the stored ones still without either (``unworded``; ``unembedded``, with the embedding
inputs each still needs), and whether its stored history is compared with the index yet. A
search about to run waits on this (``RecallIndexer.settle``), so every change is made under
``cond`` and announced on it.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping

from monad_notebook.messages import Message


class Backlog:
    """The indexer's account of each session: what is indexed, what waits, what is not checked yet."""

    def __init__(self, cond: threading.Condition) -> None:
        self.cond = cond
        self.texted: dict[str, set[str]] = {}  # session -> ids in the full-text index
        self.embedded: dict[str, set[str]] = {}  # session -> ids with all their vectors
        self.unworded: dict[str, set[str]] = {}  # session -> stored ids not yet in the full-text index
        self.unembedded: dict[str, dict[str, int]] = {}  # session -> id -> embedding inputs still to make
        self.standouts: dict[str, set[int]] = {}  # session -> hashes of the standout lines it embedded
        self.met: set[str] = set()
        self.unchecked: set[str] = set()  # sessions whose stored history is not yet compared with the index

    def meet(self, session: str) -> bool:
        """True the first time: the session's history is then to be checked."""
        with self.cond:
            if session in self.met:
                return False
            self.met.add(session)
            self.unchecked.add(session)
            return True

    def stored(self, session: str, inputs: Mapping[str, int], *, worded: bool, vectors: bool) -> None:
        """Messages just stored, with their chunk counts (the inputs each is expected to need): their words
        written (``worded``) or not, their vectors to make (``vectors``) or not."""
        with self.cond:
            if worded:
                self.texted.setdefault(session, set()).update(inputs)
            else:
                self.unworded.setdefault(session, set()).update(inputs)
            if vectors:
                self.unembedded.setdefault(session, {}).update(inputs)

    # --- what a search and the status ask --------------------------------------------------

    def words_pending(self, session: str) -> bool:
        """The history check, or words of what it found, still to come: cheap, and a search needs them."""
        with self.cond:
            return session in self.unchecked or bool(self.unworded.get(session))

    def wanted(self, session: str, skip: Collection[str] = ()) -> dict[str, int]:
        """The session's messages still without vectors, but those in ``skip``: id -> inputs left (read it holding
        ``cond``: without ``skip`` it is the backlog's own)."""
        with self.cond:
            waiting = self.unembedded.get(session, {})
            return {m: n for m, n in waiting.items() if m not in skip} if skip else waiting

    def inputs(self, session: str, skip: Collection[str] = ()) -> int:
        """Embedding inputs the session's messages still need, but those in ``skip``."""
        with self.cond:
            return sum(self.wanted(session, skip).values())

    def unembedded_ids(self, session: str) -> set[str]:
        with self.cond:
            return set(self.unembedded.get(session, ()))

    @property
    def waiting(self) -> int:
        """Messages stored but not fully indexed: not searchable by words yet, or without their vectors."""
        with self.cond:
            ids = set().union(*self.unworded.values(), *(set(w) for w in self.unembedded.values()))
            return len(ids)

    @property
    def unsearchable(self) -> int:
        """Messages stored but not in the full-text index yet."""
        with self.cond:
            return sum(len(ids) for ids in self.unworded.values())

    # --- what the worker reports ------------------------------------------------------------

    def without_words(self, session: str, messages: list[Message]) -> list[Message]:
        """Those of ``messages`` whose words are not in the full-text index."""
        with self.cond:
            texted = self.texted.setdefault(session, set())
            return [m for m in messages if m.id not in texted]

    def worded(self, session: str, written: Iterable[str], messages: Iterable[str]) -> None:
        """The words of ``written`` went to the full-text index; none of ``messages`` waits for its words now."""
        with self.cond:
            self.texted.setdefault(session, set()).update(written)
            self.unworded.get(session, set()).difference_update(messages)
            self.cond.notify_all()

    def indexed(self, session: str, words: set[str], vectors: set[str] | None) -> set[str]:
        """What the store says is indexed (``vectors`` None: vectors are not made); the ids needing nothing more."""
        with self.cond:
            embedded = self.embedded.setdefault(session, set())
            if vectors is not None:
                embedded |= vectors
            texted = self.texted.setdefault(session, set())
            texted |= words
            return texted & embedded if vectors is not None else set(texted)

    def without_vectors(self, session: str, messages: list[Message]) -> list[Message]:
        """Those of ``messages`` without all their vectors."""
        with self.cond:
            embedded = self.embedded.setdefault(session, set())
            return [m for m in messages if m.id not in embedded]

    def found(self, session: str, stored: list[Message], guesses: Mapping[str, int] | None) -> None:
        """Stored messages the history check found missing, with the inputs each is expected to need (None: vectors
        are not made)."""
        with self.cond:
            texted, embedded = self.texted.setdefault(session, set()), self.embedded.setdefault(session, set())
            self.unworded.setdefault(session, set()).update(m.id for m in stored if m.id not in texted)
            if guesses is not None:
                waiting = self.unembedded.setdefault(session, {})
                waiting.update((m.id, guesses[m.id]) for m in stored if m.id not in embedded)

    def checked(self, session: str) -> None:
        with self.cond:
            self.unchecked.discard(session)
            self.cond.notify_all()

    def counted(self, session: str, left: Mapping[str, int]) -> None:
        """The inputs the session's messages make, counted now their full text is read."""
        with self.cond:
            waiting = self.unembedded.setdefault(session, {})
            waiting.update((m, n) for m, n in left.items() if m in waiting)

    def vectors_stored(self, session: str, left: Mapping[str, int]) -> None:
        """Inputs still to make per message, after a write; a message with none left has all its vectors."""
        with self.cond:
            waiting = self.unembedded.get(session, {})
            done = self.embedded.setdefault(session, set())
            for message_id, count in left.items():
                if count <= 0 and message_id not in done:
                    done.add(message_id)
                    waiting.pop(message_id, None)
                elif message_id in waiting:
                    waiting[message_id] = count
            self.cond.notify_all()

    def given_up(self, session: str, ids: set[str]) -> None:
        """A failed job's messages wait no more: the next process's history check finds them again."""
        with self.cond:
            self.unworded.get(session, set()).difference_update(ids)
            for message_id in ids:
                self.unembedded.get(session, {}).pop(message_id, None)
            self.cond.notify_all()
