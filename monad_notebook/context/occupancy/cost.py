"""What the prompts cost: the endpoint's prefix-cache pricing and a session's running totals.

Providers bill the part of a prompt they serve from their prefix cache at a discount, and
forget a prefix a few minutes after its last use. Counting raw tokens hides both: the
cheapest strategy keeps the prefix stable while the cache is warm and clears freely once
it has gone cold. Billed-equivalent input is ``uncached + discount x cached`` tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from monad_notebook.config import ModelConfig

DEFAULT_TTL_SECONDS = 300.0


@dataclass(frozen=True)
class CachePricing:
    """``discount``: price of a cached input token relative to an uncached one (1: no cache)."""

    discount: float = 1.0
    ttl_seconds: float = DEFAULT_TTL_SECONDS

    @property
    def caches(self) -> bool:
        return self.discount < 1.0


# OpenAI bills cached input at 50% (gpt-4o family) down to 10% (gpt-5, gpt-4.1 at 25%): 0.5 is the
# conservative default. Anthropic bills cache reads at 10%. Unknown endpoints are assumed not to cache.
_KNOWN_ENDPOINTS: dict[str, CachePricing] = {
    "api.openai.com": CachePricing(0.5),
    "api.anthropic.com": CachePricing(0.1),
}


def pricing_for(model: ModelConfig) -> CachePricing:
    """The cache pricing of ``model``'s endpoint: its ``cache`` keys over the provider's default."""
    host = urlsplit(model.base_url).hostname if model.base_url else "api.openai.com"
    default = _KNOWN_ENDPOINTS.get(host or "", CachePricing())
    cache = model.cache
    return CachePricing(
        discount=default.discount if cache.discount is None else cache.discount,
        ttl_seconds=default.ttl_seconds if cache.ttl_seconds is None else cache.ttl_seconds,
    )


@dataclass
class CostMeter:
    """A session's running totals of input tokens sent, served from the cache, and billed-equivalent.

    It also remembers when the last request went out, which decides whether the provider's
    cache is still warm for the next one.
    """

    pricing: CachePricing = CachePricing()
    clock: Callable[[], float] = time.time
    requests: int = 0
    tokens_sent: int = 0
    tokens_cached: int = 0
    billed: float = 0.0
    last_prompt_tokens: int = 0
    last_cached_tokens: int = 0
    last_request_at: float | None = None

    def add(self, prompt_tokens: int, cached_tokens: int) -> None:
        """One request answered: ``prompt_tokens`` sent, ``cached_tokens`` of them from the cache."""
        cached = max(0, min(cached_tokens, prompt_tokens))
        self.requests += 1
        self.tokens_sent += prompt_tokens
        self.tokens_cached += cached
        self.billed += prompt_tokens - cached + self.pricing.discount * cached
        self.last_prompt_tokens, self.last_cached_tokens = prompt_tokens, cached
        self.last_request_at = self.clock()

    def cache_warm(self) -> bool:
        """Would the next request find the last one's prefix in the cache (and is that worth anything)?"""
        if not self.pricing.caches or self.last_request_at is None:
            return False
        return self.clock() - self.last_request_at < self.pricing.ttl_seconds

    def snapshot(self) -> dict[str, Any]:
        return {
            "step_prompt_tokens": self.last_prompt_tokens,
            "step_cached_tokens": self.last_cached_tokens,
            "tokens_sent": self.tokens_sent,
            "tokens_cached": self.tokens_cached,
            "billed_input": round(self.billed),
            "cache_discount": self.pricing.discount,
            "cache_warm": self.cache_warm(),
        }
