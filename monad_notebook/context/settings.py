"""What a configuration gives the cascade: built whole before it is in force (``session_setup.py``), so that a
reload is all or nothing, and pushed to the cascade (``Cascade.reconfigure``), which hands each stage its part."""

from __future__ import annotations

from dataclasses import dataclass

from monad_notebook.config import ContextConfig
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.cost import CachePricing
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.window import Frame
from monad_notebook.provider import ChatModel


@dataclass(frozen=True)
class CascadeSettings:
    context: ContextConfig
    agent: str | None  # whose memory scope (``agent.name``); None: global
    lossless: LosslessStage
    counter: TokenCounter
    frame: Frame
    pricing: CachePricing
    context_window: int
    summarizer_model: ChatModel | None  # writes the summaries; None: the extractive summary does
