"""Billed input on an image-heavy trace: a chart every third step, monad against two image strategies.

    python benchmarks/images.py [--steps 240] [--windows 32000 64000 128000] [--discounts 1 0.5 0.1]
                                [--chart-every 3]

(8 to 11 minutes on 2 cores with the defaults; ``--chart-every 0`` runs the same strategies on the
text-only trace).

The trace is the reference trace of ``benchmarks/cost.py`` (same seeded pauses, same simulated
prefix cache, billed input = uncached + d x cached, a request over the window refused and
counted as an overflow), except that every third step's code also draws a chart with
matplotlib and displays it. Each chart is a real PNG (1000x700, 1200x800 or 1600x900 pixels;
a line, bar, scatter or histogram of seeded data) whose title carries a planted identifier
(``FIG-0003-K7QZ``), so what each strategy can still see at the end is checked too.

Every strategy is sent the same image bytes: the ones the session keeps after
``FigureRecorder`` (``monad_notebook/images/figures.py``) has decoded the display and
scaled it to ``context.images.maxSide`` (1024), so each image costs the same tokens everywhere
(OpenAI's tile formula, ``TokenCounter.count_messages`` reading the size from the data URL)
and the comparison is of context management only. Strategies:

1. LangChain ``ClearToolUsesEdit`` (keep 3, trigger at 50% of the window) + ``trim_messages``,
   as in ``cost.py``. Chat Completions takes no image in a tool message, so each image travels
   as LangChain agents send it to OpenAI: a ``HumanMessage`` with an ``image_url`` block right
   after the ``ToolMessage``. ``ClearToolUsesEdit`` clears ``ToolMessage`` contents only, so the
   images stay until ``trim_messages`` drops them from the front: that is the peer's behaviour.
2. Drop images after the last 3 (mito-ai's strategy, ``trim_old_messages``): image blocks stay
   only in the 3 latest image-bearing messages, older ones lose them for good (their text part
   stays); everything else is sent, cut to the window by the same ``trim_messages``. mito-ai
   itself keeps images only within its last 3 messages of any role; counting image-bearing
   messages keeps more images, never fewer.
3. monad: a real ``Session`` (as ``cost.run_monad``) with ``models.main.vision`` on, whose
   ``replay`` tool turns each chart's display (``{"image/png": base64, "text/plain": ...}``)
   into an ``Image`` with ``FigureRecorder`` and appends it to ``ctx.images`` as the python tool
   does; recall searches by words only (``models.embedding.provider: none``: embedding 3 MB of
   output would take most of the run, and recall sends nothing unless the model calls it).

Request by request, what monad's model received is checked: every ``image_url`` part decodes
to a PNG or JPEG no larger than ``maxSide`` whose bytes are the kept image's, follows the tool
results it belongs to, and belongs to a result sent whole; no cleared or evicted result has an
image attached; every result sent whole has all its images attached; requests over the window
are counted (the provider refuses them). After each run every image id the tool produced is
read back through the real ``view_image`` tool and compared byte for byte with what was kept,
and the compactions the session went through are counted.

Also printed, per strategy: images attached per request, requests that no longer carry the
user's request of their turn (a trim that starts at a later human message drops it), and the
chart identifiers the last request still reaches.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import logging
import random
import re
import string
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.cost import (
    TTL_SECONDS,
    Bill,
    Clock,
    Log,
    Messages,
    Pauses,
    PrefixCache,
    _drive,
    _langchain_counter,
    send_trimmed,
)
from benchmarks.reference_trace import DecliningModel, Provider, Result, to_langchain, tool_schemas
from benchmarks.trace import Trace, generate_trace, replay_events
from monad_notebook import events as ev
from monad_notebook.agent.instructions import SYSTEM_PROMPT
from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.config import Config
from monad_notebook.config_schema import ImagesConfig
from monad_notebook.context.lossless.eviction import PLACEHOLDER_PREFIX
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.errors import ContextLengthError
from monad_notebook.images.figures import FigureRecorder
from monad_notebook.images.image import IMAGES_CLEARED, Image
from monad_notebook.messages import ToolCall
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore

CHART_EVERY = 3
KEEP_IMAGES = 3  # "drop images after the last 3"
MODEL = "gpt-4o"  # every count, text and image (85 + 170 per 512-px tile), is this model's
MONAD = "monad cascade"
LANGCHAIN = "LangChain ClearToolUsesEdit + trim"
DROP = "drop images after the last 3 + trim"
SHORT = {MONAD: "monad", LANGCHAIN: "LangChain", DROP: "drop after 3"}
WITHIN = 1.05  # "cheapest, or within 5%"
SIZES = [(10, 7), (12, 8), (16, 9)]  # figsize in inches at 100 dpi
KINDS = [
    ("plot", "Monthly margin per warehouse", "month", "margin_usd"),
    ("bar", "Return rate by region", "region", "return_rate"),
    ("scatter", "Unit price against quantity", "qty", "unit_price"),
    ("hist", "Discount distribution, partner channel", "discount_pct", "orders"),
]
BASELINE_IMAGE_NOTE = "(the image the tool call above displayed)"
_IMAGE_LINE = re.compile(r"\[image (img_[0-9a-f]+)")


# --- the charts ------------------------------------------------------------------------


@dataclass
class Chart:
    """One displayed chart: its step, planted identifier, display and the image every strategy is sent."""

    step: int
    call_id: str
    ident: str
    display: dict[str, str]  # what IPython publishes: {"image/png": base64, "text/plain": "<Figure ...>"}
    kept: Image  # the display through FigureRecorder: decoded, scaled to maxSide, re-encoded

    @property
    def url(self) -> str:
        return self.kept.data_url

    def baseline_text(self) -> str:
        """What a tool without image handling appends to its result: the display's text/plain."""
        return f"\ndisplayed:\n{self.display['text/plain']}"

    def baseline_image_message(self) -> dict[str, Any]:
        """The image as LangChain sends it to Chat Completions: a user message after the tool result."""
        image = {"type": "image_url", "image_url": {"url": self.url, "detail": "auto"}}
        return {"role": "user", "content": [{"type": "text", "text": BASELINE_IMAGE_NOTE}, image]}


def _draw(kind: str, title: str, xlabel: str, ylabel: str, figsize: tuple[int, int], rng: random.Random) -> bytes:
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, dpi=100)
    if kind == "plot":
        for _ in range(rng.randrange(2, 5)):
            level = rng.uniform(2e3, 9e3)
            ax.plot(range(1, 13), [level + rng.gauss(0, 900) for _ in range(12)], marker="o")
    elif kind == "bar":
        ax.bar(["North", "South", "East", "West", "Central", "Overseas"], [rng.uniform(0.02, 0.3) for _ in range(6)])
    elif kind == "scatter":
        n = rng.randrange(150, 400)
        ax.scatter([rng.randrange(1, 60) for _ in range(n)], [rng.lognormvariate(4, 0.6) for _ in range(n)], s=8)
    else:
        ax.hist([rng.betavariate(2, 6) * 40 for _ in range(2000)], bins=rng.randrange(20, 45))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return out.getvalue()


def add_charts(trace: Trace, images: ImagesConfig, every: int = CHART_EVERY) -> dict[str, Chart]:
    """Every ``every``-th step of ``trace`` also draws and displays a chart (its code is appended); by call id."""
    charts: dict[str, Chart] = {}
    for step in trace.steps:
        if not every or step.index % every:
            continue
        rng = random.Random(step.index)
        kind, what, xlabel, ylabel = KINDS[(step.index // every) % len(KINDS)]
        figsize = SIZES[(step.index // every) % len(SIZES)]
        ident = f"FIG-{step.index:04d}-" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=4))
        title = f"{what} ({ident})"
        code = (
            f"fig, ax = plt.subplots(figsize={figsize})\n"
            f'ax.{kind}(frame["{xlabel}"], frame["{ylabel}"])\n'
            f'ax.set_title("{title}")\nax.set_xlabel("{xlabel}")\nax.set_ylabel("{ylabel}")\n'
            "display(fig)\nplt.close(fig)"
        )
        step.code = f"{step.code}\n{code}"
        png = _draw(kind, title, xlabel, ylabel, figsize, rng)
        width, height = figsize[0] * 100, figsize[1] * 100
        display = {
            "image/png": base64.b64encode(png).decode(),
            "text/plain": f"<Figure size {width}x{height} with 1 Axes>",
        }
        recorder = FigureRecorder(images, step.code)
        recorder.record(display)
        (kept,) = recorder.captured.images
        charts[step.call_id] = Chart(step.index, step.call_id, ident, display, kept)
    return charts


def with_charts(messages: Messages, charts: dict[str, Chart]) -> Messages:
    """The replayed messages of a step as a tool without image handling returns them, each image after its result."""
    out: Messages = []
    for message in messages:
        chart = charts.get(message.get("tool_call_id") or "") if message["role"] == "tool" else None
        if chart is None:
            out.append(message)
            continue
        out += [{**message, "content": message["content"] + chart.baseline_text()}, chart.baseline_image_message()]
    return out


# --- the two image strategies to compare with -------------------------------------------


def _run_trimmed(
    name: str,
    trace: Trace,
    charts: dict[str, Chart],
    pauses: Pauses,
    window: int,
    tools: list[Any],
    counter: TokenCounter,
    edit: Callable[[list[Any], Callable[[list[Any]], int]], list[Any]],
) -> Log:
    """History as LangChain messages; before each request ``edit`` it, then ``trim_messages`` to the window."""
    from langchain_core.messages import SystemMessage

    log = Log(name, window, Clock())
    head = counter.count_messages([], tools)
    count = _langchain_counter(counter)
    history: list[Any] = [SystemMessage(SYSTEM_PROMPT)]

    def request() -> None:
        send_trimmed(log, edit(history, lambda messages: head + count(messages)), count, counter, tools)

    def add(messages: Messages) -> None:
        history.extend(map(to_langchain, with_charts(messages, charts)))

    return _drive(trace, pauses, log, request, add)


def run_langchain_clear(
    trace: Trace, charts: dict[str, Chart], pauses: Pauses, window: int, tools: list[Any], counter: TokenCounter
) -> Log:
    """``ClearToolUsesEdit`` on a copy of the history before every request, as ``ContextEditingMiddleware`` does."""
    from langchain.agents.middleware import ClearToolUsesEdit

    clear = ClearToolUsesEdit(trigger=window // 2, clear_at_least=0, keep=3, placeholder="[cleared]", exclude_tools=())

    def edit(history: list[Any], count: Callable[[list[Any]], int]) -> list[Any]:
        edited = list(history)
        clear.apply(edited, count_tokens=count)
        return edited

    return _run_trimmed(LANGCHAIN, trace, charts, pauses, window, tools, counter, edit)


def _carries_image(message: Any) -> bool:
    content = message.content
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content)


def run_drop_images(
    trace: Trace, charts: dict[str, Chart], pauses: Pauses, window: int, tools: list[Any], counter: TokenCounter
) -> Log:
    """Image blocks only in the latest ``KEEP_IMAGES`` image-bearing messages; older ones lose them for good."""
    from langchain_core.messages import HumanMessage

    def edit(history: list[Any], count: Callable[[list[Any]], int]) -> list[Any]:
        carrying = [i for i, message in enumerate(history) if _carries_image(message)]
        for i in carrying[:-KEEP_IMAGES]:
            text = [p for p in history[i].content if isinstance(p, dict) and p.get("type") == "text"]
            history[i] = HumanMessage(text[0]["text"] if text else "")
        return history

    return _run_trimmed(DROP, trace, charts, pauses, window, tools, counter, edit)


# --- monad ---------------------------------------------------------------------------------


@dataclass
class Kept:
    """An image the session's tool produced: the result that carried it and its bytes."""

    call_id: str
    data: bytes
    ident: str


def chart_replay_tool(
    trace: Trace, charts: dict[str, Chart], clock: Clock, pauses: Pauses, kept: dict[str, Kept]
) -> Tool:
    """``replay`` whose chart steps display their chart: the image goes through FigureRecorder into ``ctx.images``."""
    steps = {step.index: step for step in trace.steps}

    def replay(ctx: ToolContext, step: int, code: str = "") -> str:
        """Run the code of one recorded step and return its recorded output.

        Args:
            step: The trace step to replay.
            code: The code that step ran (recorded for the transcript).
        """
        clock.advance(pauses.per_step[step])
        recorded = steps[step]
        chart = charts.get(recorded.call_id)
        if chart is None:
            return recorded.output
        redactor = ctx.redactor
        redact = (lambda text: redactor.redact(text).text) if redactor is not None else (lambda text: text)
        figures = FigureRecorder(ctx.images_config, code, redact)
        line = figures.record(chart.display)
        for image in figures.captured.images:
            kept[image.id] = Kept(recorded.call_id, image.data, chart.ident)
        ctx.images.extend(figures.captured.images)
        return f"{recorded.output}\ndisplayed:\n{chart.display['text/plain']} {line}"

    return tool(replay)


@dataclass
class Checks:
    """What monad's model was sent, request by request (see the module's docstring)."""

    requests: int = 0
    over_window: int = 0  # refused by the provider: never answered
    with_images: int = 0
    image_parts: int = 0
    image_ok: int = 0  # decodes to PNG/JPEG within maxSide, bytes equal to the kept image's
    after_results: int = 0  # image messages right after the tool results they belong to
    image_messages: int = 0
    cleared_results: int = 0  # results sent with their images cleared or evicted whole
    cleared_clean: int = 0  # of those, results none of whose images is attached
    whole_results: int = 0  # results sent whole that carry images
    whole_attached: int = 0  # of those, results all of whose images are attached
    orphans: int = 0  # images attached whose result is not sent whole in the request (must be 0)
    problems: list[str] = field(default_factory=list)

    def note(self, problem: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(problem)

    @property
    def failures(self) -> int:
        return (
            self.image_parts
            - self.image_ok
            + self.image_messages
            - self.after_results
            + self.cleared_results
            - self.cleared_clean
            + self.whole_results
            - self.whole_attached
            + self.orphans
        )


def _decode(url: str) -> tuple[bytes, str, tuple[int, int]] | None:
    from PIL import Image as PILImage

    head, _, payload = url.partition(",")
    if head not in ("data:image/png;base64", "data:image/jpeg;base64"):
        return None
    data = base64.b64decode(payload)
    with PILImage.open(io.BytesIO(data)) as picture:
        picture.load()
        return data, picture.format or "", picture.size


def check_request(
    checks: Checks, messages: Messages, tokens: int, window: int, max_side: int, kept: dict[str, Kept]
) -> None:
    checks.requests += 1
    checks.over_window += tokens > window
    whole: list[set[str]] = []  # the image ids each result sent whole names
    cleared: list[set[str]] = []  # the image ids each result sent with its images cleared names
    attached: set[str] = set()
    parts = 0
    for at, message in enumerate(messages):
        content = message.get("content")
        if message["role"] == "tool":
            text = str(content or "")
            named = set(_IMAGE_LINE.findall(text))
            if named:
                gone = IMAGES_CLEARED in text or text.startswith(PLACEHOLDER_PREFIX)
                (cleared if gone else whole).append(named)
            continue
        if not isinstance(content, list) or not any(p.get("type") == "image_url" for p in content):
            continue
        checks.image_messages += 1
        checks.after_results += at > 0 and messages[at - 1]["role"] == "tool"
        handle = ""
        for part in content:
            if part.get("type") == "text":
                found = _IMAGE_LINE.search(part["text"])
                handle = found.group(1) if found else handle
                continue
            parts += 1
            decoded = _decode(part["image_url"]["url"])
            ok = (
                decoded is not None
                and decoded[1] in ("PNG", "JPEG")
                and max(decoded[2]) <= max_side
                and handle in kept
                and decoded[0] == kept[handle].data
            )
            checks.image_ok += ok
            if not ok:
                checks.note(f"request {checks.requests}: image {handle or '?'} not as kept")
            attached.add(handle)
    checks.image_parts += parts
    checks.with_images += parts > 0
    checks.whole_results += len(whole)
    checks.whole_attached += sum(named <= attached for named in whole)
    checks.cleared_results += len(cleared)
    checks.cleared_clean += sum(not named & attached for named in cleared)
    sent_whole = set().union(*whole)
    checks.orphans += len(attached - sent_whole)
    for problem, ids in (
        ("cleared but attached", attached & set().union(*cleared)),
        ("not attached", sent_whole - attached),
        ("attached without its result", attached - sent_whole),
    ):
        if ids:
            checks.note(f"request {checks.requests}: {problem}: {sorted(ids)}")


@dataclass
class MonadRun:
    log: Log
    tools: list[dict[str, Any]]
    checks: Checks
    kept: dict[str, Kept]
    readable: int
    compactions: int
    evictions: int
    failed_turns: int
    asked: list[str]  # the user's request of the turn each request was sent in


def run_monad(
    trace: Trace,
    charts: dict[str, Chart],
    pauses: Pauses,
    window: int,
    discount: float,
    counter: TokenCounter,
    tmp: Path,
) -> MonadRun:
    log = Log(MONAD, window, Clock())
    result = Result("monad")
    store = LanceStore(tmp / f"db-{window}-{discount}")
    provider = Provider(counter, window, result)
    config = Config.model_validate(
        {
            "models": {
                "main": {
                    "contextWindow": window,
                    "vision": True,
                    "cache": {"discount": discount, "ttlSeconds": TTL_SECONDS},
                },
                "embedding": {"provider": "none"},
            },
            "agent": {"maxSteps": 64},
        }
    )
    kept: dict[str, Kept] = {}
    session = Session(
        "images",
        config=config,
        store=store,
        model=provider,  # type: ignore[arg-type]
        fast_model=DecliningModel(counter, result),  # type: ignore[arg-type]
        extra_tools=[chart_replay_tool(trace, charts, log.clock, pauses, kept)],
    )
    session.cascade.meter.cost.clock = log.clock
    tools = [t.schema() for t in session.tools.values()]
    provider.tools_tokens = counter.count_messages([], tools) - counter.count_messages([])
    checks = Checks()
    max_side = config.context.images.max_side
    urls: dict[str, str] = {}
    asked: list[str] = []
    current = [""]
    complete = provider.complete

    def logged(messages: Messages, tools: list[Any], on_text: Any = None) -> Any:
        for message in messages:  # one copy of each data URL across the logged requests
            for part in message["content"] if isinstance(message.get("content"), list) else ():
                if part.get("type") == "image_url":
                    part["image_url"]["url"] = urls.setdefault(part["image_url"]["url"], part["image_url"]["url"])
        tokens = counter.count_messages(messages, tools)
        log.send(messages, tokens)
        asked.append(current[0])
        check_request(checks, messages, tokens, window, max_side, kept)
        return complete(messages, tools, on_text=on_text)

    provider.complete = logged  # type: ignore[method-assign]
    failed = 0
    started = time.perf_counter()
    for turn, pause in zip(trace.turns, pauses.before_turn, strict=True):
        log.clock.advance(pause)
        provider.start_turn(turn)
        current[0] = turn.user
        try:
            session.ask(turn.user)
        except ContextLengthError:
            failed += 1
        session.wait_for_background()
    log.seconds = time.perf_counter() - started
    readable = 0
    for n, (image_id, image) in enumerate(kept.items()):
        shown = session.execute_tool(ToolCall(f"view_{n}", "view_image", json.dumps({"id": image_id})))
        readable += (
            len(shown.images) == 1
            and shown.images[0].data == image.data
            and shown.text.startswith(f"[image {image_id}:")
            and image.ident in shown.text
        )
    compactions = len(store.list_events(session.name, kind=ev.COMPACTION_APPLIED))
    evictions = len(store.list_events(session.name, kind=ev.EVICTED))
    session.close()
    store.close()
    return MonadRun(log, tools, checks, kept, readable, compactions, evictions, failed, asked)


# --- what each strategy still shows at the end, and per-request image counts ---------------------


def _digest(url: str) -> str:
    return hashlib.blake2b(base64.b64decode(url.partition(",")[2]), digest_size=12).hexdigest()


def _text_of(messages: Messages) -> str:
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if p.get("type") == "text")
        else:
            parts.append(str(content or ""))
        parts.extend(c["function"]["arguments"] for c in message.get("tool_calls") or ())
    return "\n".join(parts)


def _urls(messages: Messages) -> list[str]:
    return [
        p["image_url"]["url"]
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


def charts_reachable(log: Log, charts: dict[str, Chart], kept: dict[str, Kept] | None = None) -> int:
    """Chart identifiers the last request reaches: in its text, drawn in an image it carries, behind a handle.

    A handle it shows counts for monad only (``view_image`` shows the image again); a refused last
    request reaches nothing.
    """
    if not log.requests or log.requests[-1].refused:
        return 0
    final = log.requests[-1].messages
    text = _text_of(final)
    by_digest = {_digest(c.url): c.ident for c in charts.values()}
    seen = {by_digest.get(_digest(url)) for url in _urls(final)}
    handles = {k.ident for image_id, k in (kept or {}).items() if image_id in text}
    return sum(c.ident in text or c.ident in seen or c.ident in handles for c in charts.values())


def asked_in(trace: Trace) -> list[str]:
    """The user's request of the turn each simulated strategy's request is sent in (one per step and answer)."""
    asked: list[str] = []
    for kind, value in replay_events(trace):
        if kind == "user":
            current = value
        else:
            asked.append(current)
    return asked


def without_request(log: Log, asked: list[str]) -> int:
    """Answered requests that do not carry the user's request of their turn (trimmed away)."""
    return sum(not r.refused and text not in _text_of(r.messages) for r, text in zip(log.requests, asked, strict=True))


def images_per_request(log: Log) -> float:
    answered = [r for r in log.requests if not r.refused]
    return sum(len(_urls(r.messages)) for r in answered) / max(1, len(answered))


# --- report ----------------------------------------------------------------------------------


def bill_table(rows: list[tuple[int, float, dict[str, Bill]]], names: list[str]) -> tuple[str, bool]:
    lines = [
        "| window | d | " + " | ".join(names) + " | cheapest other without overflows | monad vs it | met |",
        "|---:|---:|" + "---:|" * len(names) + "---|---:|---|",
    ]
    every = True
    for window, discount, bills in rows:
        cells = [f"{bills[n].billed / 1e6:.2f}M ({bills[n].overflows})" for n in names]
        others = {n: b.billed for n, b in bills.items() if n != MONAD and b.overflows == 0}
        best = min(others, key=others.__getitem__) if others else "-"
        ratio = bills[MONAD].billed / others[best] if others else 0.0
        met = bills[MONAD].overflows == 0 and (not others or ratio <= WITHIN)
        every &= met
        shown = f"{ratio:.2f}x" if others else "-"
        lines.append(
            f"| {window // 1000}k | {discount:g} | "
            + " | ".join(cells)
            + f" | {best} | {shown} | {'yes' if met else 'no'} |"
        )
    return "\n".join(lines), every


def describe_charts(charts: dict[str, Chart], images: ImagesConfig, counter: TokenCounter) -> str:
    if not charts:
        return "no charts (the text-only trace)."
    steps = sorted(c.step for c in charts.values())
    every = steps[1] - steps[0] if len(steps) > 1 else steps[0]
    sample = next(iter(charts.values()))
    note = {"role": "user", "content": [{"type": "text", "text": BASELINE_IMAGE_NOTE}]}
    tokens = counter.count_messages([sample.baseline_image_message()]) - counter.count_messages([note])
    kb = sum(len(c.kept.data) for c in charts.values()) / len(charts) / 1000
    return (
        f"{len(charts)} charts (one every {every} steps; drawn at 1000x700, 1200x800 or 1600x900, kept at most "
        f"{images.max_side} px a side, {kb:.0f} KB on average, {tokens} tokens each for {MODEL}, e.g. "
        f"{sample.kept.width}x{sample.kept.height})."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=240, help="tool steps in the trace")
    parser.add_argument("--windows", type=int, nargs="*", default=[32_000, 64_000, 128_000])
    parser.add_argument("--discounts", type=float, nargs="*", default=[1.0, 0.5, 0.1])
    parser.add_argument("--seed", type=int, default=11, help="seed of the pauses")
    parser.add_argument(
        "--chart-every", type=int, default=CHART_EVERY, help="a chart every N steps (0: none, the text-only trace)"
    )
    args = parser.parse_args()
    logging.getLogger("monad_notebook").setLevel(logging.ERROR)
    started = time.perf_counter()
    trace = generate_trace(args.steps)
    images = ImagesConfig()
    charts = add_charts(trace, images, args.chart_every)
    pauses = Pauses.for_trace(trace, args.seed)
    counter = TokenCounter(MODEL)
    print(f"{len(trace.steps)} tool steps in {len(trace.turns)} turns, {describe_charts(charts, images, counter)}")
    sizes = sorted(counter.count_text(step.output) for step in trace.steps)
    print(
        f"Tool results (text): median {sizes[len(sizes) // 2]:,} tokens, 90th percentile "
        f"{sizes[len(sizes) * 9 // 10]:,}, largest {sizes[-1]:,} (before truncation at the session's maxChars)."
    )
    print("Billed input tokens (uncached + d x cached), overflows in brackets.")
    rows: list[tuple[int, float, dict[str, Bill]]] = []
    detail: list[str] = []
    names = [LANGCHAIN, DROP, MONAD]
    runs: list[tuple[int, float, MonadRun]] = []
    asked = asked_in(trace)
    with tempfile.TemporaryDirectory() as tmp:
        tools = tool_schemas(trace, Path(tmp))
        cache = PrefixCache(counter, tools)
        for window in args.windows:
            logs = [
                run(trace, charts, pauses, window, tools, counter) for run in (run_langchain_clear, run_drop_images)
            ]
            reach = {log.name: charts_reachable(log, charts) for log in logs}
            per_request = {log.name: images_per_request(log) for log in logs}
            missing = {log.name: without_request(log, asked) for log in logs}
            for discount in args.discounts:
                ours = run_monad(trace, charts, pauses, window, discount, counter, Path(tmp))
                bills = {log.name: cache.bill(log, discount, TTL_SECONDS) for log in logs}
                bills[MONAD] = PrefixCache(counter, ours.tools).bill(ours.log, discount, TTL_SECONDS)
                rows.append((window, discount, bills))
                runs.append((window, discount, ours))
                reach_all = {**reach, MONAD: charts_reachable(ours.log, charts, ours.kept)}
                images_all = {**per_request, MONAD: images_per_request(ours.log)}
                missing_all = {**missing, MONAD: without_request(ours.log, ours.asked)}
                detail.append(
                    f"| {window // 1000}k | {discount:g} | "
                    + " | ".join(f"{images_all[n]:.1f}" for n in names)
                    + " | "
                    + " | ".join(f"{missing_all[n]}" for n in names)
                    + " | "
                    + " | ".join(f"{reach_all[n]}" for n in names)
                    + " |"
                )
                ours.log.requests.clear()  # the bill is made; free the data URLs
                print(
                    f"  {window:,} d={discount:g}: "
                    + ", ".join(f"{n} {b.billed / 1e6:.2f}M ({b.overflows})" for n, b in bills.items())
                    + f"; {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    table, every = bill_table(rows, names)
    print()
    print(table)
    print()
    print(
        "monad cheapest or within 5% of the cheapest other strategy without overflows, with 0 overflows, in every "
        f"cell: {'yes' if every else 'no'}."
    )
    print()
    print(
        "Images attached per answered request (mean); answered requests that no longer carry the user's request of "
        f"their turn (trimmed away), of {len(asked)}; chart identifiers the last request reaches, of {len(charts)} "
        "(in its text, drawn in an image it carries, or, for monad, behind a view_image handle it shows):"
    )
    print()
    print(
        "| window | d | "
        + " | ".join(f"images per request, {SHORT[n]}" for n in names)
        + " | "
        + " | ".join(f"without the request, {SHORT[n]}" for n in names)
        + " | "
        + " | ".join(f"reached, {SHORT[n]}" for n in names)
        + " |"
    )
    print("|---:|---:|" + "---:|" * (3 * len(names)))
    print("\n".join(detail))
    print()
    print("What monad's model received, request by request, and every image read back by its handle:")
    print()
    print(
        "| window | d | requests | over the window (refused) | with images | image parts | decoded, within "
        f"{images.max_side} px, bytes as kept | right after their results | results sent whole with images, all "
        "attached | results with images cleared, none attached | images of another result | compactions | "
        "eviction passes | images readable by handle |"
    )
    print("|---:|---:|" + "---:|" * 12)
    for window, discount, ours in runs:
        c = ours.checks
        print(
            f"| {window // 1000}k | {discount:g} | {c.requests} | {c.over_window} | {c.with_images} | {c.image_parts} "
            f"| {c.image_ok} | {c.after_results}/{c.image_messages} | {c.whole_attached}/{c.whole_results} "
            f"| {c.cleared_clean}/{c.cleared_results} | {c.orphans} | {ours.compactions} "
            f"| {ours.evictions} | {ours.readable} of {len(ours.kept)} |"
        )
    problems = [f"{w // 1000}k d={d:g}: {p}" for w, d, ours in runs for p in ours.checks.problems]
    failures = sum(ours.checks.failures for _, _, ours in runs)
    compacted = [ours for _, _, ours in runs if ours.compactions >= 5]
    print()
    print(
        f"Request checks failed: {failures}" + (f" ({'; '.join(problems)})" if problems else "") + ". "
        "Images readable by their handle at the end of each run: "
        + ", ".join(f"{ours.readable} of {len(ours.kept)}" for _, _, ours in runs)
        + "; in the runs with 5 or more compactions: "
        + (", ".join(f"{o.readable} of {len(o.kept)} after {o.compactions}" for o in compacted) or "none")
        + f". Turns that failed on the window: {sum(ours.failed_turns for _, _, ours in runs)}. "
        f"{time.perf_counter() - started:.0f} s in all."
    )


if __name__ == "__main__":
    main()
