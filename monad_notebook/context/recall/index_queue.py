"""The recall indexer's queue: jobs one worker thread takes, a waiting search's session and history checks first.

A job waits ``linger`` seconds for the next ones, so back-to-back steps share their writes; a
search waiting on a session (``urgent``) or a stop has the queue taken at once. The worker
starts with the first job and ends when none is left, at a lower priority than the kernel's
threads. Jobs of one session and kind taken together are done as one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from monad_notebook.daemon import Daemon
from monad_notebook.foreground import lower_priority
from monad_notebook.messages import Message
from monad_notebook.store.base import Chunk

BACKGROUND_NICE = 10  # a thread this much nicer gets about a tenth of a core its turn's thread wants


@dataclass
class IndexJob:
    """Messages of one session to index: their chunks when the words are written already, else None."""

    session: str
    messages: list[Message]
    chunks: dict[str, list[Chunk]] | None = None
    history: bool = False  # compare the session's stored history with the index first


class IndexQueue:
    """Jobs for one worker thread, which hands each to ``work``; ``pending`` counts those queued or in hand.

    ``cond`` is shared with what the jobs update (``backlog.py``), so a search waits on both at once.
    """

    linger = 0.5  # seconds a job waits for the next ones, so back-to-back steps share their writes

    def __init__(self, cond: threading.Condition, work: Callable[[IndexJob], None]) -> None:
        self.cond = cond
        self._work = work
        self.urgent: set[str] = set()  # sessions a search waits on: their jobs come first, without yielding
        self.stopping = False
        self.pending = 0
        self._jobs: list[IndexJob] = []
        self._queued_at = 0.0  # when the oldest queued job was queued
        self._worker: Daemon | None = None

    def put(self, job: IndexJob) -> None:
        """Queue ``job`` and start the worker if it is not running."""
        with self.cond:
            if not self._jobs:
                self._queued_at = time.monotonic()
            self._jobs.append(job)
            self.pending += 1
            self.cond.notify_all()
            if self._worker is None:
                self._worker = Daemon("monad-recall-index", self._run).start()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued job is done (or given up on); False on timeout."""
        with self.cond:
            return self.cond.wait_for(lambda: self.pending == 0, timeout)

    def stop(self) -> None:
        """Drop the queued jobs and take no more; the one in hand runs on until it sees ``stopping``."""
        with self.cond:
            self.stopping = True
            self.pending -= len(self._jobs)
            self._jobs = []
            self.cond.notify_all()

    def _run(self) -> None:
        lower_priority(BACKGROUND_NICE)
        while True:
            with self.cond:
                deadline = self._queued_at + self.linger  # a queue older than that is taken at once
                while self._jobs and not (self.stopping or self.urgent) and time.monotonic() < deadline:
                    self.cond.wait(deadline - time.monotonic())
                if not self._jobs:
                    self._worker = None
                    return
                jobs, self._jobs = self._jobs, []
            try:
                for job in self._in_order(jobs):
                    self._work(job)
            finally:
                with self.cond:
                    self.pending -= len(jobs)
                    self.cond.notify_all()

    def _in_order(self, jobs: list[IndexJob]) -> list[IndexJob]:
        """Each session's history check first, then its new messages in one job; the urgent session's first."""
        return sorted(_merged(jobs), key=lambda j: (j.session not in self.urgent, not j.history))


def _merged(jobs: list[IndexJob]) -> list[IndexJob]:
    """Jobs of one session and kind as one: back-to-back steps share their writes."""
    merged: dict[tuple[str, bool, bool], IndexJob] = {}
    for job in jobs:
        key = (job.session, job.history, job.chunks is None)
        if key not in merged:
            merged[key] = IndexJob(job.session, [], None if job.chunks is None else {}, job.history)
        merged[key].messages += job.messages
        if job.chunks is not None and merged[key].chunks is not None:
            merged[key].chunks.update(job.chunks)
    return list(merged.values())
