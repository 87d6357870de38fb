"""What runs in the optimize helper process (``optimizer.py`` starts it): one pass per request line.

It lowers its own priority before loading LanceDB, keeps the last few databases it was asked
about open, and answers each request with the warnings the pass logged and its error, if any.
Stray prints from libraries go to stderr: stdout carries only the replies.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections import OrderedDict
from datetime import timedelta
from typing import IO, Any

from monad_notebook.foreground import lower_priority

HELPER_NICE = 19  # the lowest priority: the pass only tidies up
_OPEN_DATABASES = 4  # connections the helper keeps, newest used first


class _Collected(logging.Handler):
    """The warnings one pass logs, to hand back to the kernel that asked for it."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def serve(requests: IO[str], replies: IO[str]) -> None:
    """The helper's loop: one pass per request line, one reply line each, until the input closes."""
    databases: OrderedDict[str, Any] = OrderedDict()
    collected = _Collected()
    logger = logging.getLogger("monad_notebook")
    logger.addHandler(collected)
    try:
        for line in requests:
            collected.messages.clear()
            error = _pass(line, databases)
            if error is not None and error not in collected.messages:
                collected.messages.append(error)
            replies.write(json.dumps({"warnings": collected.messages, "error": error}) + "\n")
            replies.flush()
    finally:
        logger.removeHandler(collected)


def _pass(line: str, databases: OrderedDict[str, Any]) -> str | None:
    """One request: optimize the table on the database it names (opened once, kept among the last few)."""
    # LanceDB loads only once ``main`` lowered the priority.
    from monad_notebook.store.failures import reason
    from monad_notebook.store.tables import LanceTables

    try:
        request: dict[str, Any] = json.loads(line)
        options, min_rows = request["storage_options"], request["ann_min_rows"]
        key = json.dumps([request["uri"], options, min_rows], sort_keys=True)
        store = databases.pop(key, None) or LanceTables(
            request["uri"], storage_options=options or None, optimize_every=0, ann_min_rows=min_rows
        )
        databases[key] = store
        while len(databases) > _OPEN_DATABASES:
            databases.popitem(last=False)
        store.passes.last_error = None
        store.passes.alone(request["table"], timedelta(seconds=float(request["grace"])))
        return store.passes.last_error
    except Exception as exc:
        return f"cannot optimize in the background ({type(exc).__name__}: {reason(exc)})"


def main() -> None:
    """Lower the priority first, so loading LanceDB already yields to the kernel; stray prints go to stderr."""
    lower_priority(HELPER_NICE, own_process=True)
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    serve(sys.stdin, replies)
