"""Prompt assembly: what the model receives, built from labelled parts.

Every part says what it is (system prompt, memory, summary, a window message, a cleared
placeholder, an injected block), so the inspector and the panel can show exactly what
was sent, and the occupancy estimate can reuse per-message counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from monad_notebook.images.image import Image
from monad_notebook.messages import Message

PLAN_NOTE = "(a reminder from your own running summary, not a new request)"
IMAGES_NOTE = "(the images the tool results above displayed to the user)"
END_TAGS = ("<plan>", "<workspace>", "<notebook_activity>")  # how each block that ends a request begins


@dataclass
class PromptPart:
    # system | memory | summary | message | tool_result | placeholder | image | related_context | plan | workspace
    # | notebook_activity | tools
    kind: str
    role: str  # of the message the part is sent in
    text: str
    source: Message | None = None  # the window message, when the part is one sent unchanged
    tokens: int = 0
    image: Image | None = None  # on image parts: sent after its text, as an image_url


@dataclass
class Prompt:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    groups: list[list[PromptPart]] = field(default_factory=list)  # the parts of each message, in order
    raw_tokens: int | None = None  # the uncalibrated count, once a session has counted it
    tools_tokens: int | None = None  # the uncalibrated count of the tool schemas alone
    image_detail: str | None = None  # how images are sent (None: they are not)

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
        return "placeholder" if message.evicted and not message.images_cleared else "tool_result"
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
    image_detail: str | None = None,
    workspace: str = "",
    activity: str = "",
) -> Prompt:
    """System prompt (+ memory), the window with the summary folded into the first user message,
    each related-context block on the user message it was found for (``related``: message id ->
    block), then the plan anchor, the ``<workspace>`` block and the turn's ``<notebook_activity>`` block, last: they
    change at every step or turn, and last they leave the prefix the provider cached from the previous request
    intact (``end_with`` says on which message they ride).

    With ``image_detail`` (a model that sees), the images of the tool results not evicted follow
    their round's results as one user message: a tool message carries text only.
    """
    groups: list[list[PromptPart]] = [[PromptPart("system", "system", system)]]
    if memory:
        groups[0].append(PromptPart("memory", "system", memory))
    for index, message in enumerate(window):
        groups.append([PromptPart(_kind_of(message), message.role, message.sent_content, source=message)])
        ends_results = message.role == "tool" and (index + 1 == len(window) or window[index + 1].role != "tool")
        if image_detail is not None and ends_results:
            images = _images_of_results(window, index)
            if images:
                groups.append(images)
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
    tail = [PromptPart("plan", "user", f"<plan>\n{PLAN_NOTE}\n{plan}\n</plan>")] if plan else []
    if workspace:
        tail.append(PromptPart("workspace", "user", workspace))
    if activity:
        tail.append(PromptPart("notebook_activity", "user", activity))
    end_with(groups, tail)
    messages = [_message(g, image_detail) for g in groups]
    return Prompt(messages=messages, tools=tools, groups=groups, image_detail=image_detail)


def end_with(groups: list[list[PromptPart]], blocks: list[PromptPart]) -> None:
    """Put the blocks that end a request on its last message when that message is the user's side of the
    exchange (the user's question, the round's last tool result, the images the round displayed), else in a
    user message of their own (after an assistant's answer, or with no message at all).

    A strict chat template (Mistral's, Gemma's tool-calling ones) refuses a user message right after the
    user's own or after tool results: the user's messages and the assistant's answers must alternate. On
    the last message the blocks still leave the provider's cache whole: the next step's request repeats
    everything before their first character.
    """
    if not blocks:
        return
    last = groups[-1]
    if len(groups) > 1 and last[0].role in ("user", "tool"):
        last.extend(replace(block, role=last[0].role) for block in blocks)
    else:
        groups.append(blocks)


def own_text(content: str) -> str:
    """A message's text without the blocks a request ends with: what a scripted model reads as the
    user's question or a tool's result."""
    padded = f"\n\n{content}"
    cut = min((i for tag in END_TAGS if (i := padded.find(f"\n\n{tag}")) >= 0), default=len(padded))
    return padded[2:cut]


def _images_of_results(window: list[Message], last: int) -> list[PromptPart]:
    """Image parts for the run of tool results ending at ``last`` (those still sending images)."""
    first = last
    while first > 0 and window[first - 1].role == "tool":
        first -= 1
    images = [image for message in window[first : last + 1] if message.sends_images for image in message.images]
    return [PromptPart("image", "user", image.line(), image=image) for image in images]


def _message(group: list[PromptPart], image_detail: str | None = None) -> dict[str, Any]:
    if len(group) == 1 and group[0].source is not None:
        return group[0].source.to_openai()
    if any(p.image is not None for p in group):
        return {"role": "user", "content": _image_content(group, image_detail or "auto")}
    anchor = next((p.source for p in group if p.source is not None), None)
    out = anchor.to_openai() if anchor is not None else {"role": group[0].role}
    out["content"] = "\n\n".join(p.text for p in group)
    return out


def _image_content(group: list[PromptPart], detail: str) -> list[dict[str, Any]]:
    """Chat Completions content parts: a note, then each image's line followed by the image."""
    content: list[dict[str, Any]] = [{"type": "text", "text": IMAGES_NOTE}]
    for part in group:
        content.append({"type": "text", "text": part.text})
        if part.image is not None:
            content.append({"type": "image_url", "image_url": {"url": part.image.data_url, "detail": detail}})
    return content


def count_parts(
    prompt: Prompt,
    message_tokens: Callable[[Message], int],
    count_text: Callable[[str], int],
    count_image: Callable[[Image, str], int],
) -> None:
    """Fill each part's token count: cached per window message, counted for everything else."""
    for group in prompt.groups:
        for part in group:
            pure = len(group) == 1 and part.source is not None
            part.tokens = message_tokens(part.source) if pure and part.source else count_text(part.text)
            if part.image is not None:
                part.tokens += count_image(part.image, prompt.image_detail or "auto")
