"""The approval gate: what the model is told, what runs, what the store keeps, and "allow for this session"."""

from __future__ import annotations

import hashlib

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.tools.approval import Answer, ApprovalGate
from monad_notebook.agent.tools.python import DECLINED, NO_APPROVER
from monad_notebook.config import Config
from monad_notebook.testing import ScriptedModel, tool_call


class ScriptedAsker:
    """Answers in order and fails the test if asked once more than scripted."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, code: str) -> Answer:
        self.asked.append(code)
        assert self.answers, f"asked again for {code!r}"
        return self.answers.pop(0)


def asking_session(store, model: ScriptedModel, asker: ScriptedAsker, name: str = "ask") -> tuple[Session, dict]:
    namespace: dict = {}
    config = Config.model_validate({"tools": {"python": {"approval": "ask"}}})
    session = Session(name, config=config, store=store, model=model, namespace=namespace)
    session.approve = ApprovalGate(asker, emit=session.emit)
    return session, namespace


def decisions(store, name: str) -> list[tuple[str, str]]:
    return [(e.data["decision"], e.data["via"]) for e in store.list_events(name, kind=ev.APPROVAL)]


def test_allow_for_this_session_runs_every_later_request_without_asking(store):
    codes = ["a = 1", "b = a + 1", "c = b + 1"]
    model = ScriptedModel([*(tool_call("python", {"code": code}) for code in codes), "done"])
    asker = ScriptedAsker(Answer(True, always=True, via="cell"))
    session, namespace = asking_session(store, model, asker)
    session.ask("count to three")
    assert asker.asked == ["a = 1"] and (namespace["a"], namespace["b"], namespace["c"]) == (1, 2, 3)
    assert session.approve.allowed_for_session
    assert decisions(store, "ask") == [("allow for session", "cell"), ("run", "session"), ("run", "session")]
    recorded = store.list_events("ask", kind=ev.APPROVAL)[1].data
    assert recorded["code_sha256"] == hashlib.sha256(b"b = a + 1").hexdigest() and recorded["first_line"] == "b = a + 1"


@pytest.mark.parametrize(
    ("answer", "told", "decision"),
    [(Answer(False, via="cell"), DECLINED, "skip"), (Answer(None, via="prompt"), NO_APPROVER, "no answer")],
)
def test_a_skip_or_no_answer_runs_nothing_tells_the_model_and_is_recorded(store, answer, told, decision):
    model = ScriptedModel([tool_call("python", {"code": "ran = True"}), "understood"])
    session, namespace = asking_session(store, model, ScriptedAsker(answer))
    session.ask("try it")
    assert "ran" not in namespace
    assert model.calls[1].messages[-1]["content"] == told
    assert decisions(store, "ask") == [(decision, answer.via)]
    assert not session.approve.allowed_for_session


def test_skipping_with_always_set_does_not_allow_the_session(store):
    gate = ApprovalGate(ScriptedAsker(Answer(False, always=True), Answer(True)))
    assert gate("x = 1") is False and not gate.allowed_for_session
    assert gate("x = 1") is True


def test_reset_asks_again(store):
    asker = ScriptedAsker(Answer(True, always=True), Answer(False))
    gate = ApprovalGate(asker)
    assert gate("x = 1") is True and gate("y = 2") is True and len(asker.asked) == 1
    gate.reset()
    assert gate("z = 3") is False and asker.asked == ["x = 1", "z = 3"]
