"""What the rest of the code may ask of storage.

Every method takes the session *name* as plain data: implementations must never
interpolate it into a query string unescaped (names come from users).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from monad_notebook.events import Event
from monad_notebook.messages import Message


@dataclass
class SessionRecord:
    name: str
    created_at: float
    updated_at: float
    model: str = ""
    parent: str = ""  # the session this one was branched or handed off from
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Summary:
    """The rolling summary and the durable boundary: messages with seq <= boundary are folded."""

    session: str
    text: str
    boundary_seq: int
    created_at: float
    tokens: int = 0
    reflections: int = 0


@dataclass
class Claim:
    """A kernel's claim on a session's turn; the first live claim in commit order holds the session.

    ``owner`` is what a user is told (``host:pid``); ``holder`` tells two sessions of one process apart.
    """

    session: str
    id: str
    owner: str
    holder: str
    claimed_at: float
    expires_at: float


@dataclass
class MemoryFact:
    id: str
    scope: str  # "global" or "agent:<name>"
    text: str
    created_at: float
    source: str = "manual"  # manual | tool | promotion


@dataclass
class EmbeddingHit:
    """One semantic search result.

    ``score`` is cosine similarity: 1 for the same direction, about 0 for unrelated text
    (slightly negative is possible). ``snippet`` is the text that was embedded.
    """

    message_id: str
    score: float
    snippet: str
    role: str = ""
    seq: int = 0
    turn: int = 0
    name: str = ""  # the tool's name, on tool messages


class Store(Protocol):
    # sessions
    def get_session(self, name: str) -> SessionRecord | None: ...
    def create_session(self, name: str, *, model: str = "", parent: str = "") -> SessionRecord: ...
    def list_sessions(self) -> list[SessionRecord]: ...
    def delete_session(self, name: str) -> None:
        """Remove the session and everything keyed to it (messages, raw outputs, summaries, events, embeddings)."""

    def reset_session(self, name: str) -> None:
        """Keep the session's record, drop its messages, raw outputs, summaries, events and embeddings."""

    def clone_session(self, source: str, target: str) -> SessionRecord:
        """Branch: copy messages, summary, raw outputs and embeddings into an independent new session."""

    # messages
    def append_messages(self, messages: list[Message]) -> None:
        """One write for the whole batch, whatever its size."""

    def load_messages(self, session: str, *, after_seq: int = -1) -> list[Message]:
        """Messages with seq > after_seq, in seq order, deduplicated by id."""

    def count_messages(self, session: str) -> int: ...
    def set_placeholders(self, session: str, placeholders: dict[str, str]) -> None:
        """Record evictions (message id -> placeholder) in one write; content is kept."""

    # turn claims (one kernel at a time per session)
    def claim_session(self, claim: Claim) -> list[Claim]:
        """Append ``claim``; return the claims on its session that were live just before it committed.

        Ordered by the database's commits, not by clocks, so two kernels claiming at once agree
        on which came first.
        """

    def live_claims(self, session: str) -> list[Claim]:
        """Unexpired claims on the session, oldest first."""

    def renew_claim(self, claim: Claim) -> None:
        """Record the claim's later ``expires_at`` (one append)."""

    def release_claim(self, claim: Claim) -> None:
        """Withdraw the claim, and drop claims on its session that expired long ago."""

    # tool raw outputs (recovery by handle)
    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        """Upsert tool_call_id -> full text, in one write."""

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None: ...
    def has_raw_outputs(self, session: str, tool_call_ids: list[str]) -> set[str]: ...
    def search_raw_outputs(self, session: str, needle: str, limit: int) -> list[tuple[str, int, str]]:
        """Lines of this session's saved tool outputs containing ``needle`` (exact, case-sensitive)."""

    # summaries
    def save_summary(self, summary: Summary) -> None: ...
    def load_summary(self, session: str) -> Summary | None: ...
    def summary_head(self, session: str) -> tuple[float, int] | None:
        """The newest summary's (created_at, boundary_seq), without its text: has another kernel compacted?"""

    # token-count calibration (what the provider's counts taught us, per session and model)
    def save_calibration(self, session: str, model: str, data: dict[str, Any]) -> None:
        """Replace this session's calibration for ``model`` in one small write."""

    def load_calibration(self, session: str, model: str) -> dict[str, Any] | None:
        """This session's calibration for ``model``, else the newest any session saved for it, else None."""

    # events (persisted kinds only)
    def append_events(self, events: list[Event]) -> None: ...
    def list_events(self, session: str, *, kind: str | None = None) -> list[Event]: ...

    # memory
    def add_facts(self, facts: list[MemoryFact]) -> None: ...
    def list_facts(self, scopes: list[str] | None = None) -> list[MemoryFact]: ...
    def remove_fact(self, fact_id: str) -> bool: ...

    # embeddings (semantic retrieval); kept apart from messages so indexing never rewrites them
    def save_embeddings(self, session: str, rows: list[tuple[Message, list[float]]], model: str) -> None:
        """Store each message's vector (and its content as the snippet) in one write; bad vectors raise."""

    def embedded_ids(self, session: str, *, model: str, dims: int) -> set[str]:
        """Ids of the session's messages that already have a vector from ``model`` at this width."""

    def search_embeddings(
        self,
        session: str,
        vector: list[float],
        k: int,
        *,
        model: str | None = None,
        exclude_ids: Iterable[str] = (),
    ) -> list[EmbeddingHit]:
        """The ``k`` nearest of this session's vectors (never another session's), best first."""

    def search_embedded_text(
        self, session: str, terms: list[str], k: int, *, model: str, dims: int, exclude_ids: Iterable[str] = ()
    ) -> list[EmbeddingHit]:
        """Up to ``k`` of this session's embedded messages containing the exact ``terms``, best first."""

    # housekeeping
    def optimize(self) -> None:
        """Compact fragments and drop old versions; safe to call from a worker thread."""

    def close(self) -> None: ...
