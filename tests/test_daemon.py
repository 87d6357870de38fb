from __future__ import annotations

import logging
import threading

import pytest

from monad_notebook.daemon import Daemon


def test_runs_the_work_on_a_named_daemon_thread_and_waits_for_it():
    seen: list[tuple[str, bool, int]] = []
    daemon = Daemon(
        "monad-test",
        lambda n: seen.append((threading.current_thread().name, threading.current_thread().daemon, n)),
        7,
    )

    assert daemon.start() is daemon
    assert daemon.wait(5)
    assert seen == [("monad-test", True, 7)]
    assert not daemon.running and daemon.error is None


def test_what_the_work_raises_is_logged_and_kept_for_whoever_waits(caplog: pytest.LogCaptureFixture):
    def broken() -> None:
        raise ValueError("no such table")

    with caplog.at_level(logging.ERROR, logger="monad_notebook"):
        daemon = Daemon("monad-test", broken).start()
        daemon.wait(5)

    assert isinstance(daemon.error, ValueError)
    assert [(r.getMessage(), r.exc_info is not None) for r in caplog.records] == [("monad-test crashed", True)]


def test_stop_asks_the_work_the_way_it_was_given_and_wait_gives_up_after_its_timeout():
    stop = threading.Event()
    daemon = Daemon("monad-test", stop.wait, 5, stop=stop.set).start()

    assert not daemon.wait(0.01) and daemon.running
    daemon.stop()
    assert daemon.wait(5) and not daemon.running


def test_the_work_waiting_for_itself_returns_at_once():
    waited: list[bool] = []
    daemon = Daemon("monad-test", lambda: waited.append(daemon.wait()))
    daemon.start().wait(5)

    assert waited == [False]
