"""The hard guard and the pre-call check: an estimate that is off never lets a request out over the line."""

from __future__ import annotations

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.lossless.eviction import EvictionPlan
from monad_notebook.context.occupancy.calibration import KEPT
from monad_notebook.context.occupancy.occupancy import Occupancy
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.context.window import Window
from monad_notebook.errors import ContextLengthError
from monad_notebook.messages import Message
from monad_notebook.testing import ScriptedModel

BRIEFING = "## Objective\nexplore\n## Decisions & Facts\n- folded\n## Files & State\n## Open Tasks\n## Next Step\ngo on"
FILLER = "The revenue table for the northern stores shows steady growth across every quarter. " * 6


def make(store, model: ScriptedModel, **summarize) -> Session:
    config = Config.model_validate(
        {"context": {"eviction": {"enabled": False}, "summarize": {"keepRecent": 2, "background": False, **summarize}}}
    )
    return Session("guard", config=config, store=store, model=model, fast_model=ScriptedModel([BRIEFING] * 3))


def test_the_hard_guard_compacts_from_the_last_real_count_when_the_estimate_is_far_below(store):
    """A calibration long settled on one relation barely moves on one odd count; the real count still rules."""
    settled = [[300 + 40 * i, 1_085, 300 + 40 * i] for i in range(KEPT)]
    store.save_calibration("guard", "scripted", {"observations": settled})
    model = ScriptedModel(["first", ScriptedModel.text("second", prompt_tokens=1_700), "third"], context_window=2_048)
    session = make(store, model, softFraction=0.9, hardFraction=0.9)
    session.ask(f"one: {FILLER}")
    session.ask(f"two: {FILLER}")
    assert 1_700 < 0.9 * 2_048  # the last real count alone is under both thresholds
    session.window.extend([session.window.new_message("user", f"three: {FILLER * 3}")])
    assert session.cascade.meter.occupancy.estimate(session.window.prompt()) < 0.9 * 2_048  # and so is the estimate
    session.window.messages.pop()
    session.ask(f"three: {FILLER * 3}")
    sent = model.calls[-1].messages
    assert "<summary>" in next(m["content"] for m in sent if m["role"] == "user")
    assert not any("one:" in str(m["content"]) for m in sent)


def test_a_request_that_cannot_fit_the_window_is_refused_not_sent_and_leaves_the_session_as_it_was(store):
    model = ScriptedModel([ScriptedModel.text("hello", prompt_tokens=300), "never"], context_window=1_000)
    session = make(store, model)
    session.ask("hi")
    with pytest.raises(ContextLengthError) as caught:
        session.ask("summarise this: " + FILLER * 20)
    assert len(model.calls) == 1
    message = str(caught.value)
    assert "\n" not in message and "not sent" in message and "1,000" in message
    assert [m.role for m in store.load_messages("guard")] == ["user", "assistant"]  # shorten it and ask again
    assert not any("summarise this" in str(m.content) for m in session.window.messages)


def test_with_nothing_learnt_yet_the_first_request_goes_out_and_the_provider_judges(store):
    """Over 1,000 tokens of tool schemas by our count, which a server that drops them never sees."""
    model = ScriptedModel(["hello"], context_window=1_000)
    session = make(store, model)
    assert session.cascade.meter.occupancy.estimate(session.window.prompt()) > 1_000
    assert session.ask("hi").text == "hello"


def window_after_a_real_count(real: int) -> tuple[Window, Occupancy]:
    """A window whose whole content the provider counted as ``real`` tokens: a question, a tool result, an answer."""
    window, occupancy = Window("w"), Occupancy(TokenCounter("local-model"))
    window.extend(
        [
            Message(role="user", content=FILLER, session="w", seq=0),
            Message(role="tool", content=FILLER * 3, session="w", seq=1, tool_call_id="c1", name="python"),
            Message(role="assistant", content=FILLER, session="w", seq=2),
        ]
    )
    occupancy.estimate(window.prompt())
    occupancy.observe(real)
    return window, occupancy


def test_the_guard_figure_grows_from_the_real_count_by_what_was_appended_since():
    window, occupancy = window_after_a_real_count(2_002)
    assert occupancy.guard_tokens(window.prompt()) >= 2_002
    appended = Message(role="user", content=FILLER * 4, session="w", seq=3)
    window.extend([appended])
    assert occupancy.guard_tokens(window.prompt()) >= 2_002 + occupancy.message_tokens(appended)


def test_tokens_cleared_by_eviction_come_off_the_guard_figure_once():
    window, occupancy = window_after_a_real_count(2_002)
    result = window.messages[1]
    placeholder = "[context-cleared] 300 tokens"
    plan = EvictionPlan(placeholders={result.id: placeholder})
    count = occupancy.counter.count_text
    plan.reclaimed_tokens = count(result.content) - count(placeholder)
    window.apply_eviction(plan.placeholders)
    occupancy.reclaim(plan.reclaimed_tokens)
    estimate = occupancy.estimate(window.prompt())
    assert occupancy.guard_tokens(window.prompt()) == max(estimate, 2_002 - plan.reclaimed_tokens)
