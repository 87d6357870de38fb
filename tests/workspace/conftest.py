"""The shell the workspace tests share: IPython's in-process shell with a user namespace of the test's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def shell(ip) -> Iterator[Any]:
    """The shared test shell with a user namespace of its own: names earlier tests left are set aside, then put back.

    The extension an earlier test loaded is unloaded: its sessions would note this test's cells too."""
    if "monad_notebook" in ip.extension_manager.loaded:
        ip.extension_manager.unload_extension("monad_notebook")
    left = {k: v for k, v in ip.user_ns.items() if type(k) is str and k[:1] != "_" and k not in ip.user_ns_hidden}
    for name in left:
        del ip.user_ns[name]
    before = set(ip.user_ns)
    yield ip
    for name in set(ip.user_ns) - before:
        del ip.user_ns[name]
    ip.user_ns.update(left)
