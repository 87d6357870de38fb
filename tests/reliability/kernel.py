"""A child process that keeps one Session open, as a notebook kernel's ``%%monad`` does, and runs turns on command.

Run as ``python kernel.py DB SESSION NAME``; it reads JSON commands on stdin and answers one
JSON line per event on stdout:

- ``{"ask": TEXT}`` runs one turn and answers ``turn`` (acknowledged) or ``refused`` (the message);
- ``{"loop": SECONDS}`` runs turns back to back for that long, one answer per attempt, then ``done``;
- ``{"leave": true}`` lets the session's background work land and closes it: ``left``;
- ``{"open": SESSION}`` leaves the session open, if any, and opens SESSION on the same store: ``ready``;
- ``{"quit": true}`` closes the session and exits.

Every turn calls a tool, then answers, so a request can hold a tool round. Each answer
lists what the model received (role, content head, tool call ids), so the parent can check
every request. Compaction runs often (a small window), and each summary the session saves
is reported with the boundary it started from and the ids it folded.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from monad_notebook.config import Config
from monad_notebook.errors import MonadError, SessionBusyError
from monad_notebook.messages import ToolCall
from monad_notebook.provider import ChatResponse, TextCallback
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore

CONTEXT_WINDOW = 3000
PADDING = "lorem ipsum dolor sit amet " * 12


class TurnModel:
    """Calls ``list_variables`` on a user message, then answers it; records every request compactly."""

    name = "scripted"
    context_window = CONTEXT_WINDOW

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []
        self._calls = 0

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: TextCallback | None = None
    ) -> ChatResponse:
        self.requests.append([_compact(m) for m in messages])
        last = messages[-1]
        if last["role"] == "user":
            self._calls += 1
            call = ToolCall(id=f"call-{self._calls}-{time.monotonic_ns()}", name="list_variables", arguments="{}")
            return ChatResponse(content="", tool_calls=[call], finish_reason="tool_calls")
        asked = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        return ChatResponse(content=f"answer to {asked.split()[0]}")


def _compact(message: dict[str, Any]) -> dict[str, Any]:
    content = str(message.get("content") or "")
    return {
        "role": message["role"],
        "content": content if message["role"] == "user" else content[:400],  # a user message may carry the summary
        "calls": [c["id"] for c in message.get("tool_calls") or []],
        "tool_call_id": message.get("tool_call_id"),
    }


def say(**data: Any) -> None:
    print(json.dumps(data), flush=True)


def record_summaries(session: Session) -> None:
    """Report each summary the session actually saves: the boundary it built on, its own, what it folded."""
    policy = session.cascade.compaction
    save = policy._save_summary

    def recording(compaction: Any, previous: Any) -> Any:
        saved = save(compaction, previous)
        if saved:
            before = previous.boundary_seq if previous is not None else -1
            say(summary=compaction.summary.boundary_seq, previous=before, folded=compaction.folded_ids)
        return saved

    policy._save_summary = recording  # type: ignore[method-assign]


class Kernel:
    def __init__(self, db: str, session: str, name: str) -> None:
        self.name = name
        self.store = LanceStore(db, optimize_every=20)
        self.session: Session | None = None
        self.open(session)

    def open(self, session: str) -> None:
        """A new Session of ``session`` on this kernel's store, its own model and turn count."""
        self.leave()
        config = Config.model_validate(
            {
                "models": {"main": {"model": "scripted-demo"}},
                "context": {"summarize": {"keepRecent": 4, "softFraction": 0.6, "hardFraction": 0.9}},
            }
        )
        self.model = TurnModel()
        self.session = Session(session, config=config, store=self.store, model=self.model)
        record_summaries(self.session)
        self.count = 0

    def leave(self) -> None:
        if self.session is not None:
            self.session.wait_for_background(30)
            self.session.close()
            self.session = None

    def ask(self) -> None:
        self.count += 1
        tag = f"[{self.name}:{self.count}]"
        first = len(self.model.requests)
        started = time.monotonic()
        assert self.session is not None, "no session is open"
        try:
            reply = self.session.ask(f"{tag} {PADDING}")
        except SessionBusyError as exc:
            say(refused=str(exc), tag=tag)
            return
        except MonadError as exc:
            say(error=str(exc), tag=tag)
            return
        seconds = round(time.monotonic() - started, 3)
        say(turn=tag, answer=reply.text, requests=self.model.requests[first:], seconds=seconds)

    def loop(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.ask()
        say(done=True)


def main(argv: list[str]) -> None:
    kernel = Kernel(argv[0], argv[1], argv[2])
    say(ready=True)
    for line in sys.stdin:
        command = json.loads(line)
        if "ask" in command:
            kernel.ask()
        elif "loop" in command:
            kernel.loop(float(command["loop"]))
        elif "open" in command:
            kernel.open(command["open"])
            say(ready=True)
        elif command.get("leave"):
            kernel.leave()
            say(left=True)
        elif command.get("quit"):
            break
    kernel.leave()
    kernel.store.close()
    say(closed=True)


if __name__ == "__main__":
    main(sys.argv[1:])
