"""What a ``%%monad`` cell and ``%monad status`` show when the model writes its tool calls as text."""

from __future__ import annotations

import json

import pytest

from monad_notebook.testing import FakeOpenAIServer

FENCED = '```json\n{"name": "read_file", "arguments": {"path": "notes.txt", "offset": 0, "limit": 200}}\n```'
UNKNOWN = '```json\n{"name": "load_csv", "arguments": {"path": "notes.txt"}}\n```'


@pytest.fixture
def server(ip, isolated_env):
    (isolated_env / "notes.txt").write_text("alpha\nbeta\n")
    with FakeOpenAIServer() as server:
        config = {"models": {"main": {"model": "qwen2.5-coder-1.5b", "baseUrl": server.base_url, "maxRetries": 0}}}
        (isolated_env / "agents.json").write_text(json.dumps(config))
        ip.run_line_magic("reload_ext", "monad_notebook")
        yield server


def test_a_call_written_as_text_is_shown_as_a_tool_block_not_as_the_answer(ip, server, rich):
    server.queue(FENCED, "Two lines: alpha and beta.")
    ip.run_cell_magic("monad", "--session cell", "What is in notes.txt?")
    texts = rich.texts()
    assert not any('"arguments"' in shown for shown in texts)  # the streamed JSON was taken back
    (block,) = [shown for shown in texts if "read_file" in shown]
    assert "(written as text: json block)" in block and "alpha" in block and "done" in block
    assert texts[-2] == "Two lines: alpha and beta."
    assert "1 tool call (1 written as text)" in texts[-1]


def test_a_turn_whose_written_calls_never_ran_says_what_to_change(ip, server, rich):
    server.queue(UNKNOWN, "I could not load it.")
    ip.run_cell_magic("monad", "--session miss", "Load notes.txt")
    texts = rich.texts()
    (block,) = [shown for shown in texts if "(written as text: json block)" in shown]
    assert "load_csv" in block and "not run" in block and "unknown tool" in block
    (note,) = [shown for shown in texts if shown.strip().startswith("tool calls")]
    assert "could not be run (unknown tool 'load_csv')" in note and "textToolCalls" in note
    assert "1 tool call" in texts[-1] and "written as text" not in texts[-1]


def test_status_says_how_many_calls_were_written_as_text_and_whether_they_ran(ip, server, capsys):
    server.queue(FENCED, "Read it.", UNKNOWN, "Sorry.")
    ip.run_cell_magic("monad", "--session st", "What is in notes.txt?")
    ip.run_cell_magic("monad", "--session st", "Load it.")
    capsys.readouterr()
    ip.run_line_magic("monad", "status")
    out = capsys.readouterr().out
    assert "The model wrote 2 tool calls as text instead of calling through the API; 1 ran as calls, 1 could not" in out
    assert 'textToolCalls is "auto"' in out


def test_status_says_when_calls_written_as_text_are_not_run(ip, server, capsys, isolated_env):
    config = json.loads((isolated_env / "agents.json").read_text())
    config["models"]["main"]["textToolCalls"] = "off"
    (isolated_env / "agents.json").write_text(json.dumps(config))
    server.queue(FENCED)
    ip.run_cell_magic("monad", "--session off", "What is in notes.txt?")
    out = capsys.readouterr().out
    assert '"name": "read_file"' in out and 'models.main.textToolCalls is "off"' in out
    ip.run_line_magic("monad", "status")
    assert 'Tool calls the model writes as text are not run (models.main.textToolCalls is "off")' in (
        capsys.readouterr().out
    )
