"""The cascade's unit tests run on the in-memory store; a test marked ``lance`` asserts what LanceDB
writes or reads (one write per batch, reads of O(window)) and gets the real store."""

from __future__ import annotations

import pytest


@pytest.fixture
def store(request, tmp_path):
    from monad_notebook.store.lance import LanceStore
    from monad_notebook.testing.memory_store import MemoryStore

    store = LanceStore(tmp_path / "db") if request.node.get_closest_marker("lance") else MemoryStore()
    yield store
    store.close()
