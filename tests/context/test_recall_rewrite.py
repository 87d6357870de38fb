"""The question rewritten by the fast model (``context.recall.rewrite``): what it was asked, what recall then found."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.recall.rewrite import Rewriter, phrasings
from monad_notebook.testing import FakeOpenAIServer, ScriptedModel, tool_call
from tests.context.embedders import KeywordEmbedder

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

FACT = "the revenue table is data/raw/sales_q3.parquet"
PATH = "data/raw/sales_q3.parquet"
QUESTION = "how much money did we make last quarter?"  # none of the fact's words
REWRITTEN = "revenue by quarter\nquarterly_revenue\nsales figures per quarter"


def told_and_folded(store) -> None:
    """Session "s" was told FACT, then folded: the window shows it no more, recall still can."""
    config = Config.model_validate(
        {"models": {"fast": {"model": "scripted-demo"}}, "context": {"summarize": {"keepRecent": 2}}}
    )
    model = ScriptedModel(["noted, weather", "train weather", "train weather"], context_window=100_000)
    first = Session("s", config=config, store=store, model=model, embedder=KeywordEmbedder())
    for text in (FACT, "train times and weather?", "the train and the weather again?"):
        first.ask(text)
    assert first.compact()
    first.close()


def session(store, server: FakeOpenAIServer, answers: list, **recall) -> tuple[Session, ScriptedModel]:
    fast = {"model": "qwen2.5-coder-1.5b-instruct", "baseUrl": server.base_url}
    context = {"retrieval": {"enabled": True}, "recall": recall}
    config = Config.model_validate({"models": {"fast": fast}, "context": context})
    model = ScriptedModel(answers, context_window=100_000)
    return Session("s", config=config, store=store, model=model, embedder=KeywordEmbedder()), model


def related_block(model: ScriptedModel, call: int = -1) -> str:
    """The ``<related_context>`` the main model received in one of its calls ("" without one)."""
    texts = [str(m.get("content")) for m in model.calls[call].messages]
    return next((t for t in texts if "<related_context>" in t), "")


def test_rewrite_is_off_by_default_so_the_fast_model_is_not_asked_and_other_words_find_nothing(store):
    told_and_folded(store)
    with FakeOpenAIServer() as server:
        s, model = session(store, server, ["ok"])
        s.ask(QUESTION)
        s.close()

    assert server.chat_requests == []
    assert PATH not in related_block(model)


def test_the_fast_model_is_asked_once_for_other_phrasings_and_related_context_finds_what_they_name(store):
    told_and_folded(store)
    with FakeOpenAIServer() as server:
        server.queue(REWRITTEN)
        s, model = session(store, server, ["ok"], rewrite="fast")
        s.ask(QUESTION)
        s.close()

    [asked] = server.chat_requests
    assert asked["model"] == "qwen2.5-coder-1.5b-instruct"
    assert asked["messages"][-1] == {"role": "user", "content": QUESTION}
    assert "Write 3 other ways to search for it" in asked["messages"][0]["content"]
    assert PATH in related_block(model)


def test_the_recall_tool_searches_the_phrasings_too_and_a_question_asked_again_is_not_sent_again(store):
    told_and_folded(store)
    with FakeOpenAIServer() as server:
        server.queue(REWRITTEN, "money earned\nrevenue\nquarterly_revenue")
        asked = tool_call("recall", {"query": "money we made last quarter"})
        s, model = session(store, server, [asked, "done", "ok"], rewrite="fast")
        s.ask(QUESTION)
        s.ask(QUESTION)
        s.close()

    questions = [request["messages"][-1]["content"] for request in server.chat_requests]
    assert questions == [QUESTION, "money we made last quarter"]
    assert PATH in model.calls[1].messages[-1]["content"]  # the tool's answer
    assert PATH in related_block(model, 2)  # the second turn's block, from the cached phrasings


def test_a_late_rewrite_is_not_waited_for_and_is_used_when_the_question_comes_again(store):
    told_and_folded(store)
    with FakeOpenAIServer() as server:
        server.queue(REWRITTEN)
        server.delay(4.0)
        s, model = session(store, server, ["ok", "ok"], rewrite="fast", rewriteTimeoutSeconds=0.5)
        started = time.monotonic()
        s.ask(QUESTION)
        elapsed = time.monotonic() - started
        time.sleep(4.5)  # the answer arrives meanwhile
        s.ask(QUESTION)
        s.close()

    assert elapsed < 3.0
    assert PATH not in related_block(model, 0)
    assert PATH in related_block(model, 1)
    assert len(server.chat_requests) == 1


def test_the_scripted_demo_model_is_never_asked_for_a_rewrite(store):
    told_and_folded(store)
    config = Config.model_validate(
        {
            "models": {"fast": {"model": "scripted-demo"}},
            "context": {"retrieval": {"enabled": True}, "recall": {"rewrite": "fast"}},
        }
    )
    fast = ScriptedModel([], context_window=100_000)
    model = ScriptedModel(["ok"], context_window=100_000)
    s = Session("s", config=config, store=store, model=model, fast_model=fast, embedder=KeywordEmbedder())
    s.ask(QUESTION)
    s.close()

    assert fast.calls == []
    assert PATH not in related_block(model)


def test_the_answers_lines_become_phrasings_without_list_marks_quotes_repeats_or_the_question_itself():
    answer = '1. "revenue by quarter"\n- quarterly_revenue\n\n* revenue by quarter\nHow much?\n`sales_q3`\nmore'
    assert phrasings(answer, "how much?") == ["revenue by quarter", "quarterly_revenue", "sales_q3"]


def test_a_fast_model_that_hangs_does_not_hold_the_kernel_at_exit():
    asking = (
        "import sys\n"
        "from monad_notebook.context.recall.rewrite import Rewriter\n"
        "from monad_notebook.provider import OpenAIChatModel\n"
        "model = OpenAIChatModel('fast', base_url=sys.argv[1], timeout=60, max_retries=0)\n"
        "assert Rewriter(model, 0.2).ask('where is the revenue table?')() == []\n"
    )
    with FakeOpenAIServer() as server:
        server.queue(REWRITTEN)
        server.delay(30.0)
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", asking, server.base_url], capture_output=True, timeout=60)
        elapsed = time.monotonic() - started

    assert done.returncode == 0, done.stderr.decode()[-500:]
    assert elapsed < 15


def test_an_empty_question_is_not_sent():
    fast = ScriptedModel([], context_window=100_000)
    assert Rewriter(fast, 1.0).ask(" \n ")() == []
    assert fast.calls == []
