"""A namespace of any size costs a request about what a small one does: the block's tokens and the look's time."""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from monad_notebook.workspace.block import budget
from monad_notebook.workspace.record import WorkspaceRecord
from tests.workspace.test_workspace_session import make, unhook, workspace_of

pytestmark = pytest.mark.lance
MAX_TOKENS = 4_000  # the block's default budget, whatever the window


def test_the_default_block_stays_within_4000_tokens_in_a_million_token_window(store, shell):
    shell.user_ns.update({f"col_{i:05}": [i] for i in range(10_000)})
    model = ScriptedModel(["ok"], context_window=1_000_000)
    session = make(store, shell, model)
    session.ask("what is there?")
    block = workspace_of(model.calls[0].messages)
    assert MAX_TOKENS - 400 < session.cascade.meter.counter.count_text(block) <= MAX_TOKENS
    assert "more names and 0 more files not shown: list_variables lists every name" in block
    unhook(shell, session)


def cost_per_call(store: LanceStore, namespace: dict[str, Any], tmp_path: Any, calls: int = 15) -> tuple[float, int]:
    """The median time of a look after a call plus the next request's block, and the block's tokens."""
    store.create_session("scale")
    record = WorkspaceRecord(store, "scale", namespace, root=tmp_path)
    record.reconfigure(True, Redactor())
    while record.notes().deferred:  # the first look at a large namespace may take a few calls: not what is timed
        record.take("settling")
    counter, limit = TokenCounter("gpt-4o"), budget(None, 128_000)
    record.block(counter.count_text, limit)  # the first block reads the tokenizer's files
    spent = []
    for call in range(calls):
        namespace[f"made_{call}"] = [call]
        started = time.perf_counter()
        record.take(f"call_{call}", f"made_{call} = [{call}]")
        block = record.block(counter.count_text, limit)
        spent.append(time.perf_counter() - started)
        record.save()
    return statistics.median(spent), counter.count_text(block)


@pytest.mark.slow
def test_a_hundred_thousand_names_cost_a_request_what_a_thousand_do(shell, tmp_path):
    small = {"__name__": "__main__", **{f"v{i:06}": [i] for i in range(1_000)}}
    small_seconds, small_tokens = cost_per_call(LanceStore(tmp_path / "small"), small, tmp_path)
    shell.user_ns.update({f"v{i:06}": [i] for i in range(100_000)})
    big_seconds, big_tokens = cost_per_call(LanceStore(tmp_path / "big"), shell.user_ns, tmp_path)
    assert big_tokens <= MAX_TOKENS and abs(big_tokens - small_tokens) < 200
    assert big_seconds < 3 * small_seconds + 0.005, (big_seconds, small_seconds)
