"""The python tool through IPython's real in-process shell, and without one; approval paths."""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import pytest
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.error import StdinNotImplementedError

from monad_notebook import Session
from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.python import DECLINED, python
from monad_notebook.approval.gate import stdin_approver
from monad_notebook.config import Config
from monad_notebook.testing import ScriptedModel, tool_call
from tests.hostile import HIDDEN_CODE, PAYLOAD, Hidden, invisible_characters, terminal_screen


@pytest.fixture
def ctx(ip, tmp_path):
    return ToolContext(session="t", namespace=ip.user_ns, root=tmp_path, shell=ip, python_approval="auto")


@pytest.fixture
def plain(tmp_path):
    return ToolContext(session="t", namespace={}, root=tmp_path, python_approval="auto")


class LiveStream(io.StringIO):
    """A frontend stream that remembers each write as it arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


# --- in the IPython shell -------------------------------------------------------------


def test_shell_run_captures_stdout_stderr_and_value_and_the_user_sees_them_too(ctx, ip, capsys):
    code = "py_answer = 41\nprint('hello from the agent')\nimport sys\nprint('careful', file=sys.stderr)\npy_answer + 1"
    out = python.run(ctx, {"code": code})
    assert out == "stdout:\nhello from the agent\nstderr:\ncareful\nvalue: 42"
    assert ip.user_ns["py_answer"] == 41
    seen = capsys.readouterr()
    assert "hello from the agent" in seen.out and "42" in seen.out and "careful" in seen.err


def test_shell_error_gives_the_model_a_short_plain_traceback_and_the_user_the_usual_one(ctx, capsys):
    code = "def py_inner():\n    return 1 / 0\n\npy_inner()"
    out = python.run(ctx, {"code": code})
    assert out.startswith("error: ZeroDivisionError: division by zero\nTraceback (most recent call last):")
    assert "File <cell>, line 2, in py_inner\n    return 1 / 0" in out
    assert "\x1b" not in out and "interactiveshell" not in out
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_shell_syntax_error_is_reported_with_the_offending_line(ctx):
    out = python.run(ctx, {"code": "def broken(:\n    pass"})
    assert out.startswith("error: ") and "SyntaxError" in out and "def broken(:" in out


def test_shell_output_streams_live_while_the_code_runs(ctx, monkeypatch):
    stream = LiveStream()
    monkeypatch.setattr(sys, "stdout", stream)
    ctx.namespace["py_stream"] = stream
    out = python.run(ctx, {"code": "print('step 1')\npy_seen = list(py_stream.writes)\nprint('step 2')"})
    assert "step 1" in "".join(ctx.namespace["py_seen"])
    assert out == "stdout:\nstep 1\nstep 2"


def test_shell_displays_reach_the_frontend_as_rich_output_and_the_model_as_text(ctx, ip, monkeypatch):
    frontend = CapturingDisplayPublisher()
    monkeypatch.setattr(ip, "display_pub", frontend)
    monkeypatch.setattr(ip.display_formatter, "active_types", ["text/plain", "text/html"])
    code = (
        "import pandas as pd\n"
        "py_df = pd.DataFrame({'region': ['north', 'south'], 'growth': [0.1, 0.3]})\n"
        "display(py_df)\n"
        "display({'text/html': '<b>bold</b>', 'text/plain': 'bold text'}, raw=True)"
    )
    out = python.run(ctx, {"code": code})
    bundles = [output["data"] for output in frontend.outputs]
    assert "<table" in bundles[0]["text/html"] and "south" in bundles[0]["text/plain"]
    assert bundles[1] == {"text/html": "<b>bold</b>", "text/plain": "bold text"}
    assert "displayed:" in out and "south" in out and "bold text (text/html shown to the user)" in out
    assert ip.display_pub is frontend


def _shell_state(ip) -> tuple[Any, ...]:
    hooks = ("write_format_data", "start_displayhook", "finish_displayhook")
    patched = [vars(ip.displayhook).get(name) for name in hooks]
    return sys.stdout, sys.stderr, ip.display_pub, vars(ip).get("_showtraceback"), patched


def test_shell_is_left_exactly_as_it_was_after_a_run(ctx, ip):
    before = _shell_state(ip)
    python.run(ctx, {"code": "print('x')\n1/0"})
    assert _shell_state(ip) == before


def test_keyboard_interrupt_in_the_code_propagates_and_restores_the_shell(ctx, ip):
    before = _shell_state(ip)
    with pytest.raises(KeyboardInterrupt):
        python.run(ctx, {"code": "raise KeyboardInterrupt"})
    assert _shell_state(ip) == before


def test_a_flood_of_output_keeps_its_head_and_tail_within_bounds(ctx, capsys):
    code = "for i in range(120_000):\n    print(f'line {i:06d} ' + 'x' * 80)"
    out = python.run(ctx, {"code": code})
    capsys.readouterr()
    assert len(out) < 4_500_000
    assert "line 000000" in out and "line 119999" in out and "characters of output not captured" in out


TOKEN = "ghp_" + "Zq8Lr2Xw9Kp4Tn7V" * 2 + "aB3d"
HALF = 2_000_000  # what the capture keeps of each end of a stream


@pytest.mark.parametrize(
    "code",
    [
        f"print('x' * ({HALF} - 11) + ' ' + {TOKEN!r} + ' ' + 'y' * 3_000_000)",
        f"print('x' * 3_000_000 + ' ' + {TOKEN!r} + ' ' + 'z' * ({HALF} - 21), end='')",
    ],
    ids=["across-the-head-cut", "across-the-tail-cut"],
)
def test_a_token_printed_across_the_capture_cut_reaches_neither_the_model_nor_the_store_in_pieces(store, capsys, code):
    model = ScriptedModel([tool_call("python", {"code": code}), "done"])
    Session(
        "flood", config=Config.model_validate({"tools": {"python": {"approval": "auto"}}}), store=store, model=model
    ).ask("print it")
    capsys.readouterr()
    call_id = model.calls[1].messages[-1]["tool_call_id"]
    kept = [model.calls[1].messages[-1]["content"], *(m.content for m in store.load_messages("flood"))]
    kept.append(store.get_raw_output("flood", call_id) or "")
    for text in kept:
        assert not [p for p in (TOKEN[i : i + 8] for i in range(len(TOKEN) - 7)) if p in text]


def test_code_without_output_says_so(ctx):
    assert python.run(ctx, {"code": "py_quiet = 1"}) == "(no output)"


# --- without a shell ------------------------------------------------------------------


def test_plain_run_execs_in_the_namespace_and_evaluates_the_last_expression(plain, capsys):
    out = python.run(plain, {"code": "x = [1, 2]\nprint('len', len(x))\nx + [3]"})
    assert out == "stdout:\nlen 2\nvalue: [1, 2, 3]"
    assert plain.namespace["x"] == [1, 2]
    assert "len 2" in capsys.readouterr().out


def test_plain_run_reports_errors_and_survives_sys_exit(plain):
    out = python.run(plain, {"code": "def f():\n    raise ValueError('bad input')\nf()"})
    assert out.startswith("error: ValueError: bad input") and "File <cell>, line 2, in f" in out
    assert python.run(plain, {"code": "import sys\nsys.exit(3)"}).startswith("error: SystemExit: 3")
    syntax = python.run(plain, {"code": "x = = 1"})
    assert "SyntaxError" in syntax and "Traceback" not in syntax


def test_plain_run_lets_keyboard_interrupt_through(plain):
    with pytest.raises(KeyboardInterrupt):
        python.run(plain, {"code": "raise KeyboardInterrupt"})


# --- approval -------------------------------------------------------------------------


class Approver:
    """Answers approval prompts from a script and remembers what it was shown."""

    def __init__(self, answer: bool | None) -> None:
        self.answer = answer
        self.shown: list[str] = []

    def __call__(self, code: str) -> bool | None:
        self.shown.append(code)
        return self.answer


@pytest.mark.parametrize("answer", [True, False, None])
def test_ask_mode_runs_only_what_the_user_approves(plain, answer):
    approver = Approver(answer)
    plain.python_approval, plain.approve = "ask", approver
    out = python.run(plain, {"code": "ran = True\n'done'"})
    assert approver.shown == ["ran = True\n'done'"]
    assert ("ran" in plain.namespace) is (answer is True)
    if answer is True:
        assert out == "value: 'done'"
    elif answer is False:
        assert out == DECLINED
    else:
        assert "tools.python.approval" in out and '"auto"' in out and "agents.json" in out


def test_ask_mode_without_any_approver_refuses_and_explains_how_to_allow(plain):
    plain.python_approval, plain.approve = "ask", None
    out = python.run(plain, {"code": "ran = True"})
    assert "ran" not in plain.namespace and "tools.python.approval" in out


def test_auto_mode_never_asks(plain):
    approver = Approver(False)
    plain.approve = approver
    assert python.run(plain, {"code": "1 + 1"}) == "value: 2" and approver.shown == []


def test_off_mode_refuses_even_if_called(plain):
    plain.python_approval = "off"
    out = python.run(plain, {"code": "ran = True"})
    assert "ran" not in plain.namespace and "turned off" in out


class KernelShell:
    """Stands in for ipykernel's shell: the only thing the approver checks is ``kernel``."""

    kernel = object()


def _answer(reply: Any):
    def fake_input(prompt: str = "") -> str:
        print(prompt)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    return fake_input


@pytest.mark.parametrize(("reply", "expected"), [("y", True), ("YES ", True), ("n", False), ("", False)])
def test_stdin_approver_shows_the_code_and_reads_the_answer(monkeypatch, capsys, reply, expected):
    monkeypatch.setattr("builtins.input", _answer(reply))
    assert stdin_approver(KernelShell())("delete_everything()") is expected
    out = capsys.readouterr().out
    assert "delete_everything()" in out and "Run this code (1 line)? [y/N, a = allow python for this session]" in out


def test_stdin_approver_returns_none_when_the_kernel_has_no_stdin(monkeypatch):
    monkeypatch.setattr("builtins.input", _answer(StdinNotImplementedError("raw_input was called")))
    assert stdin_approver(KernelShell())("x = 1") is None


def test_stdin_approver_returns_none_in_a_script_without_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\n"))
    monkeypatch.setattr("builtins.input", _answer("y"))
    assert stdin_approver(None)("x = 1") is None


def test_stdin_approver_asks_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr("builtins.input", _answer("y"))
    assert stdin_approver(None)("x = 1") is True
    monkeypatch.setattr("builtins.input", _answer(EOFError()))
    assert stdin_approver(None)("x = 1") is None


# --- what the approval prompt shows -------------------------------------------------------

_GUTTER = re.compile(r"^\s*(?:\d+|~) \| ")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen_of(out: str) -> list[str]:
    """The terminal's rows after the prompt was printed, line numbers and wrap marks removed."""
    return [_GUTTER.sub("", row) for row in terminal_screen(out)]


@pytest.mark.parametrize("form", HIDDEN_CODE, ids=lambda form: form.name)
def test_stdin_approval_reveals_every_hidden_line_and_character(monkeypatch, capsys, form: Hidden):
    monkeypatch.setattr("builtins.input", _answer("n"))
    assert stdin_approver(KernelShell())(form.code) is False
    out = capsys.readouterr().out
    assert invisible_characters(out) == []
    screen = screen_of(out)
    if form.row:
        assert any(row.startswith(form.row) for row in screen), screen
    if form.marker:
        assert any(form.marker in row for row in screen), screen
    lines = len(form.code.splitlines())
    assert f"Run this code ({lines} line" in screen[-1]


def test_a_very_long_first_line_is_wrapped_and_the_prompt_still_counts_the_lines(monkeypatch, capsys):
    monkeypatch.setattr("builtins.input", _answer("n"))
    stdin_approver(KernelShell())(f"x = '{'a' * 5000}'\n{PAYLOAD}")
    rows = terminal_screen(capsys.readouterr().out)
    assert max(len(row) for row in rows) <= 120
    assert rows[-1].startswith("Run this code (2 lines, longest line 5,006 characters")
    assert f"   2 | {PAYLOAD}" in rows


def test_the_code_the_user_approves_is_exactly_the_code_that_runs(ctx, ip, monkeypatch, capsys):
    code = f"hidden_line = 'ran'\r{'shown_line = 1  # nothing else happens here':<60}"
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr("builtins.input", _answer("y"))
    approved, ran = [], []
    approve = stdin_approver(ip)
    ctx.python_approval, ctx.approve = "ask", lambda shown: approved.append(shown) or approve(shown)
    record = lambda info: ran.append(info.raw_cell)  # noqa: E731
    ip.events.register("pre_run_cell", record)
    try:
        python.run(ctx, {"code": code})
    finally:
        ip.events.unregister("pre_run_cell", record)
    assert approved == ran == [code]
    assert ip.user_ns.pop("hidden_line") == "ran" and ip.user_ns.pop("shown_line") == 1
    screen = screen_of(capsys.readouterr().out)
    assert "hidden_line = 'ran'<CR>" in screen and "shown_line = 1  # nothing else happens here" in screen
