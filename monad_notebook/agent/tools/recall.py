"""recall: find what this session saw earlier by describing it, when its exact text is forgotten.

``search_tool_outputs`` needs the exact text, which is what a model no longer has once a
summary dropped it. ``recall`` takes a question in plain words ("which file was the churn
raw extract?"), searches every earlier message and saved tool output of the session by
words and by meaning, and answers with short verbatim passages, each saying where it came
from and naming the call that pages back the whole message it is part of: ``read_message`` by the
message's number, or for a saved tool output the ``read_tool_output`` call around the passage. A
passage is a few hundred characters; what the question asks may sit elsewhere in its message.

A user asks in their own words, which need not be the session's ("customers who left" for
what the session called churn): ``also`` carries up to three other phrasings the model
writes, such as the words the session more likely used, and each is searched with the
question (``Recall.search``).

The answer is bounded: ``context.recall.maxResults`` passages of at most ``snippetChars``
characters each plus one header line apiece (about 1,200 tokens at the defaults).
"""

from __future__ import annotations

import json
from typing import Any

from monad_notebook.agent.tools.base import Tool, ToolContext, reads, tool
from monad_notebook.context.lossless.truncation import message_call, read_call
from monad_notebook.context.recall.search import MAX_ALSO, Passage, focus, query_terms
from monad_notebook.errors import ToolError

MAX_QUERY_CHARS = 1000
MAX_ALSO_CHARS = 200  # an other phrasing is a few words; cut, so the answer's header stays short
READ_BEFORE = 400
READ_LIMIT = 1600


@reads
@tool
def recall(ctx: ToolContext, query: str, also: list[str] | None = None) -> str:
    """Search this session's earlier messages and tool outputs by describing what you are looking for.

    Use it when a detail you need (a file path, a variable or column name, a command, a number)
    was mentioned earlier but is no longer in view and you do not remember it exactly. Returns
    short verbatim passages, each with where it came from and the call that reads back its whole
    message (read_message, or read_tool_output for a saved tool output): use it when the passage
    is cut short.

    Args:
        query: A question or description in plain words, e.g. "which file held the raw churn extract?".
        also: Up to 3 rephrasings in words the session may have used ("churn" for "customers who left").
    """
    question = _phrasing(query, "query", MAX_QUERY_CHARS)
    others = [_phrasing(text, "also", MAX_ALSO_CHARS) for text in also or ()]
    if len(others) > MAX_ALSO:
        raise ToolError(f"recall: 'also' takes at most {MAX_ALSO} other phrasings, got {len(others)}")
    recall = ctx.recall
    if recall is None:
        return "Recall is off for this session."
    passages = recall.search(question, others)
    lag = _not_indexed_note(recall.indexing())
    asked = json.dumps(question, ensure_ascii=False) + "".join(
        f" / {json.dumps(o, ensure_ascii=False)}" for o in others
    )
    if not passages:
        return (
            f"Nothing earlier in this session matches {asked}; try other words for it,"
            f" or give in `also` the words the session may have used.{lag}"
        )
    saved = _saved(ctx, passages)
    chars = recall.snippet_chars
    terms = query_terms(" ".join([question, *others]))
    lines = [f"{len(passages)} earlier passage(s) for {asked}, best first (quoted text is verbatim):"]
    for number, passage in enumerate(passages, 1):
        header, snippet = _entry(passage, terms, chars, saved)
        lines += [f"{number}. {header}", f"   {snippet}"]
    return "\n".join(lines) + lag


def _phrasing(text: object, argument: str, limit: int) -> str:
    """One phrasing, whitespace collapsed and cut to ``limit`` characters; a clear error when it says nothing."""
    where = "" if argument == "query" else f" in each of {argument!r}"
    if not isinstance(text, str):
        raise ToolError(f"recall: {argument!r} takes strings, got {type(text).__name__}")
    if len(text.strip()) < 3:
        raise ToolError(f"recall: describe what you are looking for in a few words{where}")
    return " ".join(text.split())[:limit]


def _not_indexed_note(indexing: dict[str, Any]) -> str:
    """What the search could not see in full yet: messages not searchable at all, and messages it searched by
    their words only because their vectors are still being made (in the background)."""
    unsearchable = int(indexing.get("unsearchable") or 0)
    by_words = int(indexing.get("unindexed") or 0) - unsearchable
    note = ""
    if unsearchable > 0:
        note += (
            f"\nNot searched yet: {unsearchable} stored message(s) are still being indexed; "
            "search_tool_outputs finds exact text in saved outputs now, or ask again shortly."
        )
    if by_words > 0:
        note += (
            f"\nSearched by their words only: {by_words} recent message(s) whose meaning is still being indexed; "
            "a question in other words may miss them, ask again shortly."
        )
    return note


def _saved(ctx: ToolContext, passages: list[Passage]) -> set[str]:
    """Tool-call ids among the passages whose full output is saved, so their read calls resolve."""
    ids = sorted({p.hit.tool_call_id for p in passages if p.hit.role == "tool" and p.hit.tool_call_id})
    if not ids or ctx.store is None:
        return set()
    return ctx.store.has_raw_outputs(ctx.session, ids)


def _entry(passage: Passage, terms: list[str], chars: int, saved: set[str]) -> tuple[str, str]:
    """A passage's header (where it came from, the call that reads its whole message) and its snippet."""
    hit = passage.hit
    start, end = focus(hit.snippet, terms, chars)
    text = " ".join(hit.snippet[start:end].split())
    snippet = ("…" if start else "") + text + ("…" if end < len(hit.snippet) else "")
    at = hit.offset + start
    if hit.role == "tool" and hit.tool_call_id in saved:
        read = read_call(hit.tool_call_id, offset=max(0, at - READ_BEFORE), limit=READ_LIMIT)
        return f"turn {hit.turn}, {hit.name or 'tool'} output, at char {at}; read around it: {read}", snippet
    who = f"{hit.name or 'tool'} output" if hit.role == "tool" else f"{hit.role} message"
    where = f", at char {at}" if at else ""
    return f"turn {hit.turn}, {who} #{hit.seq}{where}; whole message: {message_call(hit.seq)}", snippet


TOOLS: list[Tool] = [recall]
