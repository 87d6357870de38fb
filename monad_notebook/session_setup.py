"""What a configuration puts in force, built whole before any of it is (a reload is all or nothing).

The session follows agents.json through a :class:`FollowedConfig`, which prepares a :class:`Setup`
from each new config; only when every part builds (the models, the token counter, the redaction
stage with its hook and patterns, the tools, the prompt's frame) does the session push them to
its parts, so a bad edit to agents.json changes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from monad_notebook.agent.instructions import SYSTEM_PROMPT
from monad_notebook.agent.tools.base import Tool
from monad_notebook.agent.tools.mcp import McpServers
from monad_notebook.agent.tools.registry import configured_tools
from monad_notebook.config import SCRIPTED_DEMO_MODEL, Config, ConfigWatcher
from monad_notebook.config_errors import working_dir
from monad_notebook.context.lossless.stage import LosslessStage
from monad_notebook.context.occupancy.cost import pricing_for
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.settings import CascadeSettings
from monad_notebook.context.window import Frame
from monad_notebook.demo import DemoModel
from monad_notebook.errors import ConfigError
from monad_notebook.images.vision import sees_images
from monad_notebook.provider import ChatModel, OpenAIChatModel, context_window_for


@dataclass(frozen=True)
class Setup:
    """Everything a configuration puts in force, built before any of it is."""

    config: Config
    model: ChatModel
    fast_model: ChatModel  # memory promotion; the summaries too, unless it is the scripted demo
    tools: dict[str, Tool]
    cascade: CascadeSettings

    @property
    def writer(self) -> ChatModel | None:
        """The fast tier where it is a real model, which writes summaries and recall's rewrites."""
        return self.cascade.summarizer_model


def build_model(config: Config, tier: str = "main") -> ChatModel:
    """The configured model of a tier; ``scripted-demo`` is the labelled scripted demo model."""
    spec = config.models.main if tier == "main" else config.models.resolved_fast()
    if spec.model == SCRIPTED_DEMO_MODEL:
        return DemoModel(context_window=spec.context_window or 32_000)
    return OpenAIChatModel(
        spec.model,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        context_window=spec.context_window,
        timeout=spec.timeout_seconds,
        max_retries=spec.max_retries,
        temperature=spec.temperature,
        max_output_tokens=spec.max_output_tokens,
    )


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
    fast_model: ChatModel | None = None,
    counter: TokenCounter | None = None,
    extra_tools: list[Tool],
    root: str | Path | None,
    mcp: McpServers | None = None,
    notebook_open: bool = False,
) -> Setup:
    """Everything ``cfg`` asks for; ``model``, ``fast_model`` and ``counter`` are kept when given (and still right).

    The notebook tools are offered only where a notebook is open (``notebook_open``).

    A counter for the same model is kept, so a reload keeps the learned calibration. The user's
    MCP servers (``mcp``) are started here, when the session first needs its tools; a server that
    does not start leaves its tools out and says why in ``%monad status``.
    """
    model = model or build_model(cfg)
    fast_model = fast_model or build_model(cfg, "fast")
    check_root(cfg, root)
    if counter is None or counter.model != model.name:
        counter = TokenCounter(model.name)
    sees = sees_images(cfg.models.main.vision, model.name, declared=getattr(model, "vision", None))
    tools = configured_tools(
        python_approval=cfg.tools.python.approval,
        persist_raw=cfg.context.tool_output.persist_raw,
        recall_on=cfg.context.recall.enabled,
        retrieval_on=cfg.context.retrieval.enabled,
        sees_images=sees,
        notebook_approval=cfg.tools.notebook.approval if notebook_open else "off",
        extra=[*(mcp.tools(cfg.mcp_servers) if mcp is not None else []), *extra_tools],
    )
    window = cfg.models.main.context_window or getattr(model, "context_window", None)
    lossless = LosslessStage(cfg.context, counter)
    cascade = CascadeSettings(
        context=cfg.context,
        agent=cfg.agent.name,
        lossless=lossless,
        counter=counter,
        frame=Frame(
            lossless.redactor.redact(cfg.agent.system_prompt).text if cfg.agent.system_prompt else SYSTEM_PROMPT,
            [t.schema() for t in tools.values()],
            image_detail=cfg.context.images.detail if sees else None,
        ),
        pricing=pricing_for(cfg.models.main),
        context_window=window or context_window_for(model.name, None),
        summarizer_model=None if cfg.models.resolved_fast().model == SCRIPTED_DEMO_MODEL else fast_model,
    )
    return Setup(config=cfg, model=model, fast_model=fast_model, tools=tools, cascade=cascade)


class FollowedConfig:
    """agents.json as one session follows it: each version prepared whole, or refused with one warning.

    ``model`` / ``fast_model`` fix the main and fast tiers (tests, demos) whatever the config says.
    """

    def __init__(
        self,
        watcher: ConfigWatcher,
        *,
        mcp: McpServers,
        model: ChatModel | None,
        fast_model: ChatModel | None,
        extra_tools: list[Tool],
        root: str | Path | None,
        notebook_open: bool = False,
    ) -> None:
        self.watcher = watcher
        self.root = root
        self.notebook_open = notebook_open
        self._fixed = {"main": model, "fast": fast_model}
        self._extra_tools = extra_tools
        self.mcp = mcp  # the session's MCP servers, whose tools each prepared version offers
        self._opened: tuple[str | None, dict[str, str]] | None = None  # the store's keys when it was opened
        self._warned: tuple[str | None, dict[str, str]] | None = None

    def first(self) -> Setup:
        """The configuration the session starts with; a bad one raises, naming its file."""
        try:
            setup = prepare_setup(
                self.watcher.current(),
                model=self._fixed["main"],
                fast_model=self._fixed["fast"],
                extra_tools=self._extra_tools,
                root=self.root,
                mcp=self.mcp,
                notebook_open=self.notebook_open,
            )
        except ConfigError as error:
            raise ConfigError(self.watcher.blame(error)) from None
        self._opened = self._warned = store_settings(setup.config)
        return setup

    def changed(self, old: Config, model: ChatModel, counter: TokenCounter) -> tuple[Setup | None, str | None]:
        """The new configuration to put in force (None if unchanged or refused), and a warning to show.

        The model in use is kept while ``models.main`` is unchanged, and the counter for the same
        model, so a reload keeps the learned calibration.
        """
        config = self.watcher.current()
        warning = self.watcher.pop_warning()
        if config is old:
            return None, warning
        keep = old.models.main == config.models.main
        try:
            setup = prepare_setup(
                config,
                model=self._fixed["main"] or (model if keep else None),
                fast_model=self._fixed["fast"],
                counter=counter,
                extra_tools=self._extra_tools,
                root=self.root,
                mcp=self.mcp,
                notebook_open=self.notebook_open,
            )
        except ConfigError as error:
            return None, self.watcher.reject(config, error)
        return setup, warning

    def store_warning(self, config: Config, uri: str) -> str | None:
        """``store.uri`` and ``store.storageOptions`` are read when the store is opened, never mid-session.

        Switching databases under a running session would swap its history for another one, so a
        change needs a restart: said once per change.
        """
        wanted = store_settings(config)
        if wanted == self._warned:
            return None
        self._warned = wanted
        if wanted == self._opened or self._opened is None:
            return None
        key = "store.uri" if wanted[0] != self._opened[0] else "store.storageOptions"
        return f"{key} changed: this kernel keeps the database at {uri}; restart it to switch"
