"""Run writer.py children (or real kernels), kill them at seeded random moments or mid-cell, and check what a
user would find after.

Shared by the quick tests and ``benchmarks/reliability_long.py``.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from monad_notebook.store.lance import LanceStore

WRITER = Path(__file__).with_name("writer.py")
_TAG = re.compile(r"^\[batch ([^\]:]+):(\d+)\]")


@dataclass
class Outcome:
    """What one child acknowledged before it died or finished, and how it ended."""

    acks: list[dict] = field(default_factory=list)
    returncode: int = 0
    stderr: str = ""

    @property
    def acked_ids(self) -> list[str]:
        return [i for a in self.acks for i in a.get("ids", [])]


class Child:
    """A writer process whose ack lines are drained on a thread, so a full pipe never stalls it."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.stderr = ""
        assert self.process.stdout is not None
        ready = self.process.stdout.readline()
        self._drain = threading.Thread(target=self._read, daemon=True)
        self._drain.start()
        if not ready:
            self.process.wait()
            self._drain.join()
            raise RuntimeError(f"writer did not start: {self.stderr.strip()[-500:]}")

    def _read(self) -> None:
        assert self.process.stdout is not None and self.process.stderr is not None
        errors = threading.Thread(target=lambda: setattr(self, "stderr", self.process.stderr.read()), daemon=True)
        errors.start()
        for line in self.process.stdout:
            self.lines.append(line)
        errors.join()

    def wait_for_first_ack(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not self.lines and self.process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)


def start(mode: str, db: Path, name: str, seed: int, *extra: str) -> Child:
    """A writer child, returned once it has imported everything and is about to write."""
    return Child([sys.executable, str(WRITER), mode, str(db), name, str(seed), *extra])


def finish(child: Child, *, kill_after: float | None = None, timeout: float = 120) -> Outcome:
    """Kill -9 the child after ``kill_after`` seconds (or let it end), then collect its acks."""
    if kill_after is not None:
        time.sleep(kill_after)
        os.kill(child.process.pid, signal.SIGKILL)
    child.process.wait(timeout=timeout)
    child._drain.join(timeout=timeout)
    acks = [json.loads(line) for line in child.lines if line.endswith("\n")]
    return Outcome(acks=acks, returncode=child.process.returncode, stderr=child.stderr)


def kill_at_random(mode: str, db: Path, name: str, seed: int, *extra: str, max_delay: float = 1.5) -> Outcome:
    """Kill -9 a seeded random time after the child's first ack, so every run dies mid-stream."""
    child = start(mode, db, name, seed, *extra)
    child.wait_for_first_ack()
    return finish(child, kill_after=random.Random(seed).uniform(0.0, max_delay))


def batch_problems(store: LanceStore, name: str, acked_ids: list[str], batch_size: int) -> list[str]:
    """Everything wrong with one session's batches: lost acks, duplicates, partial batches, orphan calls."""
    messages = store.load_messages(name)
    problems: list[str] = []
    ids = {m.id for m in messages}
    lost = [i for i in acked_ids if i not in ids]
    if lost:
        problems.append(f"{len(lost)} acknowledged messages lost (of {len(acked_ids)}; first lost id {lost[0]})")
    rows = store.count_messages(name)
    if rows != len(messages):
        problems.append(f"{rows - len(messages)} duplicate rows")
    sizes = Counter(_TAG.match(m.content).group(2) for m in messages if _TAG.match(m.content))
    partial = {b: n for b, n in sizes.items() if n != batch_size}
    if partial:
        problems.append(f"partial batches {partial}")
    called = {c.id for m in messages for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    if called != answered:
        problems.append(f"orphaned tool calls {sorted(called ^ answered)[:3]}")
    return problems


def kill_kernel_while(workdir: Path, cell: str, running: Callable[[], bool], timeout: float = 60) -> None:
    """Start a real kernel in ``workdir``, load the extension, run ``cell`` and kill -9 the kernel once
    ``running()`` holds (the cell is mid-way), as a crash or an out-of-memory kill would."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(workdir))
    try:
        reply = kc.execute_interactive("%load_ext monad_notebook", timeout=timeout)
        assert reply["content"]["status"] == "ok", reply["content"]
        kc.execute(cell)
        deadline = time.monotonic() + timeout
        while not running():
            assert km.is_alive() and time.monotonic() < deadline, "the cell never got that far"
            time.sleep(0.05)
        os.kill(km.provisioner.process.pid, signal.SIGKILL)
        while km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        kc.stop_channels()
        km.cleanup_resources()
