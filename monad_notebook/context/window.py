"""The window: the transcript the next request is built from, and the prompt built from it.

One object owns the in-memory state of a conversation: the messages after the durable
summary boundary, the rolling summary, the seq/turn/step counters, the blocks the per-turn
stages injected and the prompt built from them. Stages read it and return plans (an eviction
plan, a compaction result, turn blocks); the cascade applies them here, so there is one place
where the window changes. What a prompt costs (``context.occupancy``) is kept beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from monad_notebook.context.prompt import Prompt, assemble
from monad_notebook.messages import Message, Role, ToolCall, apply_placeholders
from monad_notebook.store.base import Images, Summaries, Summary, Transcript

log = logging.getLogger(__name__)

CRASHED_RESULT = (
    "interrupted by a crash: the kernel stopped while this tool call ran, so its result was never saved; files it "
    "wrote under the notebook's directory are in the workspace record, and whatever it held in memory is gone."
)


class WindowStore(Transcript, Summaries, Images, Protocol):
    """What the window reads: the messages after the summary, the summary, the images results carry."""


@dataclass(frozen=True)
class Frame:
    """What surrounds the messages in every request: the system prompt and the tools' schemas."""

    system: str = ""
    tools: list[dict[str, Any]] = field(default_factory=list)
    image_detail: str | None = None  # how the model is sent images; None: it does not see them


class Window:
    """The in-memory window of one session (a turn never reads the whole transcript)."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.frame = Frame()
        self._frame_version = 0
        self.messages: list[Message] = []
        self.summary: Summary | None = None
        self.next_seq = 0
        self.turn = 0
        self.step = 0
        self.blocks: dict[str, str] = {}  # memory, plan: replaced once per turn
        self.related: dict[str, str] = {}  # user message id -> the related-context block found for it
        self.workspace = ""  # the <workspace> block: rebuilt from the kernel before each step's request
        self.activity = ""  # the <notebook_activity> block: the user's cells since the last turn, for this turn
        self._last_prompt: tuple[tuple[Any, ...], Prompt] | None = None
        self._mark: tuple[int, int] | None = None  # the store's history mark when this window last knew every write

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    # --- loading and counters ---------------------------------------------------------

    def load(self, store: WindowStore) -> None:
        """Read the rolling summary and the messages after its boundary: O(window), never the transcript.

        A tool result whose call fell behind the boundary is left out: no request ever holds an orphan.
        """
        self.summary = store.load_summary(self.session)
        boundary = self.summary.boundary_seq if self.summary else -1
        stored = store.load_messages(self.session, after_seq=boundary)
        self.messages = answered_calls_only(stored)
        results = [m for m in self.messages if m.role == "tool" and m.tool_call_id]
        images = store.load_images(self.session, [m.tool_call_id for m in results]) if results else {}
        for message in results:
            message.images = images.get(message.tool_call_id, [])
        self.related = {}
        self.next_seq = (stored[-1].seq if stored else boundary) + 1
        self.turn = max((m.turn for m in stored), default=0)

    def catch_up(self, store: WindowStore) -> bool:
        """Reload if another kernel wrote to this session since this one last looked (True if it did).

        Called holding the turn lease, so numbering continues from the store's newest message and
        the model sees the other kernel's turns. When no one but this window wrote the messages
        or summaries tables since it last looked (``wrote``), the store's history mark says so in
        two manifest reads; otherwise two small reads, whose cost grows with the writes not yet
        compacted.
        """
        mark = store.history_mark()
        if mark is not None and mark == self._mark:
            return False
        newer = store.load_messages(self.session, after_seq=self.next_seq - 1)
        known = (self.summary.created_at, self.summary.boundary_seq) if self.summary else None
        if not newer and store.summary_head(self.session) == known:
            self._mark = mark
            return False
        turn = self.turn
        self.load(store)
        self.turn = max(turn, self.turn)
        self._last_prompt = None
        self._mark = mark
        return True

    def wrote(self, version: int | None) -> None:
        """This window's own write to the messages table committed ``version``.

        The mark moves with it only when it is the very next version: a commit by anyone else
        in between (another kernel, another session of this kernel) makes the next catch-up read.
        """
        if self._mark is not None and version is not None and version == self._mark[0] + 1:
            self._mark = (version, self._mark[1])
        else:
            self._mark = None

    def reset(self, store: WindowStore) -> None:
        """After the stored conversation was forgotten: reload, and start the numbering over."""
        self.load(store)
        self.turn = 0
        self.step = 0

    def new_model(self) -> None:
        """Another model answers from now on: another provider cache, so earlier blocks may go."""
        self.related = {}
        self._last_prompt = None

    def set_frame(self, frame: Frame) -> None:
        """A new system prompt or tool set (a config reload)."""
        if frame != self.frame:
            self.related = {}  # the prompt changes from its start
        self.frame = frame
        self._frame_version += 1

    def begin_turn(self) -> None:
        self.turn += 1
        self.step = 0

    def begin_step(self) -> None:
        self.step += 1

    def new_message(self, role: Role, content: str, *, tool_calls: list[ToolCall] | None = None) -> Message:
        message = Message(
            role=role,
            content=content,
            session=self.session,
            seq=self.next_seq,
            turn=self.turn,
            step=self.step,
            tool_calls=list(tool_calls or []),
        )
        self.next_seq += 1
        return message

    def unanswered(self) -> tuple[Message, list[ToolCall]] | None:
        """The last assistant message's calls that have no result while nothing but results follows it: what a
        kernel that died during a call left (its calls were stored before they ran, their results never)."""
        answered = set()
        for message in reversed(self.messages):
            if message.role == "tool":
                answered.add(message.tool_call_id)
                continue
            missing = [c for c in message.tool_calls if c.id not in answered] if message.role == "assistant" else []
            return (message, missing) if missing else None
        return None

    def take_in_results(self, store: WindowStore) -> tuple[Message, list[ToolCall]] | None:
        """``unanswered``, once the results the store holds for those calls joined the window (a commit an
        interrupt stopped after its write landed, before the window heard of it)."""
        found = self.unanswered()
        if found is None:
            return None
        assistant, calls = found
        ids = {c.id for c in calls}
        landed = [m for m in store.load_messages(self.session, after_seq=assistant.seq) if m.tool_call_id in ids]
        self.extend(landed)
        return self.unanswered()

    # --- applying what the stages decided ---------------------------------------------

    def extend(self, messages: list[Message]) -> None:
        """Messages just persisted join the window."""
        self.messages.extend(messages)

    def withdraw(self, question: Message) -> None:
        """A turn that never reached the model leaves the window as it was: its question, never stored, goes."""
        self.messages = [m for m in self.messages if m.id != question.id]
        self.related.pop(question.id, None)
        if self.next_seq == question.seq + 1:
            self.next_seq = question.seq
        if self.turn == question.turn:
            self.turn -= 1

    def apply_eviction(self, placeholders: Mapping[str, str]) -> None:
        """Placeholders (message id -> text) replace the cleared results (``Message.clear``)."""
        apply_placeholders(self.messages, placeholders)
        self._drop_related(after=next((m.id for m in self.messages if m.id in placeholders), None))

    def apply_compaction(self, summary: Summary, folded_ids: Iterable[str]) -> None:
        """A landed compaction: the folded messages leave (the window may have grown meanwhile), the new summary
        opens the window."""
        folded = set(folded_ids)
        self.messages = [m for m in self.messages if m.id not in folded]
        self.summary = summary
        self._drop_related(after=self.messages[0].id if self.messages else None)  # the summary changed the top

    def set_blocks(
        self, blocks: dict[str, str], user_id: str | None = None, *, retrieval: bool = True, cache_warm: bool = True
    ) -> None:
        """This turn's blocks; a ``related_context`` block rides on ``user_id``, this turn's message.

        Earlier turns' blocks stay on their messages: taking one away would change the prompt
        from that message on, and the provider would bill the whole turn after it uncached. They
        go when that costs nothing, because the prompt changes before them anyway or the cache
        is cold: at a turn whose cache has expired or whose memory block changed, with a new
        system prompt, tools or model, with an eviction pass that clears a result before them,
        with a compaction; and when retrieval is turned off (``retrieval`` False).
        """
        blocks = dict(blocks)
        related = blocks.pop("related_context", None)
        if not retrieval or not cache_warm or blocks.get("memory") != self.blocks.get("memory"):
            self.related = {}
        if related and user_id:
            self.related[user_id] = related
        self.blocks = blocks

    def _drop_related(self, *, after: str | None) -> None:
        """Keep this turn's block and those before the message ``after``: from there on the prompt changes anyway."""
        if not self.related:
            return
        ids = [m.id for m in self.messages]
        kept = set(ids[: ids.index(after)] if after in ids else ids)
        kept |= {next((m.id for m in reversed(self.messages) if m.role == "user"), "")}
        self.related = {k: v for k, v in self.related.items() if k in kept}

    # --- the prompt -------------------------------------------------------------------

    def prompt(self) -> Prompt:
        """What the model receives now: system prompt and memory, summary, window, injected blocks.

        A step asks for it several times (thresholds, hard guard, the call); while nothing it
        is built from has changed, the same prompt (and its token count) is handed out again.
        """
        inputs = (
            self.frame.system,
            self.blocks.get("memory", ""),
            self.summary.text if self.summary else None,
            tuple((m.id, m.placeholder, len(m.images)) for m in self.messages),
            self._frame_version,  # a reload may change the tools' schemas
            tuple(self.related.items()),
            self.blocks.get("plan"),
            self.workspace,
            self.activity,
        )
        if self._last_prompt is not None and self._last_prompt[0] == inputs:
            return self._last_prompt[1]
        system, memory, summary, _, _, _, plan, workspace, activity = inputs
        prompt = assemble(
            system=system,
            memory=memory,
            summary=summary,
            window=self.messages,
            tools=self.frame.tools,
            related=self.related,
            plan=plan,
            image_detail=self.frame.image_detail,
            workspace=workspace,
            activity=activity,
        )
        self._last_prompt = (inputs, prompt)
        return prompt


def answered_calls_only(messages: list[Message]) -> list[Message]:
    """``messages`` without tool results that do not follow their call's assistant message.

    A provider rejects a request holding such a result; one can appear when a stored
    history was cut at a boundary between a call and its result.
    """
    kept: list[Message] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                log.warning("dropped tool result %s from the window: its call is not in it", message.tool_call_id)
                continue
            open_calls.discard(message.tool_call_id)
        else:
            open_calls = {c.id for c in message.tool_calls} if message.role == "assistant" else set()
        kept.append(message)
    return kept
