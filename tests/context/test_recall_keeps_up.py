"""Recall keeps up with quick turns: what a turn stored is findable at the next turn, by its words at once.

Real LanceDB and IPython's in-process shell (the python tool runs there); each test asserts what the
model received or what a new process finds.
"""

from __future__ import annotations

import threading
import time

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.compaction.summarize import SECTIONS, render_sections
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.messages import Message
from monad_notebook.provider import ChatResponse
from monad_notebook.testing import ScriptedModel, tool_call
from monad_notebook.testing.wire import hash_vector
from tests.context.embedders import KeywordEmbedder

pytestmark = pytest.mark.lance

FACT = (
    "Note for later: the Lisbon warehouse code is LX-4471-BARS, and the Lisbon dock closes early on Fridays "
    "because of the river tide."
)
QUESTION = "Which warehouse code did I give you for Lisbon, and when does its dock close?"
TABLE = "for row in range(70):\n    print(row, *[(row * 37 + col * 11) % 1000 for col in range(6)])"


class WeakSummarizer:
    """A fast tier whose briefings keep nothing of what they fold."""

    name = "weak-summarizer"

    def complete(self, messages, tools, on_text=None):
        return ChatResponse(content=render_sections({name: "- The analysis continued." for name in SECTIONS}))


class StalledEmbedder:
    """Answers a search's question at once, but the background indexer's calls wait until ``release``.

    Its vectors are unrelated to meaning (a stable hash), so nothing is trusted by similarity.
    """

    name = "stalled"
    dims = 16

    def __init__(self) -> None:
        self.released = threading.Event()

    def embed(self, texts):
        if threading.current_thread().name == "monad-recall-index":
            self.released.wait()
        return [hash_vector(text, self.dims) for text in texts]


class SlowEmbedder(KeywordEmbedder):
    """One chunk a call, ``seconds`` each: a slow embedder on a busy machine."""

    chunks_per_call = 1

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def embed(self, texts):
        vectors = super().embed(texts)
        time.sleep(self.seconds)
        return vectors


class QuickEndpoint(ScriptedModel):
    """Answers in ``seconds``: an endpoint as quick as they come, the kernel held all the while."""

    def __init__(self, responses, seconds: float, **kwargs) -> None:
        super().__init__(responses, **kwargs)
        self.seconds = seconds

    def complete(self, messages, tools, on_text=None):
        time.sleep(self.seconds)
        return super().complete(messages, tools, on_text)


def session(store, model, embedder, ip, name="quick", **context) -> Session:
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}, "context": context})
    return Session(
        name, config=config, store=store, model=model, fast_model=WeakSummarizer(), embedder=embedder, shell=ip
    )


def sent_text(call) -> str:
    return "\n".join(str(m["content"]) for m in call.messages)


def test_a_fact_from_turn_one_is_found_by_its_words_in_turn_two_though_no_vector_is_made_yet(store, ip):
    embedder = StalledEmbedder()  # no vector is made during the session: words only
    model = ScriptedModel(
        [
            tool_call("python", {"code": TABLE}),
            "Noted, and here is the table.",
            tool_call("recall", {"query": "Lisbon warehouse code and dock closing"}),
            "It is LX-4471-BARS; the dock closes early on Fridays.",
        ],
        context_window=3_000,
    )
    quick = session(store, model, embedder, ip, retrieval={"enabled": True}, summarize={"keepRecent": 2})
    quick.ask(FACT + " Now print the readings table.")
    quick.cascade.compaction.background.wait()  # the compaction turn one started has folded the fact away
    quick.ask(QUESTION)
    embedder.released.set()
    quick.close()

    first_of_turn_two = model.calls[2]
    assert "river tide" not in sent_text(first_of_turn_two).split("<related_context>")[0]  # folded away
    related = [m["content"] for m in first_of_turn_two.messages if "<related_context>" in str(m["content"])]
    assert len(related) == 1 and "river tide" in related[0]
    recalled = next(m["content"] for m in model.calls[3].messages if m["role"] == "tool")
    assert "river tide" in recalled and "Searched by their words only" in recalled


def test_after_a_restart_retrieval_finds_the_fact_at_once_without_waiting_for_the_whole_history(store, ip):
    words_only = {"recall": {"embedMaxChars": 0}, "summarize": {"keepRecent": 2}}
    turns = [tool_call("python", {"code": TABLE}), "Table shown."] * 12
    first = session(store, ScriptedModel(["Noted.", *turns], context_window=3_000), None, ip, **words_only)
    first.ask(FACT)
    for turn in range(12):
        first.ask(f"Show batch {turn} of the readings.")
    first.close()  # its messages searchable by their words, none with a vector

    embedder = SlowEmbedder(0.05)  # the history's ~150 inputs take 7.5 s: a turn that waited for them takes over 5 s
    model = ScriptedModel(["It is LX-4471-BARS."], context_window=3_000)
    restarted = session(store, model, embedder, ip, retrieval={"enabled": True}, summarize={"keepRecent": 2})
    started = time.monotonic()
    restarted.ask(QUESTION)
    asked_in = time.monotonic() - started
    waiting = restarted.status()["unindexed"]
    restarted.close()

    related = [m["content"] for m in model.calls[0].messages if "<related_context>" in str(m["content"])]
    assert len(related) == 1 and "river tide" in related[0]
    assert waiting > 0  # the history's vectors were still being made: the turn did not wait for them
    assert asked_in < 5


def test_the_backlog_of_vectors_drains_while_turns_keep_coming(store, ip):
    embedder = SlowEmbedder(0.005)
    turns = 20
    script = []
    for _ in range(turns):
        script += [tool_call("python", {"code": "print('\\n'.join(f'row {i}' for i in range(20)))"}), "Shown."]
    model = QuickEndpoint(script, 0.05, context_window=100_000)
    quick = session(store, model, embedder, ip)  # retrieval off: nothing waits for the vectors but their share
    for turn in range(turns):
        quick.ask(f"Show batch {turn}.")
    embedded = len(store.search.embedded_ids("quick", model=embedder.name, dims=embedder.dims))  # no waiting
    stored = len(store.message_ids("quick"))
    quick.close()

    assert embedded >= stored // 10  # embedded while the turns came (a quarter of the ~3 s, less on a busy machine)


def test_a_search_does_not_wait_for_the_vectors_of_what_the_window_shows_whole(store):
    embedder = StalledEmbedder()  # the background never finishes a vector until released
    indexer = RecallIndexer(store, embedder)
    question = Message("user", QUESTION, session="quick", seq=1)
    store.append_messages([question])
    indexer.add("quick", [question], {})
    started = time.monotonic()
    assert indexer.settle("quick", 0.5, skip={question.id})  # the question itself is never a search's answer
    assert time.monotonic() - started < 0.25
    assert not indexer.settle("quick", 0.3)  # asked for it, the search would have waited its whole time
    embedder.released.set()
    indexer.stop(5)
