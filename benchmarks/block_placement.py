"""What a real server's prompt cache keeps with the blocks that end a request on its last message, or on their own.

    python benchmarks/block_placement.py

llama.cpp's ``llama-server`` on SmolLM2-135M (``monad_notebook.testing.llama``, its own chat template)
answers every request of the same two turns twice, each time on a fresh server: once as the session sends
them (``<plan>`` and ``<workspace>`` after the text of the last message: the user's question or the last
tool result), once with the blocks taken off that message and sent as a user message of their own (how
they were sent before, and how no template that insists on alternating roles takes them). SmolLM2 makes
no tool calls, so the turn's calls are scripted in after the server answered. Per request: the prompt
tokens the server counted, how many it served from its cache (``prompt_tokens_details.cached_tokens``),
and the rest, which it computed again.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.prompt import own_text
from monad_notebook.provider import ChatResponse, OpenAIChatModel
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import tool_call, tool_calls
from monad_notebook.testing.llama import LlamaServer, LlamaUnavailable

BRIEFING = "## Objective\nfind the best region\n## Open Tasks\n- compare the regions\n## Next Step\nlook at `sales`"
QUESTIONS = ["Which region sold most?", "And which grew fastest?"]


def script() -> list[ChatResponse | None]:
    """The calls of the two turns; None: the server's own answer ends the turn."""
    describe = tool_call("describe", {"name": "sales"})
    listing = tool_call("list_variables", {})
    return [listing, tool_calls(describe, listing), describe, None, describe, None]


def apart(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request with its blocks as a user message of their own after the last message."""
    last = messages[-1]
    content = last.get("content")
    if not isinstance(content, str) or own_text(content) == content:
        return messages
    kept = own_text(content)
    return [*messages[:-1], {**last, "content": kept}, {"role": "user", "content": content[len(kept) :].lstrip()}]


class Scripted:
    def __init__(self, server: LlamaServer, shape: Any) -> None:
        self.real = OpenAIChatModel("smollm2", base_url=server.base_url, max_output_tokens=4, temperature=0)
        self.name, self.context_window, self.shape = "smollm2", server.context, shape
        self.calls = script()
        self.usage: list[tuple[int, int]] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: Any = None) -> Any:
        answer = self.real.complete(self.shape(messages), tools)
        self.usage.append((answer.usage.prompt_tokens, answer.usage.cached_tokens) if answer.usage else (0, 0))
        scripted = self.calls.pop(0)
        return scripted if scripted is not None else answer


def run(shape: Any, folder: Path) -> list[tuple[int, int]]:
    server = LlamaServer(context=4096).start()
    store = LanceStore(folder / "db")
    try:
        store.create_session("cache")
        store.save_summary(Summary(session="cache", text=BRIEFING, boundary_seq=-1, created_at=time.time()))
        model = Scripted(server, shape)
        main = {"model": "smollm2", "baseUrl": server.base_url, "contextWindow": 4096, "maxOutputTokens": 4}
        config = Config.model_validate(
            {
                "models": {"main": main, "fast": main, "embedding": {"provider": "none"}},
                "agent": {"systemPrompt": "You are a helpful assistant. Answer briefly."},
                "context": {"recitation": {"enabled": True}},
            }
        )
        frame = pd.DataFrame({"region": ["north", "south"], "amount": [3, 5]})
        session = Session("cache", config=config, store=store, model=model, namespace={"sales": frame})
        for question in QUESTIONS:
            session.ask(question)
        session.close()
        return model.usage
    finally:
        store.close()
        server.close()


def main() -> None:
    placements = {"on the last message": lambda messages: messages, "a user message of their own": apart}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            usage = {name: run(shape, Path(tmp) / str(i)) for i, (name, shape) in enumerate(placements.items())}
    except LlamaUnavailable as why:
        sys.exit(f"llama-server is not available here: {why}")
    print("| request | " + " | ".join(f"{name}: prompt / cached / computed" for name in usage) + " |")
    print("|---:|" + "---:|" * len(usage))
    for index in range(len(next(iter(usage.values())))):
        cells = [f"{p:,} / {c:,} / {p - c:,}" for p, c in (rows[index] for rows in usage.values())]
        print(f"| {index + 1} | " + " | ".join(cells) + " |")
    totals = [
        f"{sum(p for p, _ in rows):,} / {sum(c for _, c in rows):,} / {sum(p - c for p, c in rows):,}"
        for rows in usage.values()
    ]
    print("| all | " + " | ".join(totals) + " |")


if __name__ == "__main__":
    main()
