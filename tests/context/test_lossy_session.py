"""The lossy stage inside a real session: background compaction, the hard guard, O(window) loads."""

from __future__ import annotations

import time

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.messages import Message
from monad_notebook.store.base import Summary
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel

BRIEFING = (
    "## Objective\nexplore\n## Decisions & Facts\n- folded\n## Files & State\n## Open Tasks\n- plot\n## Next Step\nplot"
)
FILLER = "The revenue table for the northern stores shows steady growth across every quarter. " * 12


class SlowModel(ScriptedModel):
    """A fast-tier stand-in that takes its time, to prove the turn does not wait for it."""

    def __init__(self, delay: float, responses: list[str]) -> None:
        super().__init__(responses, name="slow-summarizer")
        self.delay = delay

    def complete(self, messages, tools, on_text=None):
        time.sleep(self.delay)
        return super().complete(messages, tools, on_text)


def make(store, model, name="lossy", fast_model=None, recall=True, **summarize) -> Session:
    """``recall=False`` leaves the recall tool's schema out: some tests sit a few tokens under a threshold."""
    config = Config.model_validate(
        {
            "context": {
                "eviction": {"enabled": False},
                "summarize": {"keepRecent": 2, **summarize},
                "recall": {"enabled": recall},
            }
        }
    )
    return Session(name, config=config, store=store, model=model, fast_model=fast_model)


@pytest.mark.lance
def test_background_compaction_does_not_block_the_turn_and_lands_durably(store, tmp_path):
    model = ScriptedModel([f"answer {i}" for i in range(6)], context_window=2000)
    slow = SlowModel(4.0, [BRIEFING] * 4)
    session = make(store, model, fast_model=slow, softFraction=0.3, hardFraction=0.99, recall=False)
    for i in range(3):
        session.ask(f"question {i}: {FILLER}")
    assert session.cascade.compaction.background.in_flight  # the soft threshold kicked it off
    assert session.summary is None and store.load_summary("lossy") is None
    started = time.perf_counter()
    session.ask(f"question 3: {FILLER}")
    assert time.perf_counter() - started < 3.0  # the turn went on at full width, not waiting 4 s
    session.cascade.compaction.background.wait()
    reopened = LanceStore(tmp_path / "db")
    assert reopened.load_summary("lossy").text.startswith("## Objective\nexplore")
    reopened.close()
    session.ask("next")
    first_user = next(m for m in model.calls[-1].messages if m["role"] == "user")
    assert first_user["content"].startswith("<summary>\n## Objective\nexplore")


def test_hard_threshold_waits_for_the_compaction_in_flight_then_compacts_if_still_over(store):
    model = ScriptedModel([f"answer {i}" for i in range(8)], context_window=6000)
    slow = SlowModel(1.0, [BRIEFING] * 8)
    session = make(store, model, fast_model=slow, softFraction=0.3, hardFraction=0.5)
    finished: list[ev.Event] = []
    session.events.subscribe(lambda e: finished.append(e) if e.kind == ev.COMPACTION_FINISHED else None)
    for i in range(6):
        session.ask(f"question {i}: {FILLER * 3}")
    assert finished, "crossing the hard threshold must land a compaction before the model is called"
    hard = 0.5 * 6000
    sent = [session.cascade.meter.occupancy.counter.count_messages(call.messages, call.tools) for call in model.calls]
    assert max(sent) < hard  # no request ever went out over the hard threshold
    assert sum(sent[3:]) < sum(sent[:3]) * 3  # and the window did not keep growing


@pytest.mark.lance
def test_per_turn_reads_are_o_window_whatever_the_session_length(store):
    def seed(name: str, count: int) -> None:
        store.create_session(name)
        messages = [
            Message(role="user" if i % 2 == 0 else "assistant", content=f"m{i}", session=name, seq=i)
            for i in range(count)
        ]
        store.append_messages(messages)
        store.save_summary(Summary(session=name, text=BRIEFING, boundary_seq=count - 11, created_at=time.time()))

    seed("short", 100)
    seed("long", 10_000)
    reads = {}
    for name in ("short", "long"):
        session = make(store, ScriptedModel(["ok", "ok"]), name=name)
        session.ask("hello")
        assert len(session.window) == 10 + 2
        session.wait_for_background()  # opening a session checks the recall index against its whole history, once
        before = store.tables.rows_read
        session.ask("again")
        session.wait_for_background()
        reads[name] = store.tables.rows_read - before
    assert abs(reads["long"] - reads["short"]) < 20  # a history 100 times longer costs a turn nothing more


def test_a_new_session_object_resumes_from_the_summary_and_boundary(store):
    session = make(store, ScriptedModel([f"a{i}" for i in range(4)], context_window=100_000))
    for i in range(4):
        session.ask(f"turn {i}")
    assert session.compact()
    boundary = store.load_summary("lossy").boundary_seq
    model = ScriptedModel(["resumed"])
    make(store, model).ask("continue")
    sent = model.calls[0].messages
    assert sent[1]["content"].startswith("<summary>\n## Objective")
    assert [m["content"] for m in sent[1:]][-3:] == [sent[-3]["content"], "a3", "continue"]
    assert len(sent) == 1 + 2 + 1  # system, the two kept messages (summary folded in), the new one
    assert boundary == 5


def test_planted_identifiers_survive_five_compactions(store):
    session = make(store, ScriptedModel([f"noted {i}" for i in range(20)], context_window=100_000))
    session.ask("Load `data/q3_sales.parquet` into `quarterly` and check column `net_margin`")
    session.ask("The job failed with KeyError: 'region_code' after 12.5 MB; logs at https://logs.example.com/run/42")
    for round_ in range(5):
        session.ask(f"unrelated chatter {round_}: {FILLER}")
        session.ask(f"more chatter {round_}")
        assert session.compact()
    text = session.summary.text + "\n".join(m.content for m in session.window)
    for planted in (
        "data/q3_sales.parquet",
        "quarterly",
        "net_margin",
        "KeyError",
        "12.5 MB",
        "https://logs.example.com/run/42",
    ):
        assert planted in text, planted


def test_a_folded_tool_result_stays_readable_by_the_handle_the_summary_names(store):
    from monad_notebook.testing import tool_call

    script = [tool_call("list_variables", {}, id="call_early"), "seen", "a", "b", "c"]
    session = make(store, ScriptedModel(script, context_window=100_000))
    session.namespace["quarterly_sales"] = [1, 2, 3]
    session.ask("what variables exist?")
    for text in ("one", "two", "three"):
        session.ask(text)
    assert store.get_raw_output("lossy", "call_early") is None  # short: never truncated nor evicted
    assert session.compact()
    assert "`read_tool_output id=call_early` (list_variables output; holds quarterly_sales" in session.summary.text
    assert "quarterly_sales" in store.get_raw_output("lossy", "call_early")


def test_a_session_still_heavy_after_compaction_suggests_a_handoff(store):
    model = ScriptedModel([f"a{i}" for i in range(4)], context_window=3000)
    config = Config.model_validate(
        {
            "context": {
                "eviction": {"enabled": False},
                "summarize": {"keepRecent": 2, "softFraction": 0.9, "hardFraction": 0.95},
                "handoff": {"enabled": True, "atFraction": 0.3},
            }
        }
    )
    session = Session("heavy", config=config, store=store, model=model)
    nudges: list[ev.Event] = []
    session.events.subscribe(lambda e: nudges.append(e) if e.kind == ev.HANDOFF_SUGGESTED else None)
    for i in range(3):
        session.ask(f"q{i}: {FILLER * 2}")
    assert session.compact()
    assert nudges and "%monad handoff NEW" in nudges[0].data["message"]
    assert not [e for e in store.list_events("heavy") if e.kind == ev.HANDOFF_SUGGESTED]  # transient
    session.handoff("light")
    fresh = make(store, ScriptedModel(["hi"]), name="light")
    assert fresh.summary is not None and len(fresh.window) == 0


def test_the_estimate_calibrates_to_the_providers_counts(store):
    from monad_notebook.context.occupancy.tokens import TokenCounter
    from monad_notebook.testing import FakeOpenAIServer

    exact = TokenCounter("gpt-4o")
    tools: list[dict] = []

    def provider_count(messages: list[dict]) -> int:
        """A provider whose tokenizer counts 20% more than o200k, tool schemas included."""
        return round(1.2 * exact.count_messages(messages, tools))

    with FakeOpenAIServer(count_tokens=provider_count) as server:
        config = Config.model_validate({"models": {"main": {"model": "gpt-4.1-mini", "baseUrl": server.base_url}}})
        session = Session("calib", config=config, store=store, namespace={})
        tools.extend(session.window.prompt().tools)
        errors = []
        for i in range(4):
            prompt = session.window.prompt()
            before = session.cascade.meter.occupancy.estimate(prompt)
            server.queue(f"answer {i}: {FILLER}")
            session.ask(f"question {i}: {FILLER}")
            errors.append(abs(before - provider_count(prompt.messages)) / provider_count(prompt.messages))
    assert errors[0] > 0.1 and max(errors[2:]) < 0.05  # off by the tokenizer gap, then calibrated
