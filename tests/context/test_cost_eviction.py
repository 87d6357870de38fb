"""Eviction priced by the provider's cache: batch widely while it is warm, clear deep once it is cold."""

from __future__ import annotations

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.lossless.eviction import cheapest_batch, rounds
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.context.transcripts import Transcript, count_tokens, plan


def transcript(results: int, size: int = 2_000) -> Transcript:
    t = Transcript().user()
    for _ in range(results):
        t.round(size)
    return t


def test_without_a_price_nothing_fires_below_at_fraction():
    t = transcript(6)
    assert not plan(t.messages, occupancy=10_000, context_window=100_000)


def test_a_cold_cache_clears_every_old_result_below_at_fraction():
    t = transcript(6)
    cleared = plan(t.messages, occupancy=10_000, context_window=100_000, keep_recent_rounds=2, cache_discount=1.0)
    kept = {m.tool_call_id for r in rounds(t.messages)[-2:] for m in r[1:]}
    evicted = set(cleared.evicted_tool_call_ids)
    assert len(evicted) == 4 and not evicted & kept


def test_a_cold_cache_clears_a_single_eligible_result_below_at_fraction():
    t = transcript(3, size=400)
    cleared = plan(t.messages, occupancy=5_000, keep_recent_rounds=2, clear_at_least=1_000, cache_discount=1.0)
    assert cleared.evicted_tool_call_ids == [rounds(t.messages)[0][1].tool_call_id]
    assert cleared.reclaimed_tokens < 1_000  # less than clear_at_least: waiting would only bill it again


def test_a_warm_cache_at_a_deep_discount_leaves_the_same_single_result_alone():
    t = transcript(3, size=400)
    assert not plan(t.messages, occupancy=5_000, keep_recent_rounds=2, clear_at_least=1_000, cache_discount=0.1)


def test_a_cold_cache_never_clears_a_result_below_min_result_tokens_or_in_the_recent_rounds():
    t = transcript(3, size=150)
    assert not plan(t.messages, occupancy=5_000, keep_recent_rounds=2, min_result_tokens=50, cache_discount=1.0)
    t = transcript(2)
    assert not plan(t.messages, occupancy=5_000, keep_recent_rounds=2, cache_discount=1.0)


def test_a_warm_deep_discount_waits_for_a_bigger_batch_than_a_shallow_one():
    t = transcript(6)
    small = dict(occupancy=10_000, context_window=100_000, keep_recent_rounds=4)
    assert plan(t.messages, **small, cache_discount=0.9)
    assert not plan(t.messages, **small, cache_discount=0.1)
    assert not plan(t.messages, **small, cache_discount=0.0)  # a free cache never clears early


def test_the_warm_threshold_grows_as_the_cached_price_falls():
    t = transcript(8)
    draft = plan(t.messages, occupancy=90_000, keep_recent_rounds=2)
    batch = [cheapest_batch(t.messages, draft, rounds(t.messages), d, count_tokens, 2) for d in (1.0, 0.5, 0.1)]
    assert batch[0] == 0 and batch[0] < batch[1] < batch[2]


def test_at_fraction_still_fires_however_deep_the_discount():
    t = transcript(6)
    assert plan(t.messages, occupancy=60_000, context_window=100_000, cache_discount=0.01)


# in a session: the cache's lifetime decides


@pytest.fixture
def server():
    with FakeOpenAIServer() as server:
        yield server


def session_for(server, store, clock, *, discount: float = 0.1, clear_at_least: int = 500) -> Session:
    config = Config.model_validate(
        {
            "models": {
                "main": {
                    "model": "m",
                    "baseUrl": server.base_url,
                    "contextWindow": 100_000,
                    "cache": {"discount": discount, "ttlSeconds": 300},
                }
            },
            "tools": {"python": {"approval": "auto"}},
            "context": {
                "summarize": {"enabled": False},
                "eviction": {"keepRecentRounds": 1, "clearAtLeast": clear_at_least, "minResultTokens": 50},
            },
        }
    )
    session = Session("cost", config=config, store=store, namespace={})
    session.cascade.meter.cost.clock = lambda: clock[0]
    return session


def cleared_in(request: dict) -> int:
    return sum(m["content"].startswith("[context-cleared]") for m in request["messages"] if m["role"] == "tool")


def ask_with_output(server, session, i: int) -> None:
    code = f"print('result {i}: ' + 'lorem ipsum dolor sit amet ' * 300)"
    server.queue(tool_call("python", {"code": code}, id=f"call_{i}"), f"answer {i}")
    session.ask(f"step {i}")


def test_after_a_pause_longer_than_the_cache_lifetime_old_results_are_cleared(server, store):
    clock = [1000.0]
    session = session_for(server, store, clock)
    for i in range(3):
        ask_with_output(server, session, i)
        clock[0] += 30
    assert cleared_in(server.chat_requests[-1]) == 0  # warm, far below atFraction: the prefix is kept
    clock[0] += 600
    ask_with_output(server, session, 3)
    first_after_pause = server.chat_requests[-2]
    assert cleared_in(first_after_pause) == 2  # rounds 0 and 1; the newest round stays whole
    session.close()


def test_within_the_cache_lifetime_the_same_window_is_left_whole(server, store):
    clock = [1000.0]
    session = session_for(server, store, clock)
    for i in range(4):
        ask_with_output(server, session, i)
        clock[0] += 60
    assert all(cleared_in(request) == 0 for request in server.chat_requests)
    session.close()


def test_without_a_cache_discount_an_old_result_is_cleared_even_when_smaller_than_clear_at_least(server, store):
    clock = [1000.0]
    session = session_for(server, store, clock, discount=1.0, clear_at_least=50_000)
    for i in range(2):
        ask_with_output(server, session, i)
        clock[0] += 30
    answer = server.chat_requests[-1]
    assert cleared_in(answer) == 1  # round 0; the newest round stays whole
    assert 'read_tool_output({"id": "call_0"})' in str(answer["messages"])
    assert "result 0: lorem ipsum" in session.store.get_raw_output(session.name, "call_0")
    session.close()
