"""tools.python.timeoutSeconds: code that runs too long is stopped, its output kept, and the session goes on."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.prompt import own_text
from monad_notebook.testing import ScriptedModel, tool_call

STOPPED = "error: stopped after 1 s (tools.python.timeoutSeconds); the output it printed before that is kept above"
BUSY = "print('before the loop', flush=True)\nwhile True:\n    pass"
ASLEEP = "import time\nprint('before the sleep', flush=True)\ntime.sleep(100)"


def session_with(store, *codes: str, timeout: float | None = 1, **kwargs: Any) -> tuple[Session, ScriptedModel]:
    python = {"approval": "auto", "timeoutSeconds": timeout}
    model = ScriptedModel([*(tool_call("python", {"code": code}) for code in codes), "done"])
    config = Config.model_validate({"tools": {"python": python}})
    return Session("limits", config=config, store=store, model=model, **kwargs), model


def tool_results(model: ScriptedModel) -> list[str]:
    """The results the last request carried, without the blocks that ride on the last one."""
    return [own_text(m["content"]) for m in model.calls[-1].messages if m["role"] == "tool"]


def timed_ask(session: Session) -> float:
    started = time.monotonic()
    session.ask("run it")
    return time.monotonic() - started


@pytest.mark.parametrize(("code", "printed"), [(BUSY, "before the loop"), (ASLEEP, "before the sleep")])
def test_code_past_the_limit_is_stopped_with_its_output_kept_and_the_next_call_runs(store, capsys, code, printed):
    session, model = session_with(store, code, "after = 'ran'\nprint('next call ran')")
    assert timed_ask(session) < 5
    stopped, following = tool_results(model)
    assert stopped == f"stdout:\n{printed}\n{STOPPED}"
    assert following == "stdout:\nnext call ran" and session.namespace["after"] == "ran"
    assert [m.content for m in store.load_messages("limits") if m.role == "tool"] == [stopped, following]


def test_without_a_limit_slow_code_runs_to_the_end(store, capsys):
    session, model = session_with(store, "import time\ntime.sleep(1.5)\nprint('woke up')", timeout=None)
    assert timed_ask(session) >= 1.5
    assert tool_results(model) == ["stdout:\nwoke up"]


def test_code_in_the_shell_past_the_limit_is_stopped_and_the_shell_keeps_working(store, ip, capsys):
    session, model = session_with(store, ASLEEP, "print(21 * 2)", shell=ip)
    assert timed_ask(session) < 5
    assert tool_results(model) == [f"stdout:\nbefore the sleep\n{STOPPED}", "stdout:\n42"]
    assert "CodeTimedOut" in capsys.readouterr().out  # the notebook shows the usual traceback
    assert ip.run_cell("1 + 1").result == 2


def test_code_catching_every_exception_does_not_swallow_the_stop(store, capsys):
    code = "try:\n    while True:\n        pass\nexcept Exception:\n    print('swallowed')"
    session, model = session_with(store, code)
    assert timed_ask(session) < 5
    assert tool_results(model) == [STOPPED]


def test_a_turn_on_a_worker_thread_stops_busy_code_too(store, capsys):
    session, model = session_with(store, BUSY, "print('next call ran')")
    took: list[float] = []
    worker = threading.Thread(target=lambda: took.append(timed_ask(session)))
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and took[0] < 5
    assert tool_results(model) == [f"stdout:\nbefore the loop\n{STOPPED}", "stdout:\nnext call ran"]


def test_fast_code_under_a_limit_leaves_no_alarm_behind(store, capsys):
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        session, model = session_with(store, "print('quick')")
        session.ask("run it")
        assert signal.getsignal(signal.SIGALRM) is not None and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        time.sleep(1.3)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert tool_results(model) == ["stdout:\nquick"] and fired == []


def test_a_timer_the_user_had_set_still_fires_after_the_run(store, capsys):
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.2)
        session, _ = session_with(store, "print('quick')", timeout=5)
        session.ask("run it")
        time.sleep(1.5)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired == [signal.SIGALRM]
