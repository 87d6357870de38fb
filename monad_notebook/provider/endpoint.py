"""One OpenAI-compatible endpoint: where it is, the key, the client and bounded retries.

The chat model and the embedder are both ``EndpointClient``s: they take the same connection
settings (``Connection``) and reach their server the same way.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

import openai

from monad_notebook.errors import AuthError, EndpointError
from monad_notebook.provider.failures import Retryable, classify, exhausted

_T = TypeVar("_T")
OPENAI_URL = "https://api.openai.com/v1"
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


@dataclass(frozen=True)
class Connection:
    """How to reach an endpoint and how hard to try; ``base_url`` None means ``$OPENAI_BASE_URL`` or OpenAI."""

    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 4
    backoff_base: float = 0.5
    backoff_max: float = 8.0


def _is_local(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOCAL_HOSTS or host.startswith("127.") or host.endswith(".localhost")


class Endpoint:
    """The key, the client, error mapping and bounded retries for one model on one server.

    Retries live here rather than in the ``openai`` client so that a retry never replays text
    the user has already seen, and so every failure ends as one actionable MonadError.
    """

    def __init__(self, model: str, connection: Connection) -> None:
        self.model = model
        self.url = (connection.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        self.api_key_env = connection.api_key_env
        self.timeout = connection.timeout
        self.max_retries = max(0, connection.max_retries)
        self.backoff_base = connection.backoff_base
        self.backoff_max = connection.backoff_max
        self._client: openai.OpenAI | None = None
        self._key = ""

    def client(self) -> openai.OpenAI:
        """The client, made once; remade only if the key changed (a user fixing it mid-session)."""
        key = os.environ.get(self.api_key_env, "")
        if not key:
            if not _is_local(self.url):
                raise AuthError(
                    f"No API key for {self.url}: set {self.api_key_env}, "
                    "or point apiKeyEnv in agents.json at the variable that holds it"
                )
            key = "not-needed"
        if self._client is None or key != self._key:
            self._client = openai.OpenAI(base_url=self.url, api_key=key, max_retries=0, timeout=self.timeout)
            self._key = key
        return self._client

    def call(self, attempt: Callable[[openai.OpenAI], _T], *, may_retry: Callable[[], bool] = lambda: True) -> _T:
        """Run ``attempt`` until it succeeds, a failure is not retryable, or retries run out."""
        client = self.client()
        retries = 0
        while True:
            try:
                try:
                    return attempt(client)
                except openai.APIError as exc:
                    raise self._classify(exc) from exc
            except Retryable as failure:
                if not may_retry():
                    raise EndpointError(
                        f"The stream from {self.url} broke after text was shown ({failure.reason}); run the cell again"
                    ) from failure
                if retries >= self.max_retries:
                    raise exhausted(failure, retries, self.url) from failure
                time.sleep(self._delay(retries, failure.retry_after))
                retries += 1

    def _classify(self, exc: openai.APIError) -> Exception:
        return classify(exc, url=self.url, model=self.model, api_key_env=self.api_key_env, timeout=self.timeout)

    def _delay(self, retries: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        return min(self.backoff_max, self.backoff_base * 2**retries) * random.uniform(0.5, 1.0)


class EndpointClient:
    """A client of one model on one endpoint: its ``name``, its ``Endpoint`` and that endpoint's URL."""

    def __init__(self, model: str, connection: Connection) -> None:
        self.name = model
        self._endpoint = Endpoint(model, connection)

    @property
    def base_url(self) -> str:
        return self._endpoint.url
