"""The scripted demo model: a fixed data-exploration script, no LLM.

It lets ``monad demo`` and the example notebooks run offline with real tools, a real
kernel namespace and a real store. It is a test and demo tool: every answer it writes
says so, and it never stands in for a real model in a claim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from monad_notebook.config import SCRIPTED_DEMO_MODEL
from monad_notebook.context.prompt import own_text
from monad_notebook.messages import ToolCall, new_id
from monad_notebook.provider import ChatResponse, TextCallback

LABEL = "_(scripted demo model, no LLM)_"

DEMO_QUESTIONS = [
    "Load data/sales.csv and tell me what's in it.",
    "Which region grew fastest last quarter?",
    "Save a per-region summary to region_summary.csv.",
    "Recap what we found so far.",
]

LOAD_CODE = """\
import pandas as pd
sales = pd.read_csv("data/sales.csv", parse_dates=["date"])
print(f"{len(sales)} rows from {sales['date'].min():%Y-%m-%d} to {sales['date'].max():%Y-%m-%d}")
sales.head()"""

GROWTH_CODE = """\
sales["quarter"] = sales["date"].dt.to_period("Q")
by_quarter = sales.groupby(["quarter", "region"])["revenue"].sum().unstack()
last, previous = by_quarter.index[-1], by_quarter.index[-2]
growth = ((by_quarter.loc[last] / by_quarter.loc[previous] - 1) * 100).round(1).sort_values(ascending=False)
print(f"revenue growth {previous} -> {last} (%):")
print(growth.to_string())
growth.idxmax()"""

SUMMARY_CODE = """\
region_summary = sales.groupby("region").agg(units=("units", "sum"), revenue=("revenue", "sum")).round(2)
region_summary.to_csv("region_summary.csv")
region_summary"""


def dataset_path() -> Path:
    """The small sales dataset shipped with the package."""
    return Path(str(resources.files("monad_notebook") / "data" / "sales.csv"))


@dataclass
class _Plan:
    calls: list[tuple[str, dict[str, Any]]]
    answer: Callable[[list[str], list[dict[str, Any]]], str]


def _first_lines(text: str, n: int = 12) -> str:
    lines = text.strip().splitlines()
    more = f"\n… ({len(lines) - n} more lines)" if len(lines) > n else ""
    return "\n".join(lines[:n]) + more


def _value(text: str) -> str:
    match = re.search(r"^value: (.*)$", text, re.MULTILINE)
    return match.group(1).strip().strip("'\"") if match else "(no value)"


def _answer_load(results: list[str], _: list[dict[str, Any]]) -> str:
    return (
        f"Loaded `data/sales.csv` into `sales`. What the tools returned:\n\n```\n{_first_lines(results[0])}\n```\n\n"
        f"and `describe('sales')`:\n\n```\n{_first_lines(results[1], 16)}\n```"
    )


def _answer_growth(results: list[str], _: list[dict[str, Any]]) -> str:
    return (
        f"**{_value(results[0])}** grew fastest last quarter. The computation printed:\n\n"
        f"```\n{_first_lines(results[0])}\n```"
    )


def _answer_summary(results: list[str], _: list[dict[str, Any]]) -> str:
    return (
        f"Saved `region_summary.csv`:\n\n```\n{_first_lines(results[0])}\n```\n\n"
        f"Files now in the working directory:\n\n```\n{_first_lines(results[1])}\n```"
    )


def _text(message: dict[str, Any]) -> str:
    """What the user asked or the tool returned, without the blocks the cascade ends a request with."""
    content = message.get("content")
    return own_text(content) if isinstance(content, str) else ""


def _answer_recap(_: list[str], messages: list[dict[str, Any]]) -> str:
    asked = [q for m in messages if m["role"] == "user" and (q := _text(m))][:-1]
    growth = next((text for m in messages if m["role"] == "tool" and "revenue growth" in (text := _text(m))), "")
    lines = [f"From the {len(asked)} earlier question(s) in this session's history:"]
    lines += [f"{i}. {q.strip().splitlines()[-1]}" for i, q in enumerate(asked, 1)]
    if growth:
        lines += ["", f"The growth figures I computed earlier:\n\n```\n{_first_lines(growth)}\n```"]
    return "\n".join(lines)


def _answer_generic(results: list[str], _: list[dict[str, Any]]) -> str:
    return (
        "I only follow the demo script (try the questions of `monad demo`), so I looked at your "
        f"namespace instead:\n\n```\n{_first_lines(results[0])}\n```"
    )


def _plan_for(question: str) -> _Plan:
    q = question.lower()
    if "recap" in q or "so far" in q:
        return _Plan([], _answer_recap)
    if "load" in q and "sales" in q:
        return _Plan([("python", {"code": LOAD_CODE}), ("describe", {"name": "sales"})], _answer_load)
    if "grew" in q or "growth" in q or "fastest" in q:
        return _Plan([("python", {"code": GROWTH_CODE})], _answer_growth)
    if "summary" in q and "save" in q:
        return _Plan(
            [("python", {"code": SUMMARY_CODE}), ("list_files", {"pattern": "*.csv"})],
            _answer_summary,
        )
    return _Plan([("list_variables", {})], _answer_generic)


@dataclass
class DemoModel:
    """Follows the demo script one step at a time, reading the real tool results it is sent."""

    context_window: int = 32_000
    name: str = SCRIPTED_DEMO_MODEL

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextCallback | None = None,
    ) -> ChatResponse:
        asked = [i for i, m in enumerate(messages) if m["role"] == "user" and _text(m)]
        last_user = asked[-1]
        question = _text(messages[last_user])
        plan = _plan_for(question.split("</summary>")[-1])
        results = [_text(m) for m in messages[last_user + 1 :] if m["role"] == "tool"]
        available = {t["function"]["name"] for t in tools}
        step = len(results)
        if step < len(plan.calls) and plan.calls[step][0] in available:
            name, arguments = plan.calls[step]
            return ChatResponse(content="", tool_calls=[ToolCall(f"call_{new_id()[:12]}", name, json.dumps(arguments))])
        if any(name not in available for name, _ in plan.calls[step:]):
            text = f"{LABEL} The demo needs the `{plan.calls[step][0]}` tool, which is turned off in this session."
        else:
            text = f"{LABEL} {plan.answer(results, messages)}"
        for start in range(0, len(text), 48):
            if on_text is not None:
                on_text(text[start : start + 48])
        return ChatResponse(content=text)
