"""Tool calls a model writes as text, through the fake server over real HTTP and a real LanceDB store.

Each supported form runs as a call: what ran, what was stored, what the next request carried. Each near
miss is checked the same way: prose that shows JSON, an unknown tool, arguments the schema refuses, two
calls in one block, a model that never gets it right, and the setting turned off.
"""

from __future__ import annotations

import json

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.text_calls import find_calls
from monad_notebook.agent.tools.consent import NOBODY_FOR_WRITTEN
from monad_notebook.agent.tools.registry import configured_tools
from monad_notebook.approval.gate import Answer, ApprovalGate, wording
from monad_notebook.config import Config
from monad_notebook.messages import ToolCall
from monad_notebook.store.rows import message_from_row, message_row
from monad_notebook.testing import FakeOpenAIServer, text, tool_call
from tests.agent.text_call_replies import HELD_OUT, REAL, REAL_PROSE, TUNING
from tests.conversation import conversation

SALES = "region,date,units\nNorth,2026-01-05,12\nSouth,2026-01-05,9\n"
# what Qwen2.5-Coder-1.5B-Instruct under llama.cpp's server answered to the demo's first question
FENCED = '```json\n{"name": "read_file", "arguments": {"path": "data/sales.csv", "offset": 0, "limit": 200}}\n```'
TAGGED = 'Let me read it.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "data/sales.csv"}}\n</tool_call>'
BARE = '{"name": "read_file", "arguments": {"path": "data/sales.csv"}}'
ELEMENT = '<tools>\n  <function name="read_file" arguments=\'{"path": "data/sales.csv"}\'/>\n</tools>'
ECHOED = '<tools>\n{"name": "read_file", "arguments": {"path": "data/sales.csv"}}\n</tools>'  # the template's own tag


@pytest.fixture
def server(isolated_env):
    (isolated_env / "data").mkdir()
    (isolated_env / "data" / "sales.csv").write_text(SALES)
    with FakeOpenAIServer() as server:
        yield server


def local_session(server, store, *, approval="auto", approve=None, namespace=None, **main) -> Session:
    config = Config.model_validate(
        {
            "models": {"main": {"model": "qwen2.5-coder-1.5b", "baseUrl": server.base_url, "maxRetries": 0, **main}},
            "tools": {"python": {"approval": approval}},
        }
    )
    return Session(
        "local", config=config, store=store, namespace={} if namespace is None else namespace, approve=approve
    )


def stored_calls(store) -> list[tuple[str, str, str]]:
    return [(c.name, c.arguments, c.recovered) for m in store.load_messages("local") for c in m.tool_calls]


def tool_results(store) -> list[str]:
    return [m.content for m in store.load_messages("local") if m.role == "tool"]


@pytest.mark.parametrize(
    ("reply", "form", "words"),
    [
        (FENCED, "json block", ""),
        (TAGGED, "tool_call tag", "Let me read it."),
        (ECHOED, "tools tag", ""),
        (ELEMENT, "tools tag, function element", ""),
        (BARE, "json", ""),
    ],
)
def test_a_call_written_as_text_runs_and_the_next_request_carries_the_call_and_its_result(
    server, store, reply, form, words
):
    server.queue(reply, "North sold 12 units.")
    answer = local_session(server, store).ask("What is in data/sales.csv?")
    assert answer.text == "North sold 12 units."
    assert (answer.tool_calls, answer.recovered_calls, answer.text_call_note) == (1, 1, "")
    ((name, arguments, recovered),) = stored_calls(store)
    assert (name, json.loads(arguments)["path"], recovered) == ("read_file", "data/sales.csv", form)
    assert "North,2026-01-05,12" in tool_results(store)[0]
    call, result = conversation(server.chat_requests[1]["messages"])[-2:]
    assert call["role"] == "assistant" and (call["content"] or "") == words
    assert call["tool_calls"][0]["function"]["name"] == "read_file"
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "North,2026-01-05,12" in result["content"]


def test_a_call_that_opens_the_answer_runs_and_the_words_after_it_are_dropped(server, store):
    # Qwen2.5-Coder-1.5B's first answer in the ten-turn benchmark: a call, then what it expected of it
    opened = f"{FENCED}\nThe output will be the number of rows in the `sales` DataFrame."
    server.queue(opened, "It has 2 rows.")
    answer = local_session(server, store).ask("How many rows?")
    assert answer.recovered_calls == 1 and "North,2026-01-05,12" in tool_results(store)[0]
    call = conversation(server.chat_requests[1]["messages"])[-2]
    assert (call["content"] or "") == "" and call["tool_calls"][0]["function"]["name"] == "read_file"


def test_a_function_element_keeps_the_single_quotes_inside_its_arguments():
    # Qwen2.5-Coder-1.5B's first call in a run of the demo, as it wrote it
    written = (
        '<tools>\n  <function name="python" arguments=\'{"code": "import pandas as pd; '
        "df = pd.read_csv('data/sales.csv'); print(df.head(5))\"}'/>\n</tools>"
    )
    (attempt,) = find_calls(written, configured_tools(python_approval="ask", persist_raw=True)).attempts
    assert attempt.usable and attempt.call.recovered == "tools tag, function element"
    assert json.loads(attempt.call.arguments)["code"] == (
        "import pandas as pd; df = pd.read_csv('data/sales.csv'); print(df.head(5))"
    )


def test_a_recovered_python_call_still_asks_for_approval_and_runs_what_was_approved(server, store):
    code = "total = 12 + 9\nprint(total)"
    server.queue(f"```json\n{json.dumps({'name': 'python', 'arguments': {'code': code}})}\n```", "21 units.")
    asked: list[str] = []
    namespace: dict = {}

    def approve(shown: str, **_: object) -> bool:
        asked.append(shown)
        return True

    answer = local_session(server, store, approval="ask", approve=approve, namespace=namespace).ask("Add them up.")
    assert asked == [code] and namespace["total"] == 21
    assert answer.recovered_calls == 1 and "21" in tool_results(store)[0]


def test_code_the_model_put_in_triple_quotes_runs_exactly_as_written(server, store):
    # Qwen2.5-Coder-1.5B wrote the demo's third call this way: Python's triple quotes inside the JSON
    written = 'import pandas as pd\nprint("a\\nb")\nsold = 12 + 9\n'
    server.queue(
        f'```json\n{{\n  "name": "python",\n  "arguments": {{\n    "code": """\n{written}"""\n  }}\n}}\n```', "Done."
    )
    asked: list[str] = []
    namespace: dict = {}

    def approve(shown: str, **_: object) -> bool:
        asked.append(shown)
        return True

    local_session(server, store, approval="ask", approve=approve, namespace=namespace).ask("Add them.")
    assert asked == ["\n" + written] and namespace["sold"] == 21
    assert json.loads(stored_calls(store)[0][1]) == {"code": "\n" + written}
    assert "a\nb" in tool_results(store)[0]  # print("a\nb") ran as written: two lines


def test_a_declined_recovered_python_call_does_not_run(server, store):
    server.queue('```json\n{"name": "python", "arguments": {"code": "ran = True"}}\n```', "As you wish.")
    namespace: dict = {}
    local_session(server, store, approval="ask", approve=lambda shown, **_: False, namespace=namespace).ask("Go.")
    assert "ran" not in namespace and tool_results(store) == ["the user declined to run this code"]


def test_json_shown_in_prose_is_the_answer_and_nothing_runs(server, store):
    shown = f"To read the file the agent would write:\n{FENCED}\nand the tool answers with its lines."
    inline = 'The call looks like {"name": "read_file", "arguments": {"path": "data/sales.csv"}} in JSON.'
    server.queue(shown, inline)
    session = local_session(server, store)
    first, second = session.ask("How do tools work?"), session.ask("Show it inline.")
    assert (first.text, second.text) == (shown, inline)
    assert (first.tool_calls, second.tool_calls, first.text_call_note) == (0, 0, "")
    assert stored_calls(store) == [] and len(server.chat_requests) == 2
    assert [m.content for m in store.load_messages("local") if m.role == "assistant"] == [shown, inline]


def test_an_unknown_tool_is_not_run_and_the_model_is_told_in_one_line(server, store):
    server.queue('```json\n{"name": "load_csv", "arguments": {"path": "data/sales.csv"}}\n```', "I cannot load it.")
    answer = local_session(server, store).ask("Load the sales.")
    ((name, _, recovered),) = stored_calls(store)
    assert (name, recovered) == ("load_csv", "json block")
    (told,) = tool_results(store)
    assert told.startswith("error: unknown tool 'load_csv'; available tools:") and "\n" not in told
    assert conversation(server.chat_requests[1]["messages"])[-1]["content"] == told
    assert answer.recovered_calls == 0 and "unknown tool 'load_csv'" in answer.text_call_note
    assert "textToolCalls" in answer.text_call_note


def test_arguments_the_schema_refuses_are_not_run_nor_asked_about(server, store):
    server.queue('```json\n{"name": "python", "arguments": {"source": "import os"}}\n```', "Sorry.")
    asked: list[str] = []
    answer = local_session(server, store, approval="ask", approve=lambda shown, **_: asked.append(shown)).ask("Go.")
    assert asked == []
    assert tool_results(store) == ["error: python: unknown argument(s) source; expected code"]
    assert "unknown argument(s) source" in answer.text_call_note


def test_arguments_that_are_not_json_are_not_run(server, store):
    server.queue('```json\n{"name": "python", "arguments": {"code": "print("hi")"}}\n```', "Sorry.")
    namespace: dict = {}
    local_session(server, store, namespace=namespace).ask("Say hi.")
    (result,) = tool_results(store)
    assert result.startswith("error: python: arguments are not valid JSON")
    assert stored_calls(store)[0][1] == '{"code": "print("hi")"}'  # kept as the model wrote it


def test_the_same_call_written_again_in_the_turn_is_not_run_again(server, store):
    # what Qwen2.5-Coder-1.5B did with the demo's first question: the same python call, step after step
    again = '```json\n{"name": "python", "arguments": {"code": "runs = runs + 1"}}\n```'
    server.queue(again, again, "It ran once.")
    namespace = {"runs": 0}
    answer = local_session(server, store, namespace=namespace, approve=lambda code, **_: True).ask("Count.")
    assert namespace["runs"] == 1 and answer.text == "It ran once."
    assert answer.recovered_calls == 1 and answer.text_call_note == ""
    ran, second = tool_results(store)
    assert ran == "(no output)" and second.startswith("error: python: this exact call already ran in this turn")
    assert conversation(server.chat_requests[2]["messages"])[-1]["content"] == second


def test_two_calls_in_one_block_run_in_order_as_one_round(server, store):
    block = (
        '```json\n{"name": "list_variables", "arguments": {}}\n{"name": "describe", "arguments": {"name": "n"}}\n```'
    )
    server.queue(block, "n is 3.")
    answer = local_session(server, store, namespace={"n": 3}).ask("What do I have?")
    assert [(name, recovered) for name, _, recovered in stored_calls(store)] == [
        ("list_variables", "json block"),
        ("describe", "json block"),
    ]
    assert [m["role"] for m in conversation(server.chat_requests[1]["messages"])[-3:]] == ["assistant", "tool", "tool"]
    assert answer.tool_calls == answer.recovered_calls == 2


def test_a_model_that_never_writes_a_usable_call_is_stopped_and_the_user_told_what_to_change(server, store):
    wrong = '```json\n{"name": "load_csv", "arguments": {}}\n```'
    server.queue(wrong, wrong, wrong)
    answer = local_session(server, store).ask("Load the sales.")
    assert len(server.chat_requests) == 3 and answer.text == wrong  # the third reply is the answer, as written
    assert len(tool_results(store)) == 2
    assert answer.text_call_note.startswith("The model wrote tool calls as text that could not be run")
    (note,) = [e.data["message"] for e in store.list_events("local", kind=ev.TEXT_CALLS_UNUSED)]
    assert note == answer.text_call_note


def test_with_text_tool_calls_off_a_written_call_is_the_answer_and_the_user_is_told(server, store):
    server.queue(FENCED)
    answer = local_session(server, store, textToolCalls="off").ask("What is in data/sales.csv?")
    assert answer.text == FENCED and stored_calls(store) == [] and len(server.chat_requests) == 1
    assert 'models.main.textToolCalls is "off"' in answer.text_call_note and "(read_file)" in answer.text_call_note


def test_a_reply_cut_off_by_the_output_limit_is_not_read_for_calls(server, store):
    server.queue(text(FENCED, finish_reason="length"))
    answer = local_session(server, store).ask("What is in data/sales.csv?")
    assert answer.truncated and answer.tool_calls == 0 and stored_calls(store) == []


def test_a_session_reopened_from_the_store_keeps_the_recovered_mark(server, store):
    server.queue(FENCED, "Done.")
    local_session(server, store).ask("What is in data/sales.csv?")
    server.queue("Still here.")
    reopened = local_session(server, store)
    assert [c.recovered for m in reopened.window.messages for c in m.tool_calls] == ["json block"]
    reopened.ask("And now?")
    assert server.chat_requests[-1]["messages"][2]["tool_calls"][0]["function"]["name"] == "read_file"


def test_a_stored_call_from_before_the_mark_existed_loads_as_an_api_call():
    old = {**message_row(_message()), "tool_calls": '[{"id": "c1", "name": "python", "arguments": "{}"}]'}
    assert message_from_row(old).tool_calls == [ToolCall("c1", "python", "{}")]
    assert json.loads(message_row(_message())["tool_calls"]) == [{"id": "c1", "name": "python", "arguments": "{}"}]


def _message():
    from monad_notebook.messages import Message

    return Message("assistant", "", session="s", tool_calls=[ToolCall("c1", "python", "{}")])


# --- which replies count as calls, and what a call read from the text may do -------------------------


OFFERED = configured_tools(python_approval="ask", persist_raw=True)


@pytest.mark.parametrize("reply", REAL)
def test_the_forms_a_small_local_model_really_wrote_are_read_as_calls(reply):
    found = find_calls(reply, OFFERED)
    assert found is not None and found.usable == len(found.attempts) >= 1


@pytest.mark.parametrize("reply", REAL_PROSE)
def test_the_answers_a_small_local_model_really_wrote_with_code_for_the_user_are_prose(reply):
    assert find_calls(reply, OFFERED) is None


@pytest.mark.parametrize(("reply", "is_call"), [*TUNING, *HELD_OUT])
def test_a_call_the_prose_presents_or_disowns_is_not_read_as_one(reply, is_call):
    assert (find_calls(reply, OFFERED) is not None) is is_call


EXPLAINED = (
    "The read_file tool returns a text file's lines with their numbers; offset and limit page through a long "
    "file. For example, to read the first lines of data/sales.csv:\n" + FENCED
)
DISOWNED = (
    '```json\n{"name": "python", "arguments": {"code": "open(\'written.txt\', \'w\').write(\'x\')"}}\n```\n'
    "This is what such a call looks like; I am not running it."
)


def test_an_explanation_ending_with_an_example_call_runs_nothing(server, store):
    server.queue(EXPLAINED)
    answer = local_session(server, store).ask("How do I read a file?")
    assert answer.text == EXPLAINED and answer.tool_calls == 0 and stored_calls(store) == []
    assert len(server.chat_requests) == 1


def test_an_example_the_reply_opens_with_and_then_disowns_runs_nothing_even_on_auto(server, store, isolated_env):
    asked: list[str] = []
    server.queue(DISOWNED)
    answer = local_session(server, store, approve=lambda code, **_: asked.append(code) or True).ask("Show me.")
    assert answer.text == DISOWNED and answer.tool_calls == 0 and asked == []
    assert not (isolated_env / "written.txt").exists()


def test_a_written_python_call_asks_first_even_on_auto_and_says_it_was_read_from_the_text(server, store):
    server.queue('```json\n{"name": "python", "arguments": {"code": "ran = True"}}\n```', "Done.")
    asked: list[tuple[str, str]] = []
    namespace: dict = {}

    def approve(code: str, subject: str = "python") -> bool:
        asked.append((code, subject))
        return True

    local_session(server, store, approval="auto", approve=approve, namespace=namespace).ask("Go.")
    assert asked == [("ran = True", "text:python")] and namespace["ran"] is True
    assert "read from the model's text" in wording("text:python").action and wording("text:python").allow == ""


def test_where_nobody_can_answer_a_written_call_that_changes_anything_is_refused_in_one_line(server, store):
    calls = [
        '```json\n{"name": "python", "arguments": {"code": "ran = True"}}\n```',
        '<tool_call>\n{"name": "remember", "arguments": {"fact": "the user likes pie charts"}}\n</tool_call>',
    ]
    server.queue(calls[0], calls[1], "Neither ran.")
    namespace: dict = {}
    session = local_session(server, store, approval="auto", namespace=namespace)
    answer = session.ask("Go.")
    assert tool_results(store) == [NOBODY_FOR_WRITTEN, NOBODY_FOR_WRITTEN] and "\n" not in NOBODY_FOR_WRITTEN
    assert "ran" not in namespace and session.memory.list([session.memory_scope]) == []
    assert answer.text == "Neither ran."


def test_a_written_call_that_only_reads_runs_as_an_api_call_does(server, store):
    server.queue(FENCED, "Read.")
    local_session(server, store, approval="auto").ask("What is in data/sales.csv?")
    assert "North,2026-01-05,12" in tool_results(store)[0]


def test_allowing_python_for_the_session_does_not_cover_a_call_read_from_the_text(server, store):
    asked: list[str] = []

    def ask(code: str, subject: str = "python") -> Answer:
        asked.append(subject)
        return Answer(True, always=True, via="cell")

    gate = ApprovalGate(ask)
    written = '```json\n{"name": "python", "arguments": {"code": "n = n + 1"}}\n```'
    api = tool_call("python", {"code": "n = n + 10"})
    server.queue(
        api, "ok", written, "ok", '```json\n{"name": "python", "arguments": {"code": "n = n + 100"}}\n```', "ok"
    )
    session = local_session(server, store, approval="ask", approve=gate, namespace={"n": 0})
    for message in ("first", "second", "third"):
        session.ask(message)
    assert asked == ["python", "text:python", "text:python"]  # python allowed after the first: text still asks
    assert gate.allowed == {"python"} and session.namespace["n"] == 111
