"""A question naming a date finds what was said then: the months it names, and recall's ``dated_first``."""

from __future__ import annotations

from datetime import datetime

import pytest

from monad_notebook.context.recall.dates import Month, named_months
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.search import STEPS, Recall
from monad_notebook.messages import Message
from tests.context.embedders import KeywordEmbedder, index

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


@pytest.mark.parametrize(
    ("question", "months"),
    [
        ("What did we find on October 13, 2023?", [Month(10, 2023)]),
        ("the plot from the 3rd of March", [Month(3)]),
        ("What did Gina find on 1 February, 2023?", [Month(2, 2023)]),
        ("the run of 2026-12-03, and the one in July", [Month(12, 2026), Month(7)]),
        ("the numbers in may, and in June and may again", [Month(5), Month(6)]),
        ("May I see the chart again?", []),
        ("we may march on with the plan", []),
        ("rows 2023 to 2025, at 10", []),
        ("the run of 2026-13-40", []),
    ],
)
def test_the_months_a_question_names(question, months):
    assert named_months(question) == months


def _at(month: int, day: int) -> float:
    return datetime(2025, month, day, 10).timestamp()


@pytest.mark.lance
@pytest.mark.parametrize("reopened", [False, True], ids=["indexed as said", "indexed from history later"])
def test_a_question_naming_a_date_finds_what_was_said_that_month_first(store, reopened):
    said = [
        ("Revenue by region: the North is ahead, the South flat.", _at(9, 30)),
        ("Revenue again: the South caught up after the price change.", _at(11, 3)),
        ("Revenue revenue revenue: one more revenue table, by store.", _at(12, 1)),
    ]
    messages = [
        Message("assistant", text, session="s", seq=i, turn=i + 1, created_at=at) for i, (text, at) in enumerate(said)
    ]
    store.append_messages(messages)
    if reopened:  # a kernel that never indexed them: the index is written now, long after they were said
        indexer = RecallIndexer(store, KeywordEmbedder())
        indexer.meet("s")
        assert indexer.flush(timeout=60)
    else:
        index(store, KeywordEmbedder(), "s", messages)
    question = "what did the revenue look like on 3 November 2025?"

    dated = Recall(store.search, KeywordEmbedder()).search("s", question, 3)
    undated = Recall(
        store.search, KeywordEmbedder(), steps=[s for s in STEPS if s not in ("dated_first", "neighbours")]
    ).search("s", question, 3)

    assert [p.hit.message_id for p in dated][:1] == [messages[1].id]
    assert [p.hit.message_id for p in undated][:1] != [messages[1].id]  # its words alone rank it lower
    assert {p.hit.message_id for p in dated} == {m.id for m in messages}  # the others follow, nothing dropped
