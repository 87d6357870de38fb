"""What the user did in the notebook between turns, as the model received it: through the magics the extension
registers on IPython's in-process shell (its real ``post_run_cell`` and ``pre_run_cell``) and a fake
OpenAI-compatible server that records each request."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import pytest

from monad_notebook.notebook.agent_runs import AGENT_RUNS
from monad_notebook.testing import FakeOpenAIServer, tool_call

SECRET = "sk-proj-Zq8vN2mK7xR4tL9wB3cF6hJ1dS5gA0pY"


def activity_of(messages: list[dict[str, Any]]) -> str:
    """The ``<notebook_activity>`` block one request ended with ("" when it had none); never two."""
    text = "\n".join(m["content"] for m in messages if isinstance(m.get("content"), str))
    assert text.count("<notebook_activity>") <= 1
    return text[text.index("<notebook_activity>") :] if "<notebook_activity>" in text else ""


def test_the_next_turn_is_told_once_which_cells_the_user_ran_and_how_they_ended(ip, isolated_env, monkeypatch):
    with FakeOpenAIServer() as server:
        config = {"models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url, "maxRetries": 1}},
                  "tools": {"python": {"approval": "auto"}}}  # fmt: skip
        (isolated_env / "agents.json").write_text(json.dumps(config))
        ip.run_line_magic("reload_ext", "monad_notebook")
        server.queue("hello", tool_call("python", {"code": "checked = True"}), "the token was empty", "ok", "ok")
        ip.run_cell("%%monad\nhello", store_history=True)
        ip.run_cell("total = 40 + 2", store_history=True)
        ip.run_cell(f"token = '{SECRET}'\nraise ValueError('no rows for ' + token + '\\nlast: ' + token)", True)
        ip.run_cell("def broken(:", store_history=True)
        AGENT_RUNS.queue("c9")  # what execute_cell hands the notebook: this cell runs as the agent's
        with monkeypatch.context() as kernel:
            kernel.setattr(ip, "kernel", SimpleNamespace(get_parent=lambda: {"header": {"msg_id": "r9"}}), False)
            ip.run_cell("queued_by_agent = 1", store_history=True, cell_id="c9")
        ip.run_cell("%monad status", store_history=True)
        ip.run_cell("%%monad\nwhat happened?", store_history=True)
        ip.run_cell("get_ipython().run_cell_magic('monad', '', 'anything new?')", store_history=True)
        ip.run_cell("%%monad\nand now?", store_history=True)
        requests = [r["messages"] for r in server.chat_requests]

    assert len(requests) == 5 and activity_of(requests[0]) == ""
    block = activity_of(requests[1])
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    assert len(lines) == 3, block
    assert re.fullmatch(r"- \[\d+\] `total = 40 \+ 2`: ok", lines[0])
    assert re.fullmatch(r"- \[\d+\] `token = '\[REDACTED:[^\]]+\]'`: ValueError: last: \[REDACTED:[^\]]+\]", lines[1])
    assert "`def broken(:`: SyntaxError" in lines[2]
    assert SECRET[8:20] not in json.dumps(requests)
    assert requests[1][-1]["content"].endswith(block)  # at the end of the request, on the user's question
    assert activity_of(requests[2]) == block  # the turn's second step is told the same, after its tool result
    assert activity_of(requests[3]) == "" and activity_of(requests[4]) == ""  # never again; no monad cell listed


def test_a_turn_the_model_never_answered_leaves_the_cells_for_the_next_and_the_block_keeps_its_budget(ip, store):
    from monad_notebook import Session
    from monad_notebook.errors import EndpointError
    from monad_notebook.notebook.activity import MAX_CELLS, MAX_TOKENS
    from monad_notebook.testing import ScriptedModel

    model = ScriptedModel([EndpointError("the endpoint is down"), "I see them", "I see it"])
    session = Session("activity", store=store, model=model, shell=ip)
    ip.events.register("post_run_cell", session.activity.after_cell)
    try:
        for i in range(MAX_CELLS + 5):
            ip.run_cell(f"step_{i} = '{'x' * 300}'  # a long line, shortened", store_history=True)
        with pytest.raises(EndpointError):
            session.ask("what did I run?")
        session.ask("what did I run?")
        ip.run_cell("after_the_turns = 1", store_history=True)  # the turns ran outside any cell: none is left out
        session.ask("and since?")
    finally:
        ip.events.unregister("post_run_cell", session.activity.after_cell)

    failed, answered, since = (call.messages for call in model.calls)
    block = activity_of(answered)
    assert activity_of(failed) == block  # the cells the unanswered request held are told again
    shown = [line for line in block.splitlines() if line.startswith("- ")]
    assert shown and "step_24 = " in shown[-1] and len(shown[-1]) < 140
    assert re.search(rf"\({5 + MAX_CELLS - len(shown)} earlier cell\(s\) not shown\)", block)
    assert session.cascade.meter.counter.count_text(block) <= MAX_TOKENS
    assert re.findall(r"^- .*", activity_of(since), re.M) == [f"- [{ip.execution_count - 1}] `after_the_turns = 1`: ok"]
