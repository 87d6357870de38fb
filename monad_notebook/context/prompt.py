"""Prompt assembly: what the model receives, built from labelled parts.

Every part says what it is (system prompt, memory, summary, a window message, a cleared
placeholder, an injected block), so the inspector and the panel can show exactly what
was sent, and the occupancy estimate can reuse per-message counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from monad_notebook.messages import Message

PLAN_NOTE = "(a reminder from your own running summary, not a new request)"


@dataclass
class PromptPart:
    kind: str  # system | memory | summary | message | tool_result | placeholder | related_context | plan | tools
    role: str
    text: str
    source: Message | None = None  # the window message, when the part is one sent unchanged
    tokens: int = 0


@dataclass
class Prompt:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    groups: list[list[PromptPart]] = field(default_factory=list)  # the parts of each message, in order
    raw_tokens: int | None = None  # the uncalibrated count, once a session has counted it
    tools_tokens: int | None = None  # the uncalibrated count of the tool schemas alone

    def record(self, turn: int, step: int, total: int, tools_tokens: int) -> dict[str, Any]:
        """A JSON-able account of this prompt, for the inspector and the panel.

        ``total`` is the estimate and ``tools_tokens`` the schemas' share of it; the other parts'
        raw counts are scaled to the rest (chat template and framing included), so the parts add up.
        """
        flat = [p for group in self.groups for p in group]
        scaled = scale_to([p.tokens for p in flat], total - tools_tokens)
        parts = [{"kind": "tools", "role": "tools", "tokens": tools_tokens, "text": f"{len(self.tools)} tool schemas"}]
        parts.extend(
            {"kind": p.kind, "role": p.role, "tokens": n, "text": p.text, **_calls(p)}
            for p, n in zip(flat, scaled, strict=True)
        )
        return {"turn": turn, "step": step, "total_tokens": total, "real_tokens": None, "parts": parts}


def scale_to(counts: list[int], total: int) -> list[int]:
    """``counts`` scaled to sum to ``total`` exactly (largest remainders get the leftover units)."""
    total = max(0, total)
    raw = sum(counts)
    if not counts:
        return []
    if raw <= 0:
        return [total // len(counts) + (1 if i < total % len(counts) else 0) for i in range(len(counts))]
    exact = [c * total / raw for c in counts]
    scaled = [int(x) for x in exact]
    by_remainder = sorted(range(len(counts)), key=lambda i: exact[i] - scaled[i], reverse=True)
    for i in by_remainder[: total - sum(scaled)]:
        scaled[i] += 1
    return scaled


def _calls(part: PromptPart) -> dict[str, Any]:
    """The tool calls an assistant part carries: its text is often empty, the calls are what it said."""
    if part.source is None or not part.source.tool_calls:
        return {}
    return {"calls": [{"name": c.name, "arguments": c.arguments} for c in part.source.tool_calls]}


def _kind_of(message: Message) -> str:
    if message.role == "tool":
        return "placeholder" if message.evicted else "tool_result"
    return "message"


def assemble(
    *,
    system: str,
    memory: str,
    summary: str | None,
    window: list[Message],
    tools: list[dict[str, Any]],
    related: Mapping[str, str] | None = None,
    plan: str | None = None,
) -> Prompt:
    """System prompt (+ memory), the window with the summary folded into the first user message,
    each related-context block on the user message it was found for (``related``: message id ->
    block), and the plan anchor last."""
    groups: list[list[PromptPart]] = [[PromptPart("system", "system", system)]]
    if memory:
        groups[0].append(PromptPart("memory", "system", memory))
    groups.extend([PromptPart(_kind_of(m), m.role, m.sent_content, source=m)] for m in window)
    if summary:
        folded = PromptPart("summary", "user", f"<summary>\n{summary}\n</summary>")
        if len(groups) > 1 and groups[1][0].role == "user":
            groups[1].insert(0, folded)
        else:  # the window starts mid-exchange: the summary opens the conversation as its own user turn
            groups.insert(1, [folded])
    for group in groups[1:] if related else ():
        source = group[-1].source
        block = related.get(source.id) if related and source is not None else None
        if block:
            group.append(PromptPart("related_context", "user", block))
    if plan:
        groups.append([PromptPart("plan", "user", f"<plan>\n{PLAN_NOTE}\n{plan}\n</plan>")])
    return Prompt(messages=[_message(g) for g in groups], tools=tools, groups=groups)


def _message(group: list[PromptPart]) -> dict[str, Any]:
    if len(group) == 1 and group[0].source is not None:
        return group[0].source.to_openai()
    anchor = next((p.source for p in group if p.source is not None), None)
    out = anchor.to_openai() if anchor is not None else {"role": group[0].role}
    out["content"] = "\n\n".join(p.text for p in group)
    return out


def count_parts(prompt: Prompt, message_tokens: Callable[[Message], int], count_text: Callable[[str], int]) -> None:
    """Fill each part's token count: cached per window message, counted for everything else."""
    for group in prompt.groups:
        for part in group:
            pure = len(group) == 1 and part.source is not None
            part.tokens = message_tokens(part.source) if pure and part.source else count_text(part.text)
