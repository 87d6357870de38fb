"""Lossless tool-result eviction: old tool outputs become placeholders, pairs stay intact.

Tool results dominate a long transcript and go stale fast: once the model has acted on a
file read, the raw bytes rarely matter again. Eviction replaces the *sent* text of old
tool results with a ``[context-cleared]`` placeholder; the original content is kept (in
the message and the store), no message is dropped, and every assistant tool call keeps
its result, so strict providers never see an orphan.

Recency is counted in rounds (one assistant message with tool calls plus its results),
so parallel calls of one step share an age and a recent step is always kept whole.

Reading of the spec's "fires in batches": once occupancy crosses ``at_fraction`` a pass
evicts *every* eligible result outside the protected rounds, and only if that pass
reclaims at least ``clear_at_least`` tokens (all or nothing). Evicting a batch at a time,
rather than just enough each step, changes the prompt's prefix rarely, which keeps
provider prompt caches warm and leaves headroom for many steps before the next pass.

With a prefix cache the cheapest batch size follows from the price of a cached token ``d``
(``cache_discount``; 1 when the cache is cold or there is none). Stale results that stay
cost ``d`` per token on every request; clearing them makes the next request resend,
uncached, everything after the first cleared result. Waiting until ``X`` tokens are
reclaimable while the window grows ``g`` per step costs least at
``X = sqrt(2 (1 - d) R g / d)`` (the economic-order-quantity rule, ``R`` the resend): a
warm cache at a deep discount batches widely (never less than ``clear_at_least``). A cold one
(``d`` = 1) gains nothing by waiting, since the next request pays full price anyway, so it
clears as deep as is lossless: every eligible result, as soon as there is one.

Images go first. An image costs hundreds of tokens for what a line of text can name, so a
pass over results that carry images first clears only their images (the text stays, and a
note names each image's handle for ``view_image``); only when that pass would not reclaim
its batch does it clear whole results, text and images together.

Everything here is pure: the caller saves ``plan.spill`` as raw outputs *before* the
placeholders advertising them are sent, then records the placeholders.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from monad_notebook.context.lossless.truncation import read_call
from monad_notebook.images.image import IMAGES_CLEARED
from monad_notebook.messages import Message

PLACEHOLDER_PREFIX = "[context-cleared]"


@dataclass
class EvictionPlan:
    """What one eviction pass would change; empty when the pass should not fire."""

    placeholders: dict[str, str] = field(default_factory=dict)  # message id -> placeholder text
    spill: dict[str, str] = field(default_factory=dict)  # tool_call_id -> full text to save first
    reclaimed_tokens: int = 0
    evicted_tool_call_ids: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.placeholders)


def rounds(messages: list[Message]) -> list[list[Message]]:
    """The transcript's rounds, oldest first: an assistant message with tool calls plus its results.

    Tool messages belong to the round of the assistant message they directly follow, so
    parallel calls of one step form one round. Messages outside any round (system, user,
    plain assistant answers, a stray tool message) are not part of the result.
    """
    out: list[list[Message]] = []
    current: list[Message] | None = None
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            current = [message]
            out.append(current)
        elif message.role == "tool" and current is not None:
            current.append(message)
        else:
            current = None
    return out


def placeholder_for(message: Message, tokens: int, *, handle: bool) -> str:
    """The text sent instead of an evicted tool result: which tool, how big, how to get it back.

    It stays short because every placeholder is resent on each later request; the images a
    result carried are named with their handles, which work whether or not its text was saved.
    """
    what = f"{PLACEHOLDER_PREFIX} {message.name or 'tool'} output ({tokens} tokens)"
    if handle:
        text = f"{what}: {read_call(message.tool_call_id)}"
    elif message.redacted:
        text = f"{what}, secrets redacted, not saved; re-run the tool if needed"
    else:
        text = f"{what}, not saved; re-run the tool if needed"
    return f"{text}\n{_images_note(message)}" if message.images else text


def images_placeholder(message: Message) -> str:
    """What is sent instead of a result whose images alone were cleared: its text, then their handles."""
    return f"{message.sent_content}\n{_images_note(message)}"


def _images_note(message: Message) -> str:
    lines = "\n".join(image.line() for image in message.images)
    return f'{IMAGES_CLEARED}: view_image("<id>") shows one again]\n{lines}'


def plan_eviction(
    messages: list[Message],
    *,
    occupancy: int,
    context_window: int,
    at_fraction: float,
    keep_recent_rounds: int,
    clear_at_least: int,
    min_result_tokens: int,
    count_tokens: Callable[[str], int],
    has_raw: Callable[[list[str]], set[str]],
    persist_raw: bool,
    cache_discount: float | None = None,
    count_images: Callable[[Message], int] = lambda message: 0,
) -> EvictionPlan:
    """Plan one eviction pass over ``messages``; an empty plan when it should not fire.

    ``occupancy`` is the window's current input tokens. A result is eligible when it lies
    outside the last ``keep_recent_rounds`` rounds, is not already evicted, has at least
    ``min_result_tokens`` tokens and its placeholder is smaller than it. ``has_raw`` is
    asked once, for the eligible ids that could get a handle, which of them were already
    spilled (truncated at execution time): those are never spilled again, since their
    content is the truncated text and the saved raw output is the full one.

    ``cache_discount`` (None: fire at ``at_fraction`` only) also fires the pass once it reclaims
    the batch that costs least at that price (see the module's docstring): at 1 (a cold cache
    or none) any eligible result, so the window carries no stale result the next request
    would pay for in full.

    ``count_images`` is what a result's images cost while they are sent (0 when the model
    sees none): a pass that clears only images is tried first (see the module's docstring).
    """
    if keep_recent_rounds < 0:
        raise ValueError("keep_recent_rounds must not be negative")
    over = occupancy >= at_fraction * context_window
    if not over and cache_discount is None:
        return EvictionPlan()
    all_rounds = rounds(messages)
    old = [m for round_ in all_rounds[: max(0, len(all_rounds) - keep_recent_rounds)] for m in round_[1:]]
    images_only = _clear_images([m for m in old if m.sends_images], count_tokens, count_images)
    candidates = [
        (message, tokens)
        for message in old
        if (not message.evicted or message.images_cleared)
        and (tokens := count_tokens(message.sent_content) + count_images(message)) >= min_result_tokens
    ]

    def worth_it(plan: EvictionPlan) -> bool:
        """Over the threshold, the spec's batch; below it, the batch worth the resend it causes."""
        if over and plan.reclaimed_tokens >= clear_at_least:
            return True
        batch = cheapest_batch(messages, plan, all_rounds, cache_discount, count_tokens, keep_recent_rounds)
        if batch > 0:  # a warm cache: the spec's batch is the least worth a resend
            batch = max(batch, clear_at_least)
        return plan.reclaimed_tokens >= batch

    for plan in (images_only, _clear_all(candidates, count_tokens, has_raw, persist_raw)):
        if plan.placeholders and worth_it(plan):
            return plan
    return EvictionPlan()


def _clear_images(
    carrying: list[Message], count_tokens: Callable[[str], int], count_images: Callable[[Message], int]
) -> EvictionPlan:
    """A plan clearing the images of these results, their text kept (nothing to spill: images are stored)."""
    plan = EvictionPlan()
    for message in carrying:
        text = images_placeholder(message)
        saved = count_images(message) - (count_tokens(text) - count_tokens(message.sent_content))
        if saved > 0:
            plan.placeholders[message.id] = text
            plan.evicted_tool_call_ids.append(message.tool_call_id)
            plan.reclaimed_tokens += saved
    return plan


def _clear_all(
    candidates: list[tuple[Message, int]],
    count_tokens: Callable[[str], int],
    has_raw: Callable[[list[str]], set[str]],
    persist_raw: bool,
) -> EvictionPlan:
    """A plan clearing every candidate whose placeholder is smaller than it; spills what has no saved copy."""
    handle_ids = [m.tool_call_id for m, _ in candidates if persist_raw and not m.redacted]
    spilled = has_raw(handle_ids) if handle_ids else set()
    plan = EvictionPlan()
    for message, tokens in candidates:
        handle = persist_raw and not message.redacted
        text = placeholder_for(message, tokens, handle=handle)
        saved = tokens - count_tokens(text)
        if saved <= 0:
            continue
        plan.placeholders[message.id] = text
        plan.evicted_tool_call_ids.append(message.tool_call_id)
        plan.reclaimed_tokens += saved
        if handle and message.tool_call_id not in spilled:
            plan.spill[message.tool_call_id] = message.content
    return plan


def cheapest_batch(
    messages: list[Message],
    plan: EvictionPlan,
    all_rounds: list[list[Message]],
    discount: float | None,
    count_tokens: Callable[[str], int],
    keep_recent_rounds: int,
) -> float:
    """Tokens a pass should reclaim before it pays for the uncached resend it causes (inf: never early).

    Resend and growth are counted in text only: counting the images still sent as well makes a
    warm cache wait for larger batches, which billed more on ``benchmarks/images.py``.
    """
    if discount is None or discount <= 0:
        return math.inf
    if discount >= 1:
        return 0.0
    first = next(i for i, m in enumerate(messages) if m.id in plan.placeholders)
    resend = sum(count_tokens(plan.placeholders.get(m.id) or m.sent_content) for m in messages[first:])
    latest = all_rounds[-max(1, keep_recent_rounds) :]
    growth = sum(count_tokens(m.sent_content) for round_ in latest for m in round_) / max(1, len(latest))
    return math.sqrt(2 * (1 - discount) * resend * growth / discount)
