"""The lossy stage's thresholds: when the window's pressure calls for a compaction, and how urgently.

Crossing ``softFraction`` starts a background compaction (one per session at a time) and the turn
goes on at full width; at or over ``hardFraction`` the step waits for the compaction in flight,
then compacts synchronously if still over (``CompactionPolicy.relieve``). The hard figure is
``Occupancy.guard_tokens``: never below the provider's last real count plus what was appended
since, so an estimate that is off cannot let a request through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from monad_notebook.config_schema import SummarizeConfig
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.prompt import Prompt

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
