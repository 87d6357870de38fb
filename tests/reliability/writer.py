"""A child process that writes to a store and acknowledges each write on stdout, to be killed at random.

Run as ``python writer.py MODE DB NAME SEED``. Each ack line is printed only after the
write returned, so every acknowledged write must survive a ``kill -9`` right after it.
Modes: ``batches`` (user + assistant with tool calls + their results, optimizing often),
``compact`` (turns through a Session, each followed by a compaction).
"""

from __future__ import annotations

import json
import random
import sys

from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.lance import LanceStore

CALLS_PER_BATCH = 2
BATCH_SIZE = 2 + CALLS_PER_BATCH  # user, assistant with the calls, one result per call


def batch(session: str, number: int, seq: int, rng: random.Random) -> list[Message]:
    """One step's worth of messages; every one carries the batch id so a partial batch shows."""
    tag = f"[batch {session}:{number}]"
    calls = [ToolCall(id=f"{session}-{number}-{i}", name="python", arguments="{}") for i in range(CALLS_PER_BATCH)]
    padding = "x" * rng.randrange(10, 4000)
    messages = [
        Message("user", f"{tag} question {padding}", session=session, turn=number),
        Message("assistant", f"{tag} calling", session=session, turn=number, tool_calls=calls),
        *(
            Message("tool", f"{tag} result {c.id}", session=session, turn=number, tool_call_id=c.id, name="python")
            for c in calls
        ),
    ]
    for offset, message in enumerate(messages):
        message.seq = seq + offset
    return messages


def write_batches(db: str, session: str, seed: int, limit: int, optimize_every: int) -> None:
    rng = random.Random(seed)
    store = LanceStore(db, optimize_every=optimize_every)
    start = max((m.seq for m in store.load_messages(session)), default=-1) + 1
    first = start // BATCH_SIZE
    for number in range(first, first + limit):
        messages = batch(session, number, number * BATCH_SIZE, rng)
        store.append_messages(messages)
        print(json.dumps({"batch": number, "ids": [m.id for m in messages]}), flush=True)


def compact_turns(db: str, session: str, seed: int, limit: int) -> None:
    from monad_notebook.config import Config
    from monad_notebook.session import Session
    from monad_notebook.testing import ScriptedModel

    rng = random.Random(seed)
    config = Config.model_validate(
        {"models": {"main": {"model": "scripted-demo"}}, "context": {"summarize": {"keepRecent": 1}}}
    )
    store = LanceStore(db, optimize_every=5)
    chat = Session(session, config=config, store=store, model=ScriptedModel([f"noted {i}" for i in range(limit)]))
    for number in range(limit):
        chat.ask(f"fact {number}: the value is {rng.randrange(10**6)}")
        if not chat.compact():
            continue
        summary = store.load_summary(session)
        print(json.dumps({"summary": summary.boundary_seq, "chars": len(summary.text)}), flush=True)


def main(argv: list[str]) -> None:
    mode, db, session, seed = argv[0], argv[1], argv[2], int(argv[3])
    limit = int(argv[4]) if len(argv) > 4 else 10_000
    print(json.dumps({"ready": True}), flush=True)
    if mode == "batches":
        write_batches(db, session, seed, limit, optimize_every=int(argv[5]) if len(argv) > 5 else 4)
    elif mode == "compact":
        compact_turns(db, session, seed, limit)
    else:
        raise SystemExit(f"unknown mode {mode!r}: use batches or compact")


if __name__ == "__main__":
    main(sys.argv[1:])
