"""What prompts cost: cache pricing per endpoint, the provider's cached-token counts, and a session's totals."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from monad_notebook.config import Config, parse_config
from monad_notebook.context.occupancy.cost import CachePricing, CostMeter, pricing_for
from monad_notebook.errors import ConfigError
from monad_notebook.provider import OpenAIChatModel
from monad_notebook.session import Session
from monad_notebook.testing import FakeOpenAIServer, approximate_prompt_tokens, tool_call

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which region grew fastest?"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


def main_on(url: str | None, **keys: Any) -> Config:
    main: dict[str, Any] = {"model": "m", "maxRetries": 0, **keys}
    if url is not None:
        main["baseUrl"] = url
    return Config.model_validate({"models": {"main": main}})


# pricing per endpoint


def test_openai_is_priced_at_half_for_cached_input_with_a_five_minute_cache():
    assert pricing_for(main_on(None).models.main) == CachePricing(0.5, 300.0)
    assert pricing_for(main_on("https://api.openai.com/v1").models.main) == CachePricing(0.5, 300.0)


def test_anthropic_is_priced_at_a_tenth_for_cached_input():
    assert pricing_for(main_on("https://api.anthropic.com/v1/").models.main).discount == 0.1


def test_an_unknown_endpoint_is_assumed_to_cache_nothing():
    pricing = pricing_for(main_on("http://localhost:8080/v1").models.main)
    assert pricing.discount == 1.0
    assert not pricing.caches


def test_configured_cache_keys_override_the_providers_default_one_by_one():
    cfg = main_on("http://localhost:8080/v1", cache={"discount": 0.25})
    assert pricing_for(cfg.models.main) == CachePricing(0.25, 300.0)
    cfg = main_on(None, cache={"ttlSeconds": 3600})
    assert pricing_for(cfg.models.main) == CachePricing(0.5, 3600.0)


@pytest.mark.parametrize(
    ("cache", "message"),
    [
        ({"discount": 1.5}, "models.main.cache.discount"),
        ({"discount": -0.1}, "models.main.cache.discount"),
        ({"discount": "half"}, "models.main.cache.discount"),
        ({"ttlSeconds": 0}, "models.main.cache.ttlSeconds"),
        ({"ttlSeconds": -5}, "models.main.cache.ttlSeconds"),
        ({"ttl": 300}, "models.main.cache.ttl"),
    ],
)
def test_a_bad_cache_key_is_a_one_line_error_naming_it(cache, message):
    with pytest.raises(ConfigError) as caught:
        parse_config({"models": {"main": {"cache": cache}}})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_fast_tier_inherits_mains_cache_pricing():
    cfg = Config.model_validate({"models": {"main": {"cache": {"discount": 0.2}}}})
    assert pricing_for(cfg.models.resolved_fast()).discount == 0.2


# the provider's report


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_the_cached_part_of_a_prompt_is_read_from_the_providers_usage(server, style):
    server.prefix_cache = style
    server.queue("first", "second")
    model = OpenAIChatModel("m", base_url=server.base_url, max_retries=0)
    first = model.complete(MESSAGES, [])
    second = model.complete([*MESSAGES, {"role": "assistant", "content": "first"}], [])
    assert first.usage is not None and first.usage.cached_tokens == 0
    assert second.usage is not None and second.usage.cached_tokens == approximate_prompt_tokens(MESSAGES)


def test_a_provider_that_reports_no_cache_reads_as_nothing_cached(server):
    server.queue("first", "second")
    model = OpenAIChatModel("m", base_url=server.base_url, max_retries=0)
    model.complete(MESSAGES, [])
    assert model.complete(MESSAGES, []).usage.cached_tokens == 0


# the session's totals


def shared_prefix_tokens(requests: list[dict[str, Any]]) -> list[int]:
    """What a prefix cache serves for each request: the leading messages it shares with the one before."""
    cached, previous = [], None
    for body in requests:
        shared = []
        for new, old in zip(body["messages"], previous["messages"] if previous else [], strict=False):
            if new != old:
                break
            shared.append(new)
        cached.append(approximate_prompt_tokens(shared) if shared else 0)
        previous = body
    return cached


def test_a_session_totals_what_it_sent_what_was_cached_and_what_that_bills_as(server, store):
    server.prefix_cache = "openai"
    server.queue(tool_call("list_variables", {}), tool_call("list_variables", {}), "All done.")
    config = main_on(server.base_url, cache={"discount": 0.5})
    session = Session("cost", config=config, store=store, namespace={"orders": [1, 2, 3]})
    events: list[dict[str, Any]] = []
    session.events.subscribe(lambda event: events.append(event.data) if event.kind == "context.usage" else None)

    session.ask("What is loaded?")

    sent = [approximate_prompt_tokens(body["messages"]) for body in server.chat_requests]
    cached = shared_prefix_tokens(server.chat_requests)
    assert cached[0] == 0 and all(c > 0 for c in cached[1:])
    status = session.status()
    assert status["tokens_sent"] == sum(sent)
    assert status["tokens_cached"] == sum(cached)
    assert status["billed_input"] == round(sum(sent) - sum(cached) + 0.5 * sum(cached))
    assert [e["step_cached_tokens"] for e in events] == cached
    assert [r["cached_tokens"] for r in session.prompt_records] == cached
    session.close()


def test_the_cache_is_warm_only_within_its_lifetime_and_only_when_it_is_discounted():
    now = [1000.0]
    meter = CostMeter(CachePricing(0.1, 300.0), clock=lambda: now[0])
    assert not meter.cache_warm()
    meter.add(5000, 0)
    now[0] += 299
    assert meter.cache_warm()
    now[0] += 2
    assert not meter.cache_warm()
    flat = CostMeter(CachePricing(1.0, 300.0), clock=lambda: now[0])
    flat.add(5000, 4000)
    assert not flat.cache_warm()
    assert flat.billed == 5000


def test_a_cached_count_above_the_prompt_is_capped_at_the_prompt():
    meter = CostMeter(CachePricing(0.5))
    meter.add(100, 900)
    assert (meter.tokens_cached, meter.billed) == (100, 50.0)


def test_the_text_status_shows_the_totals_once_something_was_sent(server, store):
    from monad_notebook.widget.report import text_report

    server.prefix_cache = "openai"
    server.queue("one", "two")
    session = Session("cost", config=main_on(server.base_url), store=store, namespace={})
    session.ask("first")
    session.ask("second")
    report = text_report(session)
    assert f"input sent {session.status()['tokens_sent']:,}" in report
    assert json.dumps(session.usage_snapshot())  # the panel's snapshot stays plain JSON
    session.close()
