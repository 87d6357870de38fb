"""The default tool set, run_tool's never-raise contract, and safe_text."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.agent.tools.registry import default_tools, run_tool, safe_text
from monad_notebook.errors import ToolError

jsonschema = pytest.importorskip("jsonschema")

KERNEL_TOOLS = ["python", "list_variables", "describe", "list_files", "read_file", "grep", "notebook_history"]


@tool
def explode(ctx: ToolContext, kind: str = "runtime") -> str:
    """A tool that fails in the way it is asked to.

    Args:
        kind: runtime, tool, interrupt, exit or bytes.
    """
    if kind == "tool":
        raise ToolError("explode: the kind was\nnot acceptable")
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind == "exit":
        raise SystemExit(1)
    if kind == "bytes":
        return b"caf\xc3\xa9 \x1b[1mbold\x1b[0m"  # type: ignore[return-value]
    raise RuntimeError("something broke\n  deep inside")


@pytest.fixture
def ctx(tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    return ToolContext(session="t", namespace={"x": 1}, root=tmp_path, python_approval="auto")


@pytest.fixture
def tools() -> dict[str, Tool]:
    return {t.name: t for t in [*default_tools(python_approval="auto"), explode]}


def test_default_tools_are_the_kernel_tools_and_python_is_left_out_when_off():
    assert [t.name for t in default_tools(python_approval="ask")] == KERNEL_TOOLS
    assert [t.name for t in default_tools(python_approval="off")] == KERNEL_TOOLS[1:]


def test_every_tool_schema_is_a_valid_json_schema_with_a_description():
    for item in default_tools(python_approval="auto"):
        schema = item.schema()
        assert schema["type"] == "function" and schema["function"]["description"]
        parameters = schema["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(parameters)
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert all(prop.get("description") for prop in parameters["properties"].values()), item.name
        json.dumps(schema)


def test_schemas_accept_the_calls_a_model_would_make():
    schemas = {t.name: t.parameters for t in default_tools(python_approval="auto")}
    jsonschema.validate({"path": "data.csv", "offset": 10, "limit": 5}, schemas["read_file"])
    jsonschema.validate({"pattern": "TODO"}, schemas["grep"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"offset": 1}, schemas["read_file"])


def test_run_tool_runs_a_tool_and_returns_its_text(tools, ctx):
    assert run_tool(tools, ctx, "read_file", '{"path": "a.txt"}') == "a.txt: lines 1-1 of 1 lines\n     1\thello"
    assert run_tool(tools, ctx, "list_variables", "") == "x: int  1"


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("nope", "{}", "error: unknown tool 'nope'; available tools: describe, explode, grep,"),
        ("read_file", "{", "error: read_file: arguments are not valid JSON"),
        ("read_file", "[1, 2]", "error: read_file: arguments must be a JSON object, got list"),
        ("read_file", "{}", "error: read_file: missing required argument(s) path"),
        ("read_file", '{"path": 3}', "error: read_file: argument 'path' must be string, got int"),
        ("read_file", '{"path": "a.txt", "offset": "2"}', "error: read_file: argument 'offset' must be integer"),
        ("read_file", '{"path": "a.txt", "mode": "w"}', "error: read_file: unknown argument(s) mode"),
        ("read_file", '{"path": "../x"}', "error: read_file: '../x' is outside the working directory"),
        ("describe", '{"name": "y"}', "error: describe: no variable named 'y'"),
        ("explode", "{}", "error: explode: RuntimeError: something broke deep inside"),
        ("explode", '{"kind": "tool"}', "error: explode: the kind was not acceptable"),
        ("explode", '{"kind": "exit"}', "error: explode: SystemExit: 1"),
    ],
)
def test_run_tool_turns_every_tool_problem_into_one_line_for_the_model(tools, ctx, name, arguments, expected):
    result = run_tool(tools, ctx, name, arguments)
    assert result.startswith(expected) and "\n" not in result


def test_run_tool_lets_an_interrupt_through(tools, ctx):
    with pytest.raises(KeyboardInterrupt):
        run_tool(tools, ctx, "explode", '{"kind": "interrupt"}')


def test_run_tool_makes_any_result_safe_text(tools, ctx):
    assert run_tool(tools, ctx, "explode", '{"kind": "bytes"}') == "café bold"
    assert run_tool(tools, ctx, "python", json.dumps({"code": "print('a\\x00b\\x1b[31mc')"})) == "stdout:\nabc"


def test_safe_text_decodes_bytes_and_summarizes_binary():
    assert safe_text(b"caf\xc3\xa9 \xff ok") == "café \ufffd ok"
    assert safe_text(bytes(range(256)) * 100) == "binary data, 25600 bytes, not shown"
    assert safe_text(None) == "" and safe_text(42) == "42"


def test_safe_text_removes_control_characters_ansi_and_lone_surrogates():
    text = "a\x00b\x1b[1;31mc\x1b[0m\td\r\ne\rf\x85g\ud83d!\x1b]0;title\x07h"
    assert safe_text(text) == "abc\td\ne\nfg\ufffd!h"


CONTROLS = "\x00\x1b[m]\x07\r\n\t\x85\x9f\ud800\udfff\x7f"
NASTY = st.one_of(st.characters(exclude_categories=()), st.sampled_from(CONTROLS))


@given(st.text(NASTY))
def test_safe_text_always_returns_encodable_text_without_control_characters(text):
    result = safe_text(text)
    result.encode("utf-8")
    assert not any((ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in result)


@given(st.binary())
def test_safe_text_never_fails_on_bytes(data):
    safe_text(data).encode("utf-8")


def test_safe_text_keeps_a_50_mb_result_whole_and_is_fast():
    text = "2024 INFO \x1b[32mok\x1b[0m rows=12 é\n" * 1_600_000
    started = time.perf_counter()
    result = safe_text(text)
    assert time.perf_counter() - started < 10
    same = result == "2024 INFO ok rows=12 é\n" * 1_600_000  # outside the assert: no 50 MB diff on failure
    assert same
