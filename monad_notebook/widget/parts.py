"""Prompt records as the panel shows them: tokens per category, and one step's parts cut to previews.

The inspector never ships a whole prompt: each part is cut to a preview, and an assistant
message that only called tools shows its calls (name and arguments) instead of a blank row.
"""

from __future__ import annotations

from typing import Any

MAX_PARTS = 200
PREVIEW_CHARS = 240
CALL_PREVIEW_CHARS = 160
MAX_CALLS = 8

PART_ORDER = (
    "system",
    "tools",
    "memory",
    "summary",
    "plan",
    "related_context",
    "workspace",
    "notebook_activity",
    "message",
    "tool_result",
    "image",
    "placeholder",
)
INJECTED_KINDS = frozenset({"memory", "summary", "plan", "related_context", "workspace", "notebook_activity"})


def as_int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def composition_of(record: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Tokens per part kind of one prompt record, in a stable order (unknown kinds last)."""
    if not record:
        return []
    totals: dict[str, int] = {}
    for part in record.get("parts", []):
        kind = str(part.get("kind", "message"))
        totals[kind] = totals.get(kind, 0) + as_int(part.get("tokens"))
    order = {kind: i for i, kind in enumerate(PART_ORDER)}
    kinds = sorted(totals, key=lambda k: (order.get(k, len(order)), k))
    return [{"kind": k, "tokens": totals[k]} for k in kinds if totals[k] > 0]


def scaled(composition: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    """The composition in whole-prompt tokens: each category's share of ``total`` (the headline figure).

    Parts are counted one by one and miss the per-message overhead, so their sum is not the prompt's
    count; scaling keeps one unit everywhere the panel shows tokens, and the shares still add up.
    """
    counted = sum(c["tokens"] for c in composition)
    if not counted or total <= 0:
        return [dict(c) for c in composition]
    out, given = [], 0
    for index, slice_ in enumerate(composition):
        share = total - given if index == len(composition) - 1 else round(slice_["tokens"] * total / counted)
        given += share
        out.append({"kind": slice_["kind"], "tokens": max(0, share)})
    return out


def call_previews(part: dict[str, Any]) -> list[dict[str, str]]:
    """``name`` and a one-line preview of the arguments of each tool call the part carries."""
    calls = part.get("calls") or []
    previews = []
    for call in calls[:MAX_CALLS]:
        arguments = " ".join(str(call.get("arguments", "")).split())
        previews.append({"name": str(call.get("name", "?")), "arguments": cut(arguments, CALL_PREVIEW_CHARS)})
    return previews


def inspect_record(record: dict[str, Any], *, pinned: bool = False) -> dict[str, Any]:
    """One step's parts, with text cut to a preview."""
    parts = []
    for part in record.get("parts", [])[:MAX_PARTS]:
        text = str(part.get("text", ""))
        kind = str(part.get("kind", "message"))
        parts.append(
            {
                "kind": kind,
                "role": str(part.get("role", "")),
                "tokens": as_int(part.get("tokens")),
                "preview": cut(text, PREVIEW_CHARS),
                "chars": len(text),
                "calls": call_previews(part),
                "injected": kind in INJECTED_KINDS,
                "placeholder": kind == "placeholder",
            }
        )
    return {
        "turn": as_int(record.get("turn")),
        "step": as_int(record.get("step")),
        "total_tokens": as_int(record.get("total_tokens")),
        "parts": parts,
        "more_parts": max(0, len(record.get("parts", [])) - MAX_PARTS),
        "pinned": pinned,
    }
