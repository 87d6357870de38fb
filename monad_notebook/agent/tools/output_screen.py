"""What the agent's code shows in the user's cell passes the redactor before the frontend gets it.

The python tool runs the agent's code in the user's kernel, so what it prints, displays and raises
lands in the ``%%monad`` cell's output, and from there in the saved ``.ipynb``. The model's copy is
redacted whole by the cascade; this is the cell's copy, redacted on its way so output stays live:

- stdout and stderr a line at a time (``LineScreen``): a key written in pieces (``print(a,
  end="")`` then ``print(b)``, a file copied in chunks, a subprocess read as it comes) meets the
  redactor whole, and no rule reads a secret across a line end (a private key is found line by
  line). ``\\r`` ends a line too, so a progress bar redrawn in place shows each state as the next
  one starts, and its last when its line or the call ends.
- the text forms of a display or of the last expression's value: every ``text/*`` type and JSON;
  images and other kinds pass as they are.
- a traceback's lines and its exception's text.

Colour codes can stand between a name and its value (``password\\x1b[0m=...``); text that holds
one is read without them, and shown without them where that reading finds a secret.
"""

from __future__ import annotations

import contextvars
import json
import math
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monad_notebook.redaction.redactor import Redactor

Redact = Callable[[str], str]

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_BATCH_SECONDS = 0.05  # under the kernel's own 0.2 s between stream messages, so nobody sees the wait
_BATCH_CHARS = 1_000_000  # a batch shown at once however soon, so held text stays small
_LONG_LINE = 65_536  # a line longer than this is shown in pieces as it comes
_HELD_TAIL = 4_096  # what a long line keeps back, so a key at its end is read whole
_LINE_ENDS = ("\n", "\r")


def strip_ansi(text: str) -> str:
    """Terminal colour codes mean nothing to the model and cost tokens."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def redacting(redactor: Redactor) -> Redact:
    """The redactor as a text function that also sees through colour codes."""

    def redact(text: str) -> str:
        if "\x1b" not in text:
            return redactor.redact(text).text
        plain = redactor.redact(strip_ansi(text))
        return plain.text if plain.redacted else text

    return redact


class ScreenedError(Exception):
    """Stands for an exception whose text held a secret, where a frontend is sent that text."""


class LineScreen:
    """A stream that shows what is written to it a line at a time, each line redacted (see the module docstring).

    Lines written within ``_BATCH_SECONDS`` of the last ones shown are shown together when that
    time is up, by a timer thread running in the writer's context (the kernel files its output
    under the same cell): a loop printing thousands of lines costs one redaction per batch, not
    one per line, and the first line after a pause is shown at once. A line longer than
    ``_LONG_LINE`` is shown in pieces, each cut outside any secret. Once closed, each write is
    redacted whole and shown at once (a thread or a logging handler may outlive the call).
    """

    def __init__(self, target: Any, redactor: Redactor) -> None:
        self._target = target
        self._redactor = redactor
        self._redact = redacting(redactor)
        self._lock = threading.RLock()
        self._held: list[str] = []
        self._held_chars = 0
        self._shown_at = -math.inf
        self._timer: threading.Timer | None = None
        self._open = True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            return self._target.write(text)  # the real stream says what it accepts
        with self._lock:
            if not self._open:
                return self._target.write(self._redact(text))
            self._held.append(text)
            self._held_chars += len(text)
            if "\n" in text or "\r" in text or self._held_chars > _LONG_LINE:
                wait = self._shown_at + _BATCH_SECONDS - time.monotonic()
                if wait <= 0 or self._held_chars > _BATCH_CHARS:
                    self._show()
                elif self._timer is None:
                    self._timer = threading.Timer(wait, contextvars.copy_context().run, (self._on_time,))
                    self._timer.daemon = True
                    self._timer.start()
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Shows the lines written so far (a line not yet ended waits for its end), then flushes the real stream."""
        with self._lock:
            if self._open and self._held:
                self._show()
        self._target.flush()

    def release(self) -> None:
        """Shows everything held, a line not yet ended too: a display or a traceback comes next, in order."""
        with self._lock:
            if self._open and self._held:
                self._show(everything=True)

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._open and self._held:
                self._show(everything=True)
            self._open = False

    def _on_time(self) -> None:
        with self._lock:
            self._timer = None
            if self._open and self._held:
                self._show()

    def _show(self, *, everything: bool = False) -> None:
        """Writes the held text up to its last line end (or all of it), redacted; the state changes after the write."""
        text = "".join(self._held)
        cut = len(text) if everything else self._cut(text)
        if cut == 0:
            return
        self._target.write(self._redact(text[:cut]))
        rest = text[cut:]
        self._held, self._held_chars, self._shown_at = ([rest] if rest else []), len(rest), time.monotonic()

    def _cut(self, text: str) -> int:
        """After the last line end; in a line too long to hold, before its last ``_HELD_TAIL`` characters and any
        secret that spans that point."""
        end = max(text.rfind(mark) for mark in _LINE_ENDS) + 1
        if len(text) - end <= _LONG_LINE:
            return end
        at = len(text) - _HELD_TAIL
        start = max(end, at - _HELD_TAIL)
        return start + self._redactor.cut_point(text[start:], at - start)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class OutputScreen:
    """The cell's copy of one python call's output, redacted; with no redactor (or redaction off) it changes nothing."""

    def __init__(self, redactor: Redactor | None) -> None:
        self._redactor = redactor if redactor is not None and redactor.enabled else None
        self._redact = redacting(self._redactor) if self._redactor is not None else None
        self._streams: list[LineScreen] = []
        self._thread = threading.get_ident()

    def stream(self, target: Any) -> Any:
        """What a write meant for ``target`` goes through."""
        if self._redactor is None:
            return target
        screen = LineScreen(target, self._redactor)
        self._streams.append(screen)
        return screen

    def bundle(self, data: dict[str, Any]) -> dict[str, Any]:
        """A display's bundle with its text forms redacted: every ``text/*`` type, and JSON read as its text (a
        value is found by its key); JSON the redaction left unreadable is dropped, its text/plain form stays."""
        if self._redact is None:
            return data
        screened = dict(data)
        for mime, value in data.items():
            if isinstance(value, str) and (mime.startswith("text/") or _json_type(mime)):
                screened[mime] = self._redact(value)
            elif _json_type(mime):
                try:
                    text = json.dumps(value, ensure_ascii=False)
                except (TypeError, ValueError):
                    continue  # not JSON: the frontend's own serializer decides
                cleaned = self._redact(text)
                if cleaned != text:
                    try:
                        screened[mime] = json.loads(cleaned)
                    except ValueError:
                        del screened[mime]
        return screened

    def traceback(self, show: Callable[..., Any]) -> Callable[..., Any]:
        """The shell's ``_showtraceback``, given the traceback's lines and the exception's text redacted."""
        redact = self._redact
        if redact is None:
            return show

        def screened(etype: type, evalue: BaseException, stb: list[str], *args: Any, **kwargs: Any) -> Any:
            self.release()
            return show(etype, _exception(evalue, redact), [redact(line) for line in stb], *args, **kwargs)

        return screened

    def release(self) -> None:
        """Shows the text the code has written so far, before what it displays next; a display from another thread
        has no place in that order, and does not cut a line short."""
        if threading.get_ident() == self._thread:
            for stream in self._streams:
                stream.release()

    def close(self) -> None:
        for stream in self._streams:
            stream.close()


def _json_type(mime: str) -> bool:
    return mime == "application/json" or (mime.startswith("application/") and mime.endswith("+json"))


def _exception(evalue: BaseException, redact: Redact) -> BaseException:
    """``evalue`` itself, or a stand-in with its text redacted (a kernel sends ``str(evalue)`` to the frontend)."""
    try:
        text = str(evalue)
    except Exception:
        return evalue
    cleaned = redact(text)
    if cleaned == text:
        return evalue
    return ScreenedError(cleaned).with_traceback(getattr(evalue, "__traceback__", None))
