"""The offline fallback briefing: written from the span's own sentences when no model answers.

Compaction must never fail a turn, so when the fast model is missing or failing the briefing's
five sections are filled deterministically from what the span said (``summarize.py`` has the
format and the model-written path).
"""

from __future__ import annotations

import re

from monad_notebook.context.compaction.ledger_text import parse_ledger, parse_notes, render_ledger, strip_ledger
from monad_notebook.context.compaction.summarize import (
    SECTIONS,
    attach_ledger,
    clip,
    ensure_sections,
    parse_sections,
    render_sections,
)
from monad_notebook.images.image import image_lines
from monad_notebook.messages import Message

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_PLAN = re.compile(r"\b(?:next|i will|i'll|let me|then i|plan|going to)\b", re.I)
_ERROR_LINE = re.compile(r"^\s{0,8}([A-Z]\w{0,60}?(?:Error|Exception)\b(?::[^\n]{0,160})?)", re.M)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text[:20_000]) if s.strip()]


def _bullets(body: str) -> list[str]:
    return [line for line in body.splitlines() if line.strip()]


def _newest(lines: list[str], limit: int) -> list[str]:
    """The most recent lines that fit ``limit`` characters, in their original order."""
    kept: list[str] = []
    used = 0
    for line in reversed(list(dict.fromkeys(lines))):
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    return kept[::-1]


class ExtractiveSummarizer:
    """A deterministic briefing from the span's own sentences: the offline fallback.

    It cannot judge what matters, so it keeps positions that usually do: the first and
    latest requests, each answer's opening sentence, tool outcomes, errors never followed
    by a successful run of the same tool, and the last stated plan.
    """

    def __init__(self, max_section_chars: int = 1_200, line_chars: int = 240) -> None:
        self.max_section_chars = max_section_chars
        self.line_chars = line_chars

    def _line(self, text: str) -> str:
        return clip(" ".join(text.split()), self.line_chars)

    def summarize(self, previous: str | None, span: list[Message]) -> str:
        prev = parse_sections(previous or "")
        requests = [self._line(m.content) for m in span if m.role == "user" and m.content.strip()]
        sections = {
            "Objective": self._objective(prev.get("Objective", ""), requests),
            "Decisions & Facts": self._facts(prev.get("Decisions & Facts", ""), span),
            "Files & State": self._state(strip_ledger(prev.get("Files & State", "")), span),
            "Open Tasks": self._open_tasks(prev.get("Open Tasks", ""), span),
            "Next Step": self._next_step(prev.get("Next Step", ""), span, requests),
        }
        return render_sections(sections)

    def _objective(self, previous: str, requests: list[str]) -> str:
        lines = [line for line in _bullets(previous) if not line.startswith("- Latest request:")]
        latest = [line for line in _bullets(previous) if line.startswith("- Latest request:")]
        if not lines and requests:
            lines = [f"- {requests[0]}"]
        if requests and f"- {requests[-1]}" not in lines:
            latest = [f"- Latest request: {requests[-1]}"]
        return "\n".join([*lines[:3], *latest])

    def _facts(self, previous: str, span: list[Message]) -> str:
        lines = _bullets(previous)
        for message in span:
            if message.role != "assistant" or not message.content.strip():
                continue
            sentences = _sentences(message.content)
            keep = sentences[:1] + [s for s in sentences[1:] if any(c.isdigit() for c in s)][:1]
            lines.extend(f"- {self._line(s)}" for s in keep)
        return "\n".join(_newest(lines, self.max_section_chars))

    def _state(self, previous: str, span: list[Message]) -> str:
        lines = _bullets(previous)
        for message in span:
            if message.role == "tool" and message.content.strip():
                lines_out = [line for line in message.content.splitlines() if line.strip()]
                first = next((line for line in lines_out if not line.startswith("Traceback")), lines_out[-1])
                lines.append(f"- `{message.name or 'tool'}` → {self._line(first)}")
                lines.extend(
                    f"- `{message.name or 'tool'}` showed {self._line(i)}" for i in image_lines(message.content)
                )
        return "\n".join(_newest(lines, self.max_section_chars))

    def _open_tasks(self, previous: str, span: list[Message]) -> str:
        errors: dict[str, str] = {}
        for message in span:
            if message.role != "tool":
                continue
            found = _ERROR_LINE.findall(message.content[:200_000])
            if found:
                errors[message.name or "tool"] = found[-1].strip()
            else:
                errors.pop(message.name or "tool", None)
        lines = _bullets(previous)
        lines.extend(f"- Unresolved in `{tool}`: {self._line(error)}" for tool, error in errors.items())
        last_user = max((i for i, m in enumerate(span) if m.role == "user"), default=None)
        if last_user is not None:
            answered = any(m.role == "assistant" and m.content.strip() for m in span[last_user + 1 :])
            if not answered:
                lines.append(f"- In progress: {self._line(span[last_user].content)}")
        return "\n".join(_newest(lines, self.max_section_chars))

    def _next_step(self, previous: str, span: list[Message], requests: list[str]) -> str:
        for message in reversed(span):
            if message.role == "user" and message.content.strip():
                break
            if message.role == "assistant" and message.content.strip():
                plans = [s for s in _sentences(message.content) if _PLAN.search(s)]
                if plans:
                    return f"- {self._line(plans[-1])}"
        if requests:
            return f"- Continue with: {requests[-1]}"
        return previous

    def reflect(self, summary: str, target_tokens: int) -> str:
        """Trim every section to a share of about ``target_tokens`` (4 chars each), newest lines first."""
        ledger, notes = parse_ledger(summary), parse_notes(summary)
        sections = parse_sections(ensure_sections(summary))
        budget = max(0, target_tokens * 4 - len(render_ledger(ledger, notes)) - 120)
        share = max(120, budget // len(SECTIONS))
        trimmed: dict[str, str] = {}
        for name in SECTIONS:
            lines = _bullets(strip_ledger(sections.get(name, "")))
            kept = lines if sum(len(x) + 1 for x in lines) <= share else _newest(lines, share)
            if name == "Objective" and lines and kept != lines:
                kept = [clip(lines[0], share)]
            trimmed[name] = "\n".join(kept)
        return attach_ledger(render_sections(trimmed), ledger, notes)
