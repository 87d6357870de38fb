"""Eviction priced by the provider's cache: batch widely while it is warm, clear deep once it is cold."""

from __future__ import annotations

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.eviction import cheapest_batch, rounds
from monad_notebook.testing import FakeOpenAIServer, tool_call
from tests.context.test_eviction import Transcript, count_tokens, plan


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


def test_a_cold_cache_still_needs_a_pass_worth_clear_at_least():
    t = transcript(3, size=400)
    assert not plan(t.messages, occupancy=5_000, keep_recent_rounds=2, clear_at_least=1_000, cache_discount=1.0)


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


def session_for(server, store, clock) -> Session:
    config = Config.model_validate(
        {
            "models": {
                "main": {
                    "model": "m",
                    "baseUrl": server.base_url,
                    "contextWindow": 100_000,
                    "cache": {"discount": 0.1, "ttlSeconds": 300},
                }
            },
            "tools": {"python": {"approval": "auto"}},
            "context": {
                "summarize": {"enabled": False},
                "eviction": {"keepRecentRounds": 1, "clearAtLeast": 500, "minResultTokens": 50},
            },
        }
    )
    session = Session("cost", config=config, store=store, namespace={})
    session.window.cost.clock = lambda: clock[0]
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
