"""Sessions to store in tests: a turn's messages, a session with rows in every table, hostile names."""

from __future__ import annotations

import math
import time

from monad_notebook.events import TURN_FINISHED, Event
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Chunk, Store, Summary

HOSTILE_NAMES = [
    "x' OR '1'='1",
    "x'; DELETE FROM messages; --",
    'it\'s "quoted"',
    "back\\slash\\",
    "back\\'slash",
    "new\nline\r\n",
    "emoji 🦄 ünïcödé 中文",
    "%",
    "_",
    "   ",
]


def turn(session: str, start: int, n: int = 3, *, turn_no: int = 1) -> list[Message]:
    """n messages in seq order: a user message, an assistant tool call, tool results."""
    out = [Message(role="user", content=f"question {start}", session=session, seq=start, turn=turn_no)]
    for i in range(1, n):
        seq = start + i
        if i % 2:
            call = ToolCall(id=f"call-{seq}", name="run_python", arguments='{"code": "1+1"}')
            out.append(Message(role="assistant", content="", session=session, seq=seq, turn=turn_no, tool_calls=[call]))
        else:
            out.append(
                Message(
                    role="tool",
                    content=f"result {seq}",
                    session=session,
                    seq=seq,
                    turn=turn_no,
                    tool_call_id=f"call-{seq - 1}",
                    name="run_python",
                )
            )
    return out


def fill_session(store: Store, name: str) -> list[Message]:
    """A session with rows in every session-keyed table."""
    store.create_session(name, model="gpt-test")
    messages = turn(name, 1, 5)
    store.append_messages(messages)
    store.save_raw_outputs(name, {"call-2": f"full output of {name}"})
    store.save_summary(Summary(session=name, text=f"summary of {name}", boundary_seq=2, created_at=time.time()))
    store.append_events([Event(TURN_FINISHED, name, {"who": name})])
    return messages


HOSTILE_QUERIES = [
    '"churn" AND (text:raw) OR -x*',
    "text:churn",
    "'; DROP TABLE recall_text; --",
    "churn~2 raw^10",
    "~!@#$%^&*()[]{}",
    "NOT",
    "",
    "\x00churn",
]
MODEL = "test-model"


def chunk(message_id: str, text: str, offset: int = 0, **fields: object) -> Chunk:
    return Chunk(message_id, offset, text, **fields)  # type: ignore[arg-type]


def axis(i: int, dims: int = 4, lean: float = 0.0) -> list[float]:
    """A unit vector along axis i, leaning towards the next axis by ``lean``."""
    v = [0.0] * dims
    v[i % dims] = 1.0
    v[(i + 1) % dims] = lean
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def stored(store: Store, session: str, vectors: list[list[float]], *, model: str = MODEL) -> list[Message]:
    """Messages with the given vectors, saved as the session's history."""
    if store.get_session(session) is None:
        store.create_session(session)
    messages = [
        Message(role="user", content=f"{session} message {i}", session=session, seq=i, turn=i)
        for i in range(len(vectors))
    ]
    store.append_messages(messages)
    store.search.save_embeddings(session, list(zip(messages, vectors, strict=True)), model)
    return messages
