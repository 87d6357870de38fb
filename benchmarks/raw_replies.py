"""Every reply a real model's endpoint sent to the agent, as sent, and what monad read in each.

``benchmarks/local_model.py`` records its runs with it (``--replies``): the forms a small model
really writes, from which the tests take theirs (``tests/agent/text_call_replies.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from monad_notebook.agent.text_calls import find_calls
from monad_notebook.provider import chat


class RawReplies:
    """Every reply the endpoint sent, as sent (before the turn reads calls out of its text)."""

    def __init__(self) -> None:
        self.replies: list[tuple[str, int]] = []  # (text, API tool calls)
        self._original = chat.OpenAIChatModel.complete

    def __enter__(self) -> RawReplies:
        original, replies = self._original, self.replies

        def complete(model, messages, tools, on_text=None):  # type: ignore[no-untyped-def]
            response = original(model, messages, tools, on_text)
            if tools:  # the agent's requests; the fast tier's summaries are offered none
                replies.append((response.content, len(response.tool_calls)))
            return response

        chat.OpenAIChatModel.complete = complete  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        chat.OpenAIChatModel.complete = self._original  # type: ignore[method-assign]

    def dump(self, tools: dict[str, Any]) -> list[dict[str, Any]]:
        """Every reply as sent, and what it was read as: the forms of the calls written in it ([]: prose)."""
        rows = []
        for text, api in self.replies:
            found = find_calls(text, tools) if not api else None
            written = (
                [a.call.recovered + ("" if a.usable else " (could not run)") for a in found.attempts] if found else []
            )
            rows.append({"text": text, "api_calls": api, "written": written})
        return rows

    def forms(self, tools: dict[str, Any]) -> Counter[str]:
        seen: Counter[str] = Counter()
        for row in self.dump(tools):
            if row["api_calls"]:
                seen["API tool_calls"] += 1
            else:
                seen.update([f"written: {form}" for form in row["written"]] or ["prose (the answer)"])
        return seen
