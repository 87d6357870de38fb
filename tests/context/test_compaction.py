from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook import events as ev
from monad_notebook.context.compaction.background import Background
from monad_notebook.context.compaction.compactor import Compaction, Compactor, choose_span
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.ledger_text import parse_ledger
from monad_notebook.context.compaction.summarize import SECTIONS, LLMSummarizer, parse_sections
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.errors import EndpointError
from monad_notebook.memory import MemoryPromotion, MemoryService
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from tests.context.cascades import make_cascade

SESSION = "eda"


def briefing(**bodies: str) -> str:
    """A model's briefing with every section, ``bodies`` filled in, the rest saying none."""
    return "\n".join(f"## {name}\n{bodies.get(name, '- none')}" for name in SECTIONS)


COUNTER = TokenCounter("gpt-4o")


class Transcript:
    """Builds a session window with seqs: user turns, tool rounds (maybe parallel), answers."""

    def __init__(self, start_seq: int = 0) -> None:
        self.messages: list[Message] = []
        self.seq = start_seq
        self.turn = 0
        self.calls = 0

    def _add(self, message: Message) -> Message:
        message.session, message.seq, message.turn = SESSION, self.seq, self.turn
        self.seq += 1
        self.messages.append(message)
        return message

    def user(self, text: str) -> Transcript:
        self.turn += 1
        self._add(Message("user", text))
        return self

    def round(self, *outputs: str, code: str = "print(1)") -> Transcript:
        ids = []
        for _ in outputs:
            self.calls += 1
            ids.append(f"call_{self.calls}")
        calls = [ToolCall(i, "run_python", json.dumps({"code": code})) for i in ids]
        self._add(Message("assistant", "", tool_calls=calls))
        for call_id, output in zip(ids, outputs, strict=True):
            self._add(Message("tool", output, tool_call_id=call_id, name="run_python"))
        return self

    def answer(self, text: str) -> Transcript:
        self._add(Message("assistant", text))
        return self


class UselessSummarizer:
    """Writes a briefing with nothing in it: only the ledger can carry identifiers forward."""

    def summarize(self, previous: str | None, span: list[Message]) -> str:
        return "## Objective\n- keep going\n"

    def reflect(self, summary: str, target_tokens: int) -> str:
        return "## Objective\n- keep going\n"


class SlowSummarizer(UselessSummarizer):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = threading.Event()
        self.received: list[str] = []

    def summarize(self, previous: str | None, span: list[Message]) -> str:
        self.started.set()
        time.sleep(self.seconds)
        self.received = [m.content for m in span]
        return f"## Objective\n- folded {len(span)} messages\n"


class CrashingSummarizer(UselessSummarizer):
    def summarize(self, previous: str | None, span: list[Message]) -> str:
        raise RuntimeError("summarizer bug")


class VerboseSummarizer(UselessSummarizer):
    def summarize(self, previous: str | None, span: list[Message]) -> str:
        return "\n".join(
            f"## {name}\n" + "\n".join(f"- {name} detail {i} " + "w" * 60 for i in range(30)) for name in SECTIONS
        )


@pytest.fixture
def store(tmp_path):
    s = LanceStore(tmp_path / "db")
    yield s
    s.close()


def compactor(store, **overrides: Any) -> Compactor:
    options: dict[str, Any] = {
        "store": store,
        "session": SESSION,
        "fallback": ExtractiveSummarizer(),
        "counter": COUNTER,
        "reflect_at_tokens": 4000,
        "ledger_max_items": 80,
    }
    options.update(overrides)
    return Compactor(**options)


def fold(store, window: list[Message], summarizer, summary: Summary | None = None, keep_recent: int = 2, **overrides):
    """What a compaction of ``window`` decides (nothing saved)."""
    return compactor(store, **overrides).fold(window, choose_span(window, keep_recent), summary, summarizer)


def kept(cascade) -> list[str]:
    return [m.content for m in cascade.window.messages]


def conversation(turns: int = 4, start_seq: int = 0, tag: str = "") -> list[Message]:
    t = Transcript(start_seq)
    for i in range(turns):
        t.user(f"question {tag}{i}").round(f"output {tag}{i} " + "o" * 400, f"second {tag}{i}").answer(f"answer {i}.")
    return t.messages


# --- span choice -------------------------------------------------------------------------


def test_span_keeps_the_recent_messages_and_moves_the_cut_before_a_tool_round():
    t = Transcript().user("q1").answer("a1").user("q2").round("r1", "r2").answer("a2")
    window = t.messages  # user, answer, user, assistant+calls, tool, tool, answer

    assert [m.content for m in choose_span(window, keep_recent=2)] == ["q1", "a1", "q2"]
    assert [m.content for m in choose_span(window, keep_recent=1)] == ["q1", "a1", "q2", "", "r1", "r2"]
    assert choose_span(window, keep_recent=7) == []
    assert choose_span(window, keep_recent=50) == []


def test_a_window_that_is_one_long_round_cannot_be_folded():
    window = Transcript().round("r1", "r2", "r3").messages

    assert choose_span(window, keep_recent=1) == []


steps = st.lists(st.one_of(st.just("user"), st.just("answer"), st.integers(min_value=0, max_value=3)), max_size=25)


@settings(max_examples=300, deadline=None)
@given(steps, st.integers(min_value=0, max_value=12))
def test_span_never_splits_a_round_and_never_eats_into_keep_recent(plan, keep_recent):
    t = Transcript()
    for step in plan:
        if step == "user":
            t.user("q")
        elif step == "answer":
            t.answer("a")
        else:
            t.round(*["out"] * step)
    window = t.messages

    span = choose_span(window, keep_recent)

    assert window[: len(span)] == span
    assert len(window) - len(span) >= min(keep_recent, len(window))
    kept = window[len(span) :]
    assert not (kept and kept[0].role == "tool")
    assert not (span and span[-1].role == "assistant" and span[-1].tool_calls)


# --- what a compaction decides ------------------------------------------------------------


def test_the_model_summary_gets_the_span_identifiers_merged_in(store):
    t = Transcript().user("Load data/sales.csv please").round("KeyError: 'revenue'", code='df["revenue"]')
    window = [*t.answer("The column is `Revenue`.").messages, *conversation(1, start_seq=t.seq)]
    model = ScriptedModel([briefing(Objective="- load the data", **{"Files & State": "- nothing yet"})])

    result = fold(store, window, LLMSummarizer(model), keep_recent=4)

    assert "Load data/sales.csv please" in model.calls[0].messages[-1]["content"]
    ledger = parse_ledger(parse_sections(result.summary.text)["Files & State"])
    assert {"data/sales.csv", "revenue", "KeyError", "Revenue"} <= set(ledger)
    assert store.load_summary(SESSION) is None  # decided, not saved


def test_reflection_condenses_a_long_summary_and_keeps_headings_and_ledger(store):
    t = Transcript().user("Load data/sales.csv").answer("Loaded.")
    window = [*t.messages, *conversation(2, start_seq=t.seq)]

    result = fold(store, window, VerboseSummarizer(), reflect_at_tokens=600)

    assert result.reflected
    assert result.summary.reflections == 1
    assert result.summary.tokens == COUNTER.count_text(result.summary.text) <= 600
    assert [line[3:] for line in result.summary.text.splitlines() if line.startswith("## ")] == list(SECTIONS)
    assert "data/sales.csv" in parse_ledger(result.summary.text)


def test_a_short_summary_is_not_reflected(store):
    result = fold(store, conversation(3), UselessSummarizer())

    assert not result.reflected
    assert result.summary.reflections == 0


# --- what the policy keeps of it, applied by the cascade ----------------------------------


def test_compaction_saves_a_durable_summary_and_reports_what_it_folded(store, tmp_path):
    window = conversation(4)
    model = ScriptedModel([briefing(Objective="- answer the questions", **{"Next Step": "- question 3"})])
    cascade, events = make_cascade(store, SESSION, window, summarizer=LLMSummarizer(model))

    assert cascade.compact("soft", keep_recent=4)

    reopened = LanceStore(tmp_path / "db").load_summary(SESSION)
    assert reopened is not None and reopened.boundary_seq == window[-5].seq
    assert reopened.text == cascade.window.summary.text
    assert kept(cascade) == [m.content for m in window[-4:]]
    (started,) = events.of(ev.COMPACTION_STARTED)
    assert started == {"reason": "soft", "messages": len(window) - 4, "tokens_before": started["tokens_before"]}
    (finished,) = events.of(ev.COMPACTION_FINISHED)
    assert finished["tokens_after"] < started["tokens_before"]
    assert finished["used_fallback"] is False
    assert finished["reflected"] is False
    assert finished["seconds"] >= 0
    (applied,) = events.of(ev.COMPACTION_APPLIED)
    assert applied["messages"] == len(window) - 4 and applied["background"] is False


def test_the_previous_summary_is_merged_and_the_boundary_advances(store):
    first_window = conversation(3)
    previous = Summary(SESSION, "## Objective\n- the first goal\n", boundary_seq=-1, created_at=time.time())
    store.save_summary(previous)
    model = ScriptedModel([briefing(Objective="- the first goal, refined")])
    cascade, _ = make_cascade(store, SESSION, first_window, summarizer=LLMSummarizer(model), summary=previous)

    assert cascade.compact("hard", keep_recent=2)

    assert "the first goal" in model.calls[0].messages[-1]["content"]
    assert "the first goal, refined" in store.load_summary(SESSION).text
    assert store.load_summary(SESSION).boundary_seq == choose_span(first_window, 2)[-1].seq > previous.boundary_seq


def test_the_extractive_summary_is_used_when_the_fast_model_is_down(store):
    model = ScriptedModel([EndpointError("Cannot reach http://127.0.0.1:9")])
    cascade, events = make_cascade(store, SESSION, conversation(3), summarizer=LLMSummarizer(model))

    assert cascade.compact("soft", keep_recent=2)

    assert [line for line in store.load_summary(SESSION).text.splitlines() if line.startswith("## ")] == [
        f"## {name}" for name in SECTIONS
    ]
    assert events.of(ev.COMPACTION_FINISHED)[0]["used_fallback"] is True
    assert events.of(ev.ERROR) == []


def test_nothing_to_fold_means_no_compaction_and_no_events(store):
    cascade, events = make_cascade(store, SESSION, conversation(1), summarizer=UselessSummarizer())

    assert not cascade.compact("soft", keep_recent=10)

    assert events.seen == []
    assert store.load_summary(SESSION) is None


def test_planted_identifiers_survive_five_compactions_with_a_useless_summarizer(store):
    planted = ["data/sales_2024.csv", "revenue_eur", "ZeroDivisionError", "12.5 MB", "https://example.org/fx.json"]
    first = Transcript().user(
        "Read data/sales_2024.csv (12.5 MB) and fetch https://example.org/fx.json; convert `revenue_eur`."
    )
    first.round("ZeroDivisionError: division by zero").answer("Fixed it.")
    no_handles = {"toolOutput": {"persistRaw": False}}  # outputs not saved: their identifiers must stand in the ledger
    cascade, _ = make_cascade(store, SESSION, first.messages, summarizer=UselessSummarizer(), context=no_handles)

    for n in range(5):
        window = cascade.window.messages
        cascade.window.extend(conversation(3, start_seq=(window[-1].seq + 1), tag=f"c{n}-"))
        assert cascade.compact("soft", keep_recent=3)

    summary = store.load_summary(SESSION)
    assert summary is not None
    assert all(m.seq > summary.boundary_seq for m in cascade.window.messages)
    ledger = parse_ledger(summary.text)
    for identifier in planted:
        assert identifier in ledger
        assert f"`{identifier}`" in summary.text


def test_a_crashing_summarizer_keeps_the_previous_summary_and_reports_an_error(store):
    previous = Summary(SESSION, "## Objective\n- the old briefing\n", boundary_seq=3, created_at=time.time())
    store.save_summary(previous)
    window = conversation(3, start_seq=4)
    cascade, events = make_cascade(store, SESSION, window, summarizer=CrashingSummarizer(), summary=previous)

    assert not cascade.compact("soft", keep_recent=2)

    assert store.load_summary(SESSION).text == previous.text
    assert len(cascade.window.messages) == len(window)
    (error,) = events.of(ev.ERROR)
    assert "summarizer bug" in error["message"]
    assert events.of(ev.COMPACTION_FINISHED) == []


def test_memory_promotion_reads_the_folded_span_once_the_summary_is_saved(store):
    seen: list[tuple[list[str], int | None]] = []

    class Recording(MemoryPromotion):
        def on_summary_saved(self, session, span, agent=None):
            summary = store.load_summary(session)
            seen.append(([m.content for m in span], summary.boundary_seq if summary else None))

    window = conversation(2)
    promotion = Recording(MemoryService(store))
    cascade, _ = make_cascade(store, SESSION, window, summarizer=UselessSummarizer(), promotion=promotion)

    assert cascade.compact("soft", keep_recent=2)

    span = choose_span(window, 2)
    assert seen == [([m.content for m in span], span[-1].seq)]


# --- background compaction ---------------------------------------------------------------


def soft_pressure(store, window: list[Message], summarizer) -> tuple[Any, Any]:
    """A cascade whose window is over the soft threshold and under the hard one."""
    probe, _ = make_cascade(store, SESSION, window)
    tokens = probe.occupancy_now()
    return make_cascade(store, SESSION, window, summarizer=summarizer, context_window=int(tokens / 0.8))


def test_background_compaction_does_not_block_and_lands_durably_at_the_next_step(store, tmp_path):
    slow = SlowSummarizer(2.0)
    window = conversation(4)
    cascade, events = soft_pressure(store, window, slow)

    started = time.monotonic()
    cascade.run_step()
    assert time.monotonic() - started < 0.5
    assert slow.started.wait(5)
    assert cascade.compaction.background.in_flight
    assert len(cascade.window.messages) == len(window)

    cascade.compaction.background.wait(10)
    reopened = LanceStore(tmp_path / "db").load_summary(SESSION)
    keep = cascade.settings.summarize.keep_recent
    assert reopened is not None and reopened.boundary_seq == choose_span(window, keep)[-1].seq
    assert len(cascade.window.messages) == len(window)  # durable, not yet in the window
    cascade.catch_up()
    assert len(cascade.window.messages) < len(window)
    assert events.of(ev.COMPACTION_APPLIED)[0]["background"] is True


def test_background_compaction_works_on_a_snapshot_of_the_window(store):
    slow = SlowSummarizer(0.3)
    window = conversation(3)
    cascade, _ = soft_pressure(store, window, slow)
    keep = cascade.settings.summarize.keep_recent
    original = [m.id for m in choose_span(window, keep)]
    original_contents = [m.content for m in choose_span(window, keep)]

    cascade.run_step()
    assert slow.started.wait(5)
    cascade.window.messages[0].content = "changed while compacting"
    cascade.window.extend(conversation(1, start_seq=window[-1].seq + 1))
    grown = len(cascade.window.messages)
    cascade.compaction.background.wait(10)
    cascade.catch_up()

    assert slow.received == original_contents
    assert len(cascade.window.messages) == grown - len(original)


def test_a_failing_background_compaction_never_raises_and_reports_an_error(store):
    cascade, events = soft_pressure(store, conversation(3), CrashingSummarizer())

    cascade.run_step()
    cascade.compaction.background.wait(10)
    cascade.catch_up()

    assert store.load_summary(SESSION) is None
    assert len(events.of(ev.ERROR)) == 1
    assert cascade.compaction.background.start(lambda: None)  # nothing left waiting: the next one may start


def test_one_background_job_at_a_time_its_result_taken_once_and_none_once_closed():
    gate = threading.Event()
    background: Background[str] = Background("test-job")

    assert background.start(lambda: gate.wait(5) and "done")
    assert not background.start(lambda: "second")  # one at a time
    gate.set()
    background.wait(5)
    assert not background.start(lambda: "third")  # a result waits to be taken
    assert background.take() == "done" and background.take() is None
    background.close()
    assert not background.start(lambda: "after close")


def test_a_decided_compaction_names_what_it_folds(store):
    window = conversation(3)
    result = fold(store, window, UselessSummarizer())

    assert isinstance(result, Compaction)
    assert result.folded_ids == [m.id for m in choose_span(window, 2)]
    assert result.tokens_after < result.tokens_before
