"""The lossy stage's thresholds: when the window's pressure calls for a compaction, and how urgently.

Crossing ``softFraction`` starts a background compaction (one per session at a time) and the turn
goes on at full width; at or over ``hardFraction`` the step waits for the compaction in flight,
then compacts synchronously if still over (``Cascade._relieve``). The hard figure is
``Occupancy.guard_tokens``: never below the provider's last real count plus what was appended
since, so an estimate that is off cannot let a request through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from monad_notebook import events as ev
from monad_notebook.config_schema import SummarizeConfig
from monad_notebook.context.compaction.summarize import LLMSummarizer, Summarizer
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.prompt import Prompt
from monad_notebook.events import Emit
from monad_notebook.provider import ChatModel

Pressure = Literal["soft", "hard"] | None


def pressure(cfg: SummarizeConfig, occupancy: Occupancy, prompt: Callable[[], Prompt], context_window: int) -> Pressure:
    """``"hard"`` at or over the hard threshold (on the figure that cannot lag), ``"soft"`` over the soft one."""
    if not cfg.enabled:
        return None
    if occupancy.guard_tokens(prompt()) >= cfg.hard_fraction * context_window:
        return "hard"
    if occupancy.current(prompt) >= cfg.soft_fraction * context_window:
        return "soft"
    return None


def summarizer(fast_model: ChatModel | None, emit: Emit) -> Summarizer | None:
    """The fast tier writes summaries, each rejected draft told as an event; None (the scripted demo, which
    cannot): the extractive summary."""
    if fast_model is None:
        return None

    def rejected(why: str, attempt: int) -> None:
        then = "retrying" if attempt == 1 else "using the extractive summary"
        emit(ev.SUMMARY_REJECTED, model=fast_model.name, reason=why, attempt=attempt, then=then)

    return LLMSummarizer(fast_model, on_rejected=rejected)
