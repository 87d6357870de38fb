"""Every passage recall shows leads to its whole message: read_message in a real session on real LanceDB."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from monad_notebook import Session
from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.recovery import read_message
from monad_notebook.config import Config
from monad_notebook.messages import Message
from monad_notebook.testing import ScriptedModel
from monad_notebook.testing.scripted import tool_call

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

BRIEFING = "## Objective\nplan\n## Decisions & Facts\n- noted\n## Files & State\n## Open Tasks\n## Next Step\ngo on"
FILLER = "Unrelated minutes about the parking rota and the coffee machine were read out again. "
OPENING = "Here are my notes from the facilities meeting, please keep them in mind.\n"
ASKED = "The replacement chillers for the server room will come from Polar Freeze Industries, order PO-48213.\n"
ANSWER = "Their quote came to 48,900 euros with installation, valid until the end of March."
LONG = OPENING + FILLER * 30 + ASKED + FILLER * 30 + ANSWER
HANDLE = re.compile(r"read_message\((\{.*?\})\)")


def session_with(store, name: str = "notes", **context: object) -> tuple[Session, ScriptedModel]:
    config = Config.model_validate(
        {
            "context": {
                "toolOutput": {"maxChars": 8000},
                "summarize": {"keepRecent": 1, "background": False},
                "recall": {"embedMaxChars": 0},
                **context,
            }
        }
    )
    model = ScriptedModel([], context_window=32_000)
    fast = ScriptedModel([BRIEFING] * 5)
    return Session(name, config=config, store=store, model=model, fast_model=fast), model


def received(model: ScriptedModel, tool: str) -> str:
    """The last result of ``tool`` the model was sent."""
    calls = {c["id"]: c["function"]["name"] for m in model.calls[-1].messages for c in m.get("tool_calls") or []}
    results = [m for m in model.calls[-1].messages if m["role"] == "tool" and calls.get(m["tool_call_id"]) == tool]
    return results[-1]["content"]


def recalled(session: Session, model: ScriptedModel, query: str) -> str:
    model.queue(tool_call("recall", {"query": query}), "Found it.")
    session.ask("what did my notes say about that?")
    return received(model, "recall")


def read_as_told(session: Session, model: ScriptedModel, handle: str) -> str:
    """The model calls read_message with exactly the arguments the recall answer gave it."""
    model.queue(tool_call("read_message", json.loads(handle)), "Read it.")
    session.ask("read the whole note")
    return received(model, "read_message")


def folded_long_note(store, **context: object) -> tuple[Session, ScriptedModel]:
    session, model = session_with(store, **context)
    model.queue("Noted.", "Sure.")
    session.ask(LONG)
    session.ask("thanks, let us talk about something else")
    assert session.compact()
    assert all(m.content != LONG for m in session.window.messages)
    return session, model


def test_a_passage_from_the_middle_of_a_long_user_message_leads_the_model_to_the_whole_message(store):
    session, model = folded_long_note(store)

    answer = recalled(session, model, "who supplies the replacement chillers for the server room?")
    assert "The replacement chillers for the server room" in answer and "48,900" not in answer
    assert re.search(r"user message #0, at char \d+; whole message: read_message", answer)

    whole = read_as_told(session, model, HANDLE.search(answer).group(1))
    assert whole.startswith("[message #0 (user message, turn 1) chars 0..")
    assert OPENING in whole and ASKED in whole and ANSWER in whole


def test_a_long_message_is_paged_within_the_cap_and_the_pages_rebuild_it_exactly(store):
    store.append_messages([Message("user", LONG, session="notes", seq=4, turn=2)])
    context = ToolContext("notes", {}, Path.cwd(), store=store, output_max_chars=2000)
    pages, arguments = [], {"seq": 4}
    while arguments is not None:
        page = read_message.run(context, arguments)
        assert len(page) <= 2000
        header = re.match(r"\[message #4 \(user message, turn 2\) chars (\d+)\.\.(\d+) of (\d+)\]\n", page)
        more = re.search(r"\n\[more remains: read_message\((\{.*\})\)\]\Z", page)
        pages.append(page[header.end() : more.start() if more else None])
        arguments = json.loads(more.group(1)) if more else None
    assert len(pages) > 2 and "".join(pages) == LONG
    past = read_message.run(context, {"seq": 4, "offset": 10**6})
    assert past.endswith(f"offset 1000000 is past the end ({len(LONG)} chars)]")
    assert read_message.run(context, {"seq": 99}).startswith("No message #99 with text in this session")


def test_a_secret_the_user_pasted_stays_redacted_when_its_message_is_read_back_whole(store):
    key = "sk-proj-Zq8vN2mK7xR4tL9wB3cF6hJ1dS5gA0pY"
    session, model = session_with(store)
    model.queue("Noted.", "Sure.")
    session.ask(f"{OPENING}{FILLER * 20}The staging deploy key is {key} for the chiller telemetry.\n{ANSWER}")
    session.ask("thanks")
    assert session.compact()

    answer = recalled(session, model, "the deploy key for the chiller telemetry")
    whole = read_as_told(session, model, HANDLE.search(answer).group(1))
    assert "[REDACTED:" in whole and ANSWER in whole
    assert key not in json.dumps([c.messages for c in model.calls])


def test_a_branch_reads_the_whole_message_by_the_handle_its_own_recall_gives(store):
    session, _ = folded_long_note(store)
    session.branch("notes-branch")
    branch, branch_model = session_with(store, "notes-branch")

    answer = recalled(branch, branch_model, "who supplies the replacement chillers for the server room?")
    whole = read_as_told(branch, branch_model, HANDLE.search(answer).group(1))
    assert OPENING in whole and ASKED in whole and ANSWER in whole


def test_the_related_context_block_says_how_to_read_a_line_whole_and_the_handle_does(store):
    session, model = folded_long_note(store, retrieval={"enabled": True})
    model.queue("They do.")
    session.ask("is PO-48213 still open with the chiller supplier?")
    block = [m for m in model.calls[-1].messages if m["role"] == "user"][-1]["content"]
    assert 'read_message({"seq": N}) pages back the whole of message #N' in block
    assert re.search(r"- \[#0 user, turn 1\] .*Polar Freeze Industries", block)

    whole = read_as_told(session, model, '{"seq": 0}')
    assert ANSWER in whole


@pytest.mark.parametrize(
    ("recall", "retrieval", "offered"), [(True, False, True), (False, True, True), (False, False, False)]
)
def test_read_message_is_offered_wherever_recall_shows_passages(store, recall, retrieval, offered):
    session, model = session_with(store, recall={"enabled": recall}, retrieval={"enabled": retrieval})
    model.queue("hi")
    session.ask("hello")
    assert ("read_message" in {t["function"]["name"] for t in model.calls[0].tools}) is offered
