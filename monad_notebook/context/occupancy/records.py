"""Prompt records: an account of what the model received at each recent step, part by part.

The inspector (``%monad prompt``) and the panel read them. A record is made as the request
goes out, in the headline's units; the provider's count and the bill are added when it answers.
"""

from __future__ import annotations

from typing import Any

from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.prompt import Prompt, count_parts

PROMPT_RECORDS_KEPT = 50


class PromptRecords:
    """The last ``PROMPT_RECORDS_KEPT`` requests' records, oldest first."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, prompt: Prompt, occupancy: Occupancy, turn: int, step: int) -> None:
        """Keep an account of the request about to go out.

        Parts are in the headline's units: the tool schemas as the provider counts them (none,
        for a server that leaves them out), the rest scaled so that the parts add up.
        """
        count_parts(prompt, occupancy.message_tokens, occupancy.counter.count_text, occupancy.counter.count_image)
        _, tools = occupancy.raw_parts(prompt)
        total = occupancy.predict(prompt)
        tools_tokens = min(total, max(0, round(occupancy.calibration.fit.tools_weight * tools)))
        self.items.append(prompt.record(turn, step, total, tools_tokens))
        del self.items[:-PROMPT_RECORDS_KEPT]

    def answered(self, real: int | None, prompt_tokens: int, cached_tokens: int) -> None:
        """The provider's count of the last request (None: it reported none) and what it was billed."""
        if self.items:
            if real is not None:
                self.items[-1]["real_tokens"] = real
            self.items[-1].update(prompt_tokens=prompt_tokens, cached_tokens=cached_tokens)

    def clear(self) -> None:
        self.items = []
