"""The Store protocol on LanceDB, embedded by default, object storage when the uri says so.

Each method writes its whole batch in one operation, so a step is one version per table.
Filters are raw SQL: every value goes through ``sql_str``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from monad_notebook.config import Config
from monad_notebook.errors import StoreError
from monad_notebook.events import Event
from monad_notebook.images.image import Image
from monad_notebook.messages import Message, new_id
from monad_notebook.store.base import LedgerEntry, MemoryFact, SessionRecord, Summary
from monad_notebook.store.claims import LanceClaims
from monad_notebook.store.rewind import LanceRewind
from monad_notebook.store.rows import (
    SCHEMAS,
    arrow_table,
    as_row,
    fact_from_row,
    image_rows,
    images_from_rows,
    message_from_row,
    message_row,
    newest_by,
    session_from_row,
    sql_in,
    sql_str,
)
from monad_notebook.store.search import LanceSearch
from monad_notebook.store.tables import IDS_PER_READ, LanceTables, default_db_uri
from monad_notebook.store.workspace import LanceWorkspace

__all__ = ["LanceStore", "default_db_uri"]


class LanceStore:
    """The Store protocol on one LanceDB database; safe to share between threads and kernels.

    The session's record is the short methods below; the three parts of their own (the turn
    claims, ``claims.py``; recall's chunk and vector tables, ``search.py``; the workspace record,
    ``workspace.py``) are attributes. All of them work over one ``LanceTables`` (connection,
    handles, retries, optimize).
    """

    def __init__(self, uri: str | Path, **options: Any) -> None:
        """``options``: those of ``LanceTables`` (storage options, optimize cadence, vector index size...)."""
        self.tables = LanceTables(uri, **options)
        self.lock = self.tables.lock
        self.claims = LanceClaims(self.tables)
        self.search = LanceSearch(self.tables)
        self.workspace = LanceWorkspace(self.tables)
        self.rewind = LanceRewind(self.tables)

    @property
    def uri(self) -> str:
        return self.tables.uri

    @property
    def optimize_every(self) -> int:
        return self.tables.passes.every

    @optimize_every.setter
    def optimize_every(self, writes: int) -> None:
        self.tables.passes.every = writes

    def optimize(self) -> None:
        """Compact every table and drop every old version now."""
        self.tables.passes.optimize()

    def close(self) -> None:
        """Waits for an in-flight optimize, so the process never exits mid-compaction."""
        self.tables.passes.close()

    # sessions

    def get_session(self, name: str) -> SessionRecord | None:
        rows = self.tables.read("sessions", f"name = {sql_str(name)}")
        return session_from_row(min(rows, key=lambda r: r["created_at"])) if rows else None

    def create_session(
        self, name: str, *, model: str = "", parent: str = "", meta: dict[str, Any] | None = None
    ) -> SessionRecord:
        if not name:
            raise StoreError("a session needs a name; pass a non-empty one")
        with self.tables.lock:
            if self.get_session(name) is not None:
                raise StoreError(f"a session named {name!r} already exists; pick another name or delete it first")
            now = time.time()
            record = SessionRecord(name, now, now, model=model, parent=parent, meta=dict(meta or {}))
            meta_json = json.dumps(record.meta, default=str)
            row = arrow_table([as_row(record, "sessions", meta=meta_json)], SCHEMAS["sessions"])
            self.tables.write("sessions", lambda h: h.merge_insert("name").when_not_matched_insert_all().execute(row))
            return self.get_session(name) or record

    def list_sessions(self) -> list[SessionRecord]:
        """Oldest first; if two kernels raced to create one name, the first record wins, as in get_session."""
        first: dict[str, dict[str, Any]] = {}
        for row in sorted(self.tables.read("sessions", None), key=lambda r: r["created_at"], reverse=True):
            first[row["name"]] = row
        return sorted((session_from_row(r) for r in first.values()), key=lambda s: (s.created_at, s.name))

    def set_session_meta(self, name: str, meta: dict[str, Any]) -> None:
        values = {"meta": json.dumps(meta, default=str)}
        with self.tables.lock:
            self.tables.write("sessions", lambda h: h.update(where=f"name = {sql_str(name)}", values=values))

    def delete_session(self, name: str) -> None:
        with self.tables.lock:
            self._drop_history(name)
            self.tables.delete("calibrations", f"session = {sql_str(name)}")
            self.tables.delete("sessions", f"name = {sql_str(name)}")

    def _drop_history(self, name: str) -> None:
        """Skips tables with no rows for the name, so a no-op leaves no empty version."""
        for table in ("messages", "tool_raw_outputs", "images", "summaries", "events", "ledger"):
            self.tables.delete(table, f"session = {sql_str(name)}")
        self.search.drop(name)
        self.workspace.drop(name)
        self.rewind.drop(name)

    def reset_session(self, name: str) -> None:
        with self.tables.lock:
            self._drop_history(name)
            if self.get_session(name) is not None:
                where = f"name = {sql_str(name)}"
                self.tables.write("sessions", lambda h: h.update(where=where, values={"updated_at": time.time()}))

    # messages

    def append_messages(self, messages: list[Message]) -> int | None:
        return self.tables.add("messages", [message_row(m) for m in messages])

    def load_messages(self, session: str, *, after_seq: int = -1, ids: Iterable[str] | None = None) -> list[Message]:
        where = f"session = {sql_str(session)} AND seq > {int(after_seq)}"
        if ids is None:
            rows = self.tables.read("messages", where)
        else:
            wanted = sorted(set(ids))
            rows = [
                row
                for start in range(0, len(wanted), IDS_PER_READ)
                for row in self.tables.read(
                    "messages", f"{where} AND id IN {sql_in(wanted[start : start + IDS_PER_READ])}"
                )
            ]
        return _messages_of(rows)

    def message_ids(self, session: str) -> set[str]:
        return self.tables.distinct("messages", f"session = {sql_str(session)}", "id")

    def count_messages(self, session: str) -> int:
        """Stored rows, without reading them; a rare duplicate from a retried write counts twice."""
        return self.tables.count("messages", f"session = {sql_str(session)}")

    def set_placeholders(self, session: str, placeholders: dict[str, str]) -> int | None:
        if not placeholders:
            return None
        sql_str(session)
        rows = [{"session": session, "id": i, "placeholder": t} for i, t in placeholders.items()]
        updates = arrow_table(rows, pa.schema([(name, pa.string()) for name in ("session", "id", "placeholder")]))
        return self.tables.write(
            "messages", lambda h: h.merge_insert(["session", "id"]).when_matched_update_all().execute(updates)
        )

    def history_mark(self) -> tuple[int, int] | None:
        messages, summaries = self.tables.version("messages"), self.tables.version("summaries")
        return None if messages is None or summaries is None else (messages, summaries)

    # tool raw outputs

    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        if not outputs:
            return
        sql_str(session)
        now = time.time()
        rows = [{"session": session, "tool_call_id": k, "text": v, "created_at": now} for k, v in outputs.items()]
        data = arrow_table(rows, SCHEMAS["tool_raw_outputs"])
        key = ["session", "tool_call_id"]
        self.tables.write(
            "tool_raw_outputs",
            lambda h: h.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data),
        )

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None:
        where = f"session = {sql_str(session)} AND tool_call_id = {sql_str(tool_call_id)}"
        rows = self._outputs(where)
        return rows[0]["text"] if rows else None

    def search_raw_outputs(self, session: str, needle: str, limit: int) -> list[tuple[str, int, str]]:
        """(tool_call_id, line number, line) of saved outputs containing ``needle``, newest outputs first.

        Reads this session's saved outputs in full: an explicit, rare request, not the per-step path.
        """
        where = f"session = {sql_str(session)}"
        rows = self._outputs(where)
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

    def get_raw_outputs(self, session: str, tool_call_ids: list[str]) -> dict[str, str]:
        if not tool_call_ids:
            return {}
        where = f"session = {sql_str(session)} AND tool_call_id IN {sql_in(tool_call_ids)}"
        rows = self._outputs(where)
        return {r["tool_call_id"]: r["text"] for r in rows}

    def _outputs(self, where: str) -> list[dict[str, Any]]:
        """The newest saved text of each tool call matching ``where``."""
        return newest_by(
            self.tables.read("tool_raw_outputs", where, ["tool_call_id", "text", "created_at"]), "tool_call_id"
        )

    def call_messages(self, session: str, tool_call_id: str) -> list[Message]:
        mentions = sql_str(f"%{_like_wildcards(tool_call_id)}%")  # the read may only widen: checked below
        made = f"role = 'assistant' AND tool_calls LIKE {mentions}"
        where = f"session = {sql_str(session)} AND (tool_call_id = {sql_str(tool_call_id)} OR ({made}))"
        return [m for m in _messages_of(self.tables.read("messages", where)) if m.concerns(tool_call_id)]

    def message_at(self, session: str, seq: int) -> Message | None:
        found = _messages_of(self.tables.read("messages", f"session = {sql_str(session)} AND seq = {int(seq)}"))
        return found[0] if found else None

    def has_raw_outputs(self, session: str, tool_call_ids: list[str]) -> set[str]:
        if not tool_call_ids:
            return set()
        where = f"session = {sql_str(session)} AND tool_call_id IN {sql_in(tool_call_ids)}"
        return {r["tool_call_id"] for r in self.tables.read("tool_raw_outputs", where, ["tool_call_id"])}

    def copy_raw_outputs(self, source: str, target: str) -> None:
        """The rows as saved, their times too: the newest output of ``source`` is the newest of ``target``."""
        sql_str(target)
        raws = self.tables.read("tool_raw_outputs", f"session = {sql_str(source)}")
        self.tables.add("tool_raw_outputs", [{**r, "session": target} for r in newest_by(raws, "tool_call_id")])

    # images

    def save_images(self, session: str, images: dict[str, list[Image]]) -> None:
        rows = image_rows(session, {k: v for k, v in images.items() if v})
        if rows:
            self.tables.add("images", rows)

    def load_images(self, session: str, tool_call_ids: Iterable[str] | None = None) -> dict[str, list[Image]]:
        where = f"session = {sql_str(session)}"
        if tool_call_ids is not None:
            ids = list(tool_call_ids)
            if not ids:
                return {}
            where += f" AND tool_call_id IN {sql_in(ids)}"
        return images_from_rows(self.tables.read("images", where))

    def get_image(self, session: str, image_id: str) -> Image | None:
        where = f"session = {sql_str(session)} AND id = {sql_str(image_id)}"
        found = images_from_rows(self.tables.read("images", where))
        return next((image for kept in found.values() for image in kept), None)

    # summaries

    def save_summary(self, summary: Summary) -> None:
        sql_str(summary.session)
        self.tables.add("summaries", [as_row(summary, "summaries")])

    def summary_head(self, session: str, *, before: float | None = None) -> tuple[float, int] | None:
        where = f"session = {sql_str(session)}" + (f" AND created_at < {float(before)!r}" if before is not None else "")
        heads = self.tables.read("summaries", where, ["boundary_seq", "created_at"])
        if not heads:
            return None
        newest = max(heads, key=lambda r: (r["created_at"], r["boundary_seq"]))
        return newest["created_at"], newest["boundary_seq"]

    def load_summary(self, session: str, *, before: float | None = None) -> Summary | None:
        """Two small reads, so a long history of summaries is never read in full."""
        head = self.summary_head(session, before=before)
        if head is None:
            return None
        where = f"session = {sql_str(session)}" + (f" AND created_at < {float(before)!r}" if before is not None else "")
        rows = self.tables.read("summaries", f"{where} AND boundary_seq = {int(head[1])}")
        return Summary(**max(rows, key=lambda r: r["created_at"]))

    # calibration

    def save_calibration(self, session: str, model: str, data: dict[str, Any]) -> None:
        """An upsert keyed by (session, model): the table holds one small row per pair, however long the session."""
        sql_str(session)
        sql_str(model)
        row = {"session": session, "model": model, "data": json.dumps(data), "updated_at": time.time()}
        table = arrow_table([row], SCHEMAS["calibrations"])
        self.tables.write(
            "calibrations",
            lambda h: (
                h.merge_insert(["session", "model"])
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(table)
            ),
        )

    def load_calibration(self, session: str, model: str) -> dict[str, Any] | None:
        rows = self.tables.read("calibrations", f"model = {sql_str(model)}")
        own = [r for r in rows if r["session"] == session]
        chosen = max(own or rows, key=lambda r: r["updated_at"], default=None)
        if chosen is None:
            return None
        try:
            data = json.loads(chosen["data"] or "{}")
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    # events

    def append_events(self, events: list[Event]) -> None:
        """Transient kinds are dropped here too, so no caller can fill the table with deltas."""
        rows = [
            {"id": new_id(), "session": e.session, "kind": e.kind, "data": json.dumps(e.data, default=str), "ts": e.ts}
            for e in events
            if e.persisted
        ]
        self.tables.add("events", rows)

    def list_events(self, session: str, *, kind: str | None = None) -> list[Event]:
        where = f"session = {sql_str(session)}" + ("" if kind is None else f" AND kind = {sql_str(kind)}")
        rows = sorted(newest_by(self.tables.read("events", where), "id", "ts"), key=lambda r: r["ts"])
        return [
            Event(kind=r["kind"], session=r["session"], data=json.loads(r["data"] or "{}"), ts=r["ts"]) for r in rows
        ]

    # ledger

    def save_ledger(self, session: str, entries: list[LedgerEntry]) -> None:
        """Upsert by (session, item) in one write."""
        if not entries:
            return
        sql_str(session)
        now = time.time()
        rows = [as_row(e, "ledger", session=session, updated_at=now) for e in entries]
        data = arrow_table(rows, SCHEMAS["ledger"])
        key = ["session", "item"]
        self.tables.write(
            "ledger",
            lambda h: h.merge_insert(key).when_matched_update_all().when_not_matched_insert_all().execute(data),
        )

    def load_ledger(self, session: str) -> list[LedgerEntry]:
        rows = newest_by(self.tables.read("ledger", f"session = {sql_str(session)}"), "item", "updated_at")
        fields = [f for f in SCHEMAS["ledger"].names if f not in ("session", "updated_at")]
        return [LedgerEntry(**{f: r[f] for f in fields}) for r in rows]

    # memory

    def add_facts(self, facts: list[MemoryFact]) -> None:
        self.tables.add("memory_facts", [as_row(f, "memory_facts") for f in facts])

    def list_facts(self, scopes: list[str] | None = None) -> list[MemoryFact]:
        if scopes is not None and not scopes:
            return []
        rows = self.tables.read("memory_facts", None if scopes is None else f"scope IN {sql_in(scopes)}")
        facts = [fact_from_row(r) for r in newest_by(rows, "id")]
        return sorted(facts, key=lambda f: (f.created_at, f.id))

    def remove_fact(self, fact_id: str) -> bool:
        where = f"id = {sql_str(fact_id)}"
        with self.tables.lock:
            if not self.tables.count("memory_facts", where):
                return False
            self.tables.write("memory_facts", lambda h: h.delete(where))
            return True


def open_store(config: Config) -> LanceStore:
    """The configured store: embedded at ~/.monad/db by default, or any LanceDB URI (object storage too)."""
    uri = config.store.uri or default_db_uri()
    return LanceStore(
        uri, storage_options=dict(config.store.storage_options), optimize_every=config.store.optimize_every_writes
    )


def _like_wildcards(text: str) -> str:
    """``text`` for a LIKE pattern, each character that LIKE reads or the JSON of a tool call may escape made ``%``
    (any run of characters), so the pattern matches wherever ``text`` does, and perhaps elsewhere."""
    return "".join(ch if ch.isascii() and ch.isprintable() and ch not in '%_\\"' else "%" for ch in text)


def _messages_of(rows: list[dict[str, Any]]) -> list[Message]:
    """Message rows as messages in seq order, one per id (an evicted row's placeholder wins over its older copy)."""
    unique: dict[str, dict[str, Any]] = {}
    for row in rows:
        kept = unique.get(row["id"])
        if kept is None or (row["placeholder"] and not kept["placeholder"]):
            unique[row["id"]] = row
    return sorted((message_from_row(r) for r in unique.values()), key=lambda m: (m.seq, m.created_at))
