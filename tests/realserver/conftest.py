"""A real OpenAI-compatible server for the tests of this tier: llama.cpp's llama-server on SmolLM2-135M.

Skipped, with the reason, only when the server binary or the model is not installed (the README's
test command installs them) or when this CPU can run none of the installed builds (illegal
instruction). The servers run on free 127.0.0.1 ports with one thread each.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from monad_notebook.testing.llama import LlamaServer, LlamaUnavailable


def _running(context: int, chat_template: Path | None = None) -> Iterator[LlamaServer]:
    try:
        server = LlamaServer(context=context, chat_template=chat_template)
    except LlamaUnavailable as why:
        pytest.skip(str(why))
    try:
        yield server.start()
    except LlamaUnavailable as why:
        pytest.skip(str(why))
    finally:
        server.close()


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """Shared by the tests that only talk to it: a 4,096-token window."""
    yield from _running(4096)


@pytest.fixture(scope="session")
def small_llama() -> Iterator[LlamaServer]:
    """A 512-token window, for overflows the client does not see coming."""
    yield from _running(512)


@pytest.fixture
def own_llama() -> Iterator[LlamaServer]:
    """A server of the test's own, to kill and bring back."""
    yield from _running(2048)


@pytest.fixture(scope="session")
def strict_llama() -> Iterator[LlamaServer]:
    """A server whose chat template refuses roles that do not alternate, as Mistral's and Gemma's do."""
    yield from _running(4096, Path(__file__).parent / "strict_roles.jinja")
