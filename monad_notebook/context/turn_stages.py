"""The per-turn stages: memory facts, the recitation anchor, retrieval reinjection.

They append to the prompt, so they run once per turn (never per step): :meth:`TurnStages.blocks`
returns the turn's blocks, which the window holds until the next turn replaces them (a related-context
block stays on its message longer, while that keeps the provider's cache: ``Window.set_blocks``).
The memory and recall they read are the session's services, handed to them.
"""

from __future__ import annotations

from collections.abc import Callable

from monad_notebook.config import ContextConfig
from monad_notebook.context.recall.service import RecallService
from monad_notebook.context.recitation import plan_body
from monad_notebook.context.window import Window
from monad_notebook.memory import MemoryService, visible_scopes
from monad_notebook.messages import Message


class TurnStages:
    def __init__(self, memory: MemoryService, recall: RecallService) -> None:
        self.memory = memory
        self.recall = recall
        self.settings = ContextConfig()
        self.agent: str | None = None  # the memory scope's owner (``agent.name``); None means global

    def reconfigure(self, settings: ContextConfig, agent: str | None) -> None:
        self.settings, self.agent = settings, agent

    def blocks(self, window: Window, user: Message, count_text: Callable[[str], int]) -> dict[str, str]:
        """This turn's injected blocks: memory facts (within their budget by ``count_text``), the plan anchor,
        related context."""
        cfg = self.settings
        blocks: dict[str, str] = {}
        memory = self.memory.prompt_block(visible_scopes(self.agent), cfg.memory.prompt_budget_tokens, count_text)
        if memory:
            blocks["memory"] = memory
        if cfg.recitation.enabled and window.summary is not None:
            plan = plan_body(window.summary.text)
            if plan:
                blocks["plan"] = plan
        related = self.recall.related(user)
        if related:
            blocks["related_context"] = related
        return blocks
