"""Session: one agent conversation, its window, and the wiring of config, store, model and tools.

The session owns the in-memory window (the rolling summary plus the messages after the
durable boundary), so a turn never reads the whole transcript.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from monad_notebook import events as ev
from monad_notebook.agent.loop import Reply, Turn
from monad_notebook.agent.model import ChatModel, OpenAIChatModel, TextCallback, context_window_for
from monad_notebook.agent.tools.base import Tool, ToolContext, ToolOutput
from monad_notebook.agent.tools.memory import TOOLS as memory_tools
from monad_notebook.agent.tools.recovery import TOOLS as recovery_tools
from monad_notebook.agent.tools.registry import default_tools, run_tool
from monad_notebook.config import Config, ConfigWatcher
from monad_notebook.context.compaction import answered_calls_only
from monad_notebook.context.lossless import LosslessStage
from monad_notebook.context.lossy import LossyStage, emit_handoff_if_heavy
from monad_notebook.context.prompt import Prompt, assemble, count_parts
from monad_notebook.context.tokens import TokenCounter, effective_input_tokens
from monad_notebook.context.turn_stages import TurnStages
from monad_notebook.errors import StoreError, UsageError
from monad_notebook.events import Event, EventBus
from monad_notebook.memory import MemoryService
from monad_notebook.messages import Message, Role, ToolCall
from monad_notebook.store.base import SessionRecord, Store, Summary
from monad_notebook.store.lance import LanceStore, default_db_uri
from monad_notebook.store.lease import TurnLease

SYSTEM_PROMPT = """\
You are monad, a data-science assistant working inside the user's Jupyter kernel.
You can run Python in the user's namespace, inspect their variables and DataFrames,
read files under the notebook's working directory and look at recent cells.
Prefer looking at the data over guessing. Keep answers short and in Markdown; quote
file paths, variable and column names exactly. When a tool result was cleared or
truncated to save context, use read_tool_output to read it back instead of re-running
a tool; search_tool_outputs finds an earlier output by an exact text when its id is gone."""

PROMPT_RECORDS_KEPT = 50


def open_store(config: Config) -> Store:
    uri = config.store.uri or default_db_uri()
    return LanceStore(
        uri, storage_options=dict(config.store.storage_options), optimize_every=config.store.optimize_every_writes
    )


def build_model(config: Config, tier: str = "main") -> ChatModel:
    """The configured model of a tier; ``scripted-demo`` is the labelled scripted demo model."""
    spec = config.models.main if tier == "main" else config.models.resolved_fast()
    if spec.model == "scripted-demo":
        from monad_notebook.demo import DemoModel

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


class Session:
    """One named conversation. ``Session("eda").ask("...")`` runs a turn and returns a Reply."""

    def __init__(
        self,
        name: str = "default",
        *,
        config: Config | ConfigWatcher | None = None,
        store: Store | None = None,
        model: ChatModel | None = None,
        shell: Any = None,
        namespace: dict[str, Any] | None = None,
        root: str | Path | None = None,
        approve: Callable[[str], bool | None] | None = None,
    ) -> None:
        if not name or len(name) > 200 or any(c in name for c in "\x00\n\r"):
            raise UsageError("a session name must be 1-200 characters without newlines")
        self.name = name
        self.watcher = config if isinstance(config, ConfigWatcher) else ConfigWatcher.fixed(config or Config())
        self.config = self.watcher.current()
        self.store = store if store is not None else open_store(self.config)
        self._fixed_model = model
        self.model = model or build_model(self.config)
        self.shell = shell
        self.namespace = namespace if namespace is not None else (shell.user_ns if shell is not None else {})
        self._root = root
        self.approve = approve
        self.events = EventBus()
        self._pending_events: list[Event] = []
        self.lease = TurnLease(self.store, name)
        self.record = self.store.get_session(name) or self._create_record()
        self._load_window()
        self.turn = max((m.turn for m in self.window), default=0)
        self.step = 0
        self.last_prompt_tokens: int | None = None
        self.last_estimate = 0
        self.reclaimed_tokens = 0
        self.turn_blocks: dict[str, str] = {}
        self.prompt_records: list[dict[str, Any]] = []
        self._events_lock = threading.Lock()
        self._configure()
        self.lossy = LossyStage(self, after_compact=self._after_compact)
        self.stages = TurnStages(self)

    def _create_record(self) -> SessionRecord:
        """Create this session's record; another kernel may have created it a moment ago."""
        try:
            return self.store.create_session(self.name, model=self.model.name)
        except StoreError:
            record = self.store.get_session(self.name)
            if record is None:
                raise
            return record

    # --- configuration -------------------------------------------------------------

    def _configure(self) -> None:
        cfg = self.config
        if self._fixed_model is None and self.model.name != cfg.models.main.model:
            self.model = build_model(cfg)
        self.context_window = cfg.models.main.context_window or getattr(self.model, "context_window", None)
        self.context_window = self.context_window or context_window_for(self.model.name, None)
        if getattr(self, "counter", None) is None or self.counter.model != self.model.name:
            self.counter = TokenCounter(self.model.name)  # a reload keeps the learned calibration
            self._token_cache: dict[tuple[str, bool], int] = {}
            self._last_prompt: tuple[tuple[Any, ...], Prompt] | None = None  # counts of the old tokenizer
        self.lossless = LosslessStage(cfg.context, self.counter)
        tools = [*default_tools(python_approval=cfg.tools.python.approval), *memory_tools]
        if cfg.context.tool_output.persist_raw:
            tools.extend(recovery_tools)
        self.tools: dict[str, Tool] = {t.name: t for t in tools}
        if hasattr(self, "stages"):
            self.lossy.reconfigure()
            self.stages.reconfigure()

    def reload_config(self) -> None:
        """Pick up agents.json changes from disk (hot reload); a broken file keeps the last good one."""
        config = self.watcher.current()
        warning = self.watcher.pop_warning()
        if warning:
            self.emit(ev.ERROR, message=warning)
        if config is not self.config:
            self.config = config
            self._configure()

    @property
    def root(self) -> Path:
        return Path(self._root or self.config.tools.files.root or os.getcwd()).expanduser().resolve()

    # --- window --------------------------------------------------------------------

    def _load_window(self) -> None:
        self.summary: Summary | None = self.store.load_summary(self.name)
        boundary = self.summary.boundary_seq if self.summary else -1
        stored = self.store.load_messages(self.name, after_seq=boundary)
        self.window: list[Message] = answered_calls_only(stored)
        self.next_seq = (stored[-1].seq if stored else boundary) + 1

    def _catch_up(self) -> None:
        """Reload the window if another kernel wrote to this session since this one last looked.

        Called holding the turn lease, so numbering continues from the store's newest message
        and the model sees the other kernel's turns; two small reads when nothing changed.
        """
        self.lossy.apply_pending()
        newer = self.store.load_messages(self.name, after_seq=self.next_seq - 1)
        known = (self.summary.created_at, self.summary.boundary_seq) if self.summary else None
        if not newer and self.store.summary_head(self.name) == known:
            return
        self._load_window()
        self.turn = max([self.turn, *(m.turn for m in [*newer, *self.window])])
        self.last_prompt_tokens = None
        self.last_estimate = 0

    def new_message(self, role: Role, content: str, *, tool_calls: list[ToolCall] | None = None) -> Message:
        message = Message(
            role=role,
            content=content,
            session=self.name,
            seq=self.next_seq,
            turn=self.turn,
            step=self.step,
            tool_calls=list(tool_calls or []),
        )
        self.next_seq += 1
        return message

    def tool_result(self, call: ToolCall, text: str, *, redacted: bool = False) -> Message:
        """The tool message for ``call``: redacted, truncated, its full text queued for spill."""
        message = self.new_message("tool", "")
        message.tool_call_id = call.id
        message.name = call.name
        self.lossless.process_result(message, text, redacted=redacted)
        return message

    def commit_step(self, messages: list[Message]) -> None:
        """Persist a step: one write per table (messages, raw outputs, events)."""
        spilled = self.lossless.take_spill()
        if spilled:
            self.store.save_raw_outputs(self.name, spilled)
        self.store.append_messages(messages)
        self.window.extend(messages)
        self.flush_events()
        self.stages.index(messages)

    # --- stages --------------------------------------------------------------------

    def begin_turn(self) -> None:
        self.reload_config()
        self.turn += 1
        self.step = 0

    def run_turn_stages(self, user: Message) -> None:
        """Stages that append to the prompt (memory, plan, related context): once per turn, never per step."""
        self.stages.run(user)

    def run_step_stages(self) -> None:
        """Stages that react to the growing window, every step: eviction first (lossless), then compaction."""
        self._note_reclaimed(self.lossless.evict(self, self.occupancy()))
        self.lossy.step()

    def _note_reclaimed(self, reclaimed: int) -> None:
        """Count what eviction freed; the stale provider count shrinks by as much until the next real one."""
        if reclaimed:
            self.reclaimed_tokens += reclaimed
            if self.last_prompt_tokens is not None:
                self.last_prompt_tokens = max(0, self.last_prompt_tokens - reclaimed)
            self.last_estimate = max(0, self.last_estimate - reclaimed)

    def compact_for_overflow(self) -> bool:
        """Make room after a provider context-length error: clear every result, then compact now."""
        reclaimed = self.lossless.evict(self, self.context_window, force=True)
        self._note_reclaimed(reclaimed)
        compacted = self.lossy.compact_now("context length exceeded", keep_recent=2)
        return reclaimed > 0 or compacted

    def compact(self) -> bool:
        """Fold the window into the rolling summary now, whatever the threshold (``%monad compact``)."""
        with self.lease.hold():
            self._catch_up()
            return self.lossy.compact_now("requested")

    def after_compaction(self) -> None:
        """Called on the kernel thread once a compaction has landed in the window."""
        emit_handoff_if_heavy(self, self.lossy.compactions)

    def _after_compact(self, span: list[Message], summary: Summary) -> None:
        """Hook run by the compactor right after a summary is saved (the span's last chance)."""
        self.stages.after_compact(span, summary)

    @property
    def memory(self) -> MemoryService:
        return self.stages.memory

    # --- prompt and occupancy ------------------------------------------------------

    def system_prompt(self) -> str:
        return self.config.agent.system_prompt or SYSTEM_PROMPT

    def assemble_prompt(self) -> Prompt:
        """What the model receives now: system prompt and memory, summary, window, injected blocks.

        A step asks for it up to three times (thresholds, hard guard, the call); while nothing
        it is built from has changed, the same prompt (and its token count) is handed out again.
        """
        inputs = (
            self.system_prompt(),
            self.turn_blocks.get("memory", ""),
            self.summary.text if self.summary else None,
            tuple((m.id, m.placeholder) for m in self.window),
            id(self.config),  # a reload may change the tools' schemas
            self.turn_blocks.get("related_context"),
            self.turn_blocks.get("plan"),
        )
        if self._last_prompt is not None and self._last_prompt[0] == inputs:
            return self._last_prompt[1]
        current_user = next((m.id for m in reversed(self.window) if m.role == "user"), None)
        system, memory, summary, _, _, related, plan = inputs
        prompt = assemble(
            system=system,
            memory=memory,
            summary=summary,
            window=self.window,
            tools=[t.schema() for t in self.tools.values()],
            related=related,
            plan=plan,
            current_user_id=current_user,
        )
        self._last_prompt = (inputs, prompt)
        return prompt

    def estimate_prompt(self, prompt: Prompt) -> int:
        """The calibrated estimate of what the provider will count for this request.

        Window messages are counted once each (cached by id and eviction state), so a step
        costs a sum over the window rather than re-tokenizing it.
        """
        raw = prompt.raw_tokens
        if raw is None:
            pure = [len(g) == 1 and g[0].source is not None for g in prompt.groups]
            loose = [m for m, is_pure in zip(prompt.messages, pure, strict=True) if not is_pure]
            raw = self.counter.count_messages(loose, prompt.tools)
            raw += sum(
                self._message_tokens(g[0].source) for g, is_pure in zip(prompt.groups, pure, strict=True) if is_pure
            )
            prompt.raw_tokens = raw
        self.last_raw_count = raw
        self.last_estimate = round(raw * self.counter.calibration)
        return self.last_estimate

    def record_prompt(self, prompt: Prompt) -> None:
        """Keep an account of what the model received at this step (the inspector reads it)."""
        count_parts(prompt, self._message_tokens, self.counter.count_text)
        tools_tokens = self.counter.count_messages([], prompt.tools) - self.counter.count_messages([])
        self.prompt_records.append(prompt.record(self.turn, self.step, self.last_estimate, tools_tokens))
        del self.prompt_records[:-PROMPT_RECORDS_KEPT]

    def _message_tokens(self, message: Message) -> int:
        key = (message.id, message.evicted)
        count = self._token_cache.get(key)
        if count is None:
            count = self.counter.count_messages([message.to_openai()]) - self.counter.count_messages([])
            self._token_cache[key] = count
        return count

    def record_prompt_tokens(self, estimate: int, real: int | None) -> None:
        if real is not None:
            self.counter.observe(self.last_raw_count, real)
        self.last_prompt_tokens = real

    def occupancy(self) -> int:
        """effectiveInputTokens: the provider's last real count, else the calibrated estimate."""
        if self.last_prompt_tokens is None and not self.last_estimate:
            self.estimate_prompt(self.assemble_prompt())
        return effective_input_tokens(self.last_prompt_tokens, self.last_estimate)

    def usage_snapshot(self) -> dict[str, Any]:
        occupancy = self.occupancy()
        return {
            "occupancy": occupancy,
            "context_window": self.context_window,
            "fraction": round(occupancy / self.context_window, 4) if self.context_window else 0.0,
            "exact": self.last_prompt_tokens is not None,
            "reclaimed": self.reclaimed_tokens,
            "messages": len(self.window),
        }

    # --- tools ---------------------------------------------------------------------

    def execute_tool(self, call: ToolCall) -> ToolOutput:
        ctx = ToolContext(
            session=self.name,
            namespace=self.namespace,
            root=self.root,
            shell=self.shell,
            store=self.store,
            python_approval=self.config.tools.python.approval,
            approve=self.approve,
            redactor=self.lossless.redactor,
            extra={
                "tool_output_max_chars": self.config.context.tool_output.max_chars,
                "memory": self.memory,
                "memory_scope": self.stages.scope,
            },
        )
        text = run_tool(self.tools, ctx, call.name, call.arguments)
        return ToolOutput(text, redacted=ctx.redacted)

    # --- events --------------------------------------------------------------------

    def emit(self, kind: str, **data: Any) -> None:
        """Tell listeners now; persisted kinds are written with the step, or at once from a worker thread."""
        event = Event(kind=kind, session=self.name, data=data)
        if event.persisted:
            with self._events_lock:
                self._pending_events.append(event)
        self.events.emit(event)
        if event.persisted and threading.current_thread() is not threading.main_thread():
            self.flush_events()

    def flush_events(self) -> None:
        with self._events_lock:
            pending, self._pending_events = self._pending_events, []
        if pending:
            self.store.append_events(pending)

    # --- public API ----------------------------------------------------------------

    def ask(self, text: str, *, on_text: TextCallback | None = None) -> Reply:
        """Run one turn: the model answers ``text``, calling tools as it needs."""
        if not text.strip():
            raise UsageError("the message is empty: write what you want the agent to do")
        with self.lease.hold():
            self._catch_up()
            try:
                return Turn(self, text, on_text).run()
            finally:
                self.flush_events()

    def status(self) -> dict[str, Any]:
        return {
            "session": self.name,
            "model": self.model.name,
            "config": str(self.watcher.source) if self.watcher.source else "(defaults)",
            "stored_messages": self.store.count_messages(self.name),
            "window_messages": len(self.window),
            "summary": bool(self.summary and self.summary.text),
            **self.usage_snapshot(),
        }

    def reset(self) -> None:
        """Forget this session's conversation (its record stays)."""
        self.lossy.compactor.wait()
        self.lossy.compactor.take_result()
        with self.lease.hold():
            self.store.reset_session(self.name)
        self._load_window()
        self.turn = 0
        self.last_prompt_tokens = None
        self.last_estimate = 0
        self.reclaimed_tokens = 0

    def branch(self, name: str) -> SessionRecord:
        return self.store.clone_session(self.name, name)

    def handoff(self, name: str) -> SessionRecord:
        """A fresh session seeded with this one's summary (compacting first if there is none yet)."""
        if self.store.get_session(name) is not None:
            raise UsageError(f"session {name!r} already exists; pick a new name for the handoff")
        if self.summary is None or not self.summary.text:
            self.compact()
        record = self.store.create_session(name, model=self.model.name, parent=self.name)
        if self.summary is not None and self.summary.text:
            self.store.save_summary(
                Summary(session=name, text=self.summary.text, boundary_seq=-1, created_at=time.time())
            )
        return record

    def history(self) -> list[Message]:
        """The whole stored transcript (original texts), for inspection; not used per turn."""
        return self.store.load_messages(self.name)

    def wait_for_background(self, timeout: float | None = None) -> None:
        """Let background work land: a compaction in flight and pending embeddings."""
        self.lossy.compactor.wait(timeout)
        if self.stages.indexer is not None:
            self.stages.indexer.flush(timeout)

    def close(self) -> None:
        """Let a compaction in flight land, then write what is pending."""
        self.lossy.close()
        self.flush_events()
