"""A hostile or mangled agents.json, at start and mid-session: one line, and never half a configuration.

Every case is tried twice: as the file a session starts with (it must not start, and say why
in one line) and as an edit between two turns (the turn runs with the user's message kept, the
last good configuration stays whole, one warning is shown).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.agent.tools.python import NO_APPROVER
from monad_notebook.config import ConfigWatcher
from monad_notebook.errors import ConfigError
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call
from tests.conversation import conversation
from tests.files import touch_later


def nested(key: str, value: object) -> str:
    """``{"a": {"b": value}}`` for key ``a.b``, as JSON text."""
    text = json.dumps(value) if not isinstance(value, str) or not value.startswith("@") else value[1:]
    for part in reversed(key.split(".")):
        text = f'{{"{part}": {text}}}'
    return text


HOSTILE: list[tuple[str, str | bytes, str]] = [
    ("half-written", '{"agent": {"maxSteps": 5,', "is not valid JSON: line 1"),
    ("empty", "  \n", "is empty"),
    ("top-level-list", "[1, 2]", "must hold a JSON object"),
    ("utf-16", '{"agent": {}}'.encode("utf-16"), "is not UTF-8"),
    ("larger-than-1mb", nested("agent.systemPrompt", "x" * 1_100_000), "larger than 1 MB"),
    ("5000-digit-int", nested("agent.maxSteps", "@" + "9" * 5000), "thousands of digits"),
    ("100k-deep-lists", "[" * 100_000 + "]" * 100_000, "nests too deeply"),
    ("100k-deep-objects", '{"a":' * 100_000 + "1" + "}" * 100_000, "nests too deeply"),
    ("500-deep-objects", '{"agent":' + '{"a":' * 500 + "1" + "}" * 501, "nests more than 32 levels"),
    ("nan-fraction", nested("context.eviction.atFraction", "@NaN"), "atFraction must be a finite number (got NaN)"),
    ("infinity-fraction", nested("context.summarize.softFraction", "@Infinity"), "softFraction must be a finite"),
    ("minus-infinity", nested("context.summarize.hardFraction", "@-Infinity"), "hardFraction must be a finite"),
    ("1e999-is-infinite", nested("context.handoff.atFraction", "@1e999"), "atFraction must be a finite number"),
    ("nan-temperature", nested("models.main.temperature", "@NaN"), "temperature must be a finite number"),
    ("nan-seconds", nested("models.main.timeoutSeconds", "@NaN"), "timeoutSeconds must be a finite number"),
    ("nan-min-score", nested("context.retrieval.minScore", "@NaN"), "minScore must be a finite number"),
    (
        "duplicate-key",
        '{"tools": {"python": {"approval": "ask", "approval": "auto"}}}',
        "key tools.python.approval appears twice",
    ),
    ("duplicate-section", '{"agent": {}, "agent": {"maxSteps": 2}}', "key agent appears twice"),
    ("both-spellings", '{"agent": {"maxSteps": 3, "max_steps": 30}}', "agent.maxSteps is given twice"),
    ("empty-regex", nested("context.redaction.patterns", [{"name": "e", "regex": ""}]), "matches the empty string"),
    ("star-regex", nested("context.redaction.patterns", [{"name": "s", "regex": "x*"}]), "matches the empty string"),
    ("boundary-regex", nested("context.redaction.patterns", [{"name": "b", "regex": "\\b"}]), "matches the empty"),
    ("bad-regex", nested("context.redaction.patterns", [{"name": "r", "regex": "(a"}]), "not a valid RE2"),
    ("missing-root", nested("tools.files.root", "no/such/dir"), "tools.files.root names "),
    ("root-is-a-file", nested("tools.files.root", "agents.json"), "which is not a directory"),
    ("hook-not-importable", nested("context.redaction.hook", "no_such_module:redact"), "cannot be imported"),
    ("hook-missing-function", nested("context.redaction.hook", "json:no_such_function"), "cannot be imported"),
    ("hook-not-callable", nested("context.redaction.hook", "os:sep"), "is not a 'module:function' callable"),
    ("hook-not-dotted", nested("context.redaction.hook", "my_module"), 'must look like "module:function"'),
    ("zero-window", nested("models.main.contextWindow", 0), "contextWindow must be greater than 0"),
    ("negative-window", nested("models.main.contextWindow", -8000), "contextWindow must be greater than 0"),
    ("output-fills-window", nested("models.main", {"contextWindow": 1000, "maxOutputTokens": 1000}), "below"),
    ("soft-above-hard", nested("context.summarize", {"softFraction": 0.9, "hardFraction": 0.8}), "at least soft"),
    ("zero-fraction", nested("context.eviction.atFraction", 0), "atFraction must be above 0"),
    ("fraction-above-1", nested("context.toolOutput.headFraction", 1.5), "must be between 0 and 1"),
    ("string-for-int", nested("agent.maxSteps", "5"), 'agent.maxSteps must be a whole number (got "5")'),
    ("bool-for-int", nested("context.eviction.keepRecentRounds", True), "must be a whole number (got true)"),
    ("float-for-int", nested("agent.maxSteps", 2.5), "must be a whole number (got 2.5)"),
    ("string-for-bool", nested("context.eviction.enabled", "yes"), "must be true or false"),
    ("object-for-list", nested("context.redaction.patterns", {"n": "x"}), "patterns must be a list"),
    ("null-section", '{"context": null}', "context must be an object (got null)"),
    ("unknown-key", nested("context.evicton.enabled", False), "unknown key context.evicton"),
    ("huge-int", nested("context.toolOutput.maxChars", 2**60), "is too large a number"),
    ("huge-timeout", nested("models.main.timeoutSeconds", 1e308), "timeoutSeconds must be at most 86400"),
    ("not-a-url", nested("models.main.baseUrl", "localhost:11434"), "baseUrl must be an http:// or https:// URL"),
    ("nul-in-value", nested("models.main.apiKeyEnv", "OPENAI\u0000KEY"), "apiKeyEnv contains a NUL character"),
    ("newline-in-key", nested("agent", {"max\nSteps": 3}), "unknown key agent.max\\nSteps"),
    ("10k-char-key", nested("agent", {"k" * 10_000: 1}), "unknown key agent.kkk"),
    ("bad-approval", nested("tools.python.approval", "always"), "approval must be one of"),
]
IDS = [case[0] for case in HOSTILE]


def write_hostile(path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def assert_one_line(message: str, expected: str) -> None:
    assert expected in message
    assert message.startswith("agents.json")
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize(("name", "text", "expected"), HOSTILE, ids=IDS)
def test_a_hostile_file_at_start_is_one_line_and_starts_no_session(isolated_env: Path, store, name, text, expected):
    write_hostile(isolated_env / "agents.json", text)
    with pytest.raises(ConfigError) as caught:
        Session("first", config=ConfigWatcher(), store=store, model=ScriptedModel(["unused"]))
    assert_one_line(str(caught.value), expected)
    assert store.list_sessions() == []


@pytest.mark.parametrize(("name", "text", "expected"), HOSTILE, ids=IDS)
def test_a_hostile_edit_mid_session_keeps_the_message_and_the_whole_last_good_config(
    isolated_env: Path, store, name, text, expected
):
    path = isolated_env / "agents.json"
    path.write_text(json.dumps({"tools": {"python": {"approval": "ask"}}, "agent": {"maxSteps": 4}}))
    model = ScriptedModel(["one", "two", "three"])
    session = Session("mid", config=ConfigWatcher(), store=store, model=model)
    shown: list[str] = []
    session.events.subscribe(lambda event: shown.append(event.data["message"]) if event.kind == ev.ERROR else None)
    session.ask("first")
    good = session.config
    write_hostile(path, text)
    touch_later(path)
    assert session.ask("second, after the edit").text == "two"
    assert session.ask("third").text == "three"
    assert session.config is good
    assert [m.content for m in store.load_messages("mid") if m.role == "user"] == [
        "first",
        "second, after the edit",
        "third",
    ]
    (warning,) = shown
    assert_one_line(warning, expected)
    assert warning.endswith("the last good configuration is still in force")
    assert [event.data["message"] for event in store.list_events("mid", kind=ev.ERROR)] == [warning]


def test_a_broken_hook_saved_with_auto_approval_applies_neither(isolated_env: Path, store):
    path = isolated_env / "agents.json"
    path.write_text(json.dumps({"tools": {"python": {"approval": "ask"}}}))
    model = ScriptedModel(["ok"])
    session = Session("half", config=ConfigWatcher(), store=store, model=model)
    session.ask("hello")
    edit = {
        "tools": {"python": {"approval": "auto"}},
        "context": {"redaction": {"hook": "no_such_module:redact", "patterns": [{"name": "pin", "regex": "PIN-\\d+"}]}},
    }
    path.write_text(json.dumps(edit))
    touch_later(path)
    namespace: dict = {}
    session.namespace = namespace
    model.queue(tool_call("python", {"code": "ran = True\nprint('PIN-1234')"}), "tried")
    assert session.ask("run it; my PIN-1234").text == "tried"
    assert "ran" not in namespace
    assert conversation(model.calls[-1].messages)[-1]["content"] == NO_APPROVER
    assert session.config.tools.python.approval == "ask"
    assert "run it; my PIN-1234" in [m.content for m in store.load_messages("half")]
    (warning,) = store.list_events("half", kind=ev.ERROR)
    assert warning.data["message"].startswith("agents.json: context.redaction.hook 'no_such_module:redact'")
    edit["context"]["redaction"].pop("hook")
    path.write_text(json.dumps(edit))
    touch_later(path, 20)
    model.queue(tool_call("python", {"code": "ran = True\nprint('PIN-1234')"}), "ran")
    session.ask("now run it")
    assert namespace["ran"] is True
    assert "PIN-1234" not in conversation(model.calls[-1].messages)[-1]["content"]
    assert len(store.list_events("half", kind=ev.ERROR)) == 1


def test_a_reload_that_moves_the_endpoint_sends_the_next_turn_there(isolated_env: Path, store):
    path = isolated_env / "agents.json"
    with FakeOpenAIServer() as old, FakeOpenAIServer() as new:
        path.write_text(json.dumps({"models": {"main": {"model": "m", "baseUrl": old.base_url, "maxRetries": 0}}}))
        old.queue("from old")
        new.queue("from new")
        session = Session("moved", config=ConfigWatcher(), store=store)
        assert session.ask("hi").text == "from old"
        path.write_text(json.dumps({"models": {"main": {"model": "m", "baseUrl": new.base_url, "maxRetries": 0}}}))
        touch_later(path)
        assert session.ask("again").text == "from new"
        assert len(old.chat_requests) == 1 and len(new.chat_requests) == 1


@pytest.fixture
def magic(ip, isolated_env):
    ip.run_line_magic("reload_ext", "monad_notebook")
    return ip


@pytest.mark.parametrize(
    "text",
    [
        '{"agent": {"maxSteps": ' + "9" * 5000 + "}}",
        "[" * 100_000 + "]" * 100_000,
        nested("context.redaction.hook", "no_such_module:redact"),
    ],
    ids=["5000-digits", "deep", "bad-hook"],
)
def test_the_first_cell_on_a_broken_file_prints_one_line_and_the_fixed_file_works(
    magic, isolated_env: Path, capsys, text
):
    path = isolated_env / "agents.json"
    path.write_text(text)
    magic.run_cell_magic("monad", "", "hello")
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("monad: agents.json") and "Traceback" not in captured.out + captured.err
    path.write_text(json.dumps({"models": {"main": {"model": "scripted-demo"}}}))
    touch_later(path)
    magic.run_cell_magic("monad", "", "hello")
    captured = capsys.readouterr()
    assert captured.err == "" and "scripted demo" in captured.out


def test_a_deleted_working_directory_falls_back_like_a_deleted_file(isolated_env: Path, store, monkeypatch):
    folder = isolated_env / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    (folder / "agents.json").write_text(json.dumps({"agent": {"maxSteps": 3}}))
    session = Session("gone", config=ConfigWatcher(), store=store, model=ScriptedModel(["one", "two"]))
    session.ask("first")
    (folder / "agents.json").unlink()
    folder.rmdir()
    assert session.ask("second").text == "two"
    assert session.config.agent.max_steps == 24


def test_a_broken_hook_saved_between_cells_shows_one_warning_line_and_the_answers(magic, isolated_env: Path, capsys):
    path = isolated_env / "agents.json"
    demo = {"models": {"main": {"model": "scripted-demo"}}}
    path.write_text(json.dumps(demo))
    magic.run_cell_magic("monad", "", "hello")
    path.write_text(json.dumps({**demo, "context": {"redaction": {"hook": "no_such_module:redact"}}}))
    touch_later(path)
    capsys.readouterr()
    magic.run_cell_magic("monad", "", "hello again")
    magic.run_cell_magic("monad", "", "and again")
    captured = capsys.readouterr()
    (warning,) = [line for line in captured.out.splitlines() if line.startswith("warning: ")]
    assert warning.startswith("warning: agents.json: context.redaction.hook 'no_such_module:redact' cannot be imported")
    assert warning.endswith("the last good configuration is still in force")
    assert captured.out.count("scripted demo") == 2 and captured.err == ""
