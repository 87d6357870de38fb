"""The approval gate: what the model is told, what runs, what the store keeps, and "allow for this session"."""

from __future__ import annotations

import hashlib
import json
import os
import time

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.tools.python import DECLINED, NO_APPROVER
from monad_notebook.approval.gate import INTERRUPTED_QUESTION, Answer, ApprovalGate, stdin_asker
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


def test_the_approval_event_keeps_the_code_s_first_line_redacted_in_the_store_and_its_files(store, tmp_path):
    key = "AKIA" + "QX7ZL2MPK4RT6WV3"
    codes = [f"path = 'backup_{key}.csv'  # first line", f"k = 'AKIA{key[4:]}'"]
    model = ScriptedModel([*(tool_call("python", {"code": code}) for code in codes), "done"])
    session, _ = asking_session(store, model, ScriptedAsker(Answer(False, via="cell"), Answer(True, via="cell")))
    session.ask("load the credentials")
    lines = [e.data["first_line"] for e in store.list_events("ask", kind=ev.APPROVAL)]
    assert lines == ["path = 'backup_[REDACTED:aws-access-key].csv'  # first line", "k = '[REDACTED:aws-access-key]'"]
    events_files = [p for p in (tmp_path / "db").rglob("*") if p.is_file() and "events" in str(p)]
    assert events_files and not any(key.encode() in p.read_bytes() for p in events_files)


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


def test_an_interrupt_at_the_question_is_a_recorded_skip_and_the_stored_turn_says_the_code_did_not_run(store):
    def interrupted(code: str) -> Answer:
        raise KeyboardInterrupt

    model = ScriptedModel([tool_call("python", {"code": "ran = True"}), "after the interrupt"])
    session, namespace = asking_session(store, model, interrupted)
    with pytest.raises(KeyboardInterrupt):
        session.ask("try it")
    assert "ran" not in namespace
    assert decisions(store, "ask") == [("skip", "interrupt")]
    stored = [m for m in store.load_messages("ask") if m.role == "tool"]
    assert [m.content for m in stored] == [INTERRUPTED_QUESTION]
    session.approve = ApprovalGate(ScriptedAsker(), emit=session.emit)
    assert session.ask("and now?").text == "after the interrupt"  # the session goes on, every call answered


class KernelShell:
    kernel = object()  # asked inside a kernel: the question is bounded in time


def test_the_input_prompt_in_a_kernel_says_its_time_limit_and_gives_up_at_it(monkeypatch, capsys):
    def nobody_types(prompt: str) -> str:
        time.sleep(30)
        return "y"

    monkeypatch.setattr("builtins.input", nobody_types)
    started = time.monotonic()
    answer = stdin_asker(KernelShell(), lambda: 0.5)("print(1)")
    assert answer == Answer(None, via="prompt") and time.monotonic() - started < 5
    assert "No answer in 0.5 s: the code did not run." in capsys.readouterr().out


@pytest.mark.parametrize(("reply", "expected"), [("y", Answer(True, via="prompt")), ("n", Answer(False, via="prompt"))])
def test_the_input_prompt_shows_hidden_characters_and_its_limit_before_asking(monkeypatch, capsys, reply, expected):
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or reply)
    code = "print('ok')\u202e # looks harmless\nx = 1"
    assert stdin_asker(KernelShell(), lambda: 600)(code) == expected
    printed = capsys.readouterr().out
    assert "<U+202E>" in printed and "\u202e" not in printed
    assert "no answer in 10 min: not run" in printed
    assert asked and "2 lines" in asked[0]


def test_a_notebook_question_waits_as_long_as_agents_json_says_read_when_asked(store, tmp_path, monkeypatch, capsys):
    from monad_notebook.approval.asking import notebook_gate

    def nobody_types(prompt: str) -> str:
        time.sleep(30)
        return "y"

    def limit(seconds: float) -> None:
        agents.write_text(json.dumps({"tools": {"python": {"approval": "ask", "approvalTimeoutSeconds": seconds}}}))
        os.utime(agents, (time.time() + seconds, time.time() + seconds))  # a new mtime, however fast the test runs

    monkeypatch.setattr("builtins.input", nobody_types)
    agents = tmp_path / "agents.json"
    limit(600)
    model = ScriptedModel([tool_call("python", {"code": "ran = True"}), "nobody answered"])
    namespace: dict = {}
    session = Session("limit", config=agents, store=store, model=model, namespace=namespace)
    session.approve = notebook_gate(session, KernelShell(), rich=False, panel=lambda: None)
    limit(0.5)  # edited after the gate was made: the next question uses it
    started = time.monotonic()
    assert session.ask("run it").text == "nobody answered"
    assert time.monotonic() - started < 10 and "ran" not in namespace
    assert "no answer in 0.5 s: not run" in capsys.readouterr().out
    assert decisions(store, "limit") == [("no answer", "prompt")]
    assert [m.content for m in store.load_messages("limit") if m.role == "tool"] == [NO_APPROVER]


def test_the_input_prompt_for_a_call_read_from_the_models_text_says_so_and_offers_no_allow(monkeypatch, capsys):
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt: asked.append(prompt) or "a")
    gate = ApprovalGate(stdin_asker(KernelShell(), lambda: 600))
    assert gate("x = 1", subject="text:python") is False  # "a" allows nothing here: no answer but y runs it
    printed = capsys.readouterr().out
    assert "The agent wants to run this code, a call read from the model's text rather than made through the API" in (
        printed
    )
    assert asked[0].endswith("[y/N] ") and gate.allowed == set()
