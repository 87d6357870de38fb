"""A namespace that fights back: odd keys, values that lie about their type or sleep when looked at.

Each test runs a real Session on IPython's in-process shell and real LanceDB, and checks what a
user would see: the session opens, turns end in time, the record keeps up, the model is told.
"""

from __future__ import annotations

import logging
import time
import types
from typing import Any

import pandas as pd
import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.testing import ScriptedModel, tool_call
from tests.workspace.test_workspace_session import make, python, unhook, workspace_of

pytestmark = pytest.mark.lance

SLEEP = 6.0  # what each hostile method costs when called; every test ends within half of it


class Alarm:
    """Counts calls of the methods the record must never call; with ``armed``, each also raises."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.armed = True

    def rang(self, what: str) -> None:
        self.calls.append(what)
        if self.armed:
            raise RuntimeError(f"{what} was called")


ALARM = Alarm()


class HostileKey(str):
    """A key whose hash and equality run code (and raise): only a dict lookup by it would call them."""

    def __hash__(self) -> int:
        ALARM.rang("__hash__")
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        ALARM.rang("__eq__")
        return str.__eq__(self, other)


class PassesForAFrame:
    """Claims to be a DataFrame through ``__class__``, and answers any attribute by raising."""

    @property
    def __class__(self):  # type: ignore[override]
        ALARM.rang("__class__")
        return pd.DataFrame

    def __getattr__(self, name: str) -> Any:
        ALARM.rang(f"__getattr__({name})")


class SlowList(list):
    def __len__(self) -> int:
        time.sleep(SLEEP)
        return 0


class SlowFrame(pd.DataFrame):
    @property
    def shape(self):  # type: ignore[override]
        time.sleep(SLEEP)
        return (0, 0)


class SlowName:
    """A series' name whose equality and text sleep."""

    def __eq__(self, other: object) -> bool:
        time.sleep(SLEEP)
        return False

    __hash__ = object.__hash__

    def __str__(self) -> str:
        time.sleep(SLEEP)
        return "slow"


class SlowRepr:
    def __repr__(self) -> str:
        time.sleep(SLEEP)
        return "never seen"


class SlowCallable:
    """A callable whose signature takes long to compute (``inspect.signature`` reads ``__signature__``)."""

    def __call__(self) -> None:
        return None

    @property
    def __signature__(self):
        time.sleep(SLEEP)


@pytest.fixture
def alarm():
    ALARM.calls, ALARM.armed = [], True
    yield ALARM
    ALARM.armed = False


def test_a_key_that_is_not_a_string_neither_stops_the_session_nor_the_record(store, shell, caplog):
    caplog.set_level(logging.WARNING, logger="monad_notebook")
    shell.user_ns[1] = "one"
    model = ScriptedModel([python("import pandas as pd\nsales = pd.DataFrame({'a': [1]})", "call_s"), "made", "ok"])
    session = make(store, shell, model)
    session.ask("make sales")
    shell.user_ns[(2, 3)] = "added later"
    shell.run_cell("later = [1, 2]", store_history=True)
    session.ask("and now?")
    block = workspace_of(model.calls[-1].messages)
    assert "- sales: DataFrame 1 rows x 1 cols [a] (call_s, turn 1)" in block and "- later: list len 2 (cell" in block
    assert "2 key(s) that are not strings" in block
    told = [r.getMessage() for r in caplog.records if "not strings" in r.getMessage()]
    assert len(told) == 2  # the first when the session opened, the second when another appeared
    unhook(shell, session)
    del shell.user_ns[1], shell.user_ns[(2, 3)]


def test_a_key_with_its_own_hash_and_equality_is_never_asked(store, shell, alarm):
    alarm.armed = False
    shell.user_ns[HostileKey("odd")] = 1  # hashed here, by the test itself
    alarm.calls, alarm.armed = [], True
    model = ScriptedModel([python("kept = 1", "call_k"), "made"])
    session = make(store, shell, model)
    session.ask("make it")
    assert "- kept: int (call_k, turn 1)" in workspace_of(model.calls[1].messages)
    assert alarm.calls == []
    unhook(shell, session)
    alarm.armed = False
    del shell.user_ns[next(k for k in shell.user_ns if type(k) is HostileKey)]


def test_a_value_that_passes_for_a_frame_is_told_by_its_real_type_without_asking_it(store, shell, alarm):
    shell.user_ns["impostor"] = PassesForAFrame()
    model = ScriptedModel([tool_call("list_variables", {}, id="call_l"), "seen"])
    session = make(store, shell, model)
    session.ask("what is there?")
    assert "- impostor: PassesForAFrame (there before the session)" in workspace_of(model.calls[1].messages)
    assert "impostor: PassesForAFrame" in result_of(model.calls[1].messages, "call_l")
    assert alarm.calls == []
    unhook(shell, session)


@pytest.mark.parametrize(
    ("code", "told"),
    [
        ("slow = SlowList([1])", "- slow: SlowList"),
        ("slow = SlowFrame({'a': [1]})", "- slow: SlowFrame"),
        ("slow = pd.Series([1.0], name=SlowName())", "- slow: Series 1 values, float64 [<SlowName>]"),
        ("slow = pd.DataFrame({SlowName(): [1]})", "- slow: DataFrame 1 rows x 1 cols [<SlowName>]"),
    ],
)
def test_a_value_whose_methods_sleep_never_holds_up_a_turn(store, shell, code, told):
    shell.user_ns.update(SlowList=SlowList, SlowFrame=SlowFrame, SlowName=SlowName, pd=pd)
    model = ScriptedModel([python(code, "call_slow"), python("slow2 = slow", "call_again"), "made"])
    session = make(store, shell, model)
    started = time.perf_counter()
    session.ask("make it")
    assert time.perf_counter() - started < SLEEP / 2
    assert told in workspace_of(model.calls[-1].messages)
    unhook(shell, session)


def result_of(messages: list[dict[str, Any]], call_id: str) -> str:
    return next(m["content"] for m in messages if m.get("tool_call_id") == call_id)


def bounded(store: Any, model: ScriptedModel, namespace: dict[str, Any], tmp_path: Any) -> Session:
    """A session whose namespace tools may spend half a second in the user's code."""
    config = Config.model_validate({"tools": {"namespace": {"timeoutSeconds": 0.5}}})
    return Session("bounded", config=config, store=store, model=model, namespace=namespace, root=tmp_path)


def test_describe_of_a_value_whose_repr_sleeps_stops_at_its_bound_and_says_so(store, tmp_path):
    model = ScriptedModel([tool_call("describe", {"name": "stuck"}, id="call_d"), "told"])
    session = bounded(store, model, {"__name__": "__main__", "stuck": SlowRepr()}, tmp_path)
    started = time.perf_counter()
    session.ask("describe stuck")
    assert time.perf_counter() - started < SLEEP / 2
    result = result_of(model.calls[1].messages, "call_d")
    assert result.startswith("stuck: stopped after 0.5 s (tools.namespace.timeoutSeconds)") and "SlowRepr" in result


def test_list_variables_stops_at_its_bound_and_lists_the_rest_by_type(store, tmp_path):
    namespace = {"__name__": "__main__", "handler": SlowCallable(), "later": [1, 2]}
    model = ScriptedModel([tool_call("list_variables", {}, id="call_v"), "listed"])
    session = bounded(store, model, namespace, tmp_path)
    started = time.perf_counter()
    session.ask("what is there?")
    assert time.perf_counter() - started < SLEEP / 2
    listed = result_of(model.calls[1].messages, "call_v")
    assert "later: list" in listed and "stopped after 0.5 s (tools.namespace.timeoutSeconds)" in listed


def test_describe_of_an_attribute_a_module_computes_slowly_stops_at_its_bound(store, tmp_path):
    lazy = types.ModuleType("lazy")
    lazy.__getattr__ = lambda name: time.sleep(SLEEP)  # type: ignore[attr-defined]
    model = ScriptedModel([tool_call("describe", {"name": "lazy.heavy"}, id="call_m"), "told"])
    session = bounded(store, model, {"__name__": "__main__", "lazy": lazy}, tmp_path)
    started = time.perf_counter()
    session.ask("what is lazy.heavy?")
    assert time.perf_counter() - started < SLEEP / 2
    assert "lazy.heavy: stopped after 0.5 s" in result_of(model.calls[1].messages, "call_m")


def test_a_look_that_runs_out_of_time_says_so_and_the_next_ones_catch_up(store, shell, monkeypatch, caplog):
    from monad_notebook.workspace import snapshot

    caplog.set_level(logging.WARNING, logger="monad_notebook")
    monkeypatch.setattr(snapshot, "LOOK_SECONDS", 0.001)
    shell.user_ns.update({f"bulk_{i:06}": [i] for i in range(5_000)})
    model = ScriptedModel(["first", "second"])
    session = make(store, shell, model)
    session.ask("how much?")
    first = workspace_of(model.calls[0].messages)
    assert "The last look ran out of time" in first and "names are looked at after the next call" in first
    assert any("ran out of time" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(snapshot, "LOOK_SECONDS", 60.0)
    session.workspace.take("cell 1")
    session.ask("and now?")
    assert "ran out of time" not in workspace_of(model.calls[1].messages)
    assert session.status()["workspace_names"] == 5_000
    unhook(shell, session)
