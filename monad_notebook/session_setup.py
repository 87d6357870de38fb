"""What a configuration puts in force, built whole before any of it is (a reload is all or nothing).

The session prepares a :class:`Setup` from a new config; only when every part builds (the model,
the token counter, the redaction stage with its hook and patterns, the tools, the prompt's
frame) does it swap them in, so a bad edit to agents.json changes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from monad_notebook.agent.instructions import SYSTEM_PROMPT
from monad_notebook.agent.models import build_model
from monad_notebook.agent.tools.base import Tool
from monad_notebook.agent.tools.registry import configured_tools
from monad_notebook.config import Config
from monad_notebook.config_errors import working_dir
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.window import Frame
from monad_notebook.errors import ConfigError
from monad_notebook.provider import ChatModel, context_window_for


@dataclass(frozen=True)
class Setup:
    """Everything a configuration puts in force, built before any of it is."""

    config: Config
    model: ChatModel
    counter: TokenCounter
    lossless: LosslessStage
    tools: dict[str, Tool]
    frame: Frame
    context_window: int


def check_root(cfg: Config, explicit: str | Path | None) -> None:
    """``tools.files.root`` must name a directory (an explicit ``root=`` argument wins over it)."""
    root = cfg.tools.files.root
    if explicit is None and root is not None and not os.path.isdir(os.path.expanduser(root)):
        here = working_dir()
        shown = here / Path(root).expanduser() if here is not None else root
        raise ConfigError(f"tools.files.root names {shown}, which is not a directory: create it or change the key")


def store_settings(cfg: Config) -> tuple[str | None, dict[str, str]]:
    """What the store was opened with: the keys that cannot change under an open store."""
    return cfg.store.uri, dict(cfg.store.storage_options)


def prepare_setup(
    cfg: Config,
    *,
    model: ChatModel | None,
    counter: TokenCounter | None = None,
    extra_tools: list[Tool],
    root: str | Path | None,
) -> Setup:
    """Everything ``cfg`` asks for; ``model`` and ``counter`` are kept when given (and still right).

    A counter for the same model is kept, so a reload keeps the learned calibration.
    """
    model = model or build_model(cfg)
    check_root(cfg, root)
    if counter is None or counter.model != model.name:
        counter = TokenCounter(model.name)
    tools = configured_tools(
        python_approval=cfg.tools.python.approval,
        persist_raw=cfg.context.tool_output.persist_raw,
        recall_on=cfg.context.recall.enabled,
        extra=extra_tools,
    )
    window = cfg.models.main.context_window or getattr(model, "context_window", None)
    return Setup(
        config=cfg,
        model=model,
        counter=counter,
        lossless=LosslessStage(cfg.context, counter),
        tools=tools,
        frame=Frame(cfg.agent.system_prompt or SYSTEM_PROMPT, [t.schema() for t in tools.values()]),
        context_window=window or context_window_for(model.name, None),
    )
