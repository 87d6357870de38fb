"""Occupancy: how full the model's window is, in the provider's units.

Raw counts come from the token counter (each window message counted once, cached by id and
eviction state); the calibration turns them into what the provider will count; the provider's
own count of the last request, when it gives one, is the truth for what was sent then. The
window says what a prompt holds; this object says what it costs, and the cascade tells it when
the window changed under a count (an eviction reclaimed tokens, a compaction folded messages).
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook.context.occupancy.calibration import Calibration
from monad_notebook.context.occupancy.tokens import TokenCounter, effective_input_tokens
from monad_notebook.context.prompt import Prompt
from monad_notebook.messages import Message


class Occupancy:
    """The estimate, the calibration and the hard guard's figure for one session's requests."""

    def __init__(self, counter: TokenCounter, calibration: Calibration | None = None) -> None:
        self.counter = counter
        self.calibration = calibration or Calibration()
        self.last_real: int | None = None  # the provider's count of the last request
        self.last_estimate = 0
        self.last_parts = (0, 0)  # raw (messages, tools) tokens of the prompt estimated last
        self.reclaimed = 0
        self._basis_raw: int | None = None  # raw tokens of the request ``last_real`` counted
        self._token_cache: dict[tuple[str, bool], int] = {}

    def use_counter(self, counter: TokenCounter, calibration: Calibration | None = None) -> None:
        """A new model's tokenizer (and what was learnt about its provider): the old counts are meaningless."""
        self.counter = counter
        self.calibration = calibration or Calibration()
        self._token_cache = {}

    def forget_count(self) -> None:
        """The window was reloaded (another kernel wrote to it): the last counts described another window."""
        self.last_real = None
        self.last_estimate = 0

    def folded(self) -> None:
        """A compaction landed: the provider's count described the unfolded window."""
        self.last_real = None
        self._basis_raw = None

    def reset(self) -> None:
        """The stored conversation was forgotten: the counts start over."""
        self.forget_count()
        self._basis_raw = None
        self.reclaimed = 0

    def reclaim(self, reclaimed: int) -> None:
        """An eviction cleared ``reclaimed`` tokens: the stale provider count shrinks by as much."""
        if reclaimed:
            self.reclaimed += reclaimed
            if self.last_real is not None:
                self.last_real = max(0, self.last_real - reclaimed)
            if self._basis_raw is not None:
                self._basis_raw -= reclaimed  # the growth since that count is measured without them
            self.last_estimate = max(0, self.last_estimate - reclaimed)

    def estimate(self, prompt: Prompt) -> int:
        """The calibrated estimate of what the provider will count for this request.

        Window messages are counted once each (cached by id and eviction state), so a step
        costs a sum over the window rather than re-tokenizing it.
        """
        self.last_parts = self.raw_parts(prompt)
        self.last_estimate = self.calibration.predict(*self.last_parts)
        return self.last_estimate

    def predict(self, prompt: Prompt) -> int:
        """What this request would cost, calibrated; changes no figure (the panel compares it with
        what was sent after eviction and compaction acted)."""
        return self.calibration.predict(*self.raw_parts(prompt))

    def raw_parts(self, prompt: Prompt) -> tuple[int, int]:
        """Uncalibrated (messages, tool schemas) tokens of a prompt, counted once per prompt."""
        if prompt.raw_tokens is None or prompt.tools_tokens is None:
            pure = [len(g) == 1 and g[0].source is not None for g in prompt.groups]
            loose = [m for m, is_pure in zip(prompt.messages, pure, strict=True) if not is_pure]
            raw = self.counter.count_messages(loose, prompt.tools)
            raw += sum(
                self.message_tokens(g[0].source) for g, is_pure in zip(prompt.groups, pure, strict=True) if is_pure
            )
            prompt.raw_tokens = raw
            prompt.tools_tokens = self.counter.count_messages([], prompt.tools) - self.counter.count_messages([])
        return prompt.raw_tokens - prompt.tools_tokens, prompt.tools_tokens

    def guard_tokens(self, prompt: Prompt) -> int:
        """The hard guard's figure: the estimate, or the provider's last count plus the growth since, if larger.

        An estimate can be far off (a server that counts with another tokenizer, a calibration
        still learning), but the last real count is the truth for what was sent then; what was
        appended since is counted raw, at no less than one provider token per raw token.
        """
        estimate = self.estimate(prompt)
        if self.last_real is None or self._basis_raw is None:
            return estimate
        growth = sum(self.last_parts) - self._basis_raw
        scale = max(1.0, self.calibration.fit.ratio) if growth > 0 else min(1.0, self.calibration.fit.ratio)
        return max(estimate, round(self.last_real + growth * scale))

    def message_tokens(self, message: Message) -> int:
        key = (message.id, message.placeholder)
        count = self._token_cache.get(key)
        if count is None:
            count = self.counter.count_messages([message.to_openai()]) - self.counter.count_messages([])
            self._token_cache[key] = count
        return count

    def observe(self, real: int | None) -> None:
        """The provider's count of the request just estimated (None when it reported none)."""
        if real is not None:
            self.calibration.observe(*self.last_parts, real)
        self.last_real = real
        self._basis_raw = sum(self.last_parts) if real is not None else None

    def current(self, prompt: Callable[[], Prompt]) -> int:
        """effectiveInputTokens: the provider's last real count, else the calibrated estimate."""
        if self.last_real is None and not self.last_estimate:
            self.estimate(prompt())
        return effective_input_tokens(self.last_real, self.last_estimate)
