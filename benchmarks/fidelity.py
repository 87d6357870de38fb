"""Fidelity: of 100 identifiers seen once in a long session, how many can the agent still reach?

    python benchmarks/fidelity.py [--turns 60] [--window 16000] [--summarizers good weak failing] [--misses] [--ablate]
                                  [--also]

A real ``Session`` (LanceDB in a temp dir, the offline embedder, default context settings
but for the window and a ``toolOutput.maxChars`` of 8,000 that suits it) is driven by a
scripted model through ``fidelity_session.py``: 150 turns, 525 tool steps, 1.5 MB of tool
output, 100 planted identifiers (file paths, variables, columns, commands, numbers) in user
messages, answers, small outputs and the middles of truncated outputs.

Summaries come from a scripted fast model in three qualities: "good" keeps what the user and
the agent said and each result's first line, newest first within its budget; "weak" writes
the five headings with nothing in them; "failing" errors, so the extractive fallback writes.
The identifier ledger is attached to every summary in all three.

At the end, an identifier counts as reachable only if it is in the final prompt (verbatim:
summary, ledger, window), or inside a saved tool output whose ``read_tool_output`` id the final
prompt shows, or in the ``recall`` tool's answer to its probe: a question naming its context,
never the identifier. "Folded 5+ ago" are those whose message was folded into the summary by a
compaction followed by at least four more. The probes are asked once indexing has caught up and
the store is optimized (every passage in the full-text index), so an ablation's second asking
ranks as the first did, however loaded the machine.

Every identifier is probed three times: by its tuning probe (the questions recall was tuned on),
by its second tuning probe (a fourth vocabulary and forms of its own, asked wholly in other words
as the held-out ones are, so a choice for paraphrased questions can be judged without them), and
by its held-out probe (written apart, in other words and forms: ``fidelity_session.py``). All are
reported; the goals hold for the first and the held-out ones.

``--also`` asks each probe again with the other probe as the ``recall`` tool's second phrasing:
the held-out probe with the tuning probe's words is the upper bound of a rewrite into the
session's words; the tuning probe with the held-out words shows what a poor second phrasing
costs.

``--rewrite-with qwen`` (the benchmark fixture, ``fixtures.py``, served by llama-server as a user
runs it) or ``--rewrite-with BASE_URL MODEL`` (any OpenAI-compatible endpoint) asks each probe again
with ``context.recall.rewrite`` "fast" and that model as the fast tier, through the session's own
recall (``RecallService``): reachable, found by recall, and recall's latency with the rewrite's wait
(``--rewrite-timeout``, 60 s by default so each probe gets its phrasings; the product's default is 5).
The summaries stay scripted. ``--embedding-with gemma`` or ``BASE_URL MODEL`` indexes through an
embeddings endpoint instead of the offline model (``models.embedding``, its known prefixes applied);
``--embedding-cache FILE`` keeps the endpoint's vectors of long passages in FILE and answers them
from it in later runs (``embedding_cache.py``: what is found is unchanged, the indexing rate is not
reported), so the three summarizers and repeated runs index the shared outputs once, as the
offline model's runs do.

``--misses`` lists each identifier recall did not bring back: where it was, its probe, what
recall answered, and the rank of the message holding it in each search alone (words, vectors).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.embedding_cache import CacheStats, cached_embeddings
from benchmarks.fidelity_session import KINDS, PLACEMENTS, Plant, Script, Turn, make_script
from monad_notebook.agent.tools.base import Tool, ToolContext, tool
from monad_notebook.agent.tools.recall import recall as recall_tool
from monad_notebook.agent.tools.registry import run_tool
from monad_notebook.config import Config
from monad_notebook.context.compaction.ledger_text import parse_ledger
from monad_notebook.context.compaction.summarize import SECTIONS, parse_sections, render_sections
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.recall.search import STEPS, Recall, query_terms
from monad_notebook.context.recall.tuning import TUNING
from monad_notebook.context.recall.wordmatch import shared_word_vectors
from monad_notebook.errors import ModelError
from monad_notebook.messages import ToolCall
from monad_notebook.provider import ChatModel, ChatResponse, OpenAIChatModel, Usage
from monad_notebook.provider import local_embedder as embeddings
from monad_notebook.provider.prefixes import as_question
from monad_notebook.session import Session
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

MAX_CHARS = 8000
Ask = Callable[[ToolCall], str]  # one recall tool call, answered
RECALL_BUDGET_TOKENS = 1200
_TARGET = re.compile(r"at most about (\d+) tokens")


class FastModel:
    """The fast tier, scripted: writes the briefing the way its quality says (see the module doc)."""

    name = "gpt-4o-mini"

    def __init__(self, quality: str) -> None:
        self.quality = quality
        self.calls = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_text: Any = None) -> Any:
        self.calls += 1
        if self.quality == "failing":
            raise ModelError("the fast model is down")
        if self.quality == "weak":
            body = {name: "- The analysis continued." for name in SECTIONS}
            return ChatResponse(content=render_sections(body))
        target = int((_TARGET.search(messages[0]["content"]) or re.search(r"(\d+)", "1500")).group(1))
        prompt = messages[-1]["content"]
        if "<transcript>" not in prompt:
            return ChatResponse(content=_trim(parse_sections(prompt), target))
        previous = prompt.split("<previous_summary>", 1)[1].split("</previous_summary>")[0] if "<prev" in prompt else ""
        sections = parse_sections(previous)
        transcript = prompt.split("<transcript>", 1)[1].split("</transcript>")[0]
        facts = sections.get("Decisions & Facts", "").splitlines()
        for line in transcript.splitlines():
            if line.startswith(("USER: ", "ASSISTANT: ")):
                facts.append("- " + line[:300])
            elif line.startswith("TOOL RESULT"):
                facts.append("- " + line.split(":", 1)[-1].strip()[:150])
        sections["Decisions & Facts"] = "\n".join(f for f in facts if f.strip())
        return ChatResponse(content=_trim(sections, target))


def _trim(sections: dict[str, str], target: int) -> str:
    """The newest lines of each section that fit a share of ``target`` tokens (4 chars each)."""
    share = target * 4 // len(SECTIONS)
    trimmed = {}
    for name in SECTIONS:
        kept: list[str] = []
        for line in reversed(sections.get(name, "").splitlines()):
            if sum(len(x) + 1 for x in kept) + len(line) > (share * 3 if name == "Decisions & Facts" else share // 2):
                break
            kept.append(line)
        trimmed[name] = "\n".join(reversed(kept))
    return render_sections(trimmed)


class ReusedEmbedder(embeddings.LocalEmbedder):
    """The offline model, remembering the vectors of long texts: the three runs index the same outputs.

    Short texts (every probe) are embedded each time, so recall's latency is measured in full.
    """

    def __init__(self, files: tuple[Path, Path] | None = None, dims: int | None = None) -> None:
        super().__init__(files)
        self.known: dict[str, list[float]] = {}
        if files is not None:  # another sentence-transformers model exported to ONNX (``--onnx-model``)
            self.name, self.dims = files[0].stem, dims or self.dims

    def embed(self, texts: list[str]) -> list[list[float]]:
        todo = [t for t in dict.fromkeys(texts) if len(t) < 200 or t not in self.known]
        if todo:
            self.known.update(zip(todo, super().embed(todo), strict=True))
        return [self.known[t] for t in texts]


def fake_python(script: Script) -> Tool:
    outputs = {step.code: step.output for turn in script.turns for step in turn.steps}

    def python(ctx: ToolContext, code: str) -> str:
        """Run Python code in the user's kernel.

        Args:
            code: The code to run.
        """
        return outputs.get(code, "")

    return tool(python)


def turn_script(turn: Turn) -> list[ChatResponse | str]:
    steps: list[ChatResponse | str] = [
        ChatResponse(
            content="",
            tool_calls=[ToolCall(s.call_id, "python", json.dumps({"code": s.code}))],
            finish_reason="tool_calls",
        )
        for s in turn.steps
    ]
    return [*steps, turn.answer]


@dataclass
class Run:
    quality: str
    found: dict[str, set[str]] = field(default_factory=dict)  # value -> {"prompt", "handle", "recall"}: tuning probe
    held: dict[str, set[str]] = field(default_factory=dict)  # the same, "recall" by the held-out probe
    reworded: dict[str, set[str]] = field(default_factory=dict)  # the same, "recall" by the second tuning probe
    ago: dict[str, int] = field(default_factory=dict)  # value -> compactions since it was folded (0: never)
    windowed: set[str] = field(default_factory=set)  # values the final window's messages show (recall skips them)
    compactions: int = 0
    fallbacks: int = 0
    recall_tokens: list[int] = field(default_factory=list)
    recall_ms: list[float] = field(default_factory=list)
    final_tokens: int = 0
    ledger_shown: int = 0
    ledger_stored: int = 0
    seconds: float = 0.0
    index_wait: float = 0.0
    embedded: int = 0  # passages the indexer embedded ...
    embed_seconds: float = 0.0  # ... in this much time inside the embedder's calls
    from_cache: int = 0  # of them, answered by ``--embedding-cache`` (not timed as the endpoint's)
    misses: list[str] = field(default_factory=list)
    # steps left out -> reachable by the tuning, second tuning and held-out probes
    ablation: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # asked with another phrasing: row -> (reachable, by recall, by recall of those out of the window, folded 5+ ago,
    # middles, recall ms p50, p95)
    also: dict[str, tuple[int, int, str, str, str, float, float]] = field(default_factory=dict)


def config(window: int, embedder: embeddings.Embedder | None, endpoint: tuple[str, str] | None = None) -> Config:
    embedding = {"provider": "local" if embedder else "none"}
    if endpoint is not None:
        embedding = {"provider": "openai", "baseUrl": endpoint[0], "model": endpoint[1]}
    return Config.model_validate(
        {
            "models": {"main": {"contextWindow": window}, "embedding": embedding},
            "agent": {"maxSteps": 64},
            "context": {"toolOutput": {"maxChars": MAX_CHARS}},
        }
    )


def run(
    script: Script,
    quality: str,
    window: int,
    tmp: Path,
    embedder: embeddings.Embedder | None = None,
    *,
    misses: bool = False,
    ablate: bool = False,
    also: bool = False,
    rewrite: tuple[ChatModel, float] | None = None,
    endpoint: tuple[str, str] | None = None,
    cache: CacheStats | None = None,
) -> Run:
    counter = TokenCounter("gpt-4o")
    result = Run(quality)
    store = LanceStore(tmp / quality)
    model = ScriptedModel([], name="gpt-4o", context_window=window)
    fast = FastModel(quality)
    session = Session(
        "fidelity",
        config=config(window, embedder, endpoint),
        store=store,
        model=model,
        fast_model=fast,
        extra_tools=[fake_python(script)],
        embedder=None if endpoint else embedder,
    )
    tools_tokens = counter.count_messages([], [t.schema() for t in session.tools.values()]) - counter.count_messages([])
    indexer = session.recall.indexer
    searching = indexer.embedder  # the session's embedder (the endpoint's with ``endpoint``)
    if searching is not None:
        indexer.embedder = _Timed(searching, result)  # type: ignore[assignment]
    hits_before = cache.hits if cache else 0
    model._usage = lambda messages: Usage(counter.count_messages(messages) + tools_tokens, 30)
    started = time.perf_counter()
    for turn in script.turns:
        model.queue(*turn_script(turn))
        session.ask(turn.user)
    session.cascade.compaction.background.wait()
    waited = time.perf_counter()
    session.cascade.wait()
    result.index_wait = time.perf_counter() - waited
    store.optimize()  # every passage in the full-text index: recall ranks alike on every probe and every ablation
    result.from_cache = cache.hits - hits_before if cache else 0
    final = model.calls[-1].messages
    result.final_tokens = counter.count_messages(final) + tools_tokens
    tool = _tool_of(session)
    shown = "\n".join(m.content for m in session.window.messages)
    result.windowed = {p.value for p in script.plants if p.value in shown}
    measure(result, script, tool, store, final, counter)
    if misses:
        result.misses = explain_misses(result, script, tool, store, searching)
    if ablate:
        result.ablation = ablation(result, script, session, searching, counter)
    if also:
        result.also = with_also(result, script, tool, counter)
    if rewrite is not None:
        result.also.update(with_rewrite(result, script, session, *rewrite, counter))
    result.seconds = time.perf_counter() - started
    session.close()
    store.close()
    return result


class _Timed:
    """The indexer's embedder with its passages counted and its calls timed (searches use the embedder itself)."""

    def __init__(self, inner: embeddings.Embedder, result: Run) -> None:
        self._inner, self._result = inner, result

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in ("embed", "embed_in_background"):
            return found

        def timed(texts: list[str], *rest: Any) -> list[list[float]]:
            started = time.perf_counter()
            vectors = found(texts, *rest)
            self._result.embed_seconds += time.perf_counter() - started
            self._result.embedded += len(texts)
            return vectors

        return timed


def prompt_text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        parts.append(str(message.get("content") or ""))
        parts.extend(f"{c['id']} {c['function']['arguments']}" for c in message.get("tool_calls") or ())
    return "\n".join(parts)


def measure(result: Run, script: Script, tool: Ask, store: LanceStore, final: list, counter: TokenCounter) -> None:
    text = prompt_text(final)
    boundaries = _boundaries(store)
    result.compactions = len(boundaries)
    result.fallbacks = sum(
        e.data.get("used_fallback", False) for e in store.list_events("fidelity", kind="context.compaction.finished")
    )
    seqs = _carrier_seqs(store, script)
    summary = store.load_summary("fidelity")
    result.ledger_shown = len(parse_ledger(summary.text)) if summary else 0
    result.ledger_stored = len(store.load_ledger("fidelity"))
    for number, plant in enumerate(script.plants):
        where = set()
        if plant.value in text:
            where.add("prompt")
        if (
            plant.call_id
            and plant.call_id in text
            and plant.value in (store.get_raw_output("fidelity", plant.call_id) or "")
        ):
            where.add("handle")
        result.found[plant.value] = where | _recalled(result, tool, counter, f"probe_{number}", plant.probe, plant)
        result.held[plant.value] = where | _recalled(result, tool, counter, f"held_{number}", plant.held_out, plant)
        result.reworded[plant.value] = where | _recalled(
            result, tool, counter, f"reworded_{number}", plant.reworded, plant
        )
        folded_by = next((i for i, b in enumerate(boundaries) if b >= seqs[plant.value]), None)
        result.ago[plant.value] = 0 if folded_by is None else len(boundaries) - folded_by


def _tool_of(session: Session, recall: Recall | None = None) -> Ask:
    """The ``recall`` tool as the session runs it; with ``recall``, searching with that instead of the session's own.

    The tool is given what the session gives it: the search over the session's store skipping what
    its window shows, at the configured number of passages and snippet length. Indexing has caught
    up by then, so no answer carries a note about messages still being indexed.
    """
    if recall is None:
        return lambda call: session.execute_tool(call).text
    ctx = ToolContext(session.name, {}, Path(), store=session.store, recall=_Searching(session, recall))  # type: ignore[arg-type]
    return lambda call: run_tool({"recall": recall_tool}, ctx, call.name, call.arguments)


class _Searching:
    """The session's recall as the tool sees it, searching with another ``Recall`` (an ablation's)."""

    def __init__(self, session: Session, recall: Recall) -> None:
        self.session, self.recall = session, recall
        self.snippet_chars = session.config.context.recall.snippet_chars

    def search(self, query: str, also: list[str] = ()) -> list:  # type: ignore[assignment]
        cfg, window = self.session.config.context.recall, self.session.window
        return self.recall.search(self.session.name, query, cfg.max_results, also=also, window=window.messages)

    def indexing(self) -> dict:
        return {}


def _recalled(
    result: Run, tool: Ask, counter: TokenCounter, call_id: str, probe: str, plant: Plant, also: str = ""
) -> set[str]:
    """{"recall"} when the recall tool's answer to ``probe`` (with ``also``) holds the identifier; timed and counted."""
    started = time.perf_counter()
    arguments = {"query": probe, **({"also": [also]} if also else {})}
    answer = tool(ToolCall(call_id, "recall", json.dumps(arguments)))
    result.recall_ms.append((time.perf_counter() - started) * 1000)
    result.recall_tokens.append(counter.count_text(answer))
    return {"recall"} if plant.value in answer else set()


def ablation(
    result: Run, script: Script, session: Session, embedder: embeddings.Embedder | None, counter: TokenCounter
) -> dict[str, tuple[int, int, int]]:
    """Each rerank step switched off in turn, over the same final session: reachable by each probe set.

    What the final prompt and the saved outputs reach is the same in every row; only the
    ``recall`` tool's answers are asked again, through the tool, of a ``Recall`` built as the
    session builds its own (its store, embedder, the kernel's word vectors, the default tuning)
    with one step left out. The row "none" leaves none out, so it reaches what the run reached.
    """
    words = shared_word_vectors(embedder.name) if embedder is not None else None
    rows: dict[str, tuple[int, int, int]] = {}
    for left_out in ("", *STEPS):
        steps = [s for s in STEPS if s != left_out]
        tool = _tool_of(session, Recall(session.store.search, embedder, words, steps, tuning=TUNING))
        reach = [0, 0, 0]
        probe = Run(result.quality)
        for number, plant in enumerate(script.plants):
            base = result.found[plant.value] - {"recall"}
            for which, question in enumerate((plant.probe, plant.reworded, plant.held_out)):
                recalled = _recalled(probe, tool, counter, f"ablate_{number}_{which}", question, plant)
                reach[which] += bool(base | recalled)
        rows[left_out or "none"] = (reach[0], reach[1], reach[2])
    return rows


def with_also(result: Run, script: Script, tool: Ask, counter: TokenCounter) -> dict[str, tuple]:
    """Each probe asked again with the other probe as the ``recall`` tool's ``also`` phrasing.

    The held-out probe with the tuning probe's words is the upper bound of a rewrite into the
    session's words (what a model would have to write; no model wrote these). The tuning probe
    with the held-out words beside it shows what a poor second phrasing costs.
    """
    return {
        "held-out probe, tuning probe's words in also": asked_again(
            result, script, tool, counter, "also", lambda p: p.held_out, lambda p: p.probe
        ),
        "tuning probe, held-out probe's words in also": asked_again(
            result, script, tool, counter, "also", lambda p: p.probe, lambda p: p.held_out
        ),
    }


def asked_again(
    result: Run,
    script: Script,
    tool: Ask,
    counter: TokenCounter,
    tag: str,
    question: Callable[[Plant], str],
    also: Callable[[Plant], str] = lambda plant: "",
) -> tuple:
    """Every identifier's ``question`` asked again (with ``also`` as a second phrasing) of the final session:
    reachable, found by recall (of all, of those the final window does not show), reachable of those folded 5+
    compactions ago and of those in the middle of a truncated output, recall's p50 and p95 ms."""
    probe = Run(result.quality)
    reached, recalled = set(), set()
    for number, plant in enumerate(script.plants):
        got = _recalled(probe, tool, counter, f"{tag}_{number}", question(plant), plant, also=also(plant))
        if result.found[plant.value] - {"recall"} | got:
            reached.add(plant.value)
        if got:
            recalled.add(plant.value)
    old = [p for p in script.plants if result.ago[p.value] >= 5]
    middles = [p for p in script.plants if p.placement == "output-middle"]
    ms = sorted(probe.recall_ms)
    return (
        len(reached),
        len(recalled),
        _out_of_window(result, recalled),
        _pct(sum(p.value in reached for p in old), len(old)),
        _pct(sum(p.value in reached for p in middles), len(middles)),
        statistics.median(ms),
        ms[int(0.95 * (len(ms) - 1))],
    )


def with_rewrite(
    result: Run, script: Script, session: Session, fast: ChatModel, seconds: float, counter: TokenCounter
) -> dict[str, tuple]:
    """Each probe asked again with ``context.recall.rewrite`` "fast" and ``fast`` as the fast tier, through the
    session's own recall: the fast model's phrasings are searched with the probe."""
    data = session.config.to_json_dict()
    data["context"]["recall"].update(rewrite="fast", rewriteTimeoutSeconds=seconds)
    session.recall.reconfigure(Config.model_validate(data), fast)
    tool = _tool_of(session)
    return {
        "held-out probe, rewritten by " + fast.name: asked_again(
            result, script, tool, counter, "rewrite", lambda p: p.held_out
        ),
        "tuning probe, rewritten": asked_again(result, script, tool, counter, "rewrite", lambda p: p.probe),
        "second tuning probe, rewritten": asked_again(result, script, tool, counter, "rewrite", lambda p: p.reworded),
    }


def explain_misses(
    result: Run, script: Script, tool: Ask, store: LanceStore, embedder: embeddings.Embedder | None
) -> list[str]:
    """One line per identifier recall missed: where it was, the probe, recall's answer, each search's rank."""
    ids = _carrier_ids(store, script)
    lines = []
    asked = [(p, p.probe, result.found, "tuning") for p in script.plants]
    asked += [(p, p.reworded, result.reworded, "second tuning") for p in script.plants]
    asked += [(p, p.held_out, result.held, "held-out") for p in script.plants]
    for number, (plant, probe, found, which) in enumerate(asked):
        if "recall" in found[plant.value]:
            continue
        words = " ".join(query_terms(probe))
        by_words = store.search.search_chunks("fidelity", words, 500)
        by_meaning: list = []
        if embedder is not None:
            vector = embedder.embed([as_question(embedder, probe)])[0]
            by_meaning = store.search.search_embeddings("fidelity", vector, 500, model=embedder.name)
        answer = tool(ToolCall(f"miss_{number}", "recall", json.dumps({"query": probe})))
        got = [line.strip()[:70] for line in answer.splitlines()[2::2]][:3]
        reach = ",".join(sorted(found[plant.value])) or "UNREACHABLE"
        lines.append(
            f"- {which}: {plant.value!r} ({plant.kind}, {plant.placement}, {reach}) {probe!r}"
            f" words #{_rank(by_words, ids.get(plant.value), plant.value)}"
            f" vectors #{_rank(by_meaning, ids.get(plant.value), plant.value)}; recall gave {got}"
        )
    return lines


def _rank(hits: list, message_id: str | None, value: str) -> str:
    """1-based rank of the message holding ``value``, '*' when its best chunk lacks the value; '-' not found."""
    for rank, hit in enumerate(hits, 1):
        if hit.message_id == message_id:
            return f"{rank}{'' if value in hit.snippet else '*'}"
    return "-"


def _carrier_ids(store: LanceStore, script: Script) -> dict[str, str]:
    seqs = _carrier_seqs(store, script)
    by_seq = {m.seq: m.id for m in store.load_messages("fidelity")}
    return {value: by_seq[seq] for value, seq in seqs.items() if seq in by_seq}


def _boundaries(store: LanceStore) -> list[int]:
    """Each compaction's boundary, oldest first (the summaries table keeps them all)."""
    rows = store.tables.read("summaries", "session = 'fidelity'", ["boundary_seq", "created_at"])
    return [r["boundary_seq"] for r in sorted(rows, key=lambda r: r["created_at"])]


def _carrier_seqs(store: LanceStore, script: Script) -> dict[str, int]:
    """The seq of the message that carries each planted value (for output plants, the tool result)."""
    seqs: dict[str, int] = {}
    for message in store.load_messages("fidelity"):
        for plant in script.plants:
            if plant.value in seqs:
                continue
            if (plant.call_id and message.tool_call_id == plant.call_id) or (
                not plant.call_id
                and message.role == plant.placement.replace("answer", "assistant")
                and plant.value in message.content
            ):
                seqs[plant.value] = message.seq
    return seqs


# --- report ---------------------------------------------------------------------------


def _out_of_window(run: Run, recalled: set[str] | dict[str, set[str]]) -> str:
    """Found by recall, of the identifiers the final window does not show (recall skips what the window shows)."""
    if isinstance(recalled, dict):
        recalled = {value for value, where in recalled.items() if "recall" in where}
    out = set(run.found) - run.windowed
    return _pct(len(out & recalled), len(out))


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def _row(label: str, plants: list[Plant], run: Run, found: dict[str, set[str]] | None = None) -> str:
    found = run.found if found is None else found
    n = len(plants)
    prompt = sum("prompt" in found[p.value] for p in plants)
    reach = sum(bool(found[p.value]) for p in plants)
    recall = sum("recall" in found[p.value] for p in plants)
    old = [p for p in plants if run.ago[p.value] >= 5]
    old_reach = sum(bool(found[p.value]) for p in old)
    old_prompt = sum("prompt" in found[p.value] for p in old)
    return (
        f"| {label} | {_pct(prompt, n)} | {_pct(reach, n)} | {_pct(recall, n)} | {_pct(old_prompt, len(old))}"
        f" | {_pct(old_reach, len(old))} |"
    )


def report(script: Script, runs: list[Run]) -> str:
    lines = []
    for r in runs:
        tokens = sorted(r.recall_tokens)
        p95 = tokens[int(0.95 * (len(tokens) - 1))]
        ms = sorted(r.recall_ms)
        lines += [
            f"#### Summarizer: {r.quality}",
            "",
            f"{r.compactions} compactions ({r.fallbacks} by the extractive fallback);"
            f" final prompt {r.final_tokens:,} tokens; ledger shows {r.ledger_shown} of {r.ledger_stored} stored"
            f" entries; session {r.seconds:.0f} s"
            f" (indexing caught up {r.index_wait:.0f} s after the last turn); {r.embedded:,} passages embedded"
            + (
                f" ({r.from_cache:,} of them answered by the embedding cache: no rate)."
                if r.from_cache
                else f" at {r.embedded / max(r.embed_seconds, 1e-9):.1f} per second of embedding."
            ),
            f"{len(r.windowed)} of the identifiers are shown by the final window's messages, which recall skips;"
            f" of the others, recall finds {_out_of_window(r, r.found)} by their tuning probe,"
            f" {_out_of_window(r, r.reworded)} by their second tuning probe (in other words),"
            f" {_out_of_window(r, r.held)} by their held-out probe.",
            f"recall answers: {statistics.median(tokens):.0f} tokens median, {p95} p95, {tokens[-1]} max"
            f" (budget {RECALL_BUDGET_TOKENS}); {statistics.median(ms):.0f} ms median,"
            f" {ms[int(0.95 * (len(ms) - 1))]:.0f} ms p95.",
            "",
            "| identifiers | verbatim in final prompt | reachable | by recall | folded 5+ ago: in prompt"
            " | folded 5+ ago: reachable |",
            "|---|---:|---:|---:|---:|---:|",
            _row("all", script.plants, r),
        ]
        lines += [_row(f"kind: {k}", [p for p in script.plants if p.kind == k], r) for k in KINDS]
        lines += [_row(f"placed in: {p}", [x for x in script.plants if x.placement == p], r) for p in PLACEMENTS]
        lines += [
            _row("probe paraphrased", [p for p in script.plants if p.paraphrased], r),
            _row("probe in the context's words", [p for p in script.plants if not p.paraphrased], r),
            "",
            "Held-out probes (written apart; never used to choose a constant or a step):",
            "",
            "| identifiers | verbatim in final prompt | reachable | by recall | folded 5+ ago: in prompt"
            " | folded 5+ ago: reachable |",
            "|---|---:|---:|---:|---:|---:|",
            _row("all", script.plants, r, r.held),
        ]
        lines += [_row(f"kind: {k}", [p for p in script.plants if p.kind == k], r, r.held) for k in KINDS]
        lines += [
            _row(f"placed in: {p}", [x for x in script.plants if x.placement == p], r, r.held) for p in PLACEMENTS
        ]
        lines += [""]
        if r.ablation:
            lines += [
                "Each rerank step switched off in turn (the same final session; reachable of 100):",
                "",
                "| step left out | tuning probes | second tuning probes | held-out probes |",
                "|---|---:|---:|---:|",
                *(f"| {step} | {tuning} | {other} | {held} |" for step, (tuning, other, held) in r.ablation.items()),
                "",
            ]
        if r.also:
            lines += [
                "Asked again with other phrasings (the recall tool's `also`, or the fast model's rewrite;"
                " the same final session; of 100):",
                "",
                "| asked | reachable | by recall | by recall, of those out of the window | folded 5+ ago: reachable"
                " | middle of a truncated output: reachable | recall p50 / p95 |",
                "|---|---:|---:|---:|---:|---:|---:|",
                *(
                    f"| {row} | {a} | {b} | {out} | {old} | {middle} | {p50:.0f} / {p95:.0f} ms |"
                    for row, (a, b, out, old, middle, p50, p95) in r.also.items()
                ),
                "",
            ]
        if r.misses:
            lines += [f"Recall missed {len(r.misses)} (rank in each search alone; * its best chunk lacks it):"]
            lines += [*r.misses, ""]
    return "\n".join(lines)


def goals(script: Script, runs: list[Run]) -> str:
    lines = ["| goal | " + " | ".join(r.quality for r in runs) + " |", "|---|" + "---:|" * len(runs)]
    old = lambda r: [p for p in script.plants if r.ago[p.value] >= 5]  # noqa: E731
    middles = [p for p in script.plants if p.placement == "output-middle"]
    checks: list[tuple[str, Callable[[Run], tuple[int, int]], float]] = [
        ("held-out probes: reachable >= 95%", lambda r: _count(r, script.plants, bool, r.held), 0.95),
        (
            "... found by recall, of those out of the final window, >= 90%",
            lambda r: _count(r, [p for p in script.plants if p.value not in r.windowed], _by_recall, r.held),
            0.9,
        ),
        ("... folded 5+ compactions ago >= 95%", lambda r: _count(r, old(r), bool, r.held), 0.95),
        ("... in the middle of a truncated output >= 95%", lambda r: _count(r, middles, bool, r.held), 0.95),
        ("tuning probes: reachable >= 95%", lambda r: _count(r, script.plants, bool), 0.95),
        ("... folded 5+ compactions ago >= 95%", lambda r: _count(r, old(r), bool), 0.95),
        ("... in the middle of a truncated output >= 95%", lambda r: _count(r, middles, bool), 0.95),
        ("verbatim in the final prompt >= 50%", lambda r: _count(r, script.plants, lambda w: "prompt" in w), 0.5),
    ]
    for label, count, goal in checks:
        cells = []
        for r in runs:
            part, whole = count(r)
            cells.append(f"{_pct(part, whole)} {'met' if whole and part / whole >= goal else 'NOT met'}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    worst = max(max(r.recall_tokens) for r in runs)
    lines.append(
        f"| recall answer <= {RECALL_BUDGET_TOKENS} tokens | "
        + " | ".join(f"max {max(r.recall_tokens)}" for r in runs)
        + " |"
    )
    return "\n".join(lines) + ("" if worst <= RECALL_BUDGET_TOKENS else "\n\nThe recall budget was exceeded.")


def _by_recall(where: set[str]) -> bool:
    return "recall" in where


def _count(
    run: Run, plants: list[Plant], test: Callable[[set[str]], bool], found: dict[str, set[str]] | None = None
) -> tuple[int, int]:
    found = run.found if found is None else found
    return sum(test(found[p.value]) for p in plants), len(plants)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument(
        "--summarizers", nargs="+", default=["good", "weak", "failing"], choices=["good", "weak", "failing"]
    )
    parser.add_argument("--misses", action="store_true", help="list what recall missed, and why")
    parser.add_argument("--ablate", action="store_true", help="ask again with each rerank step switched off in turn")
    parser.add_argument(
        "--also", action="store_true", help="ask again with the other probe as a second phrasing (recall's `also`)"
    )
    parser.add_argument(
        "--onnx-model",
        nargs=3,
        metavar=("MODEL_ONNX", "TOKENIZER_JSON", "DIMS"),
        help="compare another sentence-transformers model (ONNX export, mean pooling) with the default embedder",
    )
    parser.add_argument("--rewrite-with", nargs="+", metavar="qwen | BASE_URL MODEL", help="ask again, rewritten")
    parser.add_argument("--rewrite-timeout", type=float, default=60.0, help="rewriteTimeoutSeconds for --rewrite-with")
    parser.add_argument("--embedding-with", nargs="+", metavar="gemma | BASE_URL MODEL", help="an embeddings endpoint")
    parser.add_argument(
        "--embedding-cache",
        type=Path,
        metavar="FILE",
        help="with --embedding-with: passages the endpoint embedded in an earlier run answered from FILE (no rate)",
    )
    parser.add_argument("--threads", type=int, default=1, help="threads of each fixture's llama-server")
    args = parser.parse_args()
    logging.getLogger("monad_notebook").setLevel(logging.ERROR)
    if args.embedding_with and args.onnx_model:
        raise SystemExit("--embedding-with and --onnx-model each name the embedder: give one")
    if args.embedding_cache and not args.embedding_with:
        raise SystemExit("--embedding-cache keeps an endpoint's vectors: give --embedding-with too")
    with ExitStack() as servers:
        rewrite: tuple[ChatModel, float] | None = None
        endpoint: tuple[str, str] | None = None
        cache: CacheStats | None = None
        if args.rewrite_with:
            url, name = endpoint_of(servers, args.rewrite_with, "qwen", args.threads)
            rewrite = (
                OpenAIChatModel(name, base_url=url, timeout=args.rewrite_timeout, max_retries=0),
                args.rewrite_timeout,
            )
        if args.embedding_with:
            endpoint = endpoint_of(servers, args.embedding_with, "gemma", args.threads)
            if args.embedding_cache:
                url, cache = servers.enter_context(cached_embeddings(endpoint[0], args.embedding_cache))
                endpoint = (url, endpoint[1])
        measure_all(args, rewrite, endpoint, cache)


def endpoint_of(servers: ExitStack, given: list[str], fixture: str, threads: int = 1) -> tuple[str, str]:
    """(base URL, model name): the fixture named ``fixture`` started for this run, or the endpoint given."""
    if given != [fixture]:
        if len(given) != 2:
            raise SystemExit(f"give {fixture} or BASE_URL MODEL, not {' '.join(given)}")
        return given[0], given[1]
    from benchmarks.fixture_server import chat_server, embedding_server
    from benchmarks.fixtures import fetch

    path = fetch(fixture)
    serve = chat_server if fixture == "qwen" else embedding_server
    return servers.enter_context(serve(path, threads=threads)), path.stem


def measure_all(
    args: argparse.Namespace,
    rewrite: tuple[ChatModel, float] | None,
    endpoint: tuple[str, str] | None,
    cache: CacheStats | None,
) -> None:
    other = args.onnx_model
    files = None if other is None else (Path(other[0]), Path(other[1]))
    embedder = ReusedEmbedder(files, None if other is None else int(other[2]))
    script = make_script(args.turns)
    steps = sum(len(t.steps) for t in script.turns)
    chars = sum(len(s.output) for t in script.turns for s in t.steps)
    print(
        f"{args.turns} turns, {steps} tool steps, {chars:,} chars of tool output,"
        f" {len(script.plants)} planted identifiers; {args.window:,}-token window, toolOutput.maxChars {MAX_CHARS:,}.\n"
    )
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for quality in args.summarizers:
            runs.append(
                run(
                    script,
                    quality,
                    args.window,
                    Path(tmp),
                    embedder,
                    misses=args.misses,
                    ablate=args.ablate,
                    also=args.also,
                    rewrite=rewrite,
                    endpoint=endpoint,
                    cache=cache,
                )
            )
            print(report(script, runs[-1:]), flush=True)
    print(goals(script, runs))


if __name__ == "__main__":
    main()
