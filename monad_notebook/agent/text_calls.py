"""Tool calls a model wrote as text instead of the API's ``tool_calls``: found, checked, run.

Small and mid-size open models served by llama.cpp, Ollama or LM Studio often answer a tool
call in their text. Read as an answer, such a reply shows the user a block of JSON and nothing
runs. So when a reply carries no ``tool_calls``, its text is read for calls in the forms real
models write (docs/configuration.md, "Tool calls written as text", lists them and why):

- ``json block``: a fenced code block (```` ```json ````, ```` ```tool_call ```` or a bare fence)
  holding ``{"name": ..., "arguments": {...}}``;
- ``tool_call tag``: ``<tool_call>{...}</tool_call>``, the form Qwen's and Hermes' chat templates ask for
  (a last tag left open by the end of the reply counts), and ``tools tag``, the same in ``<tools>``,
  the tag those templates list the tools in, which a small model echoes;
- ``json``: that object alone, the whole reply or its opening.

Inside a tag, ``<function name="..." arguments='{...}'/>`` elements stand for the same objects.

``arguments`` may also be spelled ``parameters`` (Llama 3's documented form) or be a JSON string
holding the object; a string between Python's triple quotes inside the JSON (how a small model
writes code) is taken verbatim. A block may hold several calls (a list, or objects one after another).

Carefully, since an answer may show a call without making it: the calls must be the whole reply,
or end it after a short lead-in (kept as the assistant's text), or open it before a short remark
(dropped: the model was seen describing or making up the call's result there). Words that
present the calls as an example or disown them ("for example", "would look like", "I am not
running it"), or that are more than a short lead-in (``beside_calls``), make the reply prose; so
does JSON with words on both sides. An object with any other key is not a call. What is found
becomes a :class:`ToolCall` marked ``recovered``, which runs with every check an API call gets, and
more: one that can change anything asks the user first whatever its approval setting
(``agent/tools/consent.py``). An unknown name, arguments the tool's schema refuses, or the very
call already run in this turn never reach the tool: the model gets one ``error:`` line instead. A
turn reads at most ``NEAR_MISS_STEPS`` replies whose calls could none run; after that the reply is
the answer, and the user is told in one line what to change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from monad_notebook.agent.tools.base import Tool
from monad_notebook.errors import ToolError
from monad_notebook.events import Event
from monad_notebook.messages import ToolCall, new_id

JSON_BLOCK = "json block"
BARE_JSON = "json"
REPEATED = "this exact call already ran in this turn and its result is above: answer from it, or make another call"
NEAR_MISS_STEPS = 2  # replies of a turn whose written calls could none be run, before the text is the answer
LEAD_CHARS = 240  # the most characters of words beside calls that still leave them calls
LEAD_SENTENCES = 2  # and the most sentences
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)")
# words that present a call rather than make it: an example, a format, what one would or could send
_PRESENTED = re.compile(
    r"\b(?:examples?|e\.g\.|for instance|such as|samples?|illustrat\w*|demonstrat\w*|hypothetical\w*|suppose|"
    r"imagine|template|syntax|placeholder|schema|for reference|the format|this format|format (?:is|of|for)|"
    r"would (?!like\b)\w+|could (?:call|send|write|use|run|look|be)|you(?:'d| can| could| would| might| may| "
    r"should| need to)|one (?:can|could|would)|how (?:to|you|a|the|it)\b|looks? like (?:this|so|that)|like so|"
    r"if (?:i|we) (?:were|had)|(?:were|was) to)",
    re.I,
)
# words that say the call is not made: "I am not running it", "won't execute this", "without calling it"
_NOT_RUN = re.compile(
    r"\b(?:not|never|no|won't|wont|don't|dont|didn't|didnt|doesn't|haven't|cannot|can't|cant|without|instead of)"
    r"(?:\s+[\w']+){0,3}?\s+(?:run|running|ran|execut\w*|call|calling|called|invok\w*|perform\w*|sen[dt]|sending)\b",
    re.I,
)
_ARGUMENT_KEYS = ("arguments", "parameters")
_FENCE = re.compile(r"```[ \t]*(json|tool_call)?[ \t]*\n(.*?)\n?[ \t]*```", re.S | re.I)
_TRIPLE = re.compile(r'"""(.*?)"""', re.S)
_TAG = re.compile(r"<(tool_call|tools)>(.*?)(?:</\1>|\Z)", re.S)
# how Qwen2.5-Coder-1.5B also wrote a call inside <tools>: the arguments a JSON string in single quotes
_FUNCTION = re.compile(r"""<function\s+name="([^"\n]{1,200})"\s+arguments='(.*?)'\s*/>""", re.S)
# a call whose JSON does not parse (a small model's unescaped quotes in code): its name and raw arguments
_BROKEN = re.compile(
    r'\A\s*\{\s*"name"\s*:\s*"([^"\n]{1,200})"\s*,\s*"(?:arguments|parameters)"\s*:\s*(.*)\}\s*\Z', re.S
)


@dataclass(frozen=True)
class Attempt:
    """One call the model wrote as text, and why it cannot run ("" when it can)."""

    call: ToolCall
    problem: str = ""

    @property
    def usable(self) -> bool:
        return not self.problem


@dataclass(frozen=True)
class Found:
    """What a reply's text held: its words outside the calls, and the calls in order."""

    prose: str
    attempts: tuple[Attempt, ...]

    @property
    def usable(self) -> int:
        return sum(a.usable for a in self.attempts)


def find_calls(text: str, tools: Mapping[str, Tool]) -> Found | None:
    """The calls that end ``text``, or else open it, each checked against the offered ``tools``;
    None for prose, and for calls the prose presents (``beside_calls``). Words before calls that
    end it are kept; words after calls that open it are dropped (the model was seen describing,
    or making up, the call's result there)."""
    stripped = text.strip()
    if not stripped:
        return None
    whole = _calls_in(stripped)
    if whole is not None and stripped.startswith(("{", "[")):
        return _checked("", [(BARE_JSON, value) for value in whole], tools)
    spans = _segments(stripped)
    trailing = _run(spans, stripped, from_end=True)
    written = _written(trailing)
    if written is not None and beside_calls(stripped[: trailing[0][0]]):
        return _checked(stripped[: trailing[0][0]].rstrip(), written, tools)
    leading = _run(spans, stripped, from_end=False) or _leading_json(stripped)
    written = _written(leading)
    if written is not None and beside_calls(stripped[leading[-1][1] :]):
        return _checked("", written, tools)
    return None


def beside_calls(words: str) -> bool:
    """Whether words beside calls (before calls that end a reply, after calls that open it) leave them calls.

    They do when they are a short lead-in or remark (``LEAD_CHARS``, ``LEAD_SENTENCES``) that
    neither presents the calls ("for example", "would look like", "you can") nor says they are
    not run ("I am not running it"): an answer that explains something and shows a call, or
    shows one and then disowns it, is prose.
    """
    words = words.strip()
    if not words:
        return True
    if len(words) > LEAD_CHARS or len(_SENTENCE_END.findall(words.rstrip(".!?:;") + ".")) > LEAD_SENTENCES:
        return False
    return not (_PRESENTED.search(words) or _NOT_RUN.search(words))


Span = tuple[int, int, str, str]  # start, end, form, body


def _segments(text: str) -> list[Span]:
    """The fenced blocks and tags of ``text`` in order, each with its form and body."""
    spans = [(m.start(), m.end(), JSON_BLOCK, m.group(2)) for m in _FENCE.finditer(text)]
    spans += [(m.start(), m.end(), f"{m.group(1)} tag", _unfenced(m.group(2))) for m in _TAG.finditer(text)]
    return sorted(spans)


def _run(spans: list[Span], text: str, *, from_end: bool) -> list[Span]:
    """The segments that follow each other from one end of ``text``, with only whitespace around them."""
    run: list[Span] = []
    edge = len(text) if from_end else 0
    for span in reversed(spans) if from_end else spans:
        start, stop = span[0], span[1]
        if (text[stop:edge] if from_end else text[edge:start]).strip():
            break
        run.append(span)
        edge = start if from_end else stop
    return sorted(run)


def _leading_json(text: str) -> list[Span]:
    """A call object the reply opens with, words after it (a bare JSON object, then prose)."""
    if not text.startswith("{"):
        return []
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return []
    return [(0, end, BARE_JSON, text[:end])]


def _written(run: list[Span]) -> list[tuple[str, Any]] | None:
    """Each segment's calls with its form; None when any segment is not calls."""
    if not run:
        return None
    written: list[tuple[str, Any]] = []
    for _, _, form, body in run:
        values = _calls_in(body)
        if values is None:
            return None
        elements = not body.lstrip().startswith(("{", "[")) and _FUNCTION.search(body)
        written.extend((f"{form}, function element" if elements else form, value) for value in values)
    return written


def _unfenced(body: str) -> str:
    """A tag's body without a fence around it (some models fence the JSON inside the tag)."""
    match = _FENCE.fullmatch(body.strip())
    return match.group(2) if match else body


def _calls_in(body: str) -> list[Any] | None:
    """The call-shaped values of ``body`` (one object, a list of them, or objects one after another).

    A body whose JSON does not parse counts when it starts like a call (``{"name": "...",
    "arguments": ...``): the tool's own check then says the arguments are not valid JSON.
    """
    values = _json_values(body.strip())
    if values is None:
        broken = _BROKEN.match(body)
        if broken:
            return [{"name": broken.group(1), "arguments": _RawArguments(broken.group(2).strip())}]
        return _function_elements(body)
    flat = [item for value in values for item in (value if isinstance(value, list) else [value])]
    if not flat or not all(_call_shaped(item) for item in flat):
        return None
    return flat


def _function_elements(body: str) -> list[Any] | None:
    """``<function name="..." arguments='{...}'/>`` elements, and nothing else, as calls (a tag's body)."""
    elements = list(_FUNCTION.finditer(body))
    if not elements or _FUNCTION.sub("", body).strip():
        return None
    return [{"name": m.group(1), "arguments": m.group(2)} for m in elements]


def _json_values(text: str) -> list[Any] | None:
    """The JSON values of ``text`` in order; a Python triple-quoted string stands for a JSON string."""
    values = _decoded(text)
    if values is None and '"""' in text:
        values = _decoded(_TRIPLE.sub(_as_json_string, text))
    return values


def _as_json_string(match: re.Match[str]) -> str:
    """A triple-quoted block (how a small model writes code inside JSON) as a JSON string of its text, verbatim."""
    return json.dumps(match.group(1))


def _decoded(text: str) -> list[Any] | None:
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = 0
    while position < len(text):
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        values.append(value)
        while position < len(text) and text[position] in " \t\r\n,;":
            position += 1
    return values or None


def _call_shaped(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"].strip():
        return False
    keys = set(value) - {"name"}
    return len(keys) == 1 and keys <= set(_ARGUMENT_KEYS)


class _RawArguments(str):
    """Arguments text that did not parse, kept as the model wrote it."""


def _checked(prose: str, written: list[tuple[str, Any]], tools: Mapping[str, Tool]) -> Found:
    attempts = []
    for form, value in written:
        name = value["name"].strip()
        raw = next((value[key] for key in _ARGUMENT_KEYS if key in value), {})
        arguments, problem = _arguments(raw)
        found = tools.get(name)
        if found is None:
            problem = f"unknown tool {name[:100]!r}"
        elif not problem:
            try:
                found.check(arguments)
            except ToolError as error:
                problem = str(error).removeprefix(f"{name}: ")
        text = raw if isinstance(raw, _RawArguments) else json.dumps(arguments, ensure_ascii=False)
        attempts.append(Attempt(ToolCall(new_id()[:9], name, text, recovered=form), problem))
    return Found(prose, tuple(attempts))


def _arguments(raw: Any) -> tuple[dict[str, Any], str]:
    """The arguments as an object, or the reason they are not one."""
    if isinstance(raw, _RawArguments):
        return {}, "arguments are not valid JSON"
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError:
            return {}, "arguments are not valid JSON"
    if not isinstance(raw, dict):
        return {}, f"arguments must be a JSON object, got {type(raw).__name__}"
    return raw, ""


def _refusal_line(attempt: Attempt, tools: Mapping[str, Tool]) -> str:
    """What a written call that cannot run gets as its result: one line, as the tool runner words it."""
    name = attempt.call.name[:100]
    if name not in tools:
        return f"error: {attempt.problem}; available tools: {', '.join(sorted(tools)) or 'none'}"
    return f"error: {name}: {attempt.problem}"


@dataclass
class TextCallReader:
    """One turn's reading of replies for calls written as text (``models.main.textToolCalls``).

    A written call that cannot run is never handed to the tool runner: ``refusal`` gives the one
    line its result is instead. That includes a call the model already made, identical, earlier in
    the turn: a small model handed a result often writes the same call again, and again.
    """

    tools: Mapping[str, Tool]
    mode: str = "auto"  # "auto": found calls run; "off": replies are answers, a written call only noted
    turned_off: Callable[[str], str | None] = lambda name: None  # the line a call of a tool turned off gets
    written: list[Attempt] = field(default_factory=list)  # every call found this turn, run or not
    near_misses: int = 0  # replies whose written calls could none be run
    recovered: int = 0  # written calls handed to the tool runner this turn
    _ran: set[tuple[str, str]] = field(default_factory=set)  # (name, arguments) of those
    _refused: dict[str, str] = field(default_factory=dict)  # call id -> the result line it gets instead

    def read(self, content: str, finish_reason: str = "stop") -> Found | None:
        """The calls to run for this reply, or None when its text is the answer.

        A reply cut off by the output limit is never read: its last call may be cut too.
        """
        if finish_reason == "length":
            return None
        found = find_calls(content, self.tools)
        if found is None:
            return None
        found = Found(found.prose, self._unrepeated(found.attempts))
        self.written.extend(found.attempts)
        if self.mode == "off":
            return None
        if not found.usable:
            if self.near_misses >= NEAR_MISS_STEPS:
                return None
            self.near_misses += 1
        for attempt in found.attempts:
            if attempt.usable:
                self.recovered += 1
                self._ran.add((attempt.call.name, attempt.call.arguments))
            else:
                off = self.turned_off(attempt.call.name) if attempt.call.name not in self.tools else None
                self._refused[attempt.call.id] = off or _refusal_line(attempt, self.tools)
        return found

    def _unrepeated(self, attempts: tuple[Attempt, ...]) -> tuple[Attempt, ...]:
        """The attempts, each call identical to one already run this turn (or earlier in the reply) refused."""
        seen = set(self._ran)
        kept = []
        for attempt in attempts:
            key = (attempt.call.name, attempt.call.arguments)
            if attempt.usable and key in seen:
                attempt = Attempt(attempt.call, REPEATED)
            seen.add(key)
            kept.append(attempt)
        return tuple(kept)

    def refusal(self, call_id: str) -> str | None:
        """The result line of a written call that must not run; None for any other call."""
        return self._refused.get(call_id)

    def verdict(self) -> str:
        """One line for the user when the model tried to call tools in text and none could run; else ""."""
        if not self.written or self.recovered:
            return ""
        names = ", ".join(dict.fromkeys(a.call.name for a in self.written))
        if self.mode == "off":
            return (
                f"The model wrote a tool call as text ({names[:200]}), which was not run: "
                'models.main.textToolCalls is "off". Set it to "auto" to run such calls, or use a model '
                "that calls tools through the API."
            )
        problems = "; ".join(dict.fromkeys(a.problem for a in self.written))
        return (
            f"The model wrote tool calls as text that could not be run ({problems[:300]}). "
            "Try a model that calls tools through the API, or a larger one; "
            'models.main.textToolCalls "off" stops reading calls from its text.'
        )


def tally(events: list[Event], mode: str) -> dict[str, Any]:
    """What ``%monad status`` says of a session's calls written as text, from its ``tool.text_calls`` events."""
    run = sum(int(e.data.get("run") or 0) for e in events)
    written = sum(len(e.data.get("calls") or []) for e in events)
    return {"mode": mode, "run": run, "refused": max(0, written - run)}
