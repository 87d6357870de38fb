"""The background optimize's own process: compaction and index builds at the lowest CPU priority.

A pass over a large table costs seconds of CPU (the full-text index is rewritten, the vector
index built). Run in the kernel, it runs on LanceDB's threads at the priority of the user's
turn, so a search or a step that falls on it waits (BENCHMARKS.md, "Tails", compares the two).

So the kernel hands each table's pass to one helper process, started at its first pass at the
lowest priority (nice 19, or the idle class on Windows): it uses what the kernel leaves of
the cores. It loads LanceDB once (seconds of CPU and about 170 MB), serves every store of
the kernel one table at a time, and exits when its input closes, so when the kernel exits
(after the pass in hand, if any). If it cannot start or stops answering, the pass runs in
the kernel as before, and after ``MAX_FAILURES`` failures in a row every pass does.

One JSON line per request on its stdin: the database (uri, storage options, vector index
threshold), the table and the cleanup grace in seconds; one line back: the warnings the pass
logged and its error, if any. The storage options (credentials) never appear on a command
line.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

MAX_FAILURES = 3
# The helper runs this very copy of the package (a notebook may have put it on sys.path by hand),
# without putting its directory ahead of the standard library on the helper's path.
_BOOT = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("monad_notebook", sys.argv[1])
package = importlib.util.module_from_spec(spec)
sys.modules["monad_notebook"] = package
spec.loader.exec_module(package)
from monad_notebook.store.optimize_process import main
main()
"""
_PACKAGE_INIT = str(Path(__file__).resolve().parents[1] / "__init__.py")


class WorkerUnavailable(Exception):
    """The helper process could not take the pass: run it in the kernel."""


class OptimizeWorker:
    """The kernel's side of the helper process; one request at a time, from any thread."""

    def __init__(self, command: list[str] | None = None) -> None:
        self.command = command or [sys.executable, "-c", _BOOT, _PACKAGE_INIT]
        self.failures = 0
        self._closed = False
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int | None:
        process = self._process
        return None if process is None or process.poll() is not None else process.pid

    def optimize(
        self,
        uri: str,
        table: str,
        grace: timedelta,
        *,
        storage_options: dict[str, str] | None = None,
        ann_min_rows: int,
    ) -> tuple[list[str], str | None]:
        """Optimize one table in the helper: the warnings it logged (its error among them) and its error, or None.

        Raises ``WorkerUnavailable`` when the helper cannot start or dies before answering.
        """
        request = {
            "uri": uri,
            "storage_options": storage_options or {},
            "ann_min_rows": ann_min_rows,
            "table": table,
            "grace": grace.total_seconds(),
        }
        with self._lock:
            process = self._running()
            try:
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write(json.dumps(request) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
                reply = json.loads(line)
            except (OSError, ValueError) as exc:
                self._release(kill=True)
                self.failures += 1
                raise WorkerUnavailable(f"the optimize process stopped answering ({exc})") from None
            self.failures = 0
        return list(reply.get("warnings", [])), reply.get("error")

    def _running(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        if self._closed:
            raise WorkerUnavailable("the optimize process was closed")
        if self.failures >= MAX_FAILURES:
            raise WorkerUnavailable(f"the optimize process failed {self.failures} times in a row")
        flags = getattr(subprocess, "IDLE_PRIORITY_CLASS", 0)  # Windows; elsewhere the helper lowers itself
        try:
            self._process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                creationflags=flags,
            )
        except OSError as exc:
            self.failures += 1
            raise WorkerUnavailable(f"cannot start the optimize process ({exc})") from None
        return self._process

    def close(self) -> None:
        """Close the helper's input: it exits after the pass in hand. Does not wait for it; none is started again."""
        self._closed = True
        self._release(kill=False)

    def _release(self, *, kill: bool) -> None:
        """Forget the helper and close its input; with ``kill``, also end it now (it stopped answering)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if kill:
            if process.poll() is None:
                process.kill()
            process.wait()


WORKER = OptimizeWorker()
atexit.register(WORKER.close)
