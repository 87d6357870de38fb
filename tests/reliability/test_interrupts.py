"""Ctrl-C (KeyboardInterrupt) in every phase of a turn: the next turn works and every tool call is answered."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook.agent.loop import INTERRUPTED_RESULT, NOT_RUN_RESULT
from monad_notebook.agent.tools.base import Tool
from monad_notebook.agent.tools.memory import TOOLS as memory_tools
from monad_notebook.agent.tools.recovery import TOOLS as recovery_tools
from monad_notebook.agent.tools.registry import default_tools
from monad_notebook.config import Config
from monad_notebook.messages import Message
from monad_notebook.provider import ChatResponse
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_call, tool_calls
from tests.reliability.pairs import assert_paired, assert_stored_paired

ALL_TOOLS = {t.name: t for t in [*default_tools(python_approval="auto"), *memory_tools, *recovery_tools]}
_SAMPLE = {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": [], "object": {}}


def minimal_arguments(tool: Tool) -> dict[str, Any]:
    """Values of the right type for every required parameter, so the call gets past validation."""
    props = tool.parameters["properties"]
    return {name: _SAMPLE[props[name].get("type", "string")] for name in tool.parameters.get("required", [])}


class InterruptingModel:
    """A ScriptedModel whose ``at``-th call is interrupted before any text arrives."""

    def __init__(self, responses: list[Any], at: int) -> None:
        self.inner = ScriptedModel(responses)
        self.name, self.context_window, self.at, self.count = "scripted", 8192, at, 0

    @property
    def calls(self) -> list[Any]:
        return self.inner.calls

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: Any = None
    ) -> ChatResponse:
        self.count += 1
        if self.count == self.at:
            raise KeyboardInterrupt
        return self.inner.complete(messages, tools, on_text)


@pytest.fixture
def config() -> Config:
    return Config.model_validate({"tools": {"python": {"approval": "auto"}}})


def test_interrupt_before_the_model_answers_leaves_the_session_as_it_was_and_the_next_turn_works(config, store):
    model = InterruptingModel(["second answer"], at=1)
    session = Session("s", config=config, store=store, model=model)
    with pytest.raises(KeyboardInterrupt):
        session.ask("first question")
    assert session.ask("second question").text == "second answer"
    assert [m.content for m in store.load_messages("s")] == ["second question", "second answer"]
    assert [m["content"] for m in model.calls[-1].messages[1:]] == ["second question"]


def test_interrupt_between_steps_keeps_the_finished_round_paired(config, store):
    model = InterruptingModel([tool_call("list_variables", {}), "after"], at=2)
    session = Session("s", config=config, store=store, model=model)
    with pytest.raises(KeyboardInterrupt):
        session.ask("look around")
    assert_stored_paired(store.load_messages("s"))
    assert session.ask("go on").text == "after"
    assert_paired(model.calls[-1].messages)
    assert [m["role"] for m in model.calls[-1].messages[1:]] == ["user", "assistant", "tool", "user"]


def test_interrupt_in_the_step_stages_before_the_model_call_leaves_nothing_half_done(config, store):
    model = ScriptedModel([tool_call("list_variables", {}), "ok"])
    session = Session("s", config=config, store=store, model=model)
    original = session.cascade.run_step
    steps = iter([original, _raise_interrupt])
    session.cascade.run_step = lambda: next(steps)()
    with pytest.raises(KeyboardInterrupt):
        session.ask("look")
    session.cascade.run_step = original
    assert session.ask("again").text == "ok"
    assert_paired(model.calls[-1].messages)
    assert_stored_paired(store.load_messages("s"))


def _raise_interrupt(*args: Any, **kwargs: Any) -> Any:
    raise KeyboardInterrupt


@pytest.mark.parametrize("name", sorted(ALL_TOOLS))
@pytest.mark.parametrize("position", [0, 2])
def test_interrupt_inside_any_tool_answers_every_call_of_the_round(config, store, name, position):
    filler = "list_memory" if name == "list_variables" else "list_variables"
    calls = [tool_call(filler, {}) for _ in range(3)]
    calls[position] = tool_call(name, minimal_arguments(ALL_TOOLS[name]))
    model = ScriptedModel([tool_calls(*calls), "recovered"])
    session = Session("s", config=config, store=store, model=model, namespace={"frame": [1, 2]})
    session.tools[name] = dataclasses.replace(session.tools[name], func=_raise_interrupt)
    with pytest.raises(KeyboardInterrupt):
        session.ask("run tools")
    results = [m.content for m in store.load_messages("s") if m.role == "tool"]
    assert results[position] == INTERRUPTED_RESULT
    assert results[position + 1 :] == [NOT_RUN_RESULT] * (2 - position)
    assert INTERRUPTED_RESULT not in results[:position] and NOT_RUN_RESULT not in results[:position]
    assert session.ask("again").text == "recovered"
    assert_paired(model.calls[-1].messages)


class InterruptingStore(LanceStore):
    """A real store that is interrupted on its ``at``-th message write, before or after the write lands."""

    at = 0
    after_write = False

    def append_messages(self, messages: list[Message]) -> None:
        self.at -= 1
        if self.at == 0 and not self.after_write:
            raise KeyboardInterrupt
        super().append_messages(messages)
        if self.at == 0:
            raise KeyboardInterrupt


@pytest.mark.parametrize(("at", "after_write"), [(1, False), (1, True), (2, False), (2, True)])
def test_interrupt_while_a_round_is_being_written_leaves_every_call_answered_once(config, tmp_path, at, after_write):
    """The question and the calls are written before they run (the first write), their results after (the second)."""
    store = InterruptingStore(tmp_path / "db")
    store.at, store.after_write = at, after_write
    model = ScriptedModel([tool_calls(tool_call("list_variables", {}), tool_call("list_variables", {})), "fine"])
    session = Session("s", config=config, store=store, model=model)
    with pytest.raises(KeyboardInterrupt):
        session.ask("look")
    stored = store.load_messages("s")
    whole = ["user", "assistant", "tool", "tool"]
    assert [m.role for m in stored] == (["user", "assistant"] if (at, after_write) == (2, False) else whole)
    assert session.ask("again").text == "fine"
    assert_paired(model.calls[-1].messages)
    reopened = Session("s", config=config, store=LanceStore(tmp_path / "db"), model=ScriptedModel(["x"]))
    reopened.ask("and again")
    assert_stored_paired(reopened.store.load_messages("s"))
    seqs = [m.seq for m in reopened.store.load_messages("s")]
    assert seqs == sorted(set(seqs))
    store.close()
