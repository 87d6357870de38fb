"""Two kernel.py children drive one session, taking turns or at once; then check what a user would find.

Shared by ``test_shared_session.py`` and ``benchmarks/reliability_long.py``.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monad_notebook.messages import Message
from monad_notebook.store.lance import LanceStore

KERNEL = Path(__file__).with_name("kernel.py")
BUSY = "is busy in another kernel"


class KernelProcess:
    """A kernel.py child; its answer lines are drained on a thread into a queue."""

    def __init__(self, db: Path, session: str, name: str) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, str(KERNEL), str(db), session, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.answers: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr = ""
        self._quit = False
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_errors, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            answer = json.loads(line)
            self.answers.append(answer)
            self._queue.put(answer)
        self._queue.put(None)

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def expect(self, *kinds: str, timeout: float = 120) -> dict[str, Any]:
        """The next answer of one of ``kinds`` (summary reports in between are kept in ``answers``)."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self._queue.get(timeout=max(0.01, deadline - time.monotonic()))
            if answer is None:
                self.process.wait(timeout=10)
                raise RuntimeError(f"kernel {self.name} exited: {self.stderr.strip()[-2000:]}")
            if any(kind in answer for kind in kinds):
                return answer

    def quit(self) -> None:
        """Ask the kernel to close its session and exit, without waiting (``close`` waits)."""
        if self.process.poll() is None and not self._quit:
            self.send(quit=True)
            self._quit = True

    def close(self) -> None:
        if self.process.poll() is None:
            self.quit()
            self.expect("closed")
        self.process.wait(timeout=30)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [a for a in self.answers if kind in a]


@dataclass
class Run:
    kernels: list[KernelProcess]
    order: list[tuple[str, str]] = field(default_factory=list)  # (kernel, tag) of acknowledged turns, in order
    seconds: float = 0.0
    since: list[int] = field(default_factory=list)  # each kernel's answers before this run, left out

    def __post_init__(self) -> None:
        self.since = self.since or [len(k.answers) for k in self.kernels]

    def answers(self, kind: str) -> list[dict[str, Any]]:
        return [a for k, n in zip(self.kernels, self.since, strict=True) for a in k.answers[n:] if kind in a]


def start(db: Path, session: str, kernels: list[KernelProcess] | None = None) -> list[KernelProcess]:
    """Kernels ``a`` and ``b``, started together, each with the session open.

    ``kernels``: ``a`` and ``b`` already running on ``db`` (``KernelProcess``), each told to open the session.
    """
    if kernels is None:
        kernels = [KernelProcess(db, session, name) for name in ("a", "b")]
    else:
        for kernel in kernels:
            kernel.send(open=session)
    for kernel in kernels:
        kernel.expect("ready")
    return kernels


def end(kernels: list[KernelProcess], started: bool) -> None:
    """Close the kernels ``start`` started; leave the session on those it was given (their work landed)."""
    for kernel in kernels:  # both at once
        if started:
            kernel.quit()
        else:
            kernel.send(leave=True)
    for kernel in kernels:
        if started:
            kernel.close()
        else:
            kernel.expect("left", timeout=60)


def take_turns(db: Path, session: str, turns: int, kernels: list[KernelProcess] | None = None) -> Run:
    """Two kernels with the session open alternate: each turn starts after the other's has ended."""
    mine = kernels is None
    kernels = start(db, session, kernels)
    started = time.monotonic()
    run = Run(kernels)
    try:
        for number in range(turns):
            kernel = kernels[number % 2]
            kernel.send(ask=True)
            answer = kernel.expect("turn", "refused", "error")
            if "turn" in answer:
                run.order.append((kernel.name, answer["turn"]))
    finally:
        end(kernels, mine)
    run.seconds = time.monotonic() - started  # from both kernels ready to both closed
    return run


def at_once(db: Path, session: str, seconds: float, kernels: list[KernelProcess] | None = None) -> Run:
    """Two kernels run turns back to back on the same session for ``seconds``."""
    mine = kernels is None
    kernels = start(db, session, kernels)
    started = time.monotonic()
    run = Run(kernels)
    try:
        for kernel in kernels:
            kernel.send(loop=seconds)
        for kernel in kernels:
            kernel.expect("done", timeout=seconds + 120)
    finally:
        end(kernels, mine)
    run.seconds = time.monotonic() - started  # from both kernels ready to both closed
    return run


def orphan_results(request: list[dict[str, Any]]) -> list[str]:
    """Tool results not answering a call of the assistant message right before their block."""
    orphans, open_calls = [], set()
    for message in request:
        if message["role"] == "tool":
            if message["tool_call_id"] not in open_calls:
                orphans.append(message["tool_call_id"])
            open_calls.discard(message["tool_call_id"])
        else:
            open_calls = set(message["calls"]) if message["role"] == "assistant" else set()
    return orphans


def problems(run: Run, store: LanceStore, session: str) -> list[str]:
    """Everything wrong with the stored session and with what the models received; empty when all holds."""
    stored = store.load_messages(session)
    found = [f"seq {s} stored {n} times" for s, n in Counter(m.seq for m in stored).items() if n > 1]
    found += _acknowledged_once(run, stored)
    for answer in run.answers("refused"):
        if BUSY not in answer["refused"]:
            found.append(f"refusal without a clear reason: {answer['refused']!r}")
        if any(m.content.startswith(answer["tag"] + " ") for m in stored):
            found.append(f"refused turn {answer['tag']} was stored")
    found += [f"turn failed: {a['error']}" for a in run.answers("error")]
    for answer in run.answers("turn"):
        for request in answer["requests"]:
            found += [f"orphan tool result {o} sent in {answer['turn']}" for o in orphan_results(request)]
    found += _summary_problems(run, store, session, stored)
    return found


def _acknowledged_once(run: Run, stored: list[Message]) -> list[str]:
    found = []
    for answer in run.answers("turn"):
        tag = answer["turn"]
        users = [m for m in stored if m.role == "user" and m.content.startswith(tag + " ")]
        answers = [m for m in stored if m.role == "assistant" and m.content == f"answer to {tag}"]
        if len(users) != 1 or len(answers) != 1:
            found.append(f"turn {tag} stored {len(users)} user / {len(answers)} answer messages, not once")
    return found


def _summary_problems(run: Run, store: LanceStore, session: str, stored: list[Message]) -> list[str]:
    """Summaries form one chain, and every message behind the final boundary was folded into it."""
    found = []
    chain = sorted(run.answers("summary"), key=lambda a: a["summary"])
    for before, after in zip([{"summary": -1}, *chain], chain, strict=False):
        if after["previous"] != before["summary"]:
            found.append(f"summary up to {after['summary']} built on {after['previous']}, not {before['summary']}")
    summary = store.load_summary(session)
    boundary = summary.boundary_seq if summary else -1
    folded = {i for a in chain for i in a["folded"]}
    behind = [m for m in stored if m.seq <= boundary and m.id not in folded]
    found += [f"message {m.seq} ({m.content[:30]!r}) is behind the boundary but was never summarized" for m in behind]
    return found


def saw_the_other_kernels_turns(run: Run) -> list[str]:
    """When taking turns, a kernel's first request of a turn holds the other's previous question."""
    missing = []
    turns = {a["turn"]: a for a in run.answers("turn")}
    for (before_kernel, before), (kernel, tag) in zip(run.order, run.order[1:], strict=False):
        if before_kernel == kernel:
            continue
        first_request = turns[tag]["requests"][0]
        if not any(m["role"] == "user" and before in m["content"] for m in first_request):
            missing.append(f"{tag} was sent without {before}")
    return missing
