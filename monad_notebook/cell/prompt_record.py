"""What ``%monad prompt`` prints: a request as the model received it, part by part, with its tokens."""

from __future__ import annotations

from typing import Any

from monad_notebook.cell.html import one_line
from monad_notebook.errors import UsageError


def _preview(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, control and invisible characters shown as markers."""
    return one_line(text, limit)


def _said(part: dict[str, Any]) -> str:
    """A part's text, or the calls of an assistant message that only calls tools (its text is empty)."""
    calls = part.get("calls") or []
    if part["text"].strip() or not calls:
        return part["text"]
    return "calls " + ", ".join(f"{call['name']}({call['arguments']})" for call in calls)


def render_prompt_record(records: list[dict[str, Any]], step: int | None) -> str:
    """One prompt record as text: every part with its kind, role and tokens, and a preview."""
    if not records:
        return "no prompt sent yet in this kernel: run a %%monad cell first"
    if step is None:
        record = records[-1]
    else:
        if not 1 <= step <= len(records):
            raise UsageError(f"--step must be between 1 and {len(records)} (steps kept in this kernel)")
        record = records[step - 1]
    real = record.get("real_tokens")
    counted = f"; the provider counted {real:,}" if real else ""
    lines = [f"turn {record['turn']} step {record['step']}: about {record['total_tokens']:,} tokens{counted}"]
    for part in record["parts"]:
        lines.append(f"  {part['kind']:<16} {part['role']:<9} {part['tokens']:>7,}  {_preview(_said(part), 70)}")
    return "\n".join(lines)
