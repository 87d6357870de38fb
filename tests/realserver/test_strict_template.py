"""A real llama-server whose chat template insists on alternating roles takes every request of a turn.

The server formats each request with ``strict_roles.jinja`` (as strict as Mistral's and the tool-calling
Gemma templates) and answers HTTP 400 when it refuses one. SmolLM2 makes no tool calls, so the calls of
the turn are scripted in after the server answered; every request the session builds still goes to the
server and is judged there, with its plan and workspace blocks.
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pandas as pd
import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.provider import ChatResponse, OpenAIChatModel, TextCallback
from monad_notebook.store.base import Summary
from monad_notebook.testing import tool_call, tool_calls
from monad_notebook.testing.llama import LlamaServer
from tests.realserver.test_llama_server import settings

pytestmark = pytest.mark.slow

BRIEFING = "## Objective\nfind the best region\n## Open Tasks\n- compare the regions\n## Next Step\nlook at `sales`"


class ServerThenScript:
    """The real server answers each request; while scripted calls remain, the turn goes on with the next one."""

    def __init__(self, server: LlamaServer, calls: list[ChatResponse]) -> None:
        self.real = OpenAIChatModel("smollm2", base_url=server.base_url, max_output_tokens=4, temperature=0)
        self.name, self.context_window = "smollm2", server.context
        self.calls = calls
        self.sent: list[list[dict[str, Any]]] = []
        self.usage: list[tuple[int, int]] = []  # (prompt tokens, of them cached) the server reported

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: TextCallback | None = None
    ) -> ChatResponse:
        self.sent.append(messages)
        answer = self.real.complete(messages, tools)
        assert answer.usage is not None
        self.usage.append((answer.usage.prompt_tokens, answer.usage.cached_tokens))
        return self.calls.pop(0) if self.calls else answer


def ask(server: LlamaServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def cached_up_to_the_blocks(server: LlamaServer, messages: list[dict[str, Any]]) -> int:
    """The tokens of the text the server made of ``messages``, up to where their blocks begin."""
    text = ask(server, "/apply-template", {"messages": messages})["prompt"]
    return len(ask(server, "/tokenize", {"content": text[: text.index("\n\n<plan>")]})["tokens"])


def test_a_turn_of_tool_calls_with_a_plan_and_a_workspace_is_taken_by_a_strict_template(strict_llama, store):
    store.create_session("strict")
    store.save_summary(Summary(session="strict", text=BRIEFING, boundary_seq=-1, created_at=time.time()))
    scripted = [
        tool_call("list_variables", {}),
        tool_calls(tool_call("describe", {"name": "sales"}), tool_call("list_variables", {})),
    ]
    model = ServerThenScript(strict_llama, scripted)
    config = Config.model_validate(settings(strict_llama, recitation={"enabled": True}))
    sales = pd.DataFrame({"region": ["north", "south"], "amount": [3, 5]})
    session = Session("strict", config=config, store=store, model=model, namespace={"sales": sales})

    session.ask("Which region sold most?")
    session.ask("And the least?")

    assert len(model.sent) == 4  # three steps of the first turn, one of the second: every one answered
    for request in model.sent:
        assert sum("<plan>" in str(m["content"]) for m in request) == 1
        assert sum("<workspace>" in str(m["content"]) for m in request) == 1
    roles = [m.role for m in store.load_messages("strict")]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "tool", "assistant", "user", "assistant"]
    kinds = [[p["kind"] for p in record["parts"]][-2:] for record in session.prompt_records]
    assert kinds == [["plan", "workspace"]] * 4

    for step in (1, 2):  # each step's request was served from the server's cache up to the last one's blocks
        assert model.usage[step][1] >= cached_up_to_the_blocks(strict_llama, model.sent[step - 1]) - 2  # the edge
