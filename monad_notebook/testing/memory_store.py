"""MemoryStore: the Store protocol in plain Python objects, for fast tests of everything above the store.

It keeps what the LanceDB store keeps and answers as it answers (the contract tests in
``tests/store/test_contract.py`` run the same assertions against both): names and ids are
refused as LanceDB's filters refuse them, text with lone surrogates is stored with U+FFFD,
each write moves a table's version; recall's index (``memory_search.py``) searches as LanceDB's
does. The three parts of their own (``claims``, ``search``, ``workspace``) are attributes, as in
the LanceDB store, and share the store's lock. Nothing is
persisted and nothing is shared between processes: tests of kernels sharing a database, of
object storage and of LanceDB's own behaviour keep the real store.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, replace
from typing import Any

from monad_notebook.errors import StoreError
from monad_notebook.events import Event
from monad_notebook.images.image import Image
from monad_notebook.messages import Message
from monad_notebook.store.base import (
    FORGET_AFTER_SECONDS,
    Claim,
    LedgerEntry,
    MemoryFact,
    RewindRow,
    SessionRecord,
    Summary,
    WorkspaceEntry,
    live_claims,
)
from monad_notebook.store.rows import as_text, journal_order, kept_by_rows
from monad_notebook.testing.memory_search import MemorySearch, checked


def _stored(message: Message) -> Message:
    """The row the messages table keeps: texts as LanceDB stores them, images left to their own table."""
    texts = {k: as_text(v) for k, v in asdict(message).items() if isinstance(v, str)}
    return replace(message, **texts, images=[])


class MemoryStore:
    """The Store protocol in memory: the session's record, and its three parts; safe to share between threads."""

    uri = "memory (monad_notebook.testing.MemoryStore)"
    optimize_every = 0  # nothing to optimize

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.claims = MemoryClaims(self.lock)
        self.search = MemorySearch(self.lock)
        self.workspace = MemoryWorkspace(self.lock)
        self.rewind = MemoryRewind(self.lock)
        self._versions: Counter[str] = Counter()
        self._sessions: dict[str, SessionRecord] = {}
        self._messages: dict[str, dict[str, Message]] = defaultdict(dict)  # session -> id -> message
        self._raw: dict[str, dict[str, str]] = defaultdict(dict)  # session -> tool_call_id -> text
        self._images: dict[str, dict[str, list[Image]]] = defaultdict(dict)  # session -> tool_call_id -> images
        self._summaries: dict[str, list[Summary]] = defaultdict(list)
        self._ledger: dict[str, dict[str, LedgerEntry]] = defaultdict(dict)
        self._calibrations: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._events: dict[str, list[Event]] = defaultdict(list)
        self._facts: dict[str, MemoryFact] = {}
        self.closed = False

    def _wrote(self, table: str) -> int:
        self._versions[table] += 1
        return self._versions[table]

    # sessions

    def get_session(self, name: str) -> SessionRecord | None:
        with self.lock:
            record = self._sessions.get(checked(name))
            return copy.deepcopy(record)

    def create_session(
        self, name: str, *, model: str = "", parent: str = "", meta: dict[str, Any] | None = None
    ) -> SessionRecord:
        if not name:
            raise StoreError("a session needs a name; pass a non-empty one")
        with self.lock:
            if checked(name) in self._sessions:
                raise StoreError(f"a session named {name!r} already exists; pick another name or delete it first")
            now = time.time()
            self._sessions[name] = SessionRecord(name, now, now, model=model, parent=parent, meta=dict(meta or {}))
            self._wrote("sessions")
            return copy.deepcopy(self._sessions[name])

    def list_sessions(self) -> list[SessionRecord]:
        with self.lock:
            return sorted(copy.deepcopy(list(self._sessions.values())), key=lambda s: (s.created_at, s.name))

    def set_session_meta(self, name: str, meta: dict[str, Any]) -> None:
        with self.lock:
            if checked(name) in self._sessions:
                self._sessions[name].meta = copy.deepcopy(meta)
                self._wrote("sessions")

    def delete_session(self, name: str) -> None:
        with self.lock:
            self._drop_history(name)
            self._sessions.pop(name, None)
            for key in [key for key in self._calibrations if key[0] == name]:
                del self._calibrations[key]

    def reset_session(self, name: str) -> None:
        with self.lock:
            self._drop_history(name)
            if name in self._sessions:
                self._sessions[name].updated_at = time.time()

    def _drop_history(self, name: str) -> None:
        """A table that held nothing of the session keeps its version, as in the LanceDB store."""
        checked(name)
        if self._messages.pop(name, None):
            self._wrote("messages")
        if self._summaries.pop(name, None):
            self._wrote("summaries")
        for kept in (self._raw, self._images, self._events, self._ledger):
            kept.pop(name, None)
        self.search.drop(name)
        self.workspace.drop(name)
        self.rewind.drop(name)

    # messages

    def append_messages(self, messages: list[Message]) -> int | None:
        with self.lock:
            for message in messages:
                self._messages[checked(message.session)].setdefault(message.id, _stored(message))
            return self._wrote("messages")

    def load_messages(self, session: str, *, after_seq: int = -1, ids: Iterable[str] | None = None) -> list[Message]:
        wanted = None if ids is None else set(ids)
        with self.lock:
            rows = self._messages.get(checked(session), {}).values()
            chosen = [m for m in rows if m.seq > after_seq and (wanted is None or m.id in wanted)]
            return sorted(copy.deepcopy(chosen), key=lambda m: (m.seq, m.created_at))

    def message_ids(self, session: str) -> set[str]:
        with self.lock:
            return set(self._messages.get(checked(session), {}))

    def count_messages(self, session: str) -> int:
        with self.lock:
            return len(self._messages.get(checked(session), {}))

    def set_placeholders(self, session: str, placeholders: dict[str, str]) -> int | None:
        if not placeholders:
            return None
        with self.lock:
            stored = self._messages.get(checked(session), {})
            for message_id, text in placeholders.items():
                if message_id in stored:
                    stored[message_id] = replace(stored[message_id], placeholder=as_text(text))
            return self._wrote("messages")

    def history_mark(self) -> tuple[int, int] | None:
        with self.lock:
            return self._versions["messages"], self._versions["summaries"]

    # tool outputs

    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        with self.lock:
            self._raw[checked(session)].update({checked(k): as_text(v) for k, v in outputs.items()})

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None:
        with self.lock:
            return self._raw.get(checked(session), {}).get(checked(tool_call_id))

    def get_raw_outputs(self, session: str, tool_call_ids: list[str]) -> dict[str, str]:
        with self.lock:
            saved = self._raw.get(checked(session), {})
            return {i: saved[i] for i in tool_call_ids if i in saved}

    def call_messages(self, session: str, tool_call_id: str) -> list[Message]:
        with self.lock:
            rows = self._messages.get(checked(session), {}).values()
            chosen = [m for m in rows if m.concerns(tool_call_id)]
            return sorted(copy.deepcopy(chosen), key=lambda m: (m.seq, m.created_at))

    def message_at(self, session: str, seq: int) -> Message | None:
        with self.lock:
            found = [m for m in self._messages.get(checked(session), {}).values() if m.seq == seq]
            return copy.deepcopy(min(found, key=lambda m: m.created_at)) if found else None

    def has_raw_outputs(self, session: str, tool_call_ids: list[str]) -> set[str]:
        return set(self.get_raw_outputs(session, tool_call_ids))

    def copy_raw_outputs(self, source: str, target: str) -> None:
        with self.lock:
            self._raw[checked(target)] = dict(self._raw.get(checked(source), {}))

    # images

    def save_images(self, session: str, images: dict[str, list[Image]]) -> None:
        with self.lock:
            kept = self._images[checked(session)]
            for tool_call_id, shown in images.items():
                if shown:
                    known = kept.setdefault(checked(tool_call_id), [])
                    known.extend(i for i in shown if i.id not in {k.id for k in known})

    def load_images(self, session: str, tool_call_ids: Iterable[str] | None = None) -> dict[str, list[Image]]:
        with self.lock:
            kept = self._images.get(checked(session), {})
            return {i: list(kept[i]) for i in (kept if tool_call_ids is None else tool_call_ids) if i in kept}

    def get_image(self, session: str, image_id: str) -> Image | None:
        with self.lock:
            kept = self._images.get(checked(session), {})
            return next((i for shown in kept.values() for i in shown if i.id == image_id), None)

    def search_raw_outputs(self, session: str, needle: str, limit: int) -> list[tuple[str, int, str]]:
        """Newest outputs first, as the LanceDB store answers (here: the latest saved first)."""
        with self.lock:
            saved = list(self._raw.get(checked(session), {}).items())
        hits: list[tuple[str, int, str]] = []
        for tool_call_id, text in reversed(saved):
            for number, line in enumerate(text.split("\n"), 1):
                if needle in line:
                    hits.append((tool_call_id, number, line))
                    if len(hits) >= limit:
                        return hits
        return hits

    # summaries, ledger, calibration

    def save_summary(self, summary: Summary) -> None:
        with self.lock:
            self._summaries[checked(summary.session)].append(replace(summary, text=as_text(summary.text)))
            self._wrote("summaries")

    def summary_head(self, session: str, *, before: float | None = None) -> tuple[float, int] | None:
        newest = self.load_summary(session, before=before)
        return None if newest is None else (newest.created_at, newest.boundary_seq)

    def load_summary(self, session: str, *, before: float | None = None) -> Summary | None:
        with self.lock:
            saved = [s for s in self._summaries.get(checked(session), []) if before is None or s.created_at < before]
            return replace(max(saved, key=lambda s: (s.created_at, s.boundary_seq))) if saved else None

    def save_ledger(self, session: str, entries: list[LedgerEntry]) -> None:
        with self.lock:
            self._ledger[checked(session)].update({e.item: replace(e) for e in entries})

    def load_ledger(self, session: str) -> list[LedgerEntry]:
        with self.lock:
            return [replace(e) for e in self._ledger.get(checked(session), {}).values()]

    def save_calibration(self, session: str, model: str, data: dict[str, Any]) -> None:
        with self.lock:
            self._calibrations[(checked(session), checked(model))] = (time.time(), copy.deepcopy(data))

    def load_calibration(self, session: str, model: str) -> dict[str, Any] | None:
        with self.lock:
            own = self._calibrations.get((checked(session), checked(model)))
            others = [saved for (_, m), saved in self._calibrations.items() if m == model]
            chosen = own or max(others, key=lambda saved: saved[0], default=None)
            return copy.deepcopy(chosen[1]) if chosen else None

    # events

    def append_events(self, events: list[Event]) -> None:
        with self.lock:
            for event in events:
                if event.persisted:
                    self._events[checked(event.session)].append(copy.deepcopy(event))

    def list_events(self, session: str, *, kind: str | None = None) -> list[Event]:
        with self.lock:
            chosen = [e for e in self._events.get(checked(session), []) if kind is None or e.kind == kind]
            return sorted(copy.deepcopy(chosen), key=lambda e: e.ts)

    # memory facts

    def add_facts(self, facts: list[MemoryFact]) -> None:
        with self.lock:
            self._facts.update({checked(f.id): replace(f, text=as_text(f.text)) for f in facts})

    def list_facts(self, scopes: list[str] | None = None) -> list[MemoryFact]:
        with self.lock:
            chosen = [f for f in self._facts.values() if scopes is None or f.scope in scopes]
            return sorted((replace(f) for f in chosen), key=lambda f: (f.created_at, f.id))

    def remove_fact(self, fact_id: str) -> bool:
        with self.lock:
            return self._facts.pop(checked(fact_id), None) is not None

    # housekeeping

    def optimize(self) -> None:
        """Nothing to compact in memory."""

    def close(self) -> None:
        self.closed = True


class MemoryClaims:
    """The turn claims (``Claims``), ordered by when they were written, as commits order them in LanceDB."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self._claims: list[Claim] = []

    def claim_session(self, claim: Claim) -> list[Claim]:
        with self.lock:
            before = [c for c in self._claims if c.session == checked(claim.session)]
            self._claims.append(copy.copy(claim))
            return live_claims(before, time.time())

    def live_claims(self, session: str) -> list[Claim]:
        with self.lock:
            return live_claims([c for c in self._claims if c.session == checked(session)], time.time())

    def renew_claim(self, claim: Claim) -> None:
        with self.lock:
            self._claims.append(copy.copy(claim))

    def release_claim(self, claim: Claim) -> None:
        forgotten = time.time() - FORGET_AFTER_SECONDS
        with self.lock:
            self._claims = [
                c
                for c in self._claims
                if not (c.session == claim.session and (c.id == claim.id or c.expires_at < forgotten))
            ]


class MemoryWorkspace:
    """The workspace record (``Workspaces``): every entry kept; of each (kind, key), the one with the highest ``seq``
    is in force."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self._workspace: dict[str, list[WorkspaceEntry]] = defaultdict(list)

    def save_workspace(self, session: str, entries: list[WorkspaceEntry]) -> None:
        with self.lock:
            self._workspace[checked(session)].extend(
                replace(e, key=as_text(e.key), columns=[as_text(c) for c in e.columns]) for e in entries
            )

    def load_workspace(self, session: str, *, before_turn: int | None = None) -> list[WorkspaceEntry]:
        with self.lock:
            latest: dict[tuple[str, str], WorkspaceEntry] = {}
            for entry in self._workspace.get(checked(session), []):
                known = latest.get((entry.kind, entry.key))
                if (before_turn is None or entry.turn < before_turn) and (known is None or entry.seq >= known.seq):
                    latest[(entry.kind, entry.key)] = entry
            return [replace(e, columns=list(e.columns)) for e in latest.values()]

    def drop(self, session: str) -> None:
        with self.lock:
            self._workspace.pop(session, None)


class MemoryRewind:
    """The rewind journal (``RewindJournal``): rows appended, read back in journal order."""

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self._rewind: dict[str, list[RewindRow]] = defaultdict(list)

    def save_rewind(self, session: str, rows: list[RewindRow]) -> None:
        with self.lock:
            texts = ("kind", "label", "key", "root", "before", "digest", "after", "note", "path_ref", "host")
            kept = self._rewind[checked(session)]
            kept.extend(replace(r, **{f: as_text(getattr(r, f)) for f in texts}) for r in rows)

    def load_rewind(self, session: str) -> list[RewindRow]:
        with self.lock:
            return [replace(r) for r in journal_order(self._rewind.get(checked(session), []))]

    def kept_digests(self) -> set[str]:
        with self.lock:
            return {digest for rows in self._rewind.values() for digest in kept_by_rows(rows)}

    def drop(self, session: str) -> None:
        with self.lock:
            self._rewind.pop(session, None)
