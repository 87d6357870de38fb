"""The lossless stage: redaction -> truncation for each result (its full text handed to the spill), and eviction plans.

Order matters: redaction sees the full pre-truncation text once, before truncation, the
spill, the store, events or the model; a redacted result never gets a recovery handle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from monad_notebook.context.lossless.eviction import EvictionPlan, plan_eviction
from monad_notebook.context.lossless.truncation import cap_raw, truncate_tool_output
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.window import Window
from monad_notebook.messages import Message
from monad_notebook.redaction.redactor import Redactor

HasRaw = Callable[[list[str]], set[str]]


class LosslessStage:
    def __init__(self, context_cfg: Any, counter: TokenCounter) -> None:
        self.cfg = context_cfg
        self.counter = counter
        self.redactor = Redactor.from_config(context_cfg.redaction)

    def process_result(self, message: Message, text: str, *, redacted: bool = False) -> str | None:
        """Fill a tool message from the tool's raw text: redact, truncate; the full text to save when it was cut.

        ``redacted``: the tool already redacted its source text before formatting it.
        """
        out = self.cfg.tool_output
        redaction = self.redactor.redact(text)
        message.redacted = redacted or redaction.redacted
        recoverable = out.persist_raw and not message.redacted
        full = (
            cap_raw(redaction.text, out.raw_cap_bytes) if recoverable and len(redaction.text) > out.max_chars else None
        )
        message.content = truncate_tool_output(
            redaction.text,
            tool_call_id=message.tool_call_id,
            max_chars=out.max_chars,
            head_fraction=out.head_fraction,
            recoverable=recoverable,
        )
        return full

    def _images_cost(self, detail: str | None) -> Callable[[Message], int]:
        """What a result's images cost while they are sent; nothing when the model sees none."""
        if detail is None:
            return lambda message: 0
        count = self.counter.count_image
        return lambda message: sum(count(i, detail) for i in message.images) if message.sends_images else 0

    def plan_eviction(
        self,
        window: Window,
        context_window: int,
        has_raw: HasRaw,
        *,
        occupancy: Callable[[], int],
        cache_discount: float,
        force: bool = False,
    ) -> EvictionPlan | None:
        """What one eviction pass would clear now (None: nothing); the caller persists and applies it.

        ``force`` is the overflow path (the provider refused the prompt): every result may go,
        the recent rounds included, since each stays readable by handle. Otherwise the price of a
        cached token decides the batch: the endpoint's discount while its cache is warm, else 1.
        ``occupancy`` is asked only when eviction is on and not forced.
        """
        cfg = self.cfg.eviction
        if not cfg.enabled:
            return None
        plan = plan_eviction(
            window.messages,
            occupancy=context_window if force else occupancy(),
            context_window=context_window,
            at_fraction=0.0 if force else cfg.at_fraction,
            keep_recent_rounds=0 if force else cfg.keep_recent_rounds,
            clear_at_least=1 if force else cfg.clear_at_least,
            min_result_tokens=cfg.min_result_tokens,
            count_tokens=self.counter.count_text,
            has_raw=has_raw,
            persist_raw=self.cfg.tool_output.persist_raw,
            cache_discount=cache_discount,
            count_images=self._images_cost(window.frame.image_detail),
        )
        return plan if plan.placeholders else None
