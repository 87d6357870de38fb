"""The meter beside the window: what its prompt occupies, what each request was billed, what it held.

One object for the three accounts a request touches (``Occupancy``, ``CostMeter``, ``PromptRecords``)
and for the calibration a session keeps per model, so the cascade asks one thing about cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from monad_notebook.context.occupancy.calibration import Calibration
from monad_notebook.context.occupancy.cost import CostMeter
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.occupancy.records import PromptRecords
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.prompt import Prompt


class Calibrations(Protocol):
    """Where a session keeps what the provider's counts taught it, per model."""

    def save_calibration(self, session: str, model: str, data: dict[str, Any]) -> None: ...
    def load_calibration(self, session: str, model: str) -> dict[str, Any] | None: ...


class Meter:
    def __init__(self, store: Calibrations, session: str, counter: TokenCounter) -> None:
        self.store = store
        self.session = session
        self.occupancy = Occupancy(counter, self.stored_calibration(counter.model))
        self.cost = CostMeter()
        self.records = PromptRecords()

    @property
    def counter(self) -> TokenCounter:
        return self.occupancy.counter

    def use_counter(self, counter: TokenCounter) -> bool:
        """Count with ``counter`` from now on; True when it is another model's (its calibration is the stored one)."""
        if counter is self.occupancy.counter:
            return False
        self.occupancy.use_counter(counter, self.stored_calibration(counter.model))
        return True

    def stored_calibration(self, model: str) -> Calibration:
        """What earlier kernels learnt of this model's provider counts, so a restart does not start over."""
        return Calibration.from_dict(self.store.load_calibration(self.session, model))

    def save_calibration(self) -> None:
        """Keep what the provider's counts taught us: one small write per turn at most, none if nothing new."""
        calibration = self.occupancy.calibration
        if calibration.dirty:
            self.store.save_calibration(self.session, self.counter.model, calibration.to_dict())
            calibration.dirty = False

    def account(self, prompt: Prompt, turn: int, step: int) -> int:
        """The request about to go out: its calibrated estimate, and a record of what it holds."""
        estimate = self.occupancy.estimate(prompt)
        self.records.add(prompt, self.occupancy, turn, step)
        return estimate

    def answered(self, real: int | None, estimate: int, cached_tokens: int) -> None:
        """The provider's count of that request (None: it reported none), and the bill: the calibration
        learns, and the cost and the record take the figures."""
        self.occupancy.observe(real)
        billed = real if real is not None else estimate
        self.cost.add(billed, cached_tokens)
        self.records.answered(real, billed, self.cost.last_cached_tokens)

    def usage(self, prompt: Callable[[], Prompt], context_window: int, messages: int) -> dict[str, Any]:
        """The occupancy snapshot ``context.usage`` carries and ``%monad status`` reads."""
        occupancy = self.occupancy.current(prompt)
        return {
            "occupancy": occupancy,
            "context_window": context_window,
            "fraction": round(occupancy / context_window, 4) if context_window else 0.0,
            "exact": self.occupancy.last_real is not None,
            "reclaimed": self.occupancy.reclaimed,
            "messages": messages,
            **self.cost.snapshot(),
        }

    def forget(self) -> None:
        """The conversation was forgotten: the counts start over."""
        self.occupancy.reset()
        self.records.clear()
