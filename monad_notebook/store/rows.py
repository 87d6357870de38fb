"""Table schemas and row conversions for the LanceDB store (pyarrow only, no lancedb).

Filters are raw SQL: every value a user may influence goes through ``sql_str``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from monad_notebook.errors import StoreError
from monad_notebook.images.image import Image
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Chunk, EmbeddingHit, MemoryFact, RewindRow, SessionRecord, WorkspaceEntry

TYPES = {"text": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "bytes": pa.binary()}
NULL_AS = {pa.string(): "", pa.int64(): 0, pa.float64(): 0.0, pa.bool_(): False, pa.binary(): b""}


def schema(spec: str) -> pa.Schema:
    """``name:type`` words; a ``!`` marks a non-null key. Other columns are nullable so old tables can gain columns."""
    fields = []
    for word in spec.split():
        name, kind = word.rstrip("!").split(":")
        fields.append(pa.field(name, TYPES[kind], nullable=not word.endswith("!")))
    return pa.schema(fields)


SCHEMAS: dict[str, pa.Schema] = {
    "sessions": schema("name:text! created_at:float updated_at:float model:text parent:text meta:text"),
    "messages": schema(
        "id:text! session:text! seq:int! turn:int step:int role:text content:text tool_calls:text"
        " tool_call_id:text name:text placeholder:text redacted:bool created_at:float"
    ),
    "tool_raw_outputs": schema("session:text! tool_call_id:text! text:text created_at:float"),
    "images": schema(
        "session:text! tool_call_id:text! id:text! position:int mime:text width:int height:int data:bytes"
        " description:text created_at:float"
    ),
    "summaries": schema("session:text! text:text boundary_seq:int tokens:int reflections:int created_at:float"),
    "memory_facts": schema("id:text! scope:text text:text created_at:float source:text"),
    "events": schema("id:text! session:text! kind:text data:text ts:float"),
    "claims": schema("session:text! id:text! owner:text! holder:text claimed_at:float expires_at:float"),
    "calibrations": schema("session:text! model:text! data:text updated_at:float"),
    "recall_text": schema(
        "session:text! message_id:text! offset:int seq:int turn:int role:text name:text tool_call_id:text"
        " text:text created_at:float"
    ),
    "ledger": schema(
        "session:text! item:text! kind:text score:float count:int seq:int turn:int source:text"
        " tool_call_id:text open:bool updated_at:float"
    ),
    "workspace": schema(
        "session:text! kind:text! key:text! type:text shape:text columns:text columns_total:int state:text"
        " made_by:text turn:int seq:int updated_at:float kernel:text"
    ),
    "rewind": schema(
        "session:text! kind:text! seq:int! epoch:int turn:int label:text key:text root:text before:text digest:text"
        " size:int after:text note:text path_ref:text host:text at:float"
    ),
}


EMBEDDINGS_PREFIX = "embeddings_"
TEXT_TABLE = "recall_text"
EMBEDDED_TEXT_MAX_CHARS = 2000  # of the text kept beside a vector: limits of input, not recall's tuning
MAX_QUERY_WORDS = 48  # of a full-text query
_WORD = re.compile(r"[^\W_]+")
_EMBEDDING_COLUMNS = (
    "session:text! message_id:text! seq:int turn:int role:text name:text text:text model:text created_at:float"
    " offset:int tool_call_id:text"
)


def search_table(name: str) -> bool:
    """Recall's tables: the chunks under the full-text index and the vectors of each width."""
    return name == TEXT_TABLE or name.startswith(EMBEDDINGS_PREFIX)


def embeddings_table(dims: int) -> str:
    """The table for vectors of one width (``embeddings_384``), its schema registered on first use.

    Widths are known only at run time (a config can switch models), and a LanceDB vector
    column has one fixed width, so each width gets its own table; ``model`` keeps models
    of equal width apart within it.
    """
    name = f"{EMBEDDINGS_PREFIX}{int(dims)}"
    if name not in SCHEMAS:
        vector_type = pa.list_(pa.float32(), int(dims))
        SCHEMAS[name] = schema(_EMBEDDING_COLUMNS).append(pa.field("vector", vector_type))
        NULL_AS[vector_type] = None
    return name


def sql_str(value: str) -> str:
    """A SQL string literal for ``where()``: the one way user text may enter a filter."""
    if "\x00" in value:
        raise StoreError("names and ids cannot contain NUL characters; remove them and try again")
    if not is_text(value):
        raise StoreError("names and ids must be valid text: this one holds a lone surrogate (\\ud800-\\udfff)")
    return "'" + value.replace("'", "''") + "'"


def is_text(value: str) -> bool:
    """Whether ``value`` can be stored as UTF-8: no lone surrogate (from bytes decoded with
    ``surrogateescape``, or a JSON ``\\ud800`` escape)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def arrow_table(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """``rows`` as Arrow, a lone surrogate in any text stored as U+FFFD: a write never fails on one.

    Surrogates written as a pair become the character they encode. Checked only when Arrow
    refuses the rows, so valid text costs nothing more.
    """
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except UnicodeEncodeError:
        return pa.Table.from_pylist([{k: as_text(v) for k, v in row.items()} for row in rows], schema=schema)


def as_text(value: Any) -> Any:
    """``value``, with any lone surrogate of a text replaced by U+FFFD (a pair becomes its character)."""
    if isinstance(value, str) and not is_text(value):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def as_chunk(item: Message | Chunk) -> Chunk:
    """A message stands for its one chunk where a chunk is expected (a vector of the whole message)."""
    if isinstance(item, Chunk):
        return item
    fields = (item.seq, item.turn, item.role, item.name, item.tool_call_id, item.created_at)
    return Chunk(item.id, 0, item.content, *fields)


def check_vectors(vectors: Iterable[Sequence[float]]) -> int:
    """The width every vector of one write shares; a mixed width or a NaN or infinite value refuses the write."""
    dims = -1
    for vector in vectors:
        dims = len(vector) if dims < 0 else dims
        if len(vector) != dims or dims == 0:
            raise StoreError(f"embeddings for one write must share one non-zero width (got {len(vector)}, {dims})")
        if not all(math.isfinite(v) for v in vector):
            raise StoreError("an embedding has NaN or infinite values and was not stored; check the embedding model")
    return dims


def check_query_vector(vector: Sequence[float]) -> None:
    if not all(math.isfinite(v) for v in vector):
        raise StoreError("the query embedding has NaN or infinite values; check the embedding model")


def words(text: str) -> list[str]:
    """The runs of letters and digits in ``text``: the one word tokenizer of recall (search, word matching)."""
    return _WORD.findall(text)


def query_words(text: str) -> str:
    """``text`` as plain space-separated word tokens: nothing a full-text query parser could read as syntax."""
    return " ".join(words(text)[:MAX_QUERY_WORDS])


def sql_in(values: Iterable[str]) -> str:
    return "(" + ", ".join(sql_str(v) for v in values) + ")"


def newest_by(rows: list[dict[str, Any]], key: str, stamp: str = "created_at") -> list[dict[str, Any]]:
    """One row per key, the newest: concurrent upserts of one key can leave duplicates."""
    chosen: dict[Any, dict[str, Any]] = {}
    for row in rows:
        kept = chosen.get(row[key])
        if kept is None or row[stamp] > kept[stamp]:
            chosen[row[key]] = row
    return list(chosen.values())


def hit_from_row(row: dict[str, Any], score: float) -> EmbeddingHit:
    return EmbeddingHit(
        message_id=row["message_id"],
        score=score,
        snippet=row["text"] or "",
        role=row["role"] or "",
        seq=int(row["seq"] or 0),
        turn=int(row["turn"] or 0),
        name=row["name"] or "",
        offset=int(row.get("offset") or 0),
        tool_call_id=row.get("tool_call_id") or "",
        created_at=float(row.get("created_at") or 0.0),
    )


def best_hits(
    rows: list[dict[str, Any]],
    k: int,
    excluded: set[str],
    shown: Mapping[str, str] | None = None,
    *,
    each_chunk: bool = False,
) -> list[EmbeddingHit]:
    """Rows arrive best first; keep the first (best) chunk of each message, skipping excluded ones.

    ``each_chunk``: keep every chunk, not only each message's best (``k`` then counts chunks).

    A chunk whose text lies inside what the window shows of its message (``shown``: a tool
    result's id -> its text as the window shows it) is skipped too, so the message's next best
    chunk stands for it: the middle of a truncated output, which only a search can bring back.
    A row's score is its BM25 ``_score`` from a full-text search, else its cosine (1 - ``_distance``).
    """
    hits: list[EmbeddingHit] = []
    seen: set[str] = set()
    for row in rows:
        message_id = row["message_id"]
        if message_id in excluded or (message_id in seen and not each_chunk) or shows(shown, message_id, row["text"]):
            continue
        seen.add(message_id)
        score = float(row["_score"]) if "_score" in row else 1.0 - float(row["_distance"])
        hits.append(hit_from_row(row, score))
        if len(hits) == k:
            break
    return hits


def shows(shown: Mapping[str, str] | None, message_id: str, text: str) -> bool:
    """Whether ``text`` (one chunk of the message) lies inside what the window shows of it."""
    visible = shown.get(message_id) if shown else None
    return visible is not None and text.strip() in visible


def fact_from_row(row: dict[str, Any]) -> MemoryFact:
    return MemoryFact(**{**row, "source": row["source"] or "manual"})


def as_row(obj: object, table: str, **columns: Any) -> dict[str, Any]:
    return {k: columns[k] if k in columns else getattr(obj, k) for k in SCHEMAS[table].names}


def session_from_row(row: dict[str, Any]) -> SessionRecord:
    return SessionRecord(**{**row, "meta": json.loads(row["meta"] or "{}")})


def message_row(message: Message) -> dict[str, Any]:
    sql_str(message.session)
    return as_row(message, "messages", tool_calls=json.dumps([c.to_dict() for c in message.tool_calls]))


def message_from_row(row: dict[str, Any]) -> Message:
    raw = row["tool_calls"]
    calls = [ToolCall(**c) for c in json.loads(raw)] if raw not in ("", "[]") else []
    return Message(**{**row, "tool_calls": calls})


def image_rows(session: str, images: dict[str, list[Image]]) -> list[dict[str, Any]]:
    for name in (session, *images):
        sql_str(name)
    now = time.time()
    return [
        {
            "session": session,
            "tool_call_id": tool_call_id,
            "id": image.id,
            "position": position,
            "mime": image.mime,
            "width": image.width,
            "height": image.height,
            "data": image.data,
            "description": image.description,
            "created_at": now,
        }
        for tool_call_id, kept in images.items()
        for position, image in enumerate(kept)
    ]


def images_from_rows(rows: list[dict[str, Any]]) -> dict[str, list[Image]]:
    """tool_call_id -> its images in order, one per (result, image id) (a repeated write is read once)."""
    out: dict[str, list[Image]] = {}
    seen: set[tuple[str, str]] = set()
    for row in sorted(rows, key=lambda r: (r["created_at"], r["position"])):
        key = (row["tool_call_id"], row["id"])
        if key in seen:
            continue
        seen.add(key)
        image = Image(row["id"], row["mime"], row["width"], row["height"], row["data"], row["description"] or "")
        out.setdefault(row["tool_call_id"], []).append(image)
    return out


def workspace_row(session: str, entry: WorkspaceEntry, updated_at: float) -> dict[str, Any]:
    """A workspace entry as its row: the columns as a JSON list, each with any lone surrogate made U+FFFD."""
    return as_row(
        entry,
        "workspace",
        session=session,
        columns=json.dumps([as_text(c) for c in entry.columns]),
        updated_at=updated_at,
    )


def workspace_from_row(row: dict[str, Any]) -> WorkspaceEntry:
    fields = [f for f in SCHEMAS["workspace"].names if f not in ("session", "updated_at")]
    kept = {f: row[f] for f in fields}
    return WorkspaceEntry(**{**kept, "columns": json.loads(row["columns"] or "[]"), "kernel": row["kernel"] or ""})


def rewind_row(session: str, row: RewindRow) -> dict[str, Any]:
    """A journal row as stored, its texts with any lone surrogate made U+FFFD."""
    return {k: as_text(v) for k, v in as_row(row, "rewind", session=session).items()}


def rewind_from_row(row: dict[str, Any]) -> RewindRow:
    return RewindRow(**{f: row[f] for f in SCHEMAS["rewind"].names if f != "session"})


def journal_order(rows: Iterable[RewindRow]) -> list[RewindRow]:
    """Rows in journal order, each once (a retried write may have added one twice)."""
    unique = {(r.kind, r.seq, r.at, r.key): r for r in rows}
    return sorted(unique.values(), key=lambda r: (r.seq, r.at))


def kept_by_rows(rows: Iterable[RewindRow]) -> set[str]:
    """The digests one session's rows still keep: files kept and not dropped since (a ``dropped`` row names the
    row it drops by its ``epoch``), and the real paths of redacted keys."""
    rows = list(rows)
    dropped = {r.epoch for r in rows if r.kind == "dropped"}
    kept = {r.digest for r in rows if r.kind == "file" and r.before == "kept" and r.seq not in dropped}
    return kept | {r.path_ref for r in rows if r.path_ref}
