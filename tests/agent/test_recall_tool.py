"""The recall tool inside a real session: what the model receives when it asks for something it forgot."""

from __future__ import annotations

import json
import re

import pytest

from monad_notebook import Session
from monad_notebook.agent.tools.base import tool
from monad_notebook.config import Config
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from monad_notebook.testing.scripted import tool_call

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")

PLANTED = "stage 300: the customer tenure in days is kept in column cust_tenure_days_v2"
READ = re.compile(r"read_tool_output\((\{.*?\})\)")


def pipeline_log(stages: range = range(600)) -> str:
    """The log of ``stages``, stage 300's line the planted one."""
    rows = [f"stage {i}: wrote {i * 13} rows to data/tmp/part_{i}.parquet" for i in stages]
    rows[300 - stages.start] = PLANTED
    return "\n".join(rows)


LATE_STAGES = "pipeline stages 150-449"  # stage 300 in its middle, 16,000 characters: half the whole log's chunks


@tool
def show_log(ctx, name: str) -> str:
    """Print a pipeline log.

    Args:
        name: Which log.
    """
    if name == LATE_STAGES:
        return pipeline_log(range(150, 450))
    return pipeline_log() if name == "pipeline" else f"log {name}: " + "nothing happened today. " * 80


def session_with(
    store: LanceStore, script: list, tools: tuple = (), **context: object
) -> tuple[Session, ScriptedModel]:
    config = Config.model_validate(
        {
            "models": {"main": {"contextWindow": 6000}},
            "context": {
                "toolOutput": {"maxChars": 2000},
                "eviction": {"atFraction": 0.2, "keepRecentRounds": 1, "clearAtLeast": 100, "minResultTokens": 50},
                "summarize": {"enabled": False},
                **context,
            },
        }
    )
    model = ScriptedModel(script, context_window=6000)
    return Session("recall", config=config, store=store, model=model, extra_tools=[show_log, *tools]), model


def last_tool_result(model: ScriptedModel) -> str:
    return [m for m in model.calls[-1].messages if m["role"] == "tool"][-1]["content"]


def test_an_identifier_in_the_middle_of_a_truncated_evicted_output_is_found_by_a_paraphrased_question(store):
    question = "which column tells how long customers have been with us?"
    session, model = session_with(
        store,
        [
            tool_call("show_log", {"name": LATE_STAGES}, id="call_log"),
            "The pipeline ran.",
            tool_call("show_log", {"name": "other"}, id="call_other"),
            tool_call("show_log", {"name": "third"}, id="call_third"),
            "Nothing else happened.",
            tool_call("recall", {"query": question}, id="call_recall"),
            "Found it.",
        ],
    )
    session.ask("show me the pipeline log")
    session.ask("and the other logs")
    session.cascade.wait(60)
    first = store.load_messages("recall")[2]
    assert first.tool_call_id == "call_log" and "cust_tenure_days_v2" not in first.content
    assert session.window.messages[2].evicted

    session.ask("remind me where the tenure is kept")

    answer = last_tool_result(model)
    assert "cust_tenure_days_v2" in answer
    assert "cust_tenure_days_v2" not in json.dumps(model.calls[-2].messages)
    read = json.loads(READ.search(answer).group(1))
    assert read["id"] == "call_log"
    assert PLANTED in store.get_raw_output("recall", "call_log")[read["offset"] : read["offset"] + read["limit"]]


def test_an_answer_stays_within_its_budget_and_says_where_each_passage_came_from(store):
    script = [tool_call("show_log", {"name": f"run{i}"}, id=f"call_{i}") for i in range(8)]
    session, model = session_with(
        store, [*script, "Logged.", tool_call("recall", {"query": "what happened today in the logs"}), "ok"]
    )
    session.ask("show eight logs")
    session.cascade.wait(60)

    session.ask("what happened?")

    answer = last_tool_result(model)
    entries = re.findall(r"^\d+\. (.*)\n   (.*)$", answer, re.M)
    assert 1 <= len(entries) <= 6
    assert all(header.startswith("turn 1, show_log output") for header, _ in entries)
    assert all(len(snippet) <= 320 + 2 for _, snippet in entries)
    assert TokenCounter("gpt-4o").count_text(answer) <= 1200


def test_nothing_found_and_a_blank_question_get_one_clear_line(store):
    session, model = session_with(
        store,
        [
            tool_call("recall", {"query": "zebra migration patterns"}, id="c1"),
            tool_call("recall", {"query": "  "}, id="c2"),
            "ok",
        ],
    )
    session.ask("hello")

    results = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    assert results[0].startswith('Nothing earlier in this session matches "zebra migration patterns"; try other words')
    assert results[1] == "error: recall: describe what you are looking for in a few words"


FIELDS = [
    "order discount",
    "shipping cost",
    "refund amount",
    "product category",
    "store region",
    "payment method",
    "invoice date",
    "delivery delay",
    "basket size",
    "coupon code",
    "return reason",
    "warehouse stock",
]


@tool
def show_dictionary(ctx, batch: int) -> str:
    """Print one batch's data dictionary.

    Args:
        batch: Which batch.
    """
    return "\n".join(f"the {f} for batch {batch} is kept in column {f.replace(' ', '_')}_{batch}" for f in FIELDS)


def test_a_question_in_another_language_is_found_through_the_phrasing_the_agent_adds_in_the_sessions_words(store):
    question = "¿en qué columna está la antigüedad del cliente?"
    script = [
        tool_call("show_log", {"name": "pipeline"}, id="call_log"),
        *(tool_call("show_dictionary", {"batch": b}) for b in range(20)),
        "Shown.",
        tool_call("recall", {"query": question}),
        tool_call("recall", {"query": question, "also": ["customer tenure in days"]}),
        "Found it.",
    ]
    session, _ = session_with(store, script, (show_dictionary,), recall={"maxResults": 2})
    session.ask("show the pipeline log and every batch's dictionary")
    session.cascade.wait(60)

    session.ask("¿dónde guardamos la antigüedad del cliente?")

    stored = [m.content for m in store.load_messages(session.name) if m.role == "tool"]  # whole, never cleared
    alone, with_also = stored[-2:]
    assert question in alone and "cust_tenure_days_v2" not in alone
    assert "cust_tenure_days_v2" in with_also
    assert with_also.startswith(f'2 earlier passage(s) for "{question}" / "customer tenure in days", best first')


def test_other_phrasings_that_are_too_many_blank_or_not_text_get_one_clear_line(store):
    asked = [
        {"query": "the churn extract", "also": ["a b c d", "churn", "attrition", "leavers"]},
        {"query": "the churn extract", "also": ["  "]},
        {"query": "the churn extract", "also": [7]},
    ]
    session, model = session_with(store, [*(tool_call("recall", a) for a in asked), "ok"])
    session.ask("hello")

    results = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    assert results == [
        "error: recall: 'also' takes at most 3 other phrasings, got 4",
        "error: recall: describe what you are looking for in a few words in each of 'also'",
        "error: recall: 'also' takes strings, got int",
    ]


def test_with_recall_off_the_tool_is_not_offered_and_nothing_is_indexed(store):
    session, model = session_with(store, ["hi"], recall={"enabled": False})
    session.ask("hello")
    session.cascade.wait(10)

    assert "recall" not in {t["function"]["name"] for t in model.calls[0].tools}
    assert "recall_text" not in store.tables.table_stats()


def test_related_context_brings_back_the_middle_of_an_evicted_output_for_a_name_the_request_gives(store):
    session, model = session_with(
        store,
        [
            tool_call("show_log", {"name": LATE_STAGES}, id="call_log"),
            tool_call("show_log", {"name": "other"}, id="call_other"),
            tool_call("show_log", {"name": "third"}, id="call_third"),
            "Shown.",
            "It is the tenure column.",
        ],
        retrieval={"enabled": True},
    )
    session.ask("show the logs")
    session.cascade.wait(60)

    session.ask("what did stage 300 say about cust_tenure_days_v2?")

    user = [m for m in model.calls[-1].messages if m["role"] == "user"][-1]["content"]
    block = user.split("<related_context>", 1)[1]
    assert PLANTED in block and "tool show_log, turn 1" in block


def test_closing_a_session_right_after_a_turn_still_indexes_that_turn(store):
    session, _ = session_with(store, ["Noted."], recall={"embedMaxChars": 0})
    session.ask("the churn raw extract is data/raw/churn_q3.parquet")

    session.close()

    hits = store.search.search_chunks("recall", "churn raw extract", 5)
    assert [h.snippet for h in hits] == ["the churn raw extract is data/raw/churn_q3.parquet"]


class FakeRecall:
    """Stands for the session's recall: records what it was asked, finds nothing, reports ``lag``."""

    snippet_chars = 320

    def __init__(self, lag: dict | None = None) -> None:
        self.lag = lag or {}
        self.searched: list[tuple[str, list[str]]] = []

    def search(self, question: str, also: list[str] = ()) -> list:
        self.searched.append((question, list(also)))
        return []

    def indexing(self) -> dict:
        return self.lag


def test_an_answer_says_what_it_could_not_search_yet_and_what_it_searched_by_words_only():
    from pathlib import Path

    from monad_notebook.agent.tools.base import ToolContext
    from monad_notebook.agent.tools.recall import TOOLS

    recall_tool = next(t for t in TOOLS if t.name == "recall")
    lag = {"unindexed": 5, "unsearchable": 3}
    ctx = ToolContext("s", {}, Path.cwd(), recall=FakeRecall(lag))  # type: ignore[arg-type]
    answer = recall_tool.run(ctx, {"query": "the churn extract"})
    assert "Not searched yet: 3 stored message(s) are still being indexed" in answer
    assert "Searched by their words only: 2 recent message(s)" in answer
    lag.update(unindexed=0, unsearchable=0)
    answer = recall_tool.run(ctx, {"query": "the churn extract"})
    assert "Not searched yet" not in answer and "words only" not in answer


def test_long_other_phrasings_are_cut_so_what_was_asked_leaves_room_for_the_passages():
    from pathlib import Path

    from monad_notebook.agent.tools.base import ToolContext
    from monad_notebook.agent.tools.recall import TOOLS

    recall_tool = next(t for t in TOOLS if t.name == "recall")
    recall = FakeRecall()
    ctx = ToolContext("s", {}, Path.cwd(), recall=recall)  # type: ignore[arg-type]
    answer = recall_tool.run(ctx, {"query": "churn " * 400, "also": ["customers who left " * 100] * 3})

    question, also = recall.searched[0]
    assert len(question) == 1000 and [len(a) for a in also] == [200, 200, 200]
    assert TokenCounter("gpt-4o").count_text(answer) <= 500
