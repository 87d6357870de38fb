"""The rolling summary: a structured briefing that replaces the folded span of a session.

The briefing always has the same five ``## `` sections, so later stages can read parts of
it (recitation pins ``Open Tasks`` / ``Next Step``) and so successive compactions merge
rather than paraphrase a paraphrase. The fast model writes it (:class:`LLMSummarizer`);
when no model is reachable a deterministic ``ExtractiveSummarizer`` (``extractive.py``) writes it
instead, because compaction must never fail a turn. Whichever wrote it, the identifier
ledger is merged into ``## Files & State`` afterwards (:func:`attach_ledger`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Protocol

from monad_notebook.context.compaction.ledger_text import parse_ledger, parse_notes, render_ledger, strip_ledger
from monad_notebook.context.compaction.weakness import weakness
from monad_notebook.errors import ModelError
from monad_notebook.images.image import image_lines
from monad_notebook.messages import Message
from monad_notebook.provider import ChatModel, ChatResponse

log = logging.getLogger(__name__)

SECTIONS = ("Objective", "Decisions & Facts", "Files & State", "Open Tasks", "Next Step")

_HEADING = re.compile(r"^\s{0,3}#{1,6}[ \t]*(.{1,80}?)[ \t]*#*[ \t]*$")
_FENCE_LINE = re.compile(r"^\s*```[\w-]*\s*$")

_SUMMARY_PROMPT = """\
You keep the rolling briefing of a long data-analysis session in a Jupyter notebook. The \
transcript below is leaving the assistant's context window; your briefing replaces it, so \
anything you leave out is forgotten.

Write Markdown with exactly these five headings, in this order, and nothing before the first:
## Objective
## Decisions & Facts
## Files & State
## Open Tasks
## Next Step

Rules:
- Merge the previous briefing (if given) with the new transcript: keep what still holds, \
update what changed, drop what was superseded.
- Quote identifiers verbatim in backticks: file paths, variable, DataFrame and column names, \
commands, URLs, error types, numbers with units.
- Files & State: files read or written; variables and DataFrames in the kernel, with shapes \
or columns when known; each chart shown, as one bullet with its `img_` handle and what it \
showed (from its IMAGE line and what the assistant said of it). Keep any "Identifiers \
(verbatim):" list as it is.
- Open Tasks: what the user asked for that is not done yet, and errors not yet resolved.
- Next Step: the single next action.
- Terse bullet points, no preamble, at most about {target} tokens."""

_REFLECT_PROMPT = """\
Condense this session briefing to at most about {target} tokens. Keep the five headings \
(## Objective, ## Decisions & Facts, ## Files & State, ## Open Tasks, ## Next Step) in that \
order, keep every identifier verbatim, keep the "Identifiers (verbatim):" list unchanged, \
and drop detail that no longer matters. Answer with the briefing only."""

_REMINDER = "Rewrite that as the briefing with exactly the five ## headings, in order, and nothing else."
_SHORTER = (
    "That briefing was cut off by the output limit. Write it again, shorter, with exactly the five "
    "## headings, in order, and nothing else."
)
_WEAK = (
    "That briefing cannot be used: {why}. Write it again: terse bullets in your own words under the five "
    "## headings, in order, much shorter than the transcript, and nothing else."
)

OnRejected = Callable[[str, int], None]  # (why the answer was rejected, attempt number)


class SummaryRejected(ModelError):
    """The fast model's briefing was rejected twice; ``why`` says what was wrong with the last one."""

    def __init__(self, message: str, why: str) -> None:
        super().__init__(message)
        self.why = why


class Summarizer(Protocol):
    """Writes and condenses the rolling summary; raises ModelError when its model fails."""

    def summarize(self, previous: str | None, span: list[Message]) -> str: ...

    def reflect(self, summary: str, target_tokens: int) -> str: ...


def _section_of(title: str) -> str | None:
    key = re.sub(r"[^a-z&]+", " ", title.lower().replace(" and ", " & ")).split()
    for section in SECTIONS:
        if key == section.lower().split():
            return section
    return None


def _split(text: str) -> tuple[dict[str, list[str]], list[str]]:
    """Known sections' lines, and the lines before the first known heading."""
    sections: dict[str, list[str]] = {}
    extra: list[str] = []
    current: list[str] = extra
    for line in text.splitlines():
        match = _HEADING.match(line)
        section = _section_of(match.group(1)) if match else None
        if section is not None:
            current = sections.setdefault(section, [])
        else:
            current.append(line)
    return sections, extra


def parse_sections(text: str) -> dict[str, str]:
    """The known sections present in ``text``, heading name -> body (stripped)."""
    sections, _ = _split(text)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}


def render_sections(sections: dict[str, str]) -> str:
    parts = []
    for name in SECTIONS:
        body = sections.get(name, "").strip()
        parts.append(f"## {name}\n{body}" if body else f"## {name}")
    return "\n\n".join(parts) + "\n"


def unfence(text: str) -> str:
    """``text`` without a code fence wrapped around it, closed or not; code blocks inside stay.

    The briefing starts with a heading, so a leading fence line is always stray, and so is the
    last fence line while the fences do not pair up.
    """
    lines = text.strip().splitlines()
    if lines and _FENCE_LINE.match(lines[0]):
        lines = lines[1:]
    fences = [i for i, line in enumerate(lines) if _FENCE_LINE.match(line)]
    if len(fences) % 2:
        del lines[fences[-1]]
    return "\n".join(lines)


def rejection(response: ChatResponse, *, transcript: str = "", previous: str = "") -> str | None:
    """Why a model's briefing cannot be used, or None: it must have finished, hold every section,
    and not be weak (``weakness.py``: empty, a copy of ``transcript``, longer than what it folds)."""
    if response.finish_reason == "length":
        return 'it was cut off by the output token limit (finish_reason "length")'
    briefing = unfence(response.content)
    present = parse_sections(briefing)
    missing = [name for name in SECTIONS if name not in present]
    if missing:
        return "it lacks " + ", ".join(f"## {name}" for name in missing)
    return weakness(briefing, transcript=transcript, previous=previous)


def ensure_sections(text: str) -> str:
    """``text`` with exactly the five headings in order: missing ones empty, stray text kept."""
    sections, extra = _split(unfence(text))
    bodies = {name: "\n".join(lines).strip() for name, lines in sections.items()}
    stray = "\n".join(extra).strip()
    if stray:
        facts = bodies.get("Decisions & Facts", "")
        bodies["Decisions & Facts"] = f"{facts}\n{stray}".strip()
    return render_sections(bodies)


def attach_ledger(text: str, items: list[str], notes: dict[str, str] | None = None) -> str:
    """``text`` normalized, with ``items`` as the only ledger, at the end of ``## Files & State``."""
    sections = parse_sections(ensure_sections(text))
    state = strip_ledger(sections.get("Files & State", ""))
    block = render_ledger(items, notes)
    sections["Files & State"] = f"{state}\n\n{block}".strip()
    return render_sections(sections)


def clip(text: str, limit: int) -> str:
    """Head and tail of ``text`` within about ``limit`` characters, marking what was cut."""
    if len(text) <= limit:
        return text
    head = max(0, int(limit * 0.7))
    tail = max(0, limit - head)
    return f"{text[:head]} […{len(text) - head - tail} chars cut…] {text[len(text) - tail :] if tail else ''}"


def _render_message(message: Message, text_clip: int, tool_clip: int) -> str:
    if message.role == "tool":
        shown = "".join(f"\nIMAGE {line}" for line in image_lines(message.content))  # whatever the clip cuts
        return f"TOOL RESULT ({message.name or 'tool'}): {clip(message.content, tool_clip)}{shown}"
    lines = [f"{message.role.upper()}: {clip(message.content, text_clip)}"] if message.content.strip() else []
    for call in message.tool_calls:
        lines.append(f"{message.role.upper()} CALLS {call.name}({clip(call.arguments, tool_clip)})")
    return "\n".join(lines) or f"{message.role.upper()}: (empty)"


def _head_and_tail(lines: list[str], budget_chars: int) -> list[str]:
    """The first and last lines that fit, alternating ends, with a marker for the middle."""
    head: list[str] = []
    tail: list[str] = []
    used, i, j = 60, 0, len(lines) - 1
    while i <= j:
        from_head = len(head) <= len(tail)
        line = lines[i] if from_head else lines[j]
        if used + len(line) + 1 > budget_chars:
            break
        used += len(line) + 1
        if from_head:
            head.append(line)
            i += 1
        else:
            tail.append(line)
            j -= 1
    return [*head, f"[… {j - i + 1} messages omitted …]", *tail[::-1]]


def render_span(span: list[Message], budget_chars: int = 48_000, tool_clip: int = 1_500) -> str:
    """The span as compact text that fits ``budget_chars``, so the summary request itself fits."""
    text_clip = max(tool_clip, 6_000)
    lines = [_render_message(m, text_clip, tool_clip) for m in span]
    total = sum(len(line) + 1 for line in lines)
    if total > budget_chars:
        scale = budget_chars / total
        lines = [_render_message(m, max(200, int(text_clip * scale)), max(200, int(tool_clip * scale))) for m in span]
    if sum(len(line) + 1 for line in lines) > budget_chars:
        lines = _head_and_tail(lines, budget_chars)
    return "\n".join(lines)


class LLMSummarizer:
    """The fast model writes the briefing; a ModelError tells the caller to fall back.

    A weak model's briefing is taken only when it finished and holds all five sections:
    a cut-off or partial one would silently drop what the span said. ``on_rejected`` hears why.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        target_tokens: int = 1_500,
        span_budget_chars: int = 48_000,
        tool_clip: int = 1_500,
        on_rejected: OnRejected | None = None,
    ) -> None:
        self.model = model
        self.target_tokens = target_tokens
        self.span_budget_chars = span_budget_chars
        self.tool_clip = tool_clip
        self.on_rejected = on_rejected

    def summarize(self, previous: str | None, span: list[Message]) -> str:
        parts = []
        if previous and previous.strip():
            parts.append(f"<previous_summary>\n{previous.strip()}\n</previous_summary>")
        transcript = render_span(span, self.span_budget_chars, self.tool_clip)
        parts.append(f"<transcript>\n{transcript}\n</transcript>")
        parts.append("Write the updated briefing.")
        return self._ask(
            [
                {"role": "system", "content": _SUMMARY_PROMPT.format(target=self.target_tokens)},
                {"role": "user", "content": "\n\n".join(parts)},
            ],
            transcript=transcript,
            previous=previous or "",
        )

    def reflect(self, summary: str, target_tokens: int) -> str:
        return self._ask(
            [
                {"role": "system", "content": _REFLECT_PROMPT.format(target=target_tokens)},
                {"role": "user", "content": summary},
            ],
            previous=summary,
        )

    def _ask(self, messages: list[dict[str, Any]], *, transcript: str = "", previous: str = "") -> str:
        """One retry with a reminder when the answer is cut off, lacks a section or is weak; then give up."""
        response = self.model.complete(messages, [])
        why = rejection(response, transcript=transcript, previous=previous)
        if why is None:
            return ensure_sections(response.content)
        self._rejected(why, 1)
        retry = [
            *messages,
            {"role": "assistant", "content": response.content},
            {"role": "user", "content": _reminder(response, why)},
        ]
        response = self.model.complete(retry, [])
        why = rejection(response, transcript=transcript, previous=previous)
        if why is None:
            return ensure_sections(response.content)
        self._rejected(why, 2)
        raise SummaryRejected(
            f"{self.model.name}'s summary was rejected twice ({why}); using the extractive summary", why
        )

    def _rejected(self, why: str, attempt: int) -> None:
        log.warning("summary from %s rejected (attempt %d): %s", self.model.name, attempt, why)
        if self.on_rejected is not None:
            self.on_rejected(why, attempt)


def _reminder(response: ChatResponse, why: str) -> str:
    if response.finish_reason == "length":
        return _SHORTER
    return _REMINDER if why.startswith("it lacks ") else _WEAK.format(why=why)


def summarize_with_fallback(
    primary: Summarizer | None, fallback: Summarizer, previous: str | None, span: list[Message]
) -> tuple[str, str | None]:
    """(summary, why the extractive summary was used): None when the fast model's briefing was kept.

    The reason is one line: what was wrong with the model's last briefing, or how the model failed;
    "" when there is no fast model to ask.
    """
    if primary is None:
        return fallback.summarize(previous, span), ""
    try:
        return primary.summarize(previous, span), None
    except ModelError as exc:
        log.warning("summarizer failed, using the extractive summary: %s", exc)
        why = exc.why if isinstance(exc, SummaryRejected) else str(exc)
    return fallback.summarize(previous, span), why


def reflect_with_fallback(primary: Summarizer | None, fallback: Summarizer, summary: str, target_tokens: int) -> str:
    """The condensed summary, keeping its ledger; the extractive trim when the model fails."""
    ledger, notes = parse_ledger(summary), parse_notes(summary)
    if primary is not None:
        try:
            return attach_ledger(primary.reflect(summary, target_tokens), ledger, notes)
        except ModelError as exc:
            log.warning("reflection failed, trimming extractively: %s", exc)
    return fallback.reflect(summary, target_tokens)
