"""The LoCoMo benchmark stores a conversation as a session would and scores a question by its evidence turns."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.locomo import (
    HELD_OUT,
    LICENSE,
    SOURCE,
    TUNING,
    VECTORS,
    WORDS,
    Question,
    conversation,
    load,
    measure,
    other_rankings,
    table,
)
from monad_notebook.context.recall.search import STEPS

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_2_date_time": "3:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "And the trip?"}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "Look at this!", "blip_caption": "a photo of a dog"},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Cute dog."},
        ],
    },
    "qa": [
        {"question": "What did Ann show?", "answer": "a dog", "evidence": ["D1:1"], "category": 4},
        {"question": "Who asked?", "answer": "Bo", "evidence": ["D1:2; D2:01", "D9:9"], "category": 1},
        {"question": "Unanswerable?", "answer": "", "evidence": [], "category": 5},
    ],
}


def said(speaker: str, dialog: str, text: str, **photo: str) -> dict:
    return {"speaker": speaker, "dia_id": dialog, "text": text, **photo}


TWO_WEEKS = {
    "sample_id": "conv-y",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            said(
                "Ann", "D1:1", "I adopted a beagle puppy last week, his name is Biscuit!", blip_caption="a dog asleep"
            ),
            said("Bo", "D1:2", "Congratulations! I finally finished painting my kitchen yellow."),
            said("Ann", "D1:3", "Lovely. I start my new job at the bakery on Monday."),
        ],
        "session_2_date_time": "3:00 pm on 19 May, 2023",
        "session_2": [
            said("Bo", "D2:1", "How was your first week at the bakery?"),
            said("Ann", "D2:2", "Exhausting: the ovens are lit at four in the morning."),
            said("Bo", "D2:3", "I signed up for the Chicago marathon in October."),
        ],
    },
    "qa": [
        {"question": "What is the name of Ann's puppy?", "evidence": ["D1:1"], "category": 4},
        {"question": "What colour did Bo paint his kitchen?", "evidence": ["D1:2"], "category": 4},
        {
            "question": "Where does Ann work, and when are the ovens lit there?",
            "evidence": ["D1:3", "D2:2"],
            "category": 1,
        },
        {"question": "Which marathon did Ann sign up for?", "evidence": ["D2:3"], "category": 5},
    ],
}


@pytest.mark.slow
def test_each_question_is_asked_of_the_recall_service_over_a_real_store_and_scored_by_the_turns_it_returns(tmp_path):
    conv = conversation(TWO_WEEKS)
    args = argparse.Namespace(k=[1, 10], steps=list(STEPS), sides=True, ablate=False)

    latencies = measure(conv, args, None, tmp_path)

    puppy, kitchen, bakery, marathon = conv.questions
    assert puppy.found[1] == ["D1:1"] and kitchen.found[1] == ["D1:2"] and marathon.found[1] == ["D2:3"]
    assert bakery.found[1][0] in bakery.evidence and bakery.recall(10) == 1.0  # two turns: half of it at k = 1
    assert set(puppy.found[10]) == set(conv.dialog_of.values())  # six turns: all of them at k = 10
    assert puppy.found[WORDS][0] == "D1:1" and puppy.found[VECTORS][0] == "D1:1"
    rows = table(conv.questions, [1, 10], "tuning")
    assert rows[2] == "| k = 1, monad `recall` | 100.0 | 50.0 | – | – | 100.0 | 83.3 | 87.5 |"
    assert (
        "Evidence turns in one side's top 10: 5; of them not in recall's top 10: 0."
        in other_rankings(conv.questions)[-1]
    )
    assert len(latencies) == len(conv.questions)  # timed at k = 10 only


def test_a_conversation_is_stored_in_session_order_with_speaker_a_as_the_user_and_its_photos_described():
    conv = conversation(SAMPLE)

    stored = [(m.role, m.content, m.seq) for batch in conv.messages for m in batch]
    assert stored == [
        ("user", "Ann: Look at this!\n[shared a photo: a photo of a dog]", 0),
        ("assistant", "Bo: Cute dog.", 1),
        ("assistant", "Bo: And the trip?", 2),
    ]
    assert [len(batch) for batch in conv.messages] == [2, 1]  # one write per LoCoMo session
    assert sorted(conv.dialog_of.values()) == ["D1:1", "D1:2", "D2:1"]
    assert conversation(SAMPLE, captions=False).messages[0][0].content == "Ann: Look at this!"


def test_evidence_ids_are_read_as_written_where_the_turn_exists_and_a_question_with_none_is_left_out():
    conv = conversation(SAMPLE)

    assert [(q.category, q.evidence) for q in conv.questions] == [
        ("single-hop", {"D1:1"}),
        ("multi-hop", {"D1:2", "D2:1"}),  # "D2:01" is turn 1; "D9:9" names no turn of this conversation
    ]
    assert conv.left_out == 1


def test_recall_at_k_is_the_share_of_the_evidence_in_the_first_k_and_the_paper_is_beside_ours():
    question = Question("conv-x", "Who asked?", "multi-hop", {"D1:2", "D2:1"}, {10: ["D1:1", "D1:2", "D2:1"]})

    assert question.recall(2, 10) == 0.5 and question.recall(10) == 1.0
    rows = table([question], [10], "tuning")
    assert rows[2].startswith("| k = 10, monad `recall` | – | 100.0 |")
    assert rows[3] == "| k = 10, paper (DRAGON) | 77.7 | 46.6 | 77.3 | 40.8 | 54.7 | – | 66.2 |"


def test_the_halves_are_fixed_apart_and_a_missing_dataset_says_where_it_comes_from(tmp_path):
    assert len(TUNING) == len(HELD_OUT) == 5 and not set(TUNING) & set(HELD_OUT)
    with pytest.raises(SystemExit) as missing:
        load(tmp_path / "locomo10.json")
    assert SOURCE in str(missing.value) and LICENSE in str(missing.value) and "--data PATH" in str(missing.value)
