"""What a ``%%monad`` cell draws besides the answer: tool calls, notes and the footer, as HTML and as text.

Every string that came from the model or a tool is shown through ``code_view.visible`` (hidden
characters as markers) and escaped; the model's Markdown never comes here (it goes through
``safe_markdown``). Labels are plain words and CSS shapes, so nothing depends on an emoji font.
Each HTML piece carries its own small stylesheet, built on the notebook theme's variables. JupyterLab
breaks a ``<pre>`` in an output anywhere, mid-word; in a ``%%monad`` cell a code block of the answer
keeps its lines whole and scrolls sideways, as code is read, and a tool's result wraps between words.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from monad_notebook.approval.code_html import CODE_CSS, code_html
from monad_notebook.approval.code_view import shown_lines, visible
from monad_notebook.approval.decided import DECIDED_CSS

RESULT_LINES = 40
CELL_CSS = """
.monad-tool { margin: 3px 0; font-family: var(--jp-ui-font-family, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px); }
.monad-tool > summary { cursor: pointer; color: var(--jp-ui-font-color1, #222); }
.monad-tool-name { font-family: var(--jp-code-font-family, monospace); font-weight: 600; padding: 0 5px;
  border-radius: 3px; background: var(--jp-layout-color2, #eee); }
.monad-tool-brief { font-family: var(--jp-code-font-family, monospace); color: var(--jp-ui-font-color2, #555); }
.monad-tool-state { color: var(--jp-ui-font-color2, #666); }
.monad-tool-written { color: var(--jp-ui-font-color2, #666); font-style: italic; }
.monad-tool-state-running { color: var(--jp-brand-color1, #1976d2); }
.monad-tool-state-failed, .monad-tool-state-interrupted { color: var(--jp-error-color1, #c00); }
.monad-tool-state-skipped { font-style: italic; }
.monad-tool-waited { color: var(--jp-ui-font-color2, #666); }
.monad-tool-label { color: var(--jp-ui-font-color2, #666); margin: 6px 0 0; }
.monad-tool pre.monad-result { white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere;
  font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px); margin: 2px 0 6px;
  padding: 4px 8px; max-height: 24em; overflow: auto; background: var(--jp-layout-color2, #f7f7f7);
  border-radius: 3px; }
.jp-OutputArea:has(.monad-tool, .monad-footer) .jp-RenderedMarkdown pre { overflow-x: auto; }
.jp-OutputArea:has(.monad-tool, .monad-footer) .jp-RenderedMarkdown :is(pre, pre code) { white-space: pre;
  word-break: normal; overflow-wrap: normal; }
.monad-note { margin: 3px 0; padding: 2px 8px; border-left: 3px solid var(--jp-border-color1, #bbb);
  font-family: var(--jp-ui-font-family, sans-serif); font-size: var(--jp-ui-font-size1, 13px); }
.monad-note-warning { border-left-color: var(--jp-warn-color1, #f59e0b); }
.monad-note-error { border-left-color: var(--jp-error-color1, #c00); }
.monad-tag { font-weight: 600; margin-right: 4px; }
.monad-footer { margin-top: 8px; padding-top: 4px; border-top: 1px solid var(--jp-border-color2, #e5e5e5);
  font-family: var(--jp-ui-font-family, sans-serif); font-size: var(--jp-ui-font-size1, 13px);
  color: var(--jp-ui-font-color2, #555); }
.monad-footer b { color: var(--jp-ui-font-color1, #222); font-weight: 600; }
.monad-meter { width: 60px; height: 8px; margin: 0 6px 1px 2px; vertical-align: middle; }
"""
STYLE = f"<style>{CODE_CSS}{CELL_CSS}{DECIDED_CSS}</style>"


def escaped(text: str) -> str:
    return html.escape(visible(text), quote=True)


def one_line(text: str, limit: int) -> str:
    """A single line of at most ``limit`` characters, hidden characters shown as markers."""
    flat = " ".join(visible(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def clipped(text: str, lines: int = RESULT_LINES) -> str:
    """``text`` with its line breaks, at most ``lines`` lines (hidden characters shown as markers)."""
    rows = shown_lines(str(text))
    more = len(rows) - lines
    return "\n".join(rows[:lines]) + (f"\n… {more} more line(s)" if more > 0 else "")


@dataclass
class ToolBlock:
    """One tool call as the cell shows it: a collapsible header, the code or arguments, then the result."""

    name: str
    arguments: str
    state: str = "running"
    result: str | None = None
    seconds: float | None = None  # the call's own time, without the wait for the user
    waited: float = 0.0  # seconds its question waited for the user's answer
    recovered: str = ""  # the form of a call the model wrote as text ("json block", ...), else ""

    @property
    def code(self) -> str | None:
        """The python tool's code, when the arguments carry it."""
        if self.name != "python":
            return None
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return None
        code = value.get("code") if isinstance(value, dict) else None
        return code if isinstance(code, str) else None

    def brief(self) -> str:
        code = self.code
        if code is not None:
            lines = shown_lines(code)
            first = next((line for line in lines if line.strip()), "")
            extra = len(lines) - 1
            more = f"  (+{extra} line{'' if extra == 1 else 's'})" if extra else ""
            return one_line(first, 80) + more
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return one_line(self.arguments, 80)
        if isinstance(value, dict):
            return one_line(", ".join(f"{k}={_short(v)}" for k, v in value.items()), 80)
        return one_line(self.arguments, 80)

    def status(self) -> str:
        """The call's state and its own time; what ran has a time, what did not run has none."""
        if self.state == "running":
            return "running…"
        ran = self.seconds is not None and self.state in ("done", "failed")
        took = f" in {self.seconds:.1f} s" if ran else ""
        if self.state == "interrupted" and self.seconds is not None and self.seconds >= 0.05:
            took = f" after {self.seconds:.1f} s"
        return STATES.get(self.state, "done") + took

    def wait(self) -> str:
        """The time the call's question waited for the user, apart from the call's own: "" when it did not wait."""
        return f"waited {_duration(self.waited)} for you" if self.waited >= 0.05 else ""

    def finish(self, result: str, seconds: float | None, outcome: str = "", waited: float = 0.0) -> None:
        """``outcome`` is the tool's own word ("ok", "error", "refused", "skipped", "interrupted"); without it the
        result's start decides."""
        self.result, self.seconds, self.waited = result, seconds, waited
        head = result.lstrip()[:200]
        if outcome in ("skipped", "interrupted", "refused"):
            self.state = outcome
        elif not outcome and head.startswith("the user declined"):
            self.state = "skipped"
        elif not outcome and head.startswith("not run:"):
            self.state = "refused"
        elif outcome == "error" or (not outcome and head.startswith("error:")):
            self.state = "failed"
        else:
            self.state = "done"

    def html(self) -> str:
        code = self.code
        body = code_html(code) if code is not None else _pre(_arguments_text(self.arguments))
        if self.result is not None:
            label = "result sent to the model" if self.name == "python" else "result"
            body += f'<div class="monad-tool-label">{label}</div>{_pre(clipped(self.result))}'
        written = f'<span class="monad-tool-written">{html.escape(self.written())}</span> ' if self.recovered else ""
        summary = (
            f'<span class="monad-tool-name">{escaped(self.name)}</span> '
            f'<span class="monad-tool-brief">{html.escape(self.brief())}</span> {written}'
            f'<span class="monad-tool-state monad-tool-state-{self.state}" data-role="tool-state">'
            f"· {html.escape(self.status())}</span>"
        )
        if self.wait():
            summary += f' <span class="monad-tool-waited" data-role="tool-waited">· {html.escape(self.wait())}</span>'

        return f'{STYLE}<details class="monad-tool" data-role="tool"><summary>{summary}</summary>{body}</details>'

    def written(self) -> str:
        """How the cell says the model wrote this call in its text, not through the API."""
        return f"(written as text: {self.recovered})" if self.recovered else ""

    def header(self) -> str:
        return f"[{self.name}] {self.brief()}" + (f" {self.written()}" if self.recovered else "")

    def outcome(self) -> str:
        """What follows the header once the call ended: its status, and a non-python result with its line breaks."""
        lines = [f"    {' · '.join(part for part in (self.status(), self.wait()) if part)}"]
        if self.result is not None and (self.name != "python" or self.state != "done"):
            lines += [f"    | {row}" for row in clipped(self.result, 12).splitlines()]
        return "\n".join(lines)

    def text(self) -> str:
        return self.header() if self.result is None else f"{self.header()}\n{self.outcome()}"


STATES = {"failed": "failed", "refused": "not run", "skipped": "skipped", "interrupted": "interrupted"}


def _duration(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text) if isinstance(value, str) and len(text) <= 40 else (text[:37] + "…" if len(text) > 40 else text)


def _arguments_text(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def _pre(text: str) -> str:
    return f'<pre class="monad-result">{html.escape(visible(text), quote=False)}</pre>'


def note_html(tag: str, text: str, kind: str = "info") -> str:
    return (
        f'{STYLE}<div class="monad-note monad-note-{kind}" data-role="note">'
        f'<span class="monad-tag">{html.escape(tag)}</span> {escaped(text)}</div>'
    )


@dataclass(frozen=True)
class Footer:
    """What a turn cost and where the window stands, each number with its label."""

    occupancy: int
    context_window: int
    exact: bool
    sent: int
    sent_estimated: bool
    requests: int
    tool_calls: int
    session: str
    model: str
    reclaimed: int = 0
    suggestions: int = 0
    truncated: bool = False  # the answer stopped at finish_reason "length" (its last line says why)
    recovered: int = 0  # of tool_calls: written as text by the model and run

    @property
    def fraction(self) -> float:
        return self.occupancy / self.context_window if self.context_window else 0.0

    def parts(self) -> list[str]:
        window = (
            f"window {self.occupancy:,} / {self.context_window:,} tokens ({self.fraction:.0%}"
            + ("" if self.exact else ", estimated")
            + ")"
        )
        requests = f"{self.requests} request" + ("" if self.requests == 1 else "s")
        sent = f"sent this turn {self.sent:,} tokens in {requests}" + (" (estimated)" if self.sent_estimated else "")
        calls = f"{self.tool_calls} tool call" + ("" if self.tool_calls == 1 else "s")
        if self.recovered:
            calls += f" ({self.recovered} written as text)"
        parts = [window, sent, calls]
        if self.truncated:
            parts.insert(0, "answer cut off (see its last line)")
        if self.reclaimed:
            parts.append(f"reclaimed {self.reclaimed:,} tokens by clearing old results")
        if self.suggestions:
            parts.append(f"{self.suggestions} memory suggestion(s): %monad memory")
        parts.append(f"session {self.session} · {self.model}")
        return parts

    def text(self) -> str:
        return " · ".join(self.parts())

    def html(self) -> str:
        first, *rest = (html.escape(p) for p in self.parts())
        shown = min(self.occupancy, self.context_window)
        meter = f'<progress class="monad-meter" value="{shown}" max="{max(1, self.context_window)}"></progress>'
        body = " · ".join([f"{meter}{first}", *rest])
        return f'{STYLE}<div class="monad-footer" data-role="footer">{body}</div>'
