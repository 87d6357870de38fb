"""The ``python`` tool: run the agent's code in the user's kernel, visibly.

Code goes through the kernel's own machinery when there is one, so prints, plots,
displays and errors reach the notebook exactly as if the user had run the cell, and
long-running code streams its output live. Alongside, a text copy is recorded for the
model: stdout, stderr, displayed objects, the last expression's value, and the error
with a short traceback.
"""

from __future__ import annotations

import ast
import linecache
import re
import sys
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from monad_notebook.agent.tools.base import Tool, ToolContext, asks, tool
from monad_notebook.agent.tools.consent import NOBODY_FOR_WRITTEN, ask, must_ask
from monad_notebook.agent.tools.output_screen import OutputScreen, strip_ansi
from monad_notebook.approval.gate import PYTHON
from monad_notebook.config_schema import ImagesConfig
from monad_notebook.images.figures import FigureRecorder
from monad_notebook.time_limit import CodeTimedOut, TimeLimit

CutPoint = Callable[..., int]  # Redactor.cut_point(text, at, *, forward) -> where to cut instead

_CELL_FILENAME = re.compile(r"<ipython-input-[\w-]+>|\S*ipykernel_\d+[/\\]\d+\.py|<monad-cell>")
_CAPTURE_CAP = 4_000_000  # chars kept per stream; the middle of a flood is dropped
_CUT_MARGIN = 65_536  # chars seen beyond each cut, so a secret spanning it is found whole
_TRACEBACK_FRAMES = 6
_PLAIN_FILENAME = "<monad-cell>"
_MISSING = object()

DECLINED = "the user declined to run this code"
NO_APPROVER = (
    "not run: nobody approved this code (nobody can answer here, e.g. nbclient, papermill or a script, "
    "or no answer came in time). "
    'To allow it, set tools.python.approval to "auto" in agents.json, '
    "or run the notebook interactively and answer the prompt."
)
TURNED_OFF = 'not run: the python tool is turned off; set tools.python.approval to "ask" or "auto" in agents.json'


class _Sink:
    """Recorded text of one stream, bounded: the head and the tail survive a flood.

    Dropping the middle must not split a secret: the redactor only sees the rendered text, and
    the half of a token or of a key block left at a cut no longer looks like one. So each side
    keeps ``margin`` characters beyond its half, and ``text`` moves each cut out of any secret
    that ``cut_point`` (the redactor's) finds spanning it, which the margin shows whole; only
    then are the margins dropped. A secret longer than the margin can still be split.
    """

    def __init__(self, cap: int = _CAPTURE_CAP, margin: int = _CUT_MARGIN) -> None:
        self.half = cap // 2
        self.margin = margin
        self.keep = self.half + margin
        self.head: list[str] = []
        self.head_len = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0
        self.dropped = 0
        self.paused = 0

    def add(self, text: str) -> None:
        if self.paused or not text:
            return
        if self.head_len < self.keep:
            room = self.keep - self.head_len
            self.head.append(text[:room])
            self.head_len += min(len(text), room)
            text = text[room:]
        if not text:
            return
        if len(text) >= self.keep:
            self.dropped += self.tail_len + len(text) - self.keep
            self.tail, self.tail_len = deque([text[-self.keep :]]), self.keep
            return
        self.tail.append(text)
        self.tail_len += len(text)
        while self.tail_len - len(self.tail[0]) >= self.keep:
            dropped = self.tail.popleft()
            self.tail_len -= len(dropped)
            self.dropped += len(dropped)

    def text(self, cut_point: CutPoint | None = None) -> str:
        head, tail = "".join(self.head), "".join(self.tail)
        if not self.dropped and len(head) + len(tail) <= 2 * self.half:
            return head + tail
        head_end = self._cut(head, self.half, cut_point, forward=False)
        tail_start = self._cut(tail, max(0, len(tail) - self.half), cut_point, forward=True)
        dropped = self.dropped + len(head) - head_end + tail_start
        return f"{head[:head_end]}\n[... {dropped} characters of output not captured ...]\n{tail[tail_start:]}"

    def _cut(self, text: str, at: int, cut_point: CutPoint | None, *, forward: bool) -> int:
        if cut_point is None or not 0 < at < len(text):
            return at
        start = max(0, at - self.margin)
        return start + cut_point(text[start : at + self.margin], at - start, forward=forward)


class _Tee:
    """A stream that writes through to the real one (live output, redacted by the screen) and records a copy."""

    def __init__(self, target: Any, sink: _Sink, screen: OutputScreen) -> None:
        self._target = target
        self._sink = sink
        self._out = screen.stream(target)

    def write(self, text: str) -> int:
        if isinstance(text, str):
            self._sink.add(text)
        return self._out.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._out.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _RecordingPublisher:
    """Forwards every display to the frontend, redacted and after the text printed before it; records its plain text."""

    def __init__(self, inner: Any, run: _Run) -> None:
        self._inner = inner
        self._run = run

    def publish(self, data: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        self._run.record_display(data)
        self._run.screen.release()
        return _paused(self._run, self._inner.publish)(self._run.screen.bundle(data), *args, **kwargs)

    def clear_output(self, *args: Any, **kwargs: Any) -> Any:
        self._run.screen.release()
        return self._inner.clear_output(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass
class _Run:
    stdout: _Sink = field(default_factory=_Sink)
    stderr: _Sink = field(default_factory=_Sink)
    displays: list[str] = field(default_factory=list)
    value: str | None = None
    error: str | None = None
    figures: FigureRecorder = field(default_factory=lambda: FigureRecorder(ImagesConfig(), ""))
    screen: OutputScreen = field(default_factory=lambda: OutputScreen(None))

    def pause(self) -> None:
        self.stdout.paused += 1
        self.stderr.paused += 1

    def resume(self) -> None:
        self.stdout.paused = max(0, self.stdout.paused - 1)
        self.stderr.paused = max(0, self.stderr.paused - 1)

    def fail(self, error: BaseException, limit: TimeLimit) -> None:
        self.error = limit.message if isinstance(error, CodeTimedOut) else short_traceback(error)

    def record_display(self, data: dict[str, Any]) -> None:
        text = str(data.get("text/plain", "")).rstrip()
        image = self.figures.record(data)
        if image is None:
            return  # an image beyond context.images.maxPerResult: counted in one line at the end
        rich = sorted(k for k in data if k != "text/plain" and not (image and k.startswith("image/")))
        shown = f" ({', '.join(rich)} shown to the user)" if rich else ""
        line = " ".join(part for part in (text, image) if part)
        self.displays.append(f"{line}{shown}" or "(an empty display)")

    def render(self, cut_point: CutPoint | None = None) -> str:
        parts = []
        for label, text in (("stdout", self.stdout.text(cut_point)), ("stderr", self.stderr.text(cut_point))):
            if text.strip():
                parts.append(f"{label}:\n{strip_ansi(text).rstrip()}")
        left_out = self.figures.summary_line()
        if self.displays or left_out:
            parts.append("displayed:\n" + "\n".join(strip_ansi(d) for d in [*self.displays, left_out] if d))
        if self.value is not None:
            value = strip_ansi(self.value).rstrip()
            parts.append(f"value:\n{value}" if "\n" in value else f"value: {value}")
        if self.error:
            parts.append(f"error: {self.error}")
        return "\n".join(parts) or "(no output)"


@contextmanager
def _swapped(obj: Any, name: str, value: Any) -> Iterator[None]:
    """Temporarily replace an attribute, restoring exactly what was there (or its absence)."""
    before = vars(obj).get(name, _MISSING)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if before is _MISSING:
            delattr(obj, name)
        else:
            setattr(obj, name, before)


def _paused(run: _Run, func: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        run.pause()
        try:
            return func(*args, **kwargs)
        finally:
            run.resume()

    return wrapper


def _shell_swaps(run: _Run, shell: Any) -> list[tuple[Any, str, Any]]:
    """What to replace on the shell: displays are recorded, its own echo is kept out of the copy.

    The shell echoes the value ("Out[1]: ...") and prints a coloured traceback; the model gets
    the value and a plain, short traceback instead, so neither is recorded as stdout. What the
    frontend gets of both passes the screen.
    """
    hook = shell.displayhook
    write, start, finish = hook.write_format_data, hook.start_displayhook, hook.finish_displayhook

    def write_format_data(format_dict: dict[str, Any], md_dict: Any = None) -> None:
        run.value = str(format_dict.get("text/plain", ""))
        write(run.screen.bundle(format_dict), md_dict)

    def start_displayhook() -> Any:
        run.screen.release()
        run.pause()
        return start()

    def finish_displayhook() -> Any:
        try:
            return finish()
        finally:
            run.resume()

    return [
        (shell, "display_pub", _RecordingPublisher(shell.display_pub, run)),
        (shell, "_showtraceback", _paused(run, run.screen.traceback(shell._showtraceback))),
        (hook, "write_format_data", write_format_data),
        (hook, "start_displayhook", start_displayhook),
        (hook, "finish_displayhook", finish_displayhook),
    ]


@contextmanager
def _recording(run: _Run, shell: Any = None) -> Iterator[None]:
    """Tee stdout and stderr (output stays live); with a shell, also record what it displays."""
    swaps = [
        (sys, "stdout", _Tee(sys.stdout, run.stdout, run.screen)),
        (sys, "stderr", _Tee(sys.stderr, run.stderr, run.screen)),
    ]
    if shell is not None:
        swaps += _shell_swaps(run, shell)
    with ExitStack() as stack:
        for obj, name, value in swaps:
            stack.enter_context(_swapped(obj, name, value))
        stack.callback(run.screen.close)
        yield


def short_traceback(exc: BaseException) -> str:
    """The exception line plus the last few frames of user and library code, without ANSI."""
    frames = [] if isinstance(exc, SyntaxError) else traceback.extract_tb(exc.__traceback__)
    frames = [f for f in frames if not _is_machinery(f.filename)]
    if isinstance(exc, SyntaxError):
        lines = ["".join(traceback.format_exception_only(type(exc), exc)).strip()]
    else:
        lines = [f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__]
    if frames:
        lines.append("Traceback (most recent call last):")
        hidden = len(frames) - _TRACEBACK_FRAMES
        if hidden > 0:
            lines.append(f"  [... {hidden} earlier frames ...]")
        for frame in frames[-_TRACEBACK_FRAMES:]:
            lines.append(f"  File {_short_path(frame.filename)}, line {frame.lineno}, in {frame.name}")
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
    return _CELL_FILENAME.sub("<cell>", strip_ansi("\n".join(lines)))


def _is_machinery(filename: str) -> bool:
    return __file__ == filename or "/IPython/core/" in filename.replace("\\", "/")


def _short_path(filename: str) -> str:
    for marker in ("site-packages/", "dist-packages/"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


def _run_in_shell(shell: Any, code: str, limit: TimeLimit, run: _Run) -> _Run:
    outer = getattr(shell.displayhook, "exec_result", None)  # the %%monad cell's own result, reset by run_cell
    try:
        with _recording(run, shell), limit:
            result = shell.run_cell(code, store_history=False, silent=False)
        error = result.error_before_exec or result.error_in_exec
    except CodeTimedOut as stopped:  # at the very end of the run, outside the code itself
        error = stopped
    finally:
        shell.displayhook.exec_result = outer
    if isinstance(error, KeyboardInterrupt):
        raise error
    if error is not None:
        run.fail(error, limit)
    return run


def _run_plain(namespace: dict[str, Any], code: str, limit: TimeLimit, run: _Run) -> _Run:
    """No kernel (a script, a test): exec the body and eval a final expression."""
    lines = code.splitlines(keepends=True)
    linecache.cache[_PLAIN_FILENAME] = (len(code), None, lines, _PLAIN_FILENAME)
    try:
        tree = ast.parse(code, filename=_PLAIN_FILENAME)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with _recording(run), limit:
            exec(compile(tree, _PLAIN_FILENAME, "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), _PLAIN_FILENAME, "eval"), namespace)
                if value is not None:
                    run.value = repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: the user's session must survive the agent's code
        run.fail(exc, limit)
    return run


def is_shell(shell: Any) -> bool:
    """True for an IPython InteractiveShell (a kernel or the terminal), the only shells we drive."""
    if shell is None:
        return False
    from IPython.core.interactiveshell import InteractiveShell

    return isinstance(shell, InteractiveShell)


def approval_refusal(ctx: ToolContext, code: str, subject: str = PYTHON) -> str | None:
    """Why ``code`` may not run (turned off, declined, nobody could answer), or None when it may.

    Code of a call read from the model's text is asked about whatever the setting (``consent.py``);
    ``subject`` says what the question is about when it is not the python tool's own code (a cell to run).
    """
    mode = ctx.python_approval
    if mode not in ("ask", "auto"):
        return TURNED_OFF
    if not must_ask(ctx, mode):
        return None
    answer = ask(ctx, code, subject)
    if answer is None:
        return NOBODY_FOR_WRITTEN if ctx.written else NO_APPROVER
    return None if answer else DECLINED


@asks
@tool
def python(ctx: ToolContext, code: str) -> str:
    """Run Python code in the user's notebook kernel, in the same namespace as their cells.

    The user sees the output, plots and errors in the notebook, and variables you create stay
    available to them. The result lists stdout, stderr, displayed objects, the value of a final
    expression, and any error with a short traceback.

    Args:
        code: Python source to run; a final expression's value is shown, as in a notebook cell.
    """
    refusal = approval_refusal(ctx, code)
    if refusal is not None:
        return ctx.refuse(refusal)
    limit = TimeLimit(ctx.python_timeout)
    redact = (lambda text: ctx.redactor.redact(text).text) if ctx.redactor is not None else (lambda text: text)
    run = _Run(figures=FigureRecorder(ctx.images_config, code, redact), screen=OutputScreen(ctx.redactor))
    if is_shell(ctx.shell):
        _run_in_shell(ctx.shell, code, limit, run)
    else:
        _run_plain(ctx.namespace, code, limit, run)
    ctx.images.extend(run.figures.captured.images)
    ctx.outcome = "error" if run.error else "ok"
    return run.render(ctx.redactor.cut_point if ctx.redactor is not None else None)


TOOLS: list[Tool] = [python]
