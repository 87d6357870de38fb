"""A tool block's time is the call's own; the wait for the user's answer is shown apart, in the cell and the store.

Through the magic in IPython's test shell, answered at the input prompt after a pause, as a user reading the
question would; the python tool's code sleeps for a known time.
"""

from __future__ import annotations

import re
import sys
import time

import pytest

from monad_notebook import events as ev
from monad_notebook.agent.loop import INTERRUPTED_RESULT
from monad_notebook.approval.gate import INTERRUPTED_QUESTION
from monad_notebook.testing import tool_call
from tests.test_magics import Terminal, configure, magics, server  # noqa: F401 - server is a fixture

READING = 0.8  # seconds the user takes to answer
RUNNING = 0.3  # seconds the code takes


@pytest.fixture
def asking(ip, server, isolated_env, monkeypatch):  # noqa: F811 - the imported fixture
    """Python asks first; each reply in ``replies`` comes after READING seconds ("!" is Ctrl-C)."""
    configure(isolated_env, tools={"python": {"approval": "ask"}})
    replies: list[str] = []

    def answer(prompt: str = "") -> str:
        time.sleep(READING)
        reply = replies.pop(0)
        if reply == "!":
            raise KeyboardInterrupt
        return reply

    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr("builtins.input", answer)
    return replies


def finished(ip, session: str) -> list[dict]:
    return [e.data for e in magics(ip).store.list_events(session, kind=ev.TOOL_FINISHED)]


def header(block: str) -> str:
    """A tool block's summary line as a person reads it."""
    summary = re.search(r"<summary>(.*?)</summary>", block, re.S).group(1)
    return " ".join(re.sub(r"<[^>]+>", "", summary).split())


def test_code_that_waited_for_approval_shows_its_own_time_and_the_wait_apart(ip, server, rich, asking):  # noqa: F811
    asking.append("y")
    server.queue(tool_call("python", {"code": f"import time\ntime.sleep({RUNNING})"}), "Slept.")
    started = time.monotonic()
    ip.run_cell_magic("monad", "--session timed", "Sleep a little")
    took = time.monotonic() - started
    (done,) = finished(ip, "timed")
    assert done["seconds"] >= RUNNING and done["waited"] >= READING and done["seconds"] + done["waited"] <= took
    (asked,) = [e.data for e in magics(ip).store.list_events("timed", kind=ev.APPROVAL)]
    assert asked["waited"] >= READING
    shown = header(rich.html()[0])
    assert shown.endswith(f"· done in {done['seconds']:.1f} s · waited {done['waited']:.1f} s for you"), shown


def test_a_skip_says_it_was_skipped_and_how_long_the_question_waited(ip, server, rich, asking):  # noqa: F811
    asking.append("n")
    server.queue(tool_call("python", {"code": "x = 1"}), "Skipped.")
    ip.run_cell_magic("monad", "--session skip", "Set x")
    (skipped,) = finished(ip, "skip")
    assert skipped["outcome"] == "skipped" and skipped["seconds"] < 0.2 and skipped["waited"] >= READING
    shown = header(rich.html()[0])
    assert shown.endswith(f"· skipped · waited {skipped['waited']:.1f} s for you"), shown


@pytest.mark.parametrize("where", ["question", "code"])
def test_an_interrupt_ends_the_tool_block_as_interrupted_never_running(ip, server, rich, asking, where):  # noqa: F811
    asking.append("!" if where == "question" else "y")
    code = "import time\ntime.sleep(0.2)\nraise KeyboardInterrupt" if where == "code" else "x = 1"
    server.queue(tool_call("python", {"code": code}), "Never sent.")
    ip.run_cell_magic("monad", "--session stop", "Run it")
    (stopped,) = finished(ip, "stop")
    assert stopped["outcome"] == "interrupted"
    assert stopped["preview"] == (INTERRUPTED_QUESTION if where == "question" else INTERRUPTED_RESULT)
    block = rich.html()[0]
    shown = header(block)
    assert "running" not in shown and 'monad-tool-state-interrupted"' in block
    assert stopped["waited"] >= READING
    ran = f" after {stopped['seconds']:.1f} s" if where == "code" else ""
    assert shown.endswith(f"· interrupted{ran} · waited {stopped['waited']:.1f} s for you"), shown
