"""read_tool_output, read_message and view_image: bring back what eviction cleared, by its handle.

``read_tool_output`` shows an earlier tool call by its id: the code it ran, then its output, paged
back whole when it was truncated or evicted;
``read_message`` pages back any earlier message whole by its number, the handle recall's passages
and the ``<related_context>`` block give: a passage is a few hundred characters of a message that may
hold the answer elsewhere, and a user's or the agent's message has no tool-call id;
``view_image`` shows an image an earlier result displayed again, by its ``img_`` handle.

Truncation and eviction hide bytes the model may still need. When the full output was
spilled to the store, reading it back is deterministic, whereas re-running the tool may
give other bytes or repeat a side effect. Reads are scoped to the current session, and
every answer stays under the per-result cap so paging can never blow the window.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from monad_notebook.agent.tools.base import ToolContext, ToolStore, reads, tool
from monad_notebook.context.lossless.truncation import message_call, read_call, truncate_tool_output
from monad_notebook.context.recall.chunks import indexed_text
from monad_notebook.errors import ToolError
from monad_notebook.images.image import IMAGE_PREFIX, Image
from monad_notebook.messages import Message

MAX_ID_CHARS = 256
MAX_GREP_MATCHES = 200
MAX_GREP_LINE_CHARS = 400


@reads
@tool
def read_tool_output(ctx: ToolContext, id: str, offset: int = 0, limit: int = 20000, grep: str | None = None) -> str:
    """Read back an earlier tool call by its id: the code (or arguments) it ran and its full output.

    Use the exact call quoted in a truncation marker or a [context-cleared] placeholder, or the id the
    <workspace> block gives for what made a name or a file. Page the output with offset/limit, or pass
    grep to list only the lines containing a substring.

    Args:
        id: The tool call's id.
        offset: First character of the output to return (0-based).
        limit: How many characters to return; long pages are shortened to fit the context.
        grep: Return only lines containing this exact, case-sensitive text (with line numbers and
            character offsets) instead of a page; offset and limit are then ignored.
    """
    if offset < 0:
        raise ToolError("read_tool_output: offset must be 0 or more")
    if limit < 1:
        raise ToolError("read_tool_output: limit must be 1 or more")
    if not id or len(id) > MAX_ID_CHARS or ctx.store is None:
        return _not_found(id)
    raw = ctx.store.get_raw_output(ctx.session, id)
    first_page = offset == 0 and not grep
    made = result = None
    if first_page or raw is None:  # a later page or a grep of a saved output needs no transcript read
        made, result = _call_of(ctx.store.call_messages(ctx.session, id), id)
    if raw is None and result is not None:
        raw = result.content  # never truncated: what the model was sent, already redacted
    if raw is None and made is None:
        return _not_found(id)
    cap = ctx.output_max_chars
    call = _call_text(ctx, made, id, cap // 2) if made is not None and first_page else ""
    if raw is None:
        return call + "[no output was stored for this call]"
    room = max(cap - len(call), cap // 2)
    label, again = f"read_tool_output id={json.dumps(id)}", lambda at, size: read_call(id, offset=at, limit=size)
    text = _grep(id, raw, grep, room) if grep else _page(label, again, raw, offset, limit, room)
    return truncate_tool_output(call + text, tool_call_id=id, max_chars=cap, recoverable=False)


@reads
@tool
def read_message(ctx: ToolContext, seq: int, offset: int = 0, limit: int = 20000) -> str:
    """Read back a whole earlier message of this session by its number: what the user or you wrote, or a tool's output.

    Use the number a recall passage or a <related_context> line gives (message #12) when the passage
    is cut short and the rest of the message may hold what you need. Page a long message with
    offset/limit.

    Args:
        seq: The message's number, e.g. 12 for message #12.
        offset: First character to return (0-based).
        limit: How many characters to return; long pages are shortened to fit the context.
    """
    if offset < 0:
        raise ToolError("read_message: offset must be 0 or more")
    if limit < 1:
        raise ToolError("read_message: limit must be 1 or more")
    found = ctx.store.message_at(ctx.session, seq) if ctx.store is not None and seq >= 0 else None
    text = _whole_text(ctx, found) if found is not None else ""
    if not text:
        return f"No message #{seq} with text in this session: use the number a recall passage gives."
    cap = ctx.output_max_chars
    label = f"message #{seq} ({_who(found)}, turn {found.turn})"
    page = _page(label, lambda at, size: message_call(seq, offset=at, limit=size), text, offset, limit, cap)
    return truncate_tool_output(page, tool_call_id=f"message {seq}", max_chars=cap, recoverable=False)


def _whole_text(ctx: ToolContext, message: Message) -> str:
    """What recall indexed of ``message`` (its passages' offsets are into it), redacted whole before it is paged."""
    raw = None
    if message.role == "tool" and message.tool_call_id and not message.redacted and ctx.store is not None:
        raw = ctx.store.get_raw_output(ctx.session, message.tool_call_id)
    text = indexed_text(message, raw)
    return ctx.redactor.redact(text).text if ctx.redactor is not None and text else text


def _who(message: Message) -> str:
    return f"{message.name or 'tool'} output" if message.role == "tool" else f"{message.role} message"


def _call_of(messages: list[Message], tool_call_id: str) -> tuple[Message | None, Message | None]:
    """(the assistant message that made the call, the call's result) among ``messages``."""
    made = next((m for m in messages if any(c.id == tool_call_id for c in m.tool_calls)), None)
    result = next((m for m in messages if m.role == "tool" and m.tool_call_id == tool_call_id), None)
    return made, result


def _call_text(ctx: ToolContext, made: Message, tool_call_id: str, cap: int) -> str:
    """The call as it ran: its tool, turn and code (a single text argument shown as is, others as JSON)."""
    call = next(c for c in made.tool_calls if c.id == tool_call_id)
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = None
    texts = list(arguments.values()) if isinstance(arguments, dict) else []
    body = texts[0] if len(texts) == 1 and isinstance(texts[0], str) else call.arguments
    if ctx.redactor is not None:
        body = ctx.redactor.redact(body).text
    if len(body) > cap:
        body = body[:cap] + f"\n[... {len(body) - cap:,} more chars of the call not shown]"
    return f"[call id={json.dumps(tool_call_id)}: {call.name}, turn {made.turn}]\n{body}\n[end of call]\n"


def _not_found(tool_call_id: str) -> str:
    shown = json.dumps(tool_call_id if len(tool_call_id) <= 80 else tool_call_id[:80] + "...")
    return (
        f"No tool call or saved output with id {shown} in this session: check the id (a user's cell, named"
        ' "cell N", is not a tool call).'
    )


@reads
@tool
def view_image(ctx: ToolContext, id: str) -> str:
    """Look again at an image (a chart) an earlier tool result displayed, by its handle.

    Use the handle from an [image img_...] line or an [images cleared ...] note; the image is
    attached to this result.

    Args:
        id: The image's handle, e.g. img_3f9a2c41d0.
    """
    handle = id.strip()
    if not handle.startswith(IMAGE_PREFIX) or len(handle) > MAX_ID_CHARS or ctx.store is None:
        raise ToolError(f"view_image: {json.dumps(id[:80])} is not an image handle; they look like img_3f9a2c41d0")
    image = _image_in_lineage(ctx.store, ctx.session, handle)
    if image is None:
        raise ToolError(f"view_image: no image {json.dumps(handle)} in this session; check the handle")
    ctx.images.append(image)
    if not ctx.sees_images:
        return f"{image.line()}: this model does not see images, so only its description is shown"
    return f"{image.line()}: attached below"


def _image_in_lineage(store: ToolStore, session: str, handle: str) -> Image | None:
    """The image in this session, else in the one it was handed off from (whose summary named it)."""
    seen: set[str] = set()
    while session and session not in seen:
        seen.add(session)
        image = store.get_image(session, handle)
        if image is not None:
            return image
        record = store.get_session(session)
        session = record.parent if record is not None else ""
    return None


def _page(label: str, again: Callable[[int, int], str], raw: str, offset: int, limit: int, cap: int) -> str:
    """``raw[offset:offset + limit]`` framed by a header (``label``) and, if more remains, the next call (``again``).

    The page is shortened until header, page and footer fit in ``cap`` together, so the
    final truncation never fires on a page and the offsets quoted stay exact.
    """
    total = len(raw)
    if offset >= total and total:
        return f"[{label}: offset {offset} is past the end ({total} chars)]"
    size = min(limit, total - offset)
    while True:
        end = offset + size
        footer = f"\n[more remains: {again(end, min(limit, total - end))}]" if end < total else ""
        text = f"[{label} chars {offset}..{end} of {total}]\n{raw[offset:end]}{footer}"
        if len(text) <= cap or size <= 1:
            return text
        size = max(1, size - (len(text) - cap))


def _grep(tool_call_id: str, raw: str, needle: str, cap: int) -> str:
    """Lines of ``raw`` containing ``needle`` literally, as ``line N @char: text``, within ``cap``."""
    head = f"[read_tool_output id={json.dumps(tool_call_id)} grep={json.dumps(needle)}"
    shown: list[str] = []
    used = len(head) + 200
    matches = 0
    start = 0
    for number, line in enumerate(raw.split("\n"), 1):
        if needle in line:
            matches += 1
            entry = f"line {number} @{start}: {_clip(line, needle)}"
            if len(shown) < MAX_GREP_MATCHES and used + len(entry) + 1 <= cap:
                shown.append(entry)
                used += len(entry) + 1
        start += len(line) + 1
    if not matches:
        return f"{head}: no line contains it in {len(raw)} chars]"
    more = "" if len(shown) == matches else "; use a more specific grep, or page with offset/limit"
    return f"{head}: {matches} matching lines, showing {len(shown)}{more}]\n" + "\n".join(shown)


def _clip(line: str, needle: str) -> str:
    """A long line cut to a window around its first match, so one minified line cannot fill the page."""
    if len(line) <= MAX_GREP_LINE_CHARS:
        return line
    at = line.find(needle)
    start = max(0, min(at - MAX_GREP_LINE_CHARS // 2, len(line) - MAX_GREP_LINE_CHARS))
    end = start + max(MAX_GREP_LINE_CHARS, len(needle))
    return ("..." if start else "") + line[start:end] + ("..." if end < len(line) else "")


@reads
@tool
def search_tool_outputs(ctx: ToolContext, text: str) -> str:
    """Find which earlier tool outputs mention an exact text, when you no longer know their ids.

    Searches every saved (truncated, cleared or summarized-away) tool output of this session and
    returns matching lines with the id to pass to read_tool_output.

    Args:
        text: The exact, case-sensitive text to look for (a file name, a column, an error...).
    """
    if len(text.strip()) < 2:
        raise ToolError("search_tool_outputs: text must have at least 2 characters")
    if ctx.store is None:
        return "No saved tool outputs in this session."
    hits = ctx.store.search_raw_outputs(ctx.session, text, MAX_GREP_MATCHES)
    if not hits:
        return f"No saved tool output of this session contains {json.dumps(text)}."
    lines = [f"{len(hits)} matching line(s); read more with read_tool_output(id, grep=...) :"]
    lines += [f"id={call_id} line {number}: {_clip(line, text)}" for call_id, number, line in hits]
    cap = ctx.output_max_chars
    return truncate_tool_output("\n".join(lines), tool_call_id="search", max_chars=cap, recoverable=False)


TOOLS = [read_tool_output, search_tool_outputs]
IMAGE_TOOLS = [view_image]  # images are kept whatever tool_output.persistRaw says
MESSAGE_TOOLS = [read_message]  # offered wherever recall shows passages: the transcript keeps every message
