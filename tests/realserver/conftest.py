"""A real OpenAI-compatible server for the tests of this tier: llama.cpp's llama-server on SmolLM2-135M.

Skipped, with the reason, only when the server binary or the model is not installed (the README's
test command installs both). The servers run on free 127.0.0.1 ports with one thread each.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from monad_notebook.testing.llama import LlamaServer, LlamaUnavailable


def _server(context: int) -> LlamaServer:
    try:
        return LlamaServer(context=context)
    except LlamaUnavailable as why:
        pytest.skip(str(why))


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """Shared by the tests that only talk to it: a 4,096-token window."""
    with _server(4096) as server:
        yield server


@pytest.fixture(scope="session")
def small_llama() -> Iterator[LlamaServer]:
    """A 512-token window, for overflows the client does not see coming."""
    with _server(512) as server:
        yield server


@pytest.fixture
def own_llama() -> Iterator[LlamaServer]:
    """A server of the test's own, to kill and bring back."""
    with _server(2048) as server:
        yield server
