"""The Store on LanceDB, embedded by default, object storage when the uri says so.

LanceDB makes a new version and fragment for every write, so each method writes its
whole batch in one operation and a daemon thread compacts and cleans up every
``optimize_every`` writes. Filters are raw SQL: every value goes through ``sql_str``.
This is the only module that imports ``lancedb``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import random
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import lancedb
import pyarrow as pa
from lancedb.index import Bitmap

from monad_notebook.errors import StoreError
from monad_notebook.events import Event
from monad_notebook.messages import Message, new_id
from monad_notebook.store.base import EmbeddingHit, MemoryFact, SessionRecord, Summary
from monad_notebook.store.rows import (
    EMBEDDED_TEXT_MAX_CHARS,
    EMBEDDINGS_PREFIX,
    NULL_AS,
    SCHEMAS,
    as_row,
    best_hits,
    embeddings_table,
    fact_from_row,
    message_from_row,
    message_row,
    newest_by,
    session_from_row,
    sql_in,
    sql_str,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")

# Cleaning up every old version is the point of the background optimize; reads retry on the latest version.
warnings.filterwarnings("ignore", r"optimize\(cleanup_older_than=0\)", UserWarning, r"monad_notebook\.store\.lance")

_RETRIES = 4
_RETRYABLE = ("not found", "incompatible transaction", "commit conflict", "retryable")


def default_db_uri() -> str:
    """``$MONAD_HOME/db``, or ``~/.monad/db``: one database shared by every kernel of this user."""
    return str(Path(os.environ.get("MONAD_HOME") or "~/.monad").expanduser() / "db")


_NO_SPACE = ("no space left", "os error 28", "os error 27", "file too large", "quota exceeded", "os error 122")


def _reason(exc: BaseException) -> str:
    """The first line of a LanceDB error, cut short, without Rust source paths; says what to do when it can."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r",? ?/\S*\.cargo/\S*", "", text)
    if any(mark in text.lower() for mark in _NO_SPACE):
        return "out of disk space: free some space (or raise the file size limit) and run the cell again"
    return text if len(text) <= 160 else text[:159] + "…"


class LanceStore:
    """The Store protocol on one LanceDB database; safe to share between threads and kernels."""

    def __init__(
        self,
        uri: str | Path,
        *,
        storage_options: dict[str, str] | None = None,
        optimize_every: int = 50,
        read_consistency_interval: float | None = 0.0,
        cleanup_grace: timedelta = timedelta(minutes=2),
    ) -> None:
        text = str(uri)
        self.uri = text if "://" in text else str(Path(text).expanduser())
        self.optimize_every = optimize_every
        self.cleanup_grace = cleanup_grace
        self.rows_read = 0
        self.last_optimize_error: str | None = None
        self._lock = threading.RLock()
        self._tables: dict[str, Any] = {}
        self._dirty: set[str] = set()
        self._writes = 0
        self._optimizer: threading.Thread | None = None
        self._closed = False
        self._filter_indexed: set[str] = set()
        interval = None if read_consistency_interval is None else timedelta(seconds=read_consistency_interval)
        try:
            self._db = lancedb.connect(self.uri, read_consistency_interval=interval, storage_options=storage_options)
        except Exception as exc:
            fix = "check its storage options" if "://" in self.uri else "point MONAD_HOME at a writable directory"
            raise StoreError(f"cannot open the database at {self.uri} ({_reason(exc)}); {fix}") from None

    # plumbing

    def _table(self, name: str, *, create: bool) -> Any | None:
        """The cached handle; created on first write, so reads of a fresh database create nothing."""
        handle = self._tables.get(name)
        if handle is not None:
            return handle
        try:
            if name in self._db.list_tables(limit=1000).tables:
                handle = self._db.open_table(name)
                self._add_missing_columns(handle, SCHEMAS[name])
            elif create:
                try:
                    handle = self._db.create_table(name, schema=SCHEMAS[name], exist_ok=True)
                except Exception:  # another kernel created it a moment ago
                    handle = self._db.open_table(name)
            else:
                return None
        except Exception as exc:
            raise StoreError(
                f"cannot open the {name} table at {self.uri} ({_reason(exc)}){self._repair(name)}"
            ) from None
        self._tables[name] = handle
        return handle

    def _repair(self, table: str) -> str:
        """How to fall back to the previous version when the newest one will not open (local databases)."""
        versions = Path(self.uri) / f"{table}.lance" / "_versions"
        if "://" in self.uri or not versions.is_dir():
            return ""
        manifests = sorted(versions.glob("*.manifest"), key=lambda p: p.stat().st_mtime_ns)
        if len(manifests) < 2:
            return ""
        newest = manifests[-1]
        return f"; if its newest version is damaged, repair: mv {newest} {newest}.damaged (falls back to the previous)"

    @staticmethod
    def _add_missing_columns(handle: Any, schema: pa.Schema) -> None:
        """Tables written by an older version get newer (nullable) columns as nulls."""
        missing = [f for f in schema if f.name not in handle.schema.names]
        if missing:
            handle.add_columns(missing)

    def _read(self, table: str, where: str | None, columns: list[str] | None = None) -> list[dict[str, Any]]:
        """Rows as dicts with nulls (columns added after the row was written) read as empty values."""
        with self._lock:
            handle = self._table(table, create=False)
            if handle is None:
                return []
            query = handle.search().select(columns or SCHEMAS[table].names)
            if where is not None:
                query = query.where(where)
            rows = self._retrying("read", table, lambda: query.to_arrow().to_pylist())
            self.rows_read += len(rows)
        nulls = {f.name: NULL_AS[f.type] for f in SCHEMAS[table]}
        return [{k: nulls[k] if v is None else v for k, v in row.items()} for row in rows]

    def _retrying(self, verb: str, table: str, action: Callable[[], _T]) -> _T:
        """Retry on the latest version when another kernel got there first.

        Its cleanup may have removed the version we held ("not found"), or its commit may
        conflict with ours ("incompatible transaction", "commit conflict"): a few retries with
        a short jittered pause, then a one-line StoreError.
        """
        for attempt in range(_RETRIES + 1):
            try:
                return action()
            except Exception as exc:
                message = str(exc).lower()
                if attempt == _RETRIES or not any(mark in message for mark in _RETRYABLE):
                    hint = self._repair(table) if verb == "read" else ""
                    raise StoreError(f"cannot {verb} the {table} table at {self.uri} ({_reason(exc)}){hint}") from None
            time.sleep(random.uniform(0.01, 0.05) * (attempt + 1))
            with contextlib.suppress(Exception):
                self._tables[table].checkout_latest()
        raise AssertionError("unreachable")

    def _count(self, table: str, where: str) -> int:
        with self._lock:
            handle = self._table(table, create=False)
            return 0 if handle is None else int(self._retrying("read", table, lambda: handle.count_rows(where)))

    def _write(self, table: str, operation: Callable[[Any], object]) -> None:
        """One LanceDB operation, counted towards the next background optimize."""
        with self._lock:
            handle = self._table(table, create=True)
            self._retrying("write", table, lambda: operation(handle))
            self._dirty.add(table)
            self._writes += 1
            self._maybe_optimize_in_background()

    def _add(self, table: str, rows: list[dict[str, Any]]) -> None:
        if rows:
            self._write(table, lambda h: h.add(pa.Table.from_pylist(rows, schema=SCHEMAS[table])))

    def _delete(self, table: str, where: str) -> None:
        if self._count(table, where):
            self._write(table, lambda h: h.delete(where))

    def _maybe_optimize_in_background(self) -> None:
        busy = self._optimizer is not None and self._optimizer.is_alive()
        if self._closed or busy or self.optimize_every <= 0 or self._writes < self.optimize_every:
            return
        tables, self._dirty, self._writes = sorted(self._dirty), set(), 0
        self._optimizer = threading.Thread(
            target=self._optimize_tables,
            args=(tables, False, self.cleanup_grace),
            name="monad-store-optimize",
            daemon=True,
        )
        self._optimizer.start()

    def _optimize_tables(self, tables: list[str], raise_errors: bool, grace: timedelta) -> None:
        """One table at a time under the write lock, so writers wait for one compaction at most.

        ``grace``: versions younger than this are kept. Another kernel may be committing files
        that are not referenced yet, so the background pass keeps a grace period; only an
        explicit ``optimize()`` drops everything at once.
        """
        for name in tables:
            with self._lock:
                handle = self._table(name, create=False)
                if handle is None:
                    continue
                try:
                    handle.optimize(cleanup_older_than=grace)
                except Exception as exc:
                    self.last_optimize_error = f"cannot optimize the {name} table at {self.uri} ({_reason(exc)})"
                    if raise_errors:
                        raise StoreError(self.last_optimize_error) from None
                    log.warning("%s", self.last_optimize_error)

    def _wait_for_optimizer(self) -> None:
        optimizer = self._optimizer
        if optimizer is not None and optimizer is not threading.current_thread():
            optimizer.join()

    # sessions

    def get_session(self, name: str) -> SessionRecord | None:
        rows = self._read("sessions", f"name = {sql_str(name)}")
        return session_from_row(min(rows, key=lambda r: r["created_at"])) if rows else None

    def create_session(
        self, name: str, *, model: str = "", parent: str = "", meta: dict[str, Any] | None = None
    ) -> SessionRecord:
        if not name:
            raise StoreError("a session needs a name; pass a non-empty one")
        with self._lock:
            if self.get_session(name) is not None:
                raise StoreError(f"a session named {name!r} already exists; pick another name or delete it first")
            now = time.time()
            record = SessionRecord(name, now, now, model=model, parent=parent, meta=dict(meta or {}))
            meta_json = json.dumps(record.meta, default=str)
            row = pa.Table.from_pylist([as_row(record, "sessions", meta=meta_json)], schema=SCHEMAS["sessions"])
            self._write("sessions", lambda h: h.merge_insert("name").when_not_matched_insert_all().execute(row))
            return self.get_session(name) or record

    def list_sessions(self) -> list[SessionRecord]:
        """Oldest first; if two kernels raced to create one name, the first record wins, as in get_session."""
        first: dict[str, dict[str, Any]] = {}
        for row in sorted(self._read("sessions", None), key=lambda r: r["created_at"], reverse=True):
            first[row["name"]] = row
        return sorted((session_from_row(r) for r in first.values()), key=lambda s: (s.created_at, s.name))

    def delete_session(self, name: str) -> None:
        with self._lock:
            self._drop_history(name)
            self._delete("sessions", f"name = {sql_str(name)}")

    def _drop_history(self, name: str) -> None:
        """Skips tables with no rows for the name, so a no-op leaves no empty version."""
        for table in ("messages", "tool_raw_outputs", "summaries", "events", *self._embedding_tables()):
            self._delete(table, f"session = {sql_str(name)}")

    def _embedding_tables(self) -> list[str]:
        """Every vector-width table in the database, whichever process created it."""
        try:
            names = self._db.list_tables(limit=1000).tables
        except Exception as exc:
            raise StoreError(f"cannot list the tables at {self.uri} ({_reason(exc)})") from None
        suffixes = [n.removeprefix(EMBEDDINGS_PREFIX) for n in names if n.startswith(EMBEDDINGS_PREFIX)]
        return [embeddings_table(int(s)) for s in suffixes if s.isdigit()]

    def reset_session(self, name: str) -> None:
        with self._lock:
            self._drop_history(name)
            if self.get_session(name) is not None:
                where = f"name = {sql_str(name)}"
                self._write("sessions", lambda h: h.update(where=where, values={"updated_at": time.time()}))

    def clone_session(self, source: str, target: str) -> SessionRecord:
        with self._lock:
            origin = self.get_session(source)
            if origin is None:
                raise StoreError(f"there is no session named {source!r} to branch from; check the name")
            if self.get_session(target) is not None:
                raise StoreError(f"a session named {target!r} already exists; pick another name or delete it first")
            self._drop_history(target)
            originals = self.load_messages(source)
            copies = [replace(m, id=new_id(), session=target) for m in originals]
            self.append_messages(copies)
            self._copy_embeddings(source, target, {o.id: c.id for o, c in zip(originals, copies, strict=True)})
            summary = self.load_summary(source)
            if summary is not None:
                self.save_summary(replace(summary, session=target))
            raws = self._read("tool_raw_outputs", f"session = {sql_str(source)}")
            self._add("tool_raw_outputs", [{**r, "session": target} for r in newest_by(raws, "tool_call_id")])
            return self.create_session(target, model=origin.model, parent=source, meta=origin.meta)

    # messages

    def append_messages(self, messages: list[Message]) -> None:
        self._add("messages", [message_row(m) for m in messages])

    def load_messages(self, session: str, *, after_seq: int = -1) -> list[Message]:
        rows = self._read("messages", f"session = {sql_str(session)} AND seq > {int(after_seq)}")
        unique: dict[str, dict[str, Any]] = {}
        for row in rows:
            kept = unique.get(row["id"])
            if kept is None or (row["placeholder"] and not kept["placeholder"]):
                unique[row["id"]] = row
        return sorted((message_from_row(r) for r in unique.values()), key=lambda m: (m.seq, m.created_at))

    def count_messages(self, session: str) -> int:
        """Stored rows, without reading them; a rare duplicate from a retried write counts twice."""
        return self._count("messages", f"session = {sql_str(session)}")

    def set_placeholders(self, session: str, placeholders: dict[str, str]) -> None:
        if not placeholders:
            return
        sql_str(session)
        ids, texts = list(placeholders), list(placeholders.values())
        updates = pa.table({"session": [session] * len(ids), "id": ids, "placeholder": texts})
        self._write("messages", lambda h: h.merge_insert(["session", "id"]).when_matched_update_all().execute(updates))

    # embeddings

    def save_embeddings(self, session: str, rows: list[tuple[Message, list[float]]], model: str) -> None:
        """One write; every vector must be finite and of one width, or nothing is stored."""
        if not rows:
            return
        sql_str(session)
        dims = len(rows[0][1])
        for _, vector in rows:
            if len(vector) != dims or dims == 0:
                raise StoreError(f"embeddings for one write must share one non-zero width (got {len(vector)}, {dims})")
            if not all(math.isfinite(v) for v in vector):
                raise StoreError(
                    "an embedding has NaN or infinite values and was not stored; check the embedding model"
                )
        now = time.time()
        data = [
            {
                "session": session,
                "message_id": m.id,
                "seq": m.seq,
                "turn": m.turn,
                "role": m.role,
                "name": m.name,
                "text": m.content[:EMBEDDED_TEXT_MAX_CHARS],
                "model": model,
                "created_at": now,
                "vector": [float(v) for v in vector],
            }
            for m, vector in rows
        ]
        table = embeddings_table(dims)
        self._add(table, data)
        self._index_filters(table)

    def embedded_ids(self, session: str, *, model: str, dims: int) -> set[str]:
        table = embeddings_table(dims)
        rows = self._read(table, f"session = {sql_str(session)} AND model = {sql_str(model)}", ["message_id"])
        return {r["message_id"] for r in rows}

    def search_embeddings(
        self,
        session: str,
        vector: list[float],
        k: int,
        *,
        model: str | None = None,
        exclude_ids: Iterable[str] = (),
    ) -> list[EmbeddingHit]:
        """Exact (brute-force) cosine search behind a ``where`` prefilter on the session.

        Exclusions are applied after the search, with the limit widened by their number,
        so a window of hundreds of ids never becomes a huge SQL filter.
        """
        if k <= 0 or not vector:
            return []
        if not all(math.isfinite(v) for v in vector):
            raise StoreError("the query embedding has NaN or infinite values; check the embedding model")
        where = f"session = {sql_str(session)}" + ("" if model is None else f" AND model = {sql_str(model)}")
        excluded = set(exclude_ids)
        table = embeddings_table(len(vector))
        with self._lock:
            handle = self._table(table, create=False)
            if handle is None:
                return []
            query = (
                handle.search([float(v) for v in vector], vector_column_name="vector")
                .distance_type("cosine")
                .where(where, prefilter=True)
                .select(["message_id", "seq", "turn", "role", "name", "text", "_distance"])
                .limit(2 * k + len(excluded))
            )
            rows = self._retrying("search", table, lambda: query.to_arrow().to_pylist())
            self.rows_read += len(rows)
        return best_hits(rows, k, excluded)

    def _index_filters(self, table: str) -> None:
        """Bitmap indexes on ``session`` and ``model``, so the search prefilter reads one session's rows.

        Measured at 100k rows in 100 sessions: 186 ms -> 9 ms per search. The background
        optimize folds new rows into them; rows not yet folded are scanned, which stays correct.
        """
        if table in self._filter_indexed:
            return
        with self._lock:
            handle = self._table(table, create=False)
            if handle is None:
                return
            try:
                indexed = {tuple(index.columns) for index in handle.list_indices()}
                for column in ("session", "model"):
                    if (column,) not in indexed:
                        handle.create_index(column, config=Bitmap())
            except Exception as exc:
                log.warning("cannot index the %s table (%s); search works, only slower", table, _reason(exc))
                return
            self._filter_indexed.add(table)

    def _copy_embeddings(self, source: str, target: str, ids: dict[str, str]) -> None:
        """A branch's vectors point at the branch's own message ids: one write per width."""
        for table in self._embedding_tables():
            rows = self._read(table, f"session = {sql_str(source)}")
            copies = [
                {**r, "session": target, "message_id": ids[r["message_id"]]} for r in rows if r["message_id"] in ids
            ]
            self._add(table, copies)

    # tool raw outputs

    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        if not outputs:
            return
        sql_str(session)
        now = time.time()
        rows = [{"session": session, "tool_call_id": k, "text": v, "created_at": now} for k, v in outputs.items()]
        data = pa.Table.from_pylist(rows, schema=SCHEMAS["tool_raw_outputs"])
        key = ["session", "tool_call_id"]
        self._write(
            "tool_raw_outputs",
            lambda h: h.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data),
        )

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None:
        where = f"session = {sql_str(session)} AND tool_call_id = {sql_str(tool_call_id)}"
        rows = self._read("tool_raw_outputs", where, ["tool_call_id", "text", "created_at"])
        return newest_by(rows, "tool_call_id")[0]["text"] if rows else None

    def search_raw_outputs(self, session: str, needle: str, limit: int) -> list[tuple[str, int, str]]:
        """(tool_call_id, line number, line) of saved outputs containing ``needle``, newest outputs first.

        Reads this session's saved outputs in full: an explicit, rare request, not the per-step path.
        """
        where = f"session = {sql_str(session)}"
        rows = newest_by(self._read("tool_raw_outputs", where, ["tool_call_id", "text", "created_at"]), "tool_call_id")
        hits: list[tuple[str, int, str]] = []
        for row in sorted(rows, key=lambda r: r["created_at"], reverse=True):
            if needle not in row["text"]:
                continue
            for number, line in enumerate(row["text"].split("\n"), 1):
                if needle in line:
                    hits.append((row["tool_call_id"], number, line))
                    if len(hits) >= limit:
                        return hits
        return hits

    def has_raw_outputs(self, session: str, tool_call_ids: list[str]) -> set[str]:
        if not tool_call_ids:
            return set()
        where = f"session = {sql_str(session)} AND tool_call_id IN {sql_in(tool_call_ids)}"
        return {r["tool_call_id"] for r in self._read("tool_raw_outputs", where, ["tool_call_id"])}

    # summaries

    def save_summary(self, summary: Summary) -> None:
        sql_str(summary.session)
        self._add("summaries", [as_row(summary, "summaries")])

    def load_summary(self, session: str) -> Summary | None:
        """Two small reads, so a long history of summaries is never read in full."""
        where = f"session = {sql_str(session)}"
        heads = self._read("summaries", where, ["boundary_seq", "created_at"])
        if not heads:
            return None
        newest = max(heads, key=lambda r: (r["created_at"], r["boundary_seq"]))
        rows = self._read("summaries", f"{where} AND boundary_seq = {int(newest['boundary_seq'])}")
        return Summary(**max(rows, key=lambda r: r["created_at"]))

    # events

    def append_events(self, events: list[Event]) -> None:
        """Transient kinds are dropped here too, so no caller can fill the table with deltas."""
        rows = [
            {"id": new_id(), "session": e.session, "kind": e.kind, "data": json.dumps(e.data, default=str), "ts": e.ts}
            for e in events
            if e.persisted
        ]
        self._add("events", rows)

    def list_events(self, session: str, *, kind: str | None = None) -> list[Event]:
        where = f"session = {sql_str(session)}" + ("" if kind is None else f" AND kind = {sql_str(kind)}")
        rows = sorted(newest_by(self._read("events", where), "id", "ts"), key=lambda r: r["ts"])
        return [
            Event(kind=r["kind"], session=r["session"], data=json.loads(r["data"] or "{}"), ts=r["ts"]) for r in rows
        ]

    # memory

    def add_facts(self, facts: list[MemoryFact]) -> None:
        self._add("memory_facts", [as_row(f, "memory_facts") for f in facts])

    def list_facts(self, scopes: list[str] | None = None) -> list[MemoryFact]:
        if scopes is not None and not scopes:
            return []
        rows = self._read("memory_facts", None if scopes is None else f"scope IN {sql_in(scopes)}")
        facts = [fact_from_row(r) for r in newest_by(rows, "id")]
        return sorted(facts, key=lambda f: (f.created_at, f.id))

    def remove_fact(self, fact_id: str) -> bool:
        where = f"id = {sql_str(fact_id)}"
        with self._lock:
            if not self._count("memory_facts", where):
                return False
            self._write("memory_facts", lambda h: h.delete(where))
            return True

    # housekeeping

    def optimize(self) -> None:
        """Compact every table and drop every old version now; waits for a background run first."""
        self._wait_for_optimizer()
        with self._lock:
            tables = [n for n in SCHEMAS if self._table(n, create=False) is not None]
            self._dirty, self._writes = set(), 0
        self._optimize_tables(tables, True, timedelta(0))

    def close(self) -> None:
        """Waits for an in-flight optimize, so the process never exits mid-compaction."""
        with self._lock:
            self._closed = True
        self._wait_for_optimizer()

    def table_stats(self) -> dict[str, dict[str, int]]:
        """Versions, fragments and rows per existing table: what background optimize keeps bounded."""
        stats: dict[str, dict[str, int]] = {}
        with self._lock:
            for name in SCHEMAS:
                handle = self._table(name, create=False)
                if handle is not None:
                    info = handle.stats()
                    stats[name] = {
                        "versions": len(handle.list_versions()),
                        "fragments": int(info["fragment_stats"]["num_fragments"]),
                        "rows": int(info["num_rows"]),
                    }
        return stats

    def table_version(self, name: str) -> int:
        """The table's current LanceDB version (0 if it does not exist yet): one per write."""
        with self._lock:
            handle = self._table(name, create=False)
            return 0 if handle is None else int(handle.version)
