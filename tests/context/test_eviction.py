from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook.context.lossless.eviction import EvictionPlan, placeholder_for, rounds
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.messages import Message, apply_placeholders
from tests.context.transcripts import RawOutputs, Transcript, count_tokens, plan

CALL = re.compile(r"read_tool_output\((\{.*?\})\)")


def tool_message(messages: list[Message], call_id: str) -> Message:
    return next(m for m in messages if m.tool_call_id == call_id)


def test_rounds_group_parallel_results_with_their_assistant_message():
    t = Transcript().user()
    first = t.round(10)
    second = t.round(10, 20, 30)
    t.answer().user()
    third = t.round(5)
    grouped = rounds(t.messages)
    assert [[m.tool_call_id for m in r[1:]] for r in grouped] == [first, second, third]
    assert all(r[0].role == "assistant" and r[0].tool_calls for r in grouped)


def test_does_nothing_below_at_fraction():
    t = Transcript().user()
    t.round(4000)
    t.round(4000)
    assert not plan(t.messages, occupancy=49_999)
    assert plan(t.messages, occupancy=50_000)


def test_evicts_oldest_rounds_and_keeps_the_recent_rounds_whole():
    t = Transcript().user()
    old = [t.round(4000), t.round(4000, 4000)]
    recent = [t.round(4000, 4000, 4000), t.round(4000)]
    result = plan(t.messages, keep_recent_rounds=2)
    assert result.evicted_tool_call_ids == [i for r in old for i in r]
    apply_placeholders(t.messages, result.placeholders)
    assert all(tool_message(t.messages, i).evicted for r in old for i in r)
    assert not any(tool_message(t.messages, i).evicted for r in recent for i in r)


def test_parallel_calls_of_one_step_share_an_age():
    t = Transcript().user()
    older = t.round(4000)
    latest = t.round(4000, 4000, 4000, 4000)
    result = plan(t.messages, keep_recent_rounds=1)
    assert result.evicted_tool_call_ids == older
    assert not set(latest) & set(result.evicted_tool_call_ids)


def test_is_all_or_nothing_when_a_pass_reclaims_less_than_clear_at_least():
    t = Transcript().user()
    t.round(1000)
    t.round(1000)
    t.round(1000)
    small = plan(t.messages, clear_at_least=10_000)
    assert small == EvictionPlan() and not small
    enough = plan(t.messages, clear_at_least=400)
    assert len(enough.placeholders) == 2 and enough.reclaimed_tokens >= 400


def test_skips_results_under_min_result_tokens():
    t = Transcript().user()
    just_under, big = t.round(796, 4000)
    t.round(10)
    result = plan(t.messages, min_result_tokens=200, clear_at_least=0)
    assert result.evicted_tool_call_ids == [big]
    assert just_under not in result.spill
    assert plan(t.messages, min_result_tokens=199, clear_at_least=0).evicted_tool_call_ids == [just_under, big]


def test_never_evicts_a_result_whose_placeholder_would_be_larger():
    t = Transcript().user()
    _short, big = t.round(60, 4000)
    t.round(10)
    result = plan(t.messages, min_result_tokens=0, clear_at_least=0)
    assert result.evicted_tool_call_ids == [big]
    assert result.reclaimed_tokens == 1000 - count_tokens(result.placeholders[tool_message(t.messages, big).id])


def test_reclaimed_tokens_are_original_minus_placeholder_tokens():
    t = Transcript().user()
    t.round(4000, 8000)
    t.round(10)
    result = plan(t.messages)
    expected = sum(
        count_tokens(tool_message(t.messages, i).content) - count_tokens(text)
        for i, text in zip(result.evicted_tool_call_ids, result.placeholders.values(), strict=True)
    )
    assert result.reclaimed_tokens == expected > 0


def test_only_the_sent_text_changes_and_every_call_keeps_its_result():
    t = Transcript().user()
    t.round(4000, 4000)
    t.answer().user()
    t.round(4000)
    before = [(m.id, m.role, m.content, m.tool_call_id) for m in t.messages]
    apply_placeholders(t.messages, plan(t.messages).placeholders)
    assert [(m.id, m.role, m.content, m.tool_call_id) for m in t.messages] == before
    sent = [m.to_openai() for m in t.messages]
    assert sent[2]["content"].startswith("[context-cleared]")
    assert sent[2]["tool_call_id"] == sent[1]["tool_calls"][0]["id"]
    assert sent[-1]["content"] == t.messages[-1].content


def test_spills_full_content_only_for_results_not_already_saved():
    t = Transcript().user()
    truncated, short = t.round(4000, 3000)
    t.round(10)
    raw = RawOutputs(saved={truncated})
    result = plan(t.messages, has_raw=raw)
    assert result.spill == {short: tool_message(t.messages, short).content}
    assert raw.asked == [[truncated, short]]
    for call_id in (truncated, short):
        text = result.placeholders[tool_message(t.messages, call_id).id]
        assert json.loads(CALL.search(text).group(1)) == {"id": call_id}


def test_redacted_result_is_never_spilled_and_gets_no_handle():
    t = Transcript().user()
    secret, plain = t.round(4000, 4000, redacted=(True, False))
    t.round(10)
    raw = RawOutputs()
    result = plan(t.messages, has_raw=raw)
    assert set(result.spill) == {plain}
    assert raw.asked == [[plain]]
    text = result.placeholders[tool_message(t.messages, secret).id]
    assert "read_tool_output" not in text and "redacted" in text and "re-run" in text


def test_persist_raw_off_spills_nothing_and_advertises_no_handle():
    t = Transcript().user()
    t.round(4000, 4000)
    t.round(10)
    raw = RawOutputs()
    result = plan(t.messages, persist_raw=False, has_raw=raw)
    assert len(result.placeholders) == 2 and result.spill == {} and raw.asked == []
    assert all("read_tool_output" not in text and "re-run" in text for text in result.placeholders.values())


def test_planning_again_after_applying_changes_nothing():
    t = Transcript().user()
    t.round(4000)
    t.round(4000)
    t.round(10)
    first = plan(t.messages)
    apply_placeholders(t.messages, first.placeholders)
    placeholders = {m.id: m.placeholder for m in t.messages if m.evicted}
    assert len(placeholders) == 2
    assert not plan(t.messages, clear_at_least=0)
    apply_placeholders(t.messages, dict.fromkeys(placeholders, "[context-cleared] other"))
    assert {m.id: m.placeholder for m in t.messages if m.evicted} == placeholders


def test_a_placeholder_costs_few_tokens_and_still_carries_the_exact_read_call():
    counter = TokenCounter("gpt-4o")
    message = Message("tool", "x" * 100, tool_call_id="k7Hq2xZ9a", name="run_python")
    text = placeholder_for(message, 12_345, handle=True)
    assert text.endswith('read_tool_output({"id": "k7Hq2xZ9a"})') and "run_python" in text
    assert counter.count_text(text) <= 30  # resent on every later request, hundreds of them in a long session


def test_placeholder_names_the_tool_and_starts_with_context_cleared():
    message = Message("tool", "x" * 100, tool_call_id='id"1', name="read_file")
    text = placeholder_for(message, 25, handle=True)
    assert text.startswith("[context-cleared]") and "read_file" in text and "25 tokens" in text
    assert json.loads(CALL.search(text).group(1)) == {"id": 'id"1'}


def test_rejects_negative_keep_recent_rounds():
    with pytest.raises(ValueError, match="keep_recent_rounds"):
        plan([], keep_recent_rounds=-1)


# --- properties over random transcripts -------------------------------------------------

result_sizes = st.integers(0, 6000)
round_spec = st.lists(st.tuples(result_sizes, st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=4)
turn_spec = st.lists(round_spec, min_size=0, max_size=4)


def build(turns: list[list[list[tuple[int, bool, bool, bool]]]]) -> tuple[Transcript, set[str]]:
    """A transcript from (size, redacted, pre-evicted, already spilled) per result; returns the spilled ids."""
    t = Transcript()
    spilled: set[str] = set()
    for rounds_ in turns:
        t.user()
        for spec in rounds_:
            ids = t.round(*(s[0] for s in spec), redacted=tuple(s[1] for s in spec))
            for call_id, (_, redacted, evicted, saved) in zip(ids, spec, strict=True):
                message = tool_message(t.messages, call_id)
                if evicted:
                    message.placeholder = placeholder_for(message, 1, handle=not redacted)
                if saved and not redacted:
                    spilled.add(call_id)
        t.answer()
    return t, spilled


thresholds = st.fixed_dictionaries(
    {
        "occupancy": st.integers(0, 200_000),
        "context_window": st.integers(1, 200_000),
        "at_fraction": st.floats(0, 1),
        "keep_recent_rounds": st.integers(0, 6),
        "clear_at_least": st.integers(0, 5000),
        "min_result_tokens": st.integers(0, 1500),
        "persist_raw": st.booleans(),
    }
)


def snapshot(messages: list[Message]) -> list[dict]:
    return [m.to_openai() for m in messages]


def assert_pairs_intact(messages: list[Message]) -> None:
    calls = [c.id for m in messages if m.role == "assistant" for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if m.role == "tool"]
    assert calls == results and len(set(calls)) == len(calls)


@settings(max_examples=250, deadline=None)
@given(turns=st.lists(turn_spec, min_size=1, max_size=5), limits=thresholds)
def test_eviction_keeps_pairs_recent_rounds_and_thresholds_on_random_transcripts(turns, limits):
    t, spilled = build(turns)
    raw = RawOutputs(spilled)
    before = snapshot(t.messages)
    before_placeholders = {m.id: m.placeholder for m in t.messages if m.evicted}
    all_rounds = rounds(t.messages)
    protected = {m.id for r in all_rounds[len(all_rounds) - limits["keep_recent_rounds"] :] for m in r}

    result = plan(t.messages, has_raw=raw, **limits)
    apply_placeholders(t.messages, result.placeholders)
    after = snapshot(t.messages)

    assert [m["role"] for m in after] == [m["role"] for m in before]
    assert_pairs_intact(t.messages)
    changed = {m.id for m, a, b in zip(t.messages, after, before, strict=True) if a != b}
    assert changed == set(result.placeholders)
    assert not changed & protected
    assert all(m.placeholder == text for m in t.messages if (text := before_placeholders.get(m.id)))

    if limits["occupancy"] < limits["at_fraction"] * limits["context_window"]:
        assert not result
    if result:
        assert result.reclaimed_tokens >= limits["clear_at_least"]
        evicted = [m for m in t.messages if m.id in result.placeholders]
        assert [m.tool_call_id for m in evicted] == result.evicted_tool_call_ids
        assert all(count_tokens(m.content) >= limits["min_result_tokens"] for m in evicted)
        assert all(m.role == "tool" and m.placeholder.startswith("[context-cleared]") for m in evicted)
        unevicted_old = [
            m
            for m in t.messages
            if m.role == "tool" and m.id not in protected and not m.evicted
            if count_tokens(m.content) >= limits["min_result_tokens"]
        ]
        handle = limits["persist_raw"]
        assert all(
            count_tokens(placeholder_for(m, count_tokens(m.content), handle=handle and not m.redacted))
            >= count_tokens(m.content)
            for m in unevicted_old
        ), "a pass evicts every eligible result outside the protected rounds"

    by_call = {m.tool_call_id: m for m in t.messages if m.role == "tool"}
    assert set(result.spill) <= set(result.evicted_tool_call_ids)
    assert not set(result.spill) & spilled
    assert all(not by_call[i].redacted and text == by_call[i].content for i, text in result.spill.items())
    for call_id in result.evicted_tool_call_ids:
        message = by_call[call_id]
        handle = limits["persist_raw"] and not message.redacted
        assert ("read_tool_output" in message.placeholder) == handle
        if handle:
            assert call_id in spilled or call_id in result.spill

    again = plan(t.messages, has_raw=RawOutputs(spilled | set(result.spill)), **limits)
    assert not again


@settings(max_examples=100, deadline=None)
@given(turns=st.lists(turn_spec, min_size=1, max_size=4), more=turn_spec, limits=thresholds)
def test_a_later_pass_only_adds_new_evictions(turns, more, limits):
    t, spilled = build(turns)
    first = plan(t.messages, has_raw=RawOutputs(spilled), **limits)
    apply_placeholders(t.messages, first.placeholders)
    frozen = {m.id: m.placeholder for m in t.messages if m.evicted}
    later, _ = build([more])
    for m in later.messages:
        m.tool_call_id = m.tool_call_id and f"later_{m.tool_call_id}"
        for c in m.tool_calls:
            c.id = f"later_{c.id}"
    t.messages.extend(later.messages)
    second = plan(t.messages, has_raw=RawOutputs(spilled), **limits)
    assert not set(second.placeholders) & set(frozen)
    apply_placeholders(t.messages, second.placeholders)
    assert all(m.placeholder == frozen[m.id] for m in t.messages if m.id in frozen)
    assert_pairs_intact(t.messages)
