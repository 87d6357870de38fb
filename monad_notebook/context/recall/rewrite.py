"""The question in the session's words, written by the fast model (``context.recall.rewrite`` "fast").

A user asks in their own words ("customers who left"); the session said "churn" and named the file
``churn_raw.parquet``. The model calling ``recall`` may add such phrasings itself (``also``), but
nobody writes them for the ``<related_context>`` block, and a small main model writes poor ones.
So the fast tier is asked once per question for a few: the words a notebook session likely used,
and the shapes its names likely took. Two worked examples on unrelated subjects show the form (a
small model asked without them restates the question). The answer is cached per question; a search
waits for it at most ``rewriteTimeoutSeconds`` and goes on without it after that (an answer that
comes late is still cached, for the next time). Recall searches the phrasings as it does ``also``'s,
but a name they guess is not trusted as one the question gives (``Recall.search``).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future

from monad_notebook.daemon import Daemon
from monad_notebook.provider import ChatModel

log = logging.getLogger(__name__)

MAX_REWRITES = 3  # phrasings kept from one answer, each costing recall both searches again
MAX_REWRITE_CHARS = 200
QUESTION_MAX_CHARS = 1000  # of a question (a turn's whole message, for the block), sent to the model
CACHED_QUESTIONS = 256
INSTRUCTIONS = (
    "You help search the record of a data-analysis notebook session. The user asks about something the"
    " session did or said earlier, in their own words; the session may have used other words. Write 3 other"
    " ways to search for it, one per line: the words the session most likely used (the usual technical terms),"
    " and the shapes its name likely had (a snake_case variable or column, a file name). Write only the three lines."
)
EXAMPLES = (
    (
        "which table had the bikes that were stolen?",
        "theft reports for bicycles\nstolen_bikes, bike_theft\nbicycle_theft_incidents.csv",
    ),
    (
        "how big was the drop in bus riders?",
        "decline in transit ridership\nridership_change, passenger_decline_pct\nfall in bus passenger counts",
    ),
)
_LIST_MARK = re.compile(r"^(?:[-*\u2022]|\d+[.)])\s*")


class Rewriter:
    """Other phrasings of a question from ``model``, each question asked once, waited for at most ``seconds``."""

    def __init__(self, model: ChatModel, seconds: float) -> None:
        self.model, self.seconds = model, seconds
        self._answers: OrderedDict[str, Future[list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def ask(self, question: str) -> Callable[[], list[str]]:
        """Start asking for ``question`` (or take its cached answer) and return the wait for the phrasings.

        The wait ends ``seconds`` after this call at the latest, so the caller can do other work
        meanwhile; it gives [] when the answer is late or the model failed (a failure is asked again
        next time).
        """
        key = " ".join(question.split())[:QUESTION_MAX_CHARS]
        if not key:
            return list
        deadline = time.monotonic() + self.seconds
        with self._lock:
            answer = self._answers.get(key)
            if answer is None or (answer.done() and answer.exception() is not None):
                answer = self._answers[key] = self._start(key)
            self._answers.move_to_end(key)
            while len(self._answers) > CACHED_QUESTIONS:
                self._answers.popitem(last=False)

        def wait() -> list[str]:
            try:
                return answer.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # late (TimeoutError) or failed: the search goes on without them
                log.debug("recall goes on without the fast model's phrasings: %r", exc)
                return []

        return wait

    def _start(self, question: str) -> Future[list[str]]:
        """Ask on a daemon thread: an endpoint that hangs must not hold the kernel at exit."""
        answer: Future[list[str]] = Future()

        def asking() -> None:
            try:
                answer.set_result(self._rewrite(question))
            except Exception as exc:
                answer.set_exception(exc)

        Daemon("monad-rewrite", asking).start()
        return answer

    def _rewrite(self, question: str) -> list[str]:
        messages = [{"role": "system", "content": INSTRUCTIONS}]
        for asked, answered in EXAMPLES:
            messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": answered}]
        messages.append({"role": "user", "content": question})
        return phrasings(self.model.complete(messages, []).content, question)


def phrasings(answer: str, question: str) -> list[str]:
    """The answer's lines as phrasings: list marks and quotes stripped, the question and repeats left out."""
    found: list[str] = []
    for line in answer.splitlines():
        text = _LIST_MARK.sub("", line.strip()).strip("\"'` ")[:MAX_REWRITE_CHARS]
        if len(text) >= 3 and text.lower() != question.lower() and text not in found:
            found.append(text)
    return found[:MAX_REWRITES]
