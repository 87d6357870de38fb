"""What the rest of the code may ask of storage.

Every method takes the session *name* as plain data: implementations must never
interpolate it into a query string unescaped (names come from users).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from monad_notebook.errors import StoreError
from monad_notebook.events import Event
from monad_notebook.images.image import Image
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


FORGET_AFTER_SECONDS = 3600.0  # claims expired this long ago are dropped when their session's claims are released


def ensure_session(sessions: Sessions, name: str, model: str) -> SessionRecord:
    """The session's record, created if it has none; another kernel may have created it a moment ago."""
    record = sessions.get_session(name)
    if record is not None:
        return record
    try:
        return sessions.create_session(name, model=model)
    except StoreError:
        record = sessions.get_session(name)
        if record is None:
            raise
        return record


def live_claims(claims: Iterable[Claim], now: float) -> list[Claim]:
    """One claim per id with its latest expiry (renewals are appended), unexpired ones only, oldest first."""
    latest: dict[str, Claim] = {}
    for claim in claims:
        kept = latest.get(claim.id)
        if kept is None or claim.expires_at > kept.expires_at:
            latest[claim.id] = claim
    return sorted((c for c in latest.values() if c.expires_at > now), key=lambda c: (c.claimed_at, c.id))


@dataclass
class MemoryFact:
    id: str
    scope: str  # "global" or "agent:<name>"
    text: str
    created_at: float
    source: str = "manual"  # manual | tool | promotion


@dataclass
class EmbeddingHit:
    """One search result: a chunk of a message or of a saved tool output.

    From vector search ``score`` is cosine similarity: 1 for the same direction, about 0 for
    unrelated text (slightly negative is possible); from full-text search it is BM25. ``snippet``
    is the chunk's text, which starts ``offset`` characters into the message's indexed text
    (for a tool result with a saved output, into that output: what ``read_tool_output`` pages).
    """

    message_id: str
    score: float
    snippet: str
    role: str = ""
    seq: int = 0
    turn: int = 0
    name: str = ""  # the tool's name, on tool messages
    offset: int = 0
    tool_call_id: str = ""
    created_at: float = 0.0  # when its message was written


@dataclass
class Chunk:
    """A piece of one message's indexed text, as stored for recall (full-text and vectors)."""

    message_id: str
    offset: int
    text: str
    seq: int = 0
    turn: int = 0
    role: str = ""
    name: str = ""
    tool_call_id: str = ""
    created_at: float = 0.0  # when its message was written (0: when the chunk is stored)


@dataclass
class LedgerEntry:
    """One identifier of the session's ledger: what it is, how salient, and where it was last seen."""

    item: str
    kind: str  # file | variable | column | package | command | number | error | url | name | output
    score: float
    count: int = 1
    seq: int = 0
    turn: int = 0
    source: str = ""  # user | assistant | code | the tool's name
    tool_call_id: str = ""
    open: bool = False  # errors: not yet followed by a clean run of the same tool


@dataclass
class WorkspaceEntry:
    """One name the kernel held, or one file written under the notebook's directory: never a value.

    ``key`` is the variable's name or the file's path relative to the notebook's directory, and
    ``columns`` a DataFrame's first column names; all of them redacted before they are stored.
    """

    kind: str  # name | file
    key: str
    type: str = ""  # DataFrame, ndarray, int, Figure, file...
    shape: str = ""  # "1,200 rows x 8 cols", "len 40", "(3, 4) float64", a file's size
    columns: list[str] = field(default_factory=list)
    columns_total: int = 0  # all the columns, of which ``columns`` are the first
    state: str = "bound"  # names: bound | rebound | changed | deleted | lost; files: created | modified
    made_by: str = ""  # the python call's id, "cell 14", or "" (there before the session began)
    turn: int = 0
    seq: int = 0  # the record's own clock: the entry touched last has the highest
    kernel: str = ""  # names: the kernel that holds the value ("host:pid"); "" for rows from before it was kept


@dataclass
class RewindRow:
    """One line of a session's rewind journal (``rewind/``): never a value, never a file's bytes.

    ``kind`` is ``epoch`` (a turn, a restore or a rebuild began: ``label`` says which, ``turn`` its turn),
    ``file`` (a file under the notebook's directory was about to change: what it was before) or ``kernel``
    (a kernel ran the session: ``turn`` is its IPython history session, ``key`` its host). ``seq`` is the
    journal's own clock and ``epoch`` the seq of the epoch a row belongs to. For a file, ``key`` is its path
    relative to ``root`` (redacted; ``path_ref`` names the kept real path when redaction changed it), and
    ``before`` its state before the change: ``absent``, ``kept`` (its bytes are the kept object ``digest``),
    ``aside`` (set aside to the path in ``digest``), or ``unkept`` (``note`` says why); ``after`` is what the
    change left (``mtime_ns:size``, or "" when it left no file).
    """

    kind: str
    seq: int
    epoch: int
    turn: int = 0
    label: str = ""
    key: str = ""
    root: str = ""
    before: str = ""
    digest: str = ""
    size: int = 0
    after: str = ""
    note: str = ""
    path_ref: str = ""
    host: str = ""
    at: float = 0.0


class Sessions(Protocol):
    """Named sessions: created, listed, branched, reset and deleted with everything keyed to them."""

    def get_session(self, name: str) -> SessionRecord | None: ...
    def create_session(
        self, name: str, *, model: str = "", parent: str = "", meta: dict[str, Any] | None = None
    ) -> SessionRecord: ...
    def list_sessions(self) -> list[SessionRecord]: ...
    def set_session_meta(self, name: str, meta: dict[str, Any]) -> None:
        """Replace what the session's record keeps beside its name (the notebook it belongs to, notes shown)."""

    def delete_session(self, name: str) -> None:
        """Remove the session and everything keyed to it (messages, raw outputs, images, summaries, events,
        embeddings, the workspace record, the rewind journal)."""

    def reset_session(self, name: str) -> None:
        """Keep the session's record, drop its messages, raw outputs, images, summaries, events, embeddings,
        workspace record and rewind journal."""


class Transcript(Protocol):
    """A session's messages in seq order; evictions recorded as placeholders, content always kept."""

    def append_messages(self, messages: list[Message]) -> int | None:
        """One write for the whole batch, whatever its size; the messages table's version it committed."""

    def load_messages(self, session: str, *, after_seq: int = -1, ids: Iterable[str] | None = None) -> list[Message]:
        """Messages with seq > after_seq (only those in ``ids`` when given), in seq order, deduplicated by id."""

    def message_ids(self, session: str) -> set[str]:
        """The ids of the session's stored messages, without reading their texts."""

    def count_messages(self, session: str) -> int: ...
    def set_placeholders(self, session: str, placeholders: dict[str, str]) -> int | None:
        """Record evictions (message id -> placeholder) in one write; content is kept. The version committed."""

    def history_mark(self) -> tuple[int, int] | None:
        """The latest versions of the messages and summaries tables, read fresh (None: unknown).

        Every write to either table, by any kernel, moves it: a window that knows every write
        between two equal marks has nothing to catch up on.
        """


class Claims(Protocol):
    """Turn claims, so kernels sharing a session take turns (``lease.py`` builds the lease on them)."""

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


class ToolOutputs(Protocol):
    """Tool outputs kept whole, keyed by (session, tool_call_id): recovery by handle."""

    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        """Upsert tool_call_id -> full text, in one write."""

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None: ...
    def has_raw_outputs(self, session: str, tool_call_ids: list[str]) -> set[str]: ...
    def search_raw_outputs(self, session: str, needle: str, limit: int) -> list[tuple[str, int, str]]:
        """Lines of this session's saved tool outputs containing ``needle`` (exact, case-sensitive)."""

    def get_raw_outputs(self, session: str, tool_call_ids: list[str]) -> dict[str, str]:
        """The saved full text of each of these tool calls that has one, in one read."""

    def call_messages(self, session: str, tool_call_id: str) -> list[Message]:
        """The assistant message that made this tool call and the call's result, whichever are stored, in seq order."""

    def copy_raw_outputs(self, source: str, target: str) -> None:
        """Every output ``source`` saved, under ``target``, as saved (newest still newest), in one write."""

    def message_at(self, session: str, seq: int) -> Message | None:
        """The session's message numbered ``seq`` (a branch keeps the numbers), or None; one read."""


class Images(Protocol):
    """Images tool results carry, as bytes, keyed by (session, tool_call_id, image id).

    One image may belong to several results (``view_image`` shows an earlier one again).
    """

    def save_images(self, session: str, images: dict[str, list[Image]]) -> None:
        """tool_call_id -> the images its result carries, in order, in one write."""

    def load_images(self, session: str, tool_call_ids: Iterable[str] | None = None) -> dict[str, list[Image]]:
        """The images of each of these results (of every result, when None) that has any, in the order they were
        shown; one read."""

    def get_image(self, session: str, image_id: str) -> Image | None:
        """One image by its handle, whichever result carries it."""


class Summaries(Protocol):
    """What a session derived from its transcript: the rolling summary, the ledger of identifiers, and
    what the provider's counts taught (per session and model)."""

    def save_summary(self, summary: Summary) -> None: ...
    def load_summary(self, session: str, *, before: float | None = None) -> Summary | None:
        """The newest summary; with ``before``, the newest made before that time (the one in force then)."""

    def summary_head(self, session: str, *, before: float | None = None) -> tuple[float, int] | None:
        """The newest summary's (created_at, boundary_seq), without its text: has another kernel compacted?"""

    def save_ledger(self, session: str, entries: list[LedgerEntry]) -> None:
        """Upsert entries by item, in one write."""

    def load_ledger(self, session: str) -> list[LedgerEntry]: ...

    def save_calibration(self, session: str, model: str, data: dict[str, Any]) -> None:
        """Replace this session's calibration for ``model`` in one small write."""

    def load_calibration(self, session: str, model: str) -> dict[str, Any] | None:
        """This session's calibration for ``model``, else the newest any session saved for it, else None."""


class Facts(Protocol):
    """Durable facts, by scope (``global`` or ``agent:<name>``)."""

    def add_facts(self, facts: list[MemoryFact]) -> None: ...
    def list_facts(self, scopes: list[str] | None = None) -> list[MemoryFact]: ...
    def remove_fact(self, fact_id: str) -> bool: ...


class SearchIndex(Protocol):
    """Recall's index: every message and saved output in chunks, for full-text and vector search."""

    def save_chunks(self, session: str, chunks: list[Chunk]) -> None:
        """Store chunks for full-text search in one write."""

    def chunked_ids(self, session: str, among: Iterable[str] | None = None) -> set[str]:
        """Ids of the session's messages whose chunks are stored (only those in ``among``, when given)."""

    def chunk_texts(self, session: str, batch: int = 2000) -> Iterator[list[str]]:
        """The text of the session's stored chunks, ``batch`` at a time, in no set order."""

    def search_chunks(
        self,
        session: str,
        words: str,
        k: int,
        *,
        exclude_ids: Iterable[str] = (),
        shown: Mapping[str, str] | None = None,
    ) -> list[EmbeddingHit]:
        """Up to ``k`` of this session's chunks matching ``words`` (full-text, BM25), best first, one per message.

        Messages in ``exclude_ids`` are skipped, and so are the chunks lying inside what the
        window shows of a message (``shown``: id -> that text); its other chunks still count.
        """

    def save_embeddings(self, session: str, rows: list[tuple[Message | Chunk, list[float]]], model: str) -> None:
        """Store each message's or chunk's vector (and its text as the snippet) in one write; bad vectors raise."""

    def embedded_ids(
        self, session: str, *, model: str, dims: int | None = None, among: Iterable[str] | None = None
    ) -> set[str]:
        """Ids of the session's messages with a vector from ``model`` at this width, or at any when ``dims`` is None
        (only those in ``among``)."""

    def search_embeddings(
        self,
        session: str,
        vector: list[float],
        k: int,
        *,
        model: str | None = None,
        exclude_ids: Iterable[str] = (),
        shown: Mapping[str, str] | None = None,
        each_chunk: bool = False,
    ) -> list[EmbeddingHit]:
        """The ``k`` nearest of this session's vectors (never another session's), best first, one per message.

        ``exclude_ids`` and ``shown`` skip what the window shows, as in ``search_chunks``.
        ``each_chunk``: the chunks among the ``k`` nearest, several of one message among them, what
        the window shows left out (so there may be fewer than ``k``).
        """

    def copy(self, source: str, target: str, ids: Mapping[str, str]) -> None:
        """``source``'s chunks and vectors under ``target``, each pointing at its message's copy (``ids``: source's
        message id -> the copy's); one write per table."""


class Workspaces(Protocol):
    """The workspace record: what the kernel held and the files it wrote, each with what made it."""

    def save_workspace(self, session: str, entries: list[WorkspaceEntry]) -> None:
        """Keep entries, in one write; of one (kind, key), the entry with the highest ``seq`` is the one in force
        (the one written last among equals)."""

    def load_workspace(self, session: str, *, before_turn: int | None = None) -> list[WorkspaceEntry]:
        """The entry in force of each (kind, key), in no set order; with ``before_turn``, the one in force before
        that turn began (of the entries of earlier turns, the newest)."""


class RewindJournal(Protocol):
    """The rewind journal: the turns, restores and rebuilds of a session, and what each file was before its code
    changed it (the bytes themselves are kept outside the store, by digest)."""

    def save_rewind(self, session: str, rows: list[RewindRow]) -> None:
        """Append rows, in one write."""

    def load_rewind(self, session: str) -> list[RewindRow]:
        """The session's rows in journal order (``seq``, then ``at``), each once."""

    def kept_digests(self) -> set[str]:
        """The digests of kept bytes any session's rows name: what a sweep of the kept objects must leave."""


class Events(Protocol):
    """A session's persisted events, in time order."""

    def append_events(self, events: list[Event]) -> None: ...
    def list_events(self, session: str, *, kind: str | None = None) -> list[Event]: ...


class Store(Sessions, Transcript, ToolOutputs, Images, Summaries, Facts, Events, Protocol):
    """What a Session is given: the session's record, answered by the store itself, and four parts of its own.

    The parts keep tables and rules of their own and are handed over whole to the one consumer
    each serves: ``claims`` to the turn lease, ``search`` to recall, ``workspace`` to the workspace
    record, ``rewind`` to the rewind service. A part of the code that needs one role asks for that one.
    """

    uri: str  # where the data lives, as a user would name it in an error message
    optimize_every: int  # writes to a table between background optimizes (``store.optimizeEveryWrites``)
    lock: AbstractContextManager[Any]  # held, no other write of this process lands (a branch is copied under it)
    claims: Claims
    search: SearchIndex
    workspace: Workspaces
    rewind: RewindJournal

    def optimize(self) -> None:
        """Compact fragments and drop old versions; safe to call from a worker thread."""

    def close(self) -> None: ...
