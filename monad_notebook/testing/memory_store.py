"""MemoryStore: the Store protocol in plain Python objects, for fast tests of everything above the store.

It keeps what the LanceDB store keeps and answers as it answers (the contract tests in
``tests/store/test_contract.py`` run the same assertions against both): names and ids are
refused as LanceDB's filters refuse them, text with lone surrogates is stored with U+FFFD,
each write moves a table's version, full-text search ranks by BM25 over plain word tokens and
vector search by cosine, one chunk per message, skipping what the window shows. Nothing is
persisted and nothing is shared between processes: tests of kernels sharing a database, of
object storage and of LanceDB's own behaviour keep the real store.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, replace
from typing import Any

from monad_notebook.errors import StoreError
from monad_notebook.events import Event
from monad_notebook.images.image import Image
from monad_notebook.messages import Message, new_id
from monad_notebook.store.base import (
    FORGET_AFTER_SECONDS,
    Chunk,
    Claim,
    EmbeddingHit,
    LedgerEntry,
    MemoryFact,
    SessionRecord,
    Summary,
    WorkspaceEntry,
    clone_origin,
    live_claims,
)
from monad_notebook.store.rows import (
    EMBEDDED_TEXT_MAX_CHARS,
    as_chunk,
    as_text,
    best_hits,
    check_query_vector,
    check_vectors,
    query_words,
    sql_str,
)

_BM25_K1, _BM25_B = 1.2, 0.75


def _name(value: str) -> str:
    """Refuses what the LanceDB store's filters refuse (NUL, lone surrogates), with the same message."""
    sql_str(value)
    return value


def _stored(message: Message) -> Message:
    """The row the messages table keeps: texts as LanceDB stores them, images left to their own table."""
    texts = {k: as_text(v) for k, v in asdict(message).items() if isinstance(v, str)}
    return replace(message, **texts, images=[])


class MemoryStore:
    """Every role of the Store protocol, in memory; safe to share between threads."""

    uri = "memory (monad_notebook.testing.MemoryStore)"
    optimize_every = 0  # nothing to optimize

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._versions: Counter[str] = Counter()
        self._sessions: dict[str, SessionRecord] = {}
        self._messages: dict[str, dict[str, Message]] = defaultdict(dict)  # session -> id -> message
        self._claims: list[Claim] = []
        self._raw: dict[str, dict[str, str]] = defaultdict(dict)  # session -> tool_call_id -> text
        self._images: dict[str, dict[str, list[Image]]] = defaultdict(dict)  # session -> tool_call_id -> images
        self._summaries: dict[str, list[Summary]] = defaultdict(list)
        self._ledger: dict[str, dict[str, LedgerEntry]] = defaultdict(dict)
        self._workspace: dict[str, dict[tuple[str, str], WorkspaceEntry]] = defaultdict(dict)
        self._calibrations: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
        self._events: dict[str, list[Event]] = defaultdict(list)
        self._facts: dict[str, MemoryFact] = {}
        self._chunks: dict[str, list[Chunk]] = defaultdict(list)
        self._vectors: dict[str, list[tuple[Chunk, str, list[float]]]] = defaultdict(list)  # session -> rows
        self.closed = False

    def _wrote(self, table: str) -> int:
        self._versions[table] += 1
        return self._versions[table]

    # sessions

    def get_session(self, name: str) -> SessionRecord | None:
        with self._lock:
            record = self._sessions.get(_name(name))
            return copy.deepcopy(record)

    def create_session(
        self, name: str, *, model: str = "", parent: str = "", meta: dict[str, Any] | None = None
    ) -> SessionRecord:
        if not name:
            raise StoreError("a session needs a name; pass a non-empty one")
        with self._lock:
            if _name(name) in self._sessions:
                raise StoreError(f"a session named {name!r} already exists; pick another name or delete it first")
            now = time.time()
            self._sessions[name] = SessionRecord(name, now, now, model=model, parent=parent, meta=dict(meta or {}))
            self._wrote("sessions")
            return copy.deepcopy(self._sessions[name])

    def list_sessions(self) -> list[SessionRecord]:
        with self._lock:
            return sorted(copy.deepcopy(list(self._sessions.values())), key=lambda s: (s.created_at, s.name))

    def delete_session(self, name: str) -> None:
        with self._lock:
            self._drop_history(name)
            self._sessions.pop(name, None)
            for key in [key for key in self._calibrations if key[0] == name]:
                del self._calibrations[key]

    def reset_session(self, name: str) -> None:
        with self._lock:
            self._drop_history(name)
            if name in self._sessions:
                self._sessions[name].updated_at = time.time()

    def _drop_history(self, name: str) -> None:
        """A table that held nothing of the session keeps its version, as in the LanceDB store."""
        _name(name)
        if self._messages.pop(name, None):
            self._wrote("messages")
        if self._summaries.pop(name, None):
            self._wrote("summaries")
        for kept in (self._raw, self._images, self._events, self._chunks, self._ledger, self._vectors, self._workspace):
            kept.pop(name, None)

    def clone_session(self, source: str, target: str) -> SessionRecord:
        with self._lock:
            origin = clone_origin(self, source, target)
            self._drop_history(target)
            originals = self.load_messages(source)
            copies = [replace(m, id=new_id(), session=target) for m in originals]
            self.append_messages(copies)
            ids = {o.id: c.id for o, c in zip(originals, copies, strict=True)}
            self._chunks[target] = [replace(c, message_id=ids[c.message_id]) for c in self._chunks.get(source, [])]
            self._vectors[target] = [
                (replace(c, message_id=ids[c.message_id]), model, list(v))
                for c, model, v in self._vectors.get(source, [])
                if c.message_id in ids
            ]
            self.save_ledger(target, self.load_ledger(source))
            self.save_workspace(target, self.load_workspace(source))
            summary = self.load_summary(source)
            if summary is not None:
                self.save_summary(replace(summary, session=target))
            self._raw[target] = dict(self._raw.get(source, {}))
            self._images[target] = {k: list(v) for k, v in self._images.get(source, {}).items()}
            return self.create_session(target, model=origin.model, parent=source, meta=origin.meta)

    # messages

    def append_messages(self, messages: list[Message]) -> int | None:
        with self._lock:
            for message in messages:
                self._messages[_name(message.session)].setdefault(message.id, _stored(message))
            return self._wrote("messages")

    def load_messages(self, session: str, *, after_seq: int = -1, ids: Iterable[str] | None = None) -> list[Message]:
        wanted = None if ids is None else set(ids)
        with self._lock:
            rows = self._messages.get(_name(session), {}).values()
            chosen = [m for m in rows if m.seq > after_seq and (wanted is None or m.id in wanted)]
            return sorted(copy.deepcopy(chosen), key=lambda m: (m.seq, m.created_at))

    def message_ids(self, session: str) -> set[str]:
        with self._lock:
            return set(self._messages.get(_name(session), {}))

    def count_messages(self, session: str) -> int:
        with self._lock:
            return len(self._messages.get(_name(session), {}))

    def set_placeholders(self, session: str, placeholders: dict[str, str]) -> int | None:
        if not placeholders:
            return None
        with self._lock:
            stored = self._messages.get(_name(session), {})
            for message_id, text in placeholders.items():
                if message_id in stored:
                    stored[message_id] = replace(stored[message_id], placeholder=as_text(text))
            return self._wrote("messages")

    def history_mark(self) -> tuple[int, int] | None:
        with self._lock:
            return self._versions["messages"], self._versions["summaries"]

    # claims

    def claim_session(self, claim: Claim) -> list[Claim]:
        with self._lock:
            before = [c for c in self._claims if c.session == _name(claim.session)]
            self._claims.append(copy.copy(claim))
            return live_claims(before, time.time())

    def live_claims(self, session: str) -> list[Claim]:
        with self._lock:
            return live_claims([c for c in self._claims if c.session == _name(session)], time.time())

    def renew_claim(self, claim: Claim) -> None:
        with self._lock:
            self._claims.append(copy.copy(claim))

    def release_claim(self, claim: Claim) -> None:
        forgotten = time.time() - FORGET_AFTER_SECONDS
        with self._lock:
            self._claims = [
                c
                for c in self._claims
                if not (c.session == claim.session and (c.id == claim.id or c.expires_at < forgotten))
            ]

    # tool outputs

    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        with self._lock:
            self._raw[_name(session)].update({_name(k): as_text(v) for k, v in outputs.items()})

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None:
        with self._lock:
            return self._raw.get(_name(session), {}).get(_name(tool_call_id))

    def get_raw_outputs(self, session: str, tool_call_ids: list[str]) -> dict[str, str]:
        with self._lock:
            saved = self._raw.get(_name(session), {})
            return {i: saved[i] for i in tool_call_ids if i in saved}

    def call_messages(self, session: str, tool_call_id: str) -> list[Message]:
        with self._lock:
            rows = self._messages.get(_name(session), {}).values()
            chosen = [m for m in rows if m.concerns(tool_call_id)]
            return sorted(copy.deepcopy(chosen), key=lambda m: (m.seq, m.created_at))

    def message_at(self, session: str, seq: int) -> Message | None:
        with self._lock:
            found = [m for m in self._messages.get(_name(session), {}).values() if m.seq == seq]
            return copy.deepcopy(min(found, key=lambda m: m.created_at)) if found else None

    def has_raw_outputs(self, session: str, tool_call_ids: list[str]) -> set[str]:
        return set(self.get_raw_outputs(session, tool_call_ids))

    # images

    def save_images(self, session: str, images: dict[str, list[Image]]) -> None:
        with self._lock:
            kept = self._images[_name(session)]
            for tool_call_id, shown in images.items():
                if shown:
                    known = kept.setdefault(_name(tool_call_id), [])
                    known.extend(i for i in shown if i.id not in {k.id for k in known})

    def load_images(self, session: str, tool_call_ids: Iterable[str]) -> dict[str, list[Image]]:
        with self._lock:
            kept = self._images.get(_name(session), {})
            return {i: list(kept[i]) for i in tool_call_ids if i in kept}

    def get_image(self, session: str, image_id: str) -> Image | None:
        with self._lock:
            kept = self._images.get(_name(session), {})
            return next((i for shown in kept.values() for i in shown if i.id == image_id), None)

    def search_raw_outputs(self, session: str, needle: str, limit: int) -> list[tuple[str, int, str]]:
        """Newest outputs first, as the LanceDB store answers (here: the latest saved first)."""
        with self._lock:
            saved = list(self._raw.get(_name(session), {}).items())
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
        with self._lock:
            self._summaries[_name(summary.session)].append(replace(summary, text=as_text(summary.text)))
            self._wrote("summaries")

    def summary_head(self, session: str) -> tuple[float, int] | None:
        newest = self.load_summary(session)
        return None if newest is None else (newest.created_at, newest.boundary_seq)

    def load_summary(self, session: str) -> Summary | None:
        with self._lock:
            saved = self._summaries.get(_name(session), [])
            return replace(max(saved, key=lambda s: (s.created_at, s.boundary_seq))) if saved else None

    def save_ledger(self, session: str, entries: list[LedgerEntry]) -> None:
        with self._lock:
            self._ledger[_name(session)].update({e.item: replace(e) for e in entries})

    def load_ledger(self, session: str) -> list[LedgerEntry]:
        with self._lock:
            return [replace(e) for e in self._ledger.get(_name(session), {}).values()]

    def save_workspace(self, session: str, entries: list[WorkspaceEntry]) -> None:
        with self._lock:
            kept = self._workspace[_name(session)]
            for e in entries:
                entry = replace(e, key=as_text(e.key), columns=[as_text(c) for c in e.columns])
                known = kept.get((entry.kind, entry.key))
                if known is None or entry.seq >= known.seq:
                    kept[(entry.kind, entry.key)] = entry

    def load_workspace(self, session: str) -> list[WorkspaceEntry]:
        with self._lock:
            return [replace(e, columns=list(e.columns)) for e in self._workspace.get(_name(session), {}).values()]

    def save_calibration(self, session: str, model: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._calibrations[(_name(session), _name(model))] = (time.time(), copy.deepcopy(data))

    def load_calibration(self, session: str, model: str) -> dict[str, Any] | None:
        with self._lock:
            own = self._calibrations.get((_name(session), _name(model)))
            others = [saved for (_, m), saved in self._calibrations.items() if m == model]
            chosen = own or max(others, key=lambda saved: saved[0], default=None)
            return copy.deepcopy(chosen[1]) if chosen else None

    # events

    def append_events(self, events: list[Event]) -> None:
        with self._lock:
            for event in events:
                if event.persisted:
                    self._events[_name(event.session)].append(copy.deepcopy(event))

    def list_events(self, session: str, *, kind: str | None = None) -> list[Event]:
        with self._lock:
            chosen = [e for e in self._events.get(_name(session), []) if kind is None or e.kind == kind]
            return sorted(copy.deepcopy(chosen), key=lambda e: e.ts)

    # memory facts

    def add_facts(self, facts: list[MemoryFact]) -> None:
        with self._lock:
            self._facts.update({_name(f.id): replace(f, text=as_text(f.text)) for f in facts})

    def list_facts(self, scopes: list[str] | None = None) -> list[MemoryFact]:
        with self._lock:
            chosen = [f for f in self._facts.values() if scopes is None or f.scope in scopes]
            return sorted((replace(f) for f in chosen), key=lambda f: (f.created_at, f.id))

    def remove_fact(self, fact_id: str) -> bool:
        with self._lock:
            return self._facts.pop(_name(fact_id), None) is not None

    # recall's index

    def save_chunks(self, session: str, chunks: list[Chunk]) -> None:
        with self._lock:
            self._chunks[_name(session)].extend(replace(c, text=as_text(c.text)) for c in chunks)

    def chunked_ids(self, session: str, among: Iterable[str] | None = None) -> set[str]:
        with self._lock:
            ids = {c.message_id for c in self._chunks.get(_name(session), [])}
        return ids if among is None else ids & set(among)

    def chunk_texts(self, session: str, batch: int = 2000) -> Iterator[list[str]]:
        with self._lock:
            texts = [c.text for c in self._chunks.get(_name(session), [])]
        for start in range(0, len(texts), batch):
            yield texts[start : start + batch]

    def search_chunks(
        self,
        session: str,
        words: str,
        k: int,
        *,
        exclude_ids: Iterable[str] = (),
        shown: Mapping[str, str] | None = None,
    ) -> list[EmbeddingHit]:
        """BM25 over this session's chunks (lower-cased word tokens, any of the query's words)."""
        terms = set(query_words(words).lower().split())
        if k <= 0 or not terms:
            return []
        with self._lock:
            chunks = list(self._chunks.get(_name(session), []))
        documents = [Counter(query_words(c.text).lower().split()) for c in chunks]
        if not documents:
            return []
        average = sum(sum(d.values()) for d in documents) / len(documents) or 1.0
        frequency = {t: sum(1 for d in documents if t in d) for t in terms}
        rows = []
        for chunk, document in zip(chunks, documents, strict=True):
            length = sum(document.values())
            score = sum(
                math.log(1 + (len(documents) - frequency[t] + 0.5) / (frequency[t] + 0.5))
                * document[t]
                * (_BM25_K1 + 1)
                / (document[t] + _BM25_K1 * (1 - _BM25_B + _BM25_B * length / average))
                for t in terms
                if t in document
            )
            if score > 0:
                rows.append({**_hit_row(chunk), "_score": score})
        rows.sort(key=lambda r: r["_score"], reverse=True)
        return best_hits(rows, k, set(exclude_ids), shown)

    def save_embeddings(self, session: str, rows: list[tuple[Message | Chunk, list[float]]], model: str) -> None:
        if not rows:
            return
        check_vectors(vector for _, vector in rows)
        with self._lock:
            self._vectors[_name(session)].extend(
                (_embedded(item), model, [float(v) for v in vector]) for item, vector in rows
            )

    def embedded_ids(
        self, session: str, *, model: str, dims: int | None = None, among: Iterable[str] | None = None
    ) -> set[str]:
        with self._lock:
            rows = self._vectors.get(_name(session), [])
            ids = {c.message_id for c, m, v in rows if m == model and dims in (None, len(v))}
        return ids if among is None else ids & set(among)

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
        if k <= 0 or not vector:
            return []
        check_query_vector(vector)
        with self._lock:
            stored = [
                (c, v)
                for c, m, v in self._vectors.get(_name(session), [])
                if len(v) == len(vector) and (model is None or m == model)
            ]
        rows = [{**_hit_row(c), "_distance": 1.0 - _cosine(vector, v)} for c, v in stored]
        rows.sort(key=lambda r: r["_distance"])
        if each_chunk:
            rows = rows[:k]
        return best_hits(rows, k, set(exclude_ids), shown, each_chunk=each_chunk)

    # housekeeping

    def optimize(self) -> None:
        """Nothing to compact in memory."""

    def close(self) -> None:
        self.closed = True


def _embedded(item: Message | Chunk) -> Chunk:
    """The chunk as the vector's row keeps it: its text cut to what a snippet shows."""
    chunk = as_chunk(item)
    return replace(chunk, text=as_text(chunk.text)[:EMBEDDED_TEXT_MAX_CHARS])


def _hit_row(chunk: Chunk) -> dict[str, Any]:
    return {
        "message_id": chunk.message_id,
        "offset": chunk.offset,
        "seq": chunk.seq,
        "turn": chunk.turn,
        "role": chunk.role,
        "name": chunk.name,
        "tool_call_id": chunk.tool_call_id,
        "text": chunk.text,
    }


def _cosine(a: list[float], b: list[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0
