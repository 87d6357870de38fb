"""Session: one named conversation. The parts do the work (``Window``, ``Cascade``, ``ToolRunner``, ``Turn``);
the session owns the services they share (memory, recall, the workspace record), pushes each configuration in
force to them, and is the public API."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monad_notebook.agent.loop import Reply, Turn
from monad_notebook.agent.text_calls import TextCallReader, tally
from monad_notebook.agent.tools.base import Tool, ToolOutput
from monad_notebook.agent.tools.mcp import McpServers
from monad_notebook.agent.tools.mcp_approval import turned_off
from monad_notebook.agent.tools.runner import ToolRunner, ToolServices
from monad_notebook.approval.asking import AskIn, notebook_gate
from monad_notebook.branching import branch_session, check_session_name
from monad_notebook.config import Config, ConfigWatcher, watch_config
from monad_notebook.context.cascade import Cascade
from monad_notebook.context.compaction.handoff import seed_handoff
from monad_notebook.context.compaction.ledger import folded_ledger
from monad_notebook.context.recall.service import RecallService
from monad_notebook.context.window import Window
from monad_notebook.errors import UsageError
from monad_notebook.events import ERROR, RESET, TEXT_CALLS, EventBus, EventLog
from monad_notebook.foreground import FOREGROUND
from monad_notebook.memory import MemoryPromotion, MemoryService, resolve_scope
from monad_notebook.messages import Message, ToolCall
from monad_notebook.notebook.activity import NotebookActivity
from monad_notebook.notebook.agent_runs import AGENT_RUNS
from monad_notebook.provider import ChatModel, TextCallback
from monad_notebook.provider.local_embedder import Embedder, make_embedder
from monad_notebook.rewind import KernelRewind, RestoreReport
from monad_notebook.rewind.history import earlier_inputs
from monad_notebook.rewind.rebuild import plan_rebuild
from monad_notebook.rewind.replay import RebuildReport, run_plan
from monad_notebook.session_setup import FollowedConfig, Setup
from monad_notebook.store.base import SessionRecord, Store, Summary, ensure_session
from monad_notebook.store.lance import open_store
from monad_notebook.store.lease import TurnLease
from monad_notebook.workspace.record import Interrupted, WorkspaceRecord

if TYPE_CHECKING:
    from monad_notebook.notebook.frontend import NotebookFrontend


class Session:
    """One named conversation. ``Session("eda").ask("...")`` runs a turn and returns a Reply.

    Without ``config`` it reads agents.json as ``%%monad`` does (``$MONAD_CONFIG``, then ``./agents.json``,
    then ``$MONAD_HOME/agents.json``) and follows its changes; a Config, a path or a ConfigWatcher is used
    instead. ``model`` / ``fast_model`` / ``embedder`` fix the main and fast tiers and recall's embedder
    (tests, demos) whatever the configuration says. ``extra_tools`` join the configured tools (one of the
    same name replaces the built-in one). ``notebook``: the open notebook the notebook tools work in.
    ``approve(text)`` answers "run this code?" (True, False, or None: nobody can answer); any other
    question comes with ``subject=`` ("mcp:<server>", "tool:<name>", and "text:..." for a call read
    from the model's text, which is asked about whatever the approval setting). ``asker`` instead says
    where a notebook's kernel asks (the session builds its approval gate: "allow for session" kept with
    it, decisions as its events); the session ties ``notebook`` to its events and settings itself.
    """

    def __init__(
        self,
        name: str = "default",
        *,
        config: Config | ConfigWatcher | str | os.PathLike[str] | None = None,
        store: Store | None = None,
        model: ChatModel | None = None,
        fast_model: ChatModel | None = None,
        shell: Any = None,
        namespace: dict[str, Any] | None = None,
        root: str | Path | None = None,
        approve: Callable[..., bool | None] | None = None,
        extra_tools: list[Tool] | None = None,
        embedder: Embedder | None = None,
        notebook: NotebookFrontend | None = None,
        asker: AskIn | None = None,
    ) -> None:
        check_session_name(name)
        if asker is not None and approve is not None:
            raise UsageError("give the session either approve or asker: approve answers, asker says where to ask")
        self.name = name
        self.notebook = notebook
        self.watcher = watch_config(config)
        self.mcp = McpServers()  # the user's MCP servers: this session's, kept running across reloads while unchanged
        self.settings = FollowedConfig(
            self.watcher,
            mcp=self.mcp,
            model=model,
            fast_model=fast_model,
            extra_tools=list(extra_tools or []),
            root=root,
            notebook_open=notebook is not None,
        )
        setup = self.settings.first()  # before anything is stored: no half a config
        self.config, self.model = setup.config, setup.model
        self.store = store if store is not None else open_store(self.config)
        self.shell = shell
        self.events = EventBus()
        self.event_log = EventLog(name, self.events, self.store.append_events)  # the one door of its events
        self.lease = TurnLease(self.store.claims, name)
        ensure_session(self.store, name, self.model.name)
        self.window = Window(name)
        self.window.load(self.store)
        self.memory = MemoryService(self.store, events=self.event_log)
        self.recall = RecallService(self.window, self.store, make_embedder if embedder is None else lambda _: embedder)
        self.promotion = MemoryPromotion(self.memory)
        user_ns = namespace if namespace is not None else (shell.user_ns if shell is not None else {})
        self.workspace = WorkspaceRecord(self.store.workspace, name, user_ns, shell, root, notify=self.event_log.emit)
        self.workspace.interrupted = interrupted(self.window)
        self.rewind = KernelRewind(
            self.store.rewind, name, user_ns, shell, root, turn=lambda: self.window.turn, workspace=self.workspace
        )
        self.activity = NotebookActivity(shell)
        self.activity.notebook = notebook
        self.cascade = Cascade(
            window=self.window, store=self.store, events=self.event_log,
            lease=self.lease, counter=setup.cascade.counter, memory=self.memory, promotion=self.promotion,
            recall=self.recall, workspace=self.workspace, activity=self.activity,
        )  # fmt: skip
        self.services = ToolServices(
            name, user_ns, shell, self.store, self.memory, self.recall, approve, notebook, root, self.workspace,
            self.rewind,
        )  # fmt: skip
        self._apply(setup)
        if notebook is not None:
            tools = lambda: self.config.tools  # noqa: E731 - read at each use: the configuration may change
            notebook.attach(
                emit=self.emit, config=lambda: tools().notebook, timeout=lambda: tools().python.approval_timeout_seconds
            )
        if asker is not None:
            self.approve = notebook_gate(self, shell, rich=asker.rich, panel=lambda: asker.panel(self.name))

    # --- configuration -------------------------------------------------------------

    def _apply(self, setup: Setup) -> None:
        """Put a prepared configuration in force, all at once, pushing to each part what it follows."""
        config, redactor = setup.config, setup.cascade.lossless.redactor
        self.events.redactor = redactor  # first: every event from here on passes it
        self.config, self.model, self.context_window = config, setup.model, setup.cascade.context_window
        self.memory.redactor = redactor
        self.promotion.reconfigure(config.context.memory_promotion, setup.fast_model)
        self.recall.reconfigure(config, setup.writer)
        self.cascade.reconfigure(setup.cascade)
        readable = "read_tool_output" in setup.tools
        self.workspace.reconfigure(config.context.workspace.enabled, redactor, calls_readable=readable)
        self.activity.reconfigure(config.context.workspace.enabled, redactor)
        self.rewind.reconfigure(config.rewind, redactor, self.store.uri)
        self.runner = ToolRunner(setup.tools, config, self.services, redactor)
        self.store.optimize_every = config.store.optimize_every_writes
        warning = self.settings.store_warning(config, self.store.uri)
        if warning:
            self.emit(ERROR, message=warning)

    def reload_config(self) -> None:
        """Pick up agents.json changes (hot reload): all of the new configuration, or none of it and one warning."""
        setup, warning = self.settings.changed(self.config, self.model, self.cascade.meter.counter)
        if setup is not None:
            self._apply(setup)
        if warning:
            self.emit(ERROR, message=warning)

    @property
    def tools(self) -> dict[str, Tool]:
        return self.runner.tools

    @property
    def approve(self) -> Callable[..., bool | None] | None:
        """Who answers "run this code?" (the notebook's gate, set by the magic); None: nobody can answer."""
        return self.services.approve

    @approve.setter
    def approve(self, gate: Callable[..., bool | None] | None) -> None:
        self.services.approve = gate

    @property
    def namespace(self) -> dict[str, Any]:
        """The user namespace the agent's code runs in."""
        return self.services.namespace

    @namespace.setter
    def namespace(self, namespace: dict[str, Any]) -> None:
        self.services.namespace = self.workspace.namespace = self.rewind.namespace = namespace

    @property
    def summary(self) -> Summary | None:
        """The rolling summary the window starts from (None before the first compaction)."""
        return self.window.summary

    @property
    def turn(self) -> int:
        return self.window.turn

    @property
    def step(self) -> int:
        return self.window.step

    @property
    def memory_scope(self) -> str:
        """Where facts the user saves go: the agent's scope (``agent.name``), else global."""
        return resolve_scope(self.config.agent.name)

    @property
    def prompt_records(self) -> list[dict[str, Any]]:
        """What the model received at recent steps, part by part (the inspector reads it)."""
        return self.cascade.meter.records.items

    def execute_tool(self, call: ToolCall) -> ToolOutput:
        """Run one tool call as the agent's would run (its result is not stored)."""
        return self.runner.run(call, sees_images=self.window.frame.image_detail is not None)

    def emit(self, kind: str, **data: Any) -> None:
        """Tell listeners now; persisted kinds are written with the step, or at once from a worker thread."""
        self.cascade.emit(kind, **data)

    def flush_events(self) -> None:
        """Write the pending events; if the write fails they stay pending for the next flush."""
        self.event_log.flush()

    # --- public API ----------------------------------------------------------------

    def ask(self, text: str, *, on_text: TextCallback | None = None) -> Reply:
        """Run one turn: the model answers ``text``, calling tools as it needs. What the user decided on the agent's
        proposals since it was last told comes first, from a cell or from Python alike."""
        if not text.strip():
            raise UsageError("the message is empty: write what you want the agent to do")
        AGENT_RUNS.refuse_turn()  # a cell the agent queued never starts a turn
        if self.notebook is not None:
            text = self.notebook.with_decisions(text)
        with FOREGROUND.held(), self.lease.hold():  # set aside while the model answers, tools run or the lease waits
            self.cascade.catch_up()
            with self.cascade.turn():
                self.reload_config()
                off = partial(turned_off, self.config.mcp_servers)
                reader = TextCallReader(self.tools, self.config.models.main.text_tool_calls, turned_off=off)
                turn = Turn(self.cascade, self.runner, self.model, max_steps=self.config.agent.max_steps)
                return turn.run(text, on_text, text_calls=reader)

    def occupancy(self) -> int:
        """Tokens the prompt holds now (effectiveInputTokens): the provider's last count, else the estimate."""
        return self.cascade.occupancy_now()

    def usage_snapshot(self) -> dict[str, Any]:
        return self.cascade.usage()

    def status(self) -> dict[str, Any]:
        """What ``%monad status`` says: the session, its window and summary, recall's index, the occupancy, the
        workspace record, the MCP servers, the calls read from text."""
        summary = self.window.summary
        return {
            "session": self.name,
            "model": self.model.name,
            "config": str(self.watcher.source) if self.watcher.source else "(defaults)",
            "stored_messages": self.store.count_messages(self.name),
            "window_messages": len(self.window.messages),
            "summary": bool(summary and summary.text),
            **self.recall.indexing(),
            **self.cascade.usage(),
            "images": self.window.frame.image_detail or "",
            **self.workspace.status(),
            "mcp_servers": self.mcp.statuses(),
            "text_calls": tally(
                self.store.list_events(self.name, kind=TEXT_CALLS), self.config.models.main.text_tool_calls
            ),
        }

    def compact(self) -> bool:
        """Fold the window into the rolling summary now, whatever the threshold (``%monad compact``)."""
        with self.lease.hold():
            self.cascade.catch_up()
            try:
                return self.cascade.compact()
            finally:
                self.flush_events()

    def reset(self) -> None:
        """Forget this session's conversation (its record stays); listeners hear ``session.reset``."""
        self.cascade.discard_pending()
        with self.lease.hold():
            self.store.reset_session(self.name)
        self.cascade.forget()
        self.rewind.forget()
        self.emit(RESET)
        self.flush_events()

    def branch(self, name: str, *, before_turn: int | None = None) -> SessionRecord:
        """Copy this session (messages, summary, spilled outputs) into ``name``; with ``before_turn``, as it was just
        before that turn began (``branching.clone_session``)."""
        return branch_session(
            self.store, self.name, name, settle=self.cascade.wait, before_turn=before_turn, fold=folded_ledger
        )

    def handoff(self, name: str) -> SessionRecord:
        """A fresh session seeded with this one's summary (compacting first if there is none yet)."""
        if self.store.get_session(name) is not None:
            raise UsageError(f"session {name!r} already exists; pick a new name for the handoff")
        if self.window.summary is None or not self.window.summary.text:
            self.compact()
        return seed_handoff(self.store, self.name, name, self.window.summary, self.model.name)

    def history(self) -> list[Message]:
        """The whole stored transcript (original texts), for inspection; not used per turn."""
        return self.store.load_messages(self.name)

    def rebuild(self) -> RebuildReport:
        """Rerun the code that made what a kernel restart lost (``%monad rebuild``): one approval, each step said."""
        history, why = earlier_inputs(self.shell, self.rewind.journal.kernels)
        lost = self.workspace.live()[2]
        root = self.rewind.root_now()
        plan = plan_rebuild(self.store, self.name, lost, self.namespace, history, root=root, redact=self.cascade.redact)
        if why and any(entry.made_by.startswith("cell ") for entry in lost):
            plan.notes.append(why)
        report = run_plan(plan, self.runner.context, self.namespace, self.rewind, self.workspace)
        self.workspace.save()
        return report

    def rewind_kernel(self, before_turn: int) -> RestoreReport:
        """The kernel's side of a rewind: every file and name turn ``before_turn`` and the turns after it changed, put
        back as it was before it (the conversation's side is the caller's). The report says what was not."""
        return self._restored(self.rewind.restore(before_turn))

    def undo_rewind(self, epoch: int) -> RestoreReport:
        """Undo the rewind of journal epoch ``epoch`` (its report's): what it moved, wrote or removed goes back as it
        was just before it."""
        return self._restored(self.rewind.restore_to(epoch))

    def _restored(self, report: RestoreReport) -> RestoreReport:
        """The workspace record sees what a restore changed, each name given back its earlier value's maker."""
        self.workspace.take(f"restore r{report.epoch}")
        self.workspace.credit(report.makers)
        self.workspace.save()
        return report

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Let background work land: a compaction in flight and pending embeddings."""
        self.cascade.wait(timeout)

    def close(self) -> None:
        """Let a compaction in flight land, write what is pending, and stop the user's MCP servers."""
        self.cascade.close()
        self.mcp.close()


def interrupted(window: Window) -> Interrupted | None:
    """The calls a kernel that died left running in this session, for the record to give the files they wrote."""
    cut = window.unanswered()
    if cut is None:
        return None
    assistant, calls = cut
    return Interrupted(" or ".join(call.id for call in calls), assistant.turn, assistant.created_at)
