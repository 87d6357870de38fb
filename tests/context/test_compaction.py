from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook import events as ev
from monad_notebook.context.compaction.compactor import Compactor, apply_result, choose_span
from monad_notebook.context.compaction.extractive import ExtractiveSummarizer
from monad_notebook.context.compaction.ledger import parse_ledger
from monad_notebook.context.compaction.summarize import SECTIONS, LLMSummarizer, parse_sections
from monad_notebook.errors import EndpointError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

SESSION = "eda"


def briefing(**bodies: str) -> str:
    """A model's briefing with every section, ``bodies`` filled in, the rest saying none."""
    return "\n".join(f"## {name}\n{bodies.get(name, '- none')}" for name in SECTIONS)


def count_tokens(text: str) -> int:
    return (len(text) + 3) // 4


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


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, **data: Any) -> None:
        self.seen.append((kind, data))

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data in self.seen if k == kind]


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


def compactor(store, summarizer, events=None, **overrides) -> Compactor:
    options: dict[str, Any] = {
        "store": store,
        "session": SESSION,
        "summarizer_factory": lambda: summarizer,
        "fallback": ExtractiveSummarizer(),
        "count_tokens": count_tokens,
        "emit": events if events is not None else Events(),
        "reflect_at_tokens": 4000,
        "ledger_max_items": 80,
    }
    options.update(overrides)
    return Compactor(**options)


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


# --- synchronous compaction --------------------------------------------------------------


def test_compaction_saves_a_durable_summary_and_reports_what_it_folded(store, tmp_path):
    events = Events()
    window = conversation(4)
    model = ScriptedModel([briefing(Objective="- answer the questions", **{"Next Step": "- question 3"})])

    result = compactor(store, LLMSummarizer(model), events).compact_now(window, None, keep_recent=4, reason="soft")

    assert result is not None
    assert result.folded_ids == [m.id for m in window[:-4]]
    assert result.summary.boundary_seq == window[-5].seq
    assert result.tokens_after < result.tokens_before
    assert not result.used_fallback
    reopened = LanceStore(tmp_path / "db").load_summary(SESSION)
    assert reopened is not None
    assert reopened.boundary_seq == result.summary.boundary_seq
    assert reopened.text == result.summary.text
    assert [m.content for m in apply_result(window, result)] == [m.content for m in window[-4:]]
    (started,) = events.of(ev.COMPACTION_STARTED)
    assert started == {"reason": "soft", "messages": len(window) - 4, "tokens_before": result.tokens_before}
    (finished,) = events.of(ev.COMPACTION_FINISHED)
    assert finished["tokens_after"] == result.tokens_after
    assert finished["used_fallback"] is False
    assert finished["reflected"] is False
    assert finished["seconds"] >= 0


def test_the_model_summary_gets_the_span_identifiers_merged_in(store):
    t = Transcript().user("Load data/sales.csv please").round("KeyError: 'revenue'", code='df["revenue"]')
    window = [*t.answer("The column is `Revenue`.").messages, *conversation(1, start_seq=t.seq)]
    model = ScriptedModel([briefing(Objective="- load the data", **{"Files & State": "- nothing yet"})])

    result = compactor(store, LLMSummarizer(model)).compact_now(window, None, keep_recent=4, reason="soft")

    assert result is not None
    assert "Load data/sales.csv please" in model.calls[0].messages[-1]["content"]
    ledger = parse_ledger(parse_sections(result.summary.text)["Files & State"])
    assert {"data/sales.csv", "revenue", "KeyError", "Revenue"} <= set(ledger)


def test_the_previous_summary_is_merged_and_the_boundary_advances(store):
    first_window = conversation(3)
    previous = Summary(SESSION, "## Objective\n- the first goal\n", boundary_seq=-1, created_at=time.time())
    model = ScriptedModel([briefing(Objective="- the first goal, refined")])

    result = compactor(store, LLMSummarizer(model)).compact_now(first_window, previous, 2, "hard")

    assert result is not None
    assert "the first goal" in model.calls[0].messages[-1]["content"]
    assert "the first goal, refined" in result.summary.text
    assert store.load_summary(SESSION).boundary_seq == choose_span(first_window, 2)[-1].seq > previous.boundary_seq


def test_the_extractive_summary_is_used_when_the_fast_model_is_down(store):
    events = Events()
    model = ScriptedModel([EndpointError("Cannot reach http://127.0.0.1:9")])

    result = compactor(store, LLMSummarizer(model), events).compact_now(conversation(3), None, 2, "soft")

    assert result is not None
    assert result.used_fallback
    assert [line for line in result.summary.text.splitlines() if line.startswith("## ")] == [
        f"## {name}" for name in SECTIONS
    ]
    assert events.of(ev.COMPACTION_FINISHED)[0]["used_fallback"] is True
    assert events.of(ev.ERROR) == []


def test_nothing_to_fold_means_no_compaction_and_no_events(store):
    events = Events()

    result = compactor(store, UselessSummarizer(), events).compact_now(conversation(1), None, 10, "soft")

    assert result is None
    assert events.seen == []
    assert store.load_summary(SESSION) is None


def test_planted_identifiers_survive_five_compactions_with_a_useless_summarizer(store):
    planted = ["data/sales_2024.csv", "revenue_eur", "ZeroDivisionError", "12.5 MB", "https://example.org/fx.json"]
    first = Transcript().user(
        "Read data/sales_2024.csv (12.5 MB) and fetch https://example.org/fx.json; convert `revenue_eur`."
    )
    first.round("ZeroDivisionError: division by zero").answer("Fixed it.")
    window = first.messages
    summary = None
    c = compactor(store, UselessSummarizer())

    for n in range(5):
        window = [*window, *conversation(3, start_seq=(window[-1].seq + 1), tag=f"c{n}-")]
        result = c.compact_now(window, summary, keep_recent=3, reason="soft")
        assert result is not None
        summary = store.load_summary(SESSION)
        window = apply_result(window, result)

    assert summary is not None
    assert all(m.seq > summary.boundary_seq for m in window)
    ledger = parse_ledger(summary.text)
    for identifier in planted:
        assert identifier in ledger
        assert f"`{identifier}`" in summary.text


def test_reflection_condenses_a_long_summary_and_keeps_headings_and_ledger(store):
    events = Events()
    t = Transcript().user("Load data/sales.csv").answer("Loaded.")
    window = [*t.messages, *conversation(2, start_seq=t.seq)]

    result = compactor(store, VerboseSummarizer(), events, reflect_at_tokens=600).compact_now(window, None, 2, "soft")

    assert result is not None
    assert result.reflected
    assert result.summary.reflections == 1
    assert result.summary.tokens == count_tokens(result.summary.text) <= 600
    assert [line[3:] for line in result.summary.text.splitlines() if line.startswith("## ")] == list(SECTIONS)
    assert "data/sales.csv" in parse_ledger(result.summary.text)
    assert events.of(ev.COMPACTION_FINISHED)[0]["reflected"] is True


def test_a_short_summary_is_not_reflected(store):
    result = compactor(store, UselessSummarizer()).compact_now(conversation(3), None, 2, "soft")

    assert result is not None
    assert not result.reflected
    assert result.summary.reflections == 0


def test_a_crashing_summarizer_keeps_the_previous_summary_and_reports_an_error(store):
    previous = Summary(SESSION, "## Objective\n- the old briefing\n", boundary_seq=3, created_at=time.time())
    store.save_summary(previous)
    events = Events()

    result = compactor(store, CrashingSummarizer(), events).compact_now(conversation(3), previous, 2, "soft")

    assert result is None
    assert store.load_summary(SESSION).text == previous.text
    (error,) = events.of(ev.ERROR)
    assert "summarizer bug" in error["message"]
    assert events.of(ev.COMPACTION_FINISHED) == []


def test_on_summary_saved_sees_the_folded_span_and_a_failing_hook_changes_nothing(store):
    seen: list[tuple[list[str], int]] = []

    def hook(span: list[Message], summary: Summary) -> None:
        seen.append(([m.content for m in span], summary.boundary_seq))
        raise RuntimeError("promotion failed")

    window = conversation(2)
    result = compactor(store, UselessSummarizer(), on_summary_saved=hook).compact_now(window, None, 2, "soft")

    assert result is not None
    assert seen == [([m.content for m in choose_span(window, 2)], result.summary.boundary_seq)]
    assert store.load_summary(SESSION) is not None


# --- background compaction ---------------------------------------------------------------


def test_background_compaction_does_not_block_and_lands_durably(store, tmp_path):
    slow = SlowSummarizer(2.0)
    c = compactor(store, slow)
    window = conversation(4)

    started = time.monotonic()
    assert c.start_background(window, None, keep_recent=4, reason="soft")
    assert time.monotonic() - started < 0.5
    assert slow.started.wait(5)
    assert c.in_flight
    assert c.take_result() is None
    assert not c.start_background(window, None, keep_recent=4, reason="soft")

    c.wait(10)

    assert not c.in_flight
    assert not c.start_background(window, None, keep_recent=4, reason="soft")
    result = c.take_result()
    assert result is not None
    assert c.take_result() is None
    assert result.folded_ids == [m.id for m in window[:-4]]
    reopened = LanceStore(tmp_path / "db").load_summary(SESSION)
    assert reopened is not None
    assert reopened.boundary_seq == window[-5].seq
    assert f"folded {len(window) - 4} messages" in reopened.text
    c.close()


def test_background_compaction_works_on_a_snapshot_of_the_window(store):
    slow = SlowSummarizer(0.3)
    c = compactor(store, slow)
    window = conversation(3)
    original = [m.id for m in choose_span(window, 2)]
    original_contents = [m.content for m in choose_span(window, 2)]

    assert c.start_background(window, None, keep_recent=2, reason="soft")
    slow.started.wait(5)
    window[0].content = "changed while compacting"
    window.extend(conversation(1, start_seq=window[-1].seq + 1))
    c.wait(10)

    result = c.take_result()
    assert result is not None
    assert result.folded_ids == original
    assert slow.received == original_contents
    assert len(apply_result(window, result)) == len(window) - len(original)


def test_a_failing_background_compaction_never_raises_and_reports_an_error(store):
    events = Events()
    c = compactor(store, CrashingSummarizer(), events)

    assert c.start_background(conversation(3), None, keep_recent=2, reason="soft")
    c.wait(10)

    assert c.take_result() is None
    assert store.load_summary(SESSION) is None
    assert len(events.of(ev.ERROR)) == 1
    assert c.start_background(conversation(3), None, keep_recent=2, reason="soft")
    c.close()


def test_a_closed_compactor_starts_nothing(store):
    c = compactor(store, UselessSummarizer())
    c.close()

    assert not c.start_background(conversation(3), None, keep_recent=2, reason="soft")
