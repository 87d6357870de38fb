"""Memory's checks measured on corpora: instructions and secrets never get in, ordinary facts do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.memory import TOOLS
from monad_notebook.agent.tools.registry import run_tool
from monad_notebook.memory import MemoryService, sanitize_fact
from monad_notebook.redaction.redactor import Redactor
from monad_notebook.store.lance import LanceStore
from tests.memory.corpus import BENIGN, HOSTILE, SECRET_ADJACENT, SECRET_FACTS

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

SESSION = "eda"
MAX_BENIGN_REFUSED = 0


def stored_text(store: LanceStore) -> str:
    facts = [f.text for f in store.list_facts()]
    events = [json.dumps(e.data, ensure_ascii=False) for e in store.list_events(SESSION)]
    return "\n".join(facts + events)


def remember(service: MemoryService, fact: str, scope: str) -> str:
    ctx = ToolContext(SESSION, {}, Path.cwd(), memory=service, memory_scope="agent:analyst")
    return run_tool({t.name: t for t in TOOLS}, ctx, "remember", json.dumps({"fact": fact, "scope": scope}))


def test_the_corpora_are_big_enough_to_mean_something() -> None:
    assert len(HOSTILE) >= 30 and len(BENIGN) >= 30
    assert len(set(HOSTILE)) == len(HOSTILE) and len(set(BENIGN)) == len(BENIGN)


def test_no_hostile_fact_is_accepted() -> None:
    accepted = [text for text in HOSTILE if sanitize_fact(text, redactor=Redactor(env={})).ok]

    print(f"\nhostile facts: {len(HOSTILE)}, accepted: {len(accepted)}")
    assert accepted == []


def test_benign_facts_are_kept_and_false_refusals_are_counted() -> None:
    verdicts = {text: sanitize_fact(text, redactor=Redactor(env={})) for text in BENIGN}
    refused = {text: v.reason for text, v in verdicts.items() if not v.ok}

    print(f"\nbenign facts: {len(BENIGN)}, refused: {len(refused)} {refused}")
    assert len(refused) <= MAX_BENIGN_REFUSED, refused
    assert all(v.text == text for text, v in verdicts.items() if v.ok)


@pytest.mark.parametrize("scope", ["agent", "global"])
def test_the_remember_tool_refuses_every_hostile_fact_with_a_one_line_reason(store: LanceStore, scope: str) -> None:
    service = MemoryService(store, Redactor(env={}))

    replies = [remember(service, text, scope) for text in HOSTILE]

    assert all(r.startswith("error: remember: not saved: reads as an instruction to the assistant (") for r in replies)
    assert all("\n" not in r and r.endswith("save a plain statement of fact instead") for r in replies)
    assert store.list_facts() == []
    assert service.pending_suggestions(SESSION) == []


@pytest.mark.parametrize(("text", "secret"), SECRET_FACTS, ids=[t[:28] for t, _ in SECRET_FACTS])
def test_a_secret_in_plain_words_or_disguised_is_refused_and_never_stored(store: LanceStore, text, secret) -> None:
    service = MemoryService(store, Redactor(env={}))

    verdict = service.add(text, scope="agent:analyst")
    replies = [remember(service, text, scope) for scope in ("agent", "global")]
    service.suggest(SESSION, [text])

    assert not verdict.ok and verdict.reason.startswith("contains a secret (")
    assert secret not in verdict.text and secret not in verdict.reason
    assert all(r == f"error: remember: not saved: {verdict.reason}" for r in replies)
    assert store.list_facts() == [] and service.pending_suggestions(SESSION) == []
    assert secret not in stored_text(store)


def test_facts_that_only_talk_about_credentials_are_kept() -> None:
    refused = {t: v.reason for t in SECRET_ADJACENT if not (v := sanitize_fact(t, redactor=Redactor(env={}))).ok}
    assert refused == {}
