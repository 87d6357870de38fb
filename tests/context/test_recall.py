"""Recall's search over real LanceDB: chunks, the two rankings fused, and what the window already shows."""

from __future__ import annotations

import random
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook.context.lossless.truncation import truncate_tool_output
from monad_notebook.context.recall.chunks import chunk_spans, embedding_inputs, message_chunks
from monad_notebook.context.recall.indexing import RecallIndexer
from monad_notebook.context.recall.ranking import Passage, fuse, fuse_rankings
from monad_notebook.context.recall.search import STEPS, Recall, focus
from monad_notebook.context.recall.tuning import TUNING
from monad_notebook.errors import ModelError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.provider.local_embedder import LocalEmbedder, local_model_files
from monad_notebook.store.base import EmbeddingHit
from tests.context.embedders import KeywordEmbedder, index

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


def log_output(lines: int, planted: str, at: int) -> str:
    rows = [f"stage {i}: wrote {i * 13} rows to data/tmp/part_{i}.parquet" for i in range(lines)]
    rows[at] = planted
    return "\n".join(rows)


def tool_result(session: str, text: str, call_id: str, seq: int, max_chars: int = 2000) -> Message:
    shown = truncate_tool_output(text, tool_call_id=call_id, max_chars=max_chars, recoverable=True)
    return Message("tool", shown, session=session, seq=seq, turn=1, tool_call_id=call_id, name="python")


def stored_notes(store, count: int) -> list[Message]:
    """``count`` short notes of session "s", stored but not indexed, as a kernel that stopped early leaves them."""
    notes = [Message("user", f"cat note {i}", session="s", seq=i) for i in range(count)]
    store.append_messages(notes)
    return notes


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="ab \n", max_size=3000), st.integers(0, 2999), st.integers(1, TUNING.overlap_chars))
def test_every_identifier_up_to_the_overlap_lies_whole_in_some_chunk(text, at, length):
    at = min(at, max(0, len(text) - length))
    wanted = (at, min(len(text), at + length))
    spans = chunk_spans(text)
    if text[wanted[0] : wanted[1]].strip():
        assert any(start <= wanted[0] and wanted[1] <= end for start, end in spans)
    assert all(0 <= start < end <= len(text) for start, end in spans)


def test_chunking_a_large_output_is_linear():
    started = time.perf_counter()
    spans = chunk_spans("x" * 5_000_000)
    assert time.perf_counter() - started < 5
    assert spans[-1][1] == 5_000_000


def test_a_truncated_result_is_indexed_from_its_saved_full_text_at_the_offsets_read_tool_output_pages(store):
    full = log_output(600, "stage 300: tenure lives in cust_tenure_days_v2", 300)
    message = tool_result("s", full, "call_big", 5)
    store.save_raw_outputs("s", {"call_big": full})

    index(store, None, "s", [message], full_texts={"call_big": full})

    hit = store.search.search_chunks("s", "tenure", 5)[0]
    assert hit.tool_call_id == "call_big" and "cust_tenure_days_v2" in hit.snippet
    assert full[hit.offset : hit.offset + len(hit.snippet)] == hit.snippet
    assert "cust_tenure_days_v2" not in message.content


def test_a_passage_both_searches_find_ranks_before_the_best_of_either():
    def hit(message_id: str) -> EmbeddingHit:
        return EmbeddingHit(message_id, 0.5, message_id)

    fused = fuse([hit("words-only"), hit("both")], [hit("meaning-only"), hit("both")])

    assert fused[0].hit.message_id == "both"
    assert {p.hit.message_id for p in fused} == {"words-only", "both", "meaning-only"}
    both = fused[0]
    assert both.by_words and both.cosine == 0.5


def test_a_passage_one_phrasing_ranks_first_stays_ahead_of_what_every_phrasing_ranks_low():
    def ranking(*ids: str) -> list[Passage]:
        return [Passage(EmbeddingHit(i, 0.4, i), 1.0, cosine=0.4) for i in ids]

    merged = fuse_rankings([ranking("users-words", "a", "b", "c"), ranking("x", "y", "z", "sessions-words")])

    assert [p.hit.message_id for p in merged][:2] == ["users-words", "x"]
    assert {p.hit.message_id for p in merged} == {"users-words", "a", "b", "c", "x", "y", "z", "sessions-words"}
    assert all(p.cosine == 0.4 for p in merged)


def indexed_truncated_result(store, head: str) -> Message:
    """A long log whose line 300 names the tenure column, truncated in the window below ``head``; saved and indexed."""
    full = head + "\n" + log_output(600, "stage 300: tenure lives in cust_tenure_days_v2", 300)
    message = tool_result("s", full, "call_big", 5)
    store.save_raw_outputs("s", {"call_big": full})
    index(store, None, "s", [message], full_texts={"call_big": full})
    return message


def test_the_middle_of_a_truncated_result_in_the_window_is_found_but_its_visible_head_is_not(store):
    message = indexed_truncated_result(store, "tenure report header")

    passages = Recall(store.search, None).search("s", "where is the tenure", 5, window=[message])

    assert [p.hit.offset > 0 for p in passages] == [True]
    assert "cust_tenure_days_v2" in passages[0].hit.snippet


def test_a_truncated_result_whose_visible_head_matches_best_is_still_found_by_its_hidden_middle(store):
    message = indexed_truncated_result(store, "tenure tenure tenure: the tenure report, tenure by tenure")
    head = store.search.search_chunks("s", "tenure", 1)
    assert head[0].offset == 0  # the head, which the window shows, is the best match by words

    passages = Recall(store.search, None).search("s", "tenure", 5, window=[message])

    assert [p.hit.message_id for p in passages] == [message.id]
    assert "cust_tenure_days_v2" in passages[0].hit.snippet


def test_messages_the_window_shows_whole_are_skipped(store):
    said = Message("user", "the churn raw extract is data/raw/churn.parquet", session="s", seq=1)
    index(store, None, "s", [said])
    recall = Recall(store.search, None)

    assert recall.search("s", "churn raw extract", 5, window=[said]) == []
    assert [p.hit.message_id for p in recall.search("s", "churn raw extract", 5)] == [said.id]


def test_without_an_embedder_recall_searches_by_words_alone(store):
    messages = [Message("user", t, session="s", seq=i) for i, t in enumerate(["cat nap", "revenue by region"])]
    index(store, None, "s", messages)

    passages = Recall(store.search, None).search("s", "regional revenue", 5)

    assert [p.hit.snippet for p in passages] == ["revenue by region"]
    assert passages[0].cosine is None


def test_rows_of_one_kind_of_table_give_way_to_a_passage_of_another_kind_and_none_is_dropped(store):
    tables = [
        "region store margin revenue\n0 North 12.5 4410\n1 South 9.1 3120",
        "store region revenue margin\n0 West 11.0 5120\n1 East 7.4 2210",
        "margin revenue store region\n0 Central 10.2 3300\n1 Coast 8.8 1900",
    ]
    note = "the pricing group of each store is in column pricing_segment_9"
    outputs = [tool_result("s", text, f"c{i}", i) for i, text in enumerate([*tables, note])]
    index(store, None, "s", outputs)
    recall = Recall(store.search, None)
    question = "store revenue margin region pricing group"

    three = [p.hit.snippet for p in recall.search("s", question, 3)]
    four = [p.hit.snippet for p in recall.search("s", question, 4)]

    assert three[1] == note and three[0] in tables and three[2] in tables  # the note ranks last by its words
    assert sorted(four) == sorted([*tables, note])


def test_of_two_passages_found_alike_the_one_next_to_a_better_match_comes_first(store):
    said = [
        "We planned the climbing trip to the gorge for weeks.",
        "I finally posted all the photos yesterday evening after dinner.",
        "The soup needs more salt.",
        "Did the printer jam again?",
        "cat photos",
    ]
    index(store, None, "s", [Message("user", t, session="s", seq=i) for i, t in enumerate(said)])
    question = "photos of the climbing trip"

    alone = Recall(store.search, None, steps=[s for s in STEPS if s != "neighbours"]).search("s", question, 2)
    together = Recall(store.search, None).search("s", question, 2)

    assert {p.hit.snippet for p in alone} == {said[0], said[4]}  # by their own words the cat's photos win
    assert {p.hit.snippet for p in together} == {said[0], said[1]}  # the turn after the trip says what it was


def test_a_tool_output_neither_gains_from_nor_lends_to_the_message_next_to_it(store):
    said = "We planned the climbing trip to the gorge for weeks."
    outputs = [tool_result("s", text, f"c{i}", 2 * i + 1) for i, text in enumerate(["photos: 14 files", "cat photos"])]
    index(store, None, "s", [Message("user", said, session="s", seq=0), *outputs])

    passages = Recall(store.search, None).search("s", "photos of the climbing trip", 3)

    assert [p.hit.snippet for p in passages][1:] == ["cat photos", "photos: 14 files"]  # by their own words


@pytest.mark.parametrize("reopened", [False, True], ids=["as it is said", "a session opened again"])
def test_a_reply_is_found_by_the_words_of_what_it_answers_but_not_after_tools_ran(store, reopened):
    embedder = KeywordEmbedder()  # the replies' own words share nothing with the questions
    call = ToolCall("c1", "search_places", '{"near": "station"}')
    steps = [
        [Message("user", "Which train did we take to Lyon?", session="s", seq=0, turn=1)],
        [Message("assistant", "The 7:40 one; it was half empty.", session="s", seq=1, turn=1)],
        [Message("user", "Find a pizza place near the station.", session="s", seq=2, turn=2)],
        [Message("assistant", "", session="s", seq=3, turn=2, tool_calls=[call])],
        [Message("tool", "Da Mario, 200 m", session="s", seq=4, turn=2, tool_call_id="c1", name="search_places")],
        [Message("assistant", "Da Mario is two minutes away.", session="s", seq=5, turn=2)],
    ]
    indexer = RecallIndexer(store, embedder)
    for step in steps:
        store.append_messages(step)
        if not reopened:
            indexer.add("s", step, {})
    if reopened:
        indexer.meet("s")
    assert indexer.flush(timeout=30)
    recall = Recall(store.search, embedder)
    (train,), (reply,), (pizza,), *_, (after_tools,) = steps

    by_train = recall.search("s", "the train to Lyon", 3, window=[train])
    by_pizza = recall.search("s", "a pizza place", 3, window=[pizza])

    assert [(p.hit.message_id, p.hit.snippet) for p in by_train][:1] == [(reply.id, reply.content)]  # in its words
    assert after_tools.id not in {p.hit.message_id for p in by_pizza}  # it answers the tool's output, not the question


def test_a_failed_embedding_leaves_the_words_search_and_a_failed_store_raises(store):
    embedder = KeywordEmbedder()
    messages = [Message("user", "revenue by region", session="s", seq=0)]
    index(store, embedder, "s", messages)
    embedder.fail = True

    assert [p.hit.snippet for p in Recall(store.search, embedder).search("s", "revenue", 5)] == ["revenue by region"]

    class Broken:
        def search_chunks(self, *args: object, **kwargs: object) -> list[EmbeddingHit]:
            raise ModelError("store is down")

    with pytest.raises(ModelError):
        Recall(Broken(), embedder).search("s", "revenue", 5)  # type: ignore[arg-type]


def test_vectors_bring_back_a_paraphrase_with_no_word_in_common(store):
    embedder = KeywordEmbedder()
    messages = [Message("user", t, session="s", seq=i) for i, t in enumerate(["feline", "pizza night"])]
    embedder._vector = lambda text: (
        [1.0, 0, 0, 0, 0, 0, 0.05] if "feline" in text or "cat" in text else [0, 0, 1.0, 0, 0, 0, 0.05]
    )  # type: ignore[method-assign]
    index(store, embedder, "s", messages)

    passages = Recall(store.search, embedder).search("s", "my cat", 1)

    assert [p.hit.snippet for p in passages] == ["feline"] and passages[0].cosine == pytest.approx(1.0, abs=1e-3)


def test_the_snippet_window_holds_the_most_asked_about_words():
    text = "a" * 500 + " churn " + "b" * 100 + " extract raw " + "c" * 900
    start, end = focus(text, ["churn", "raw", "extract"], 200)

    assert "churn" in text[start:end] and "extract raw" in text[start:end] and end - start == 200
    assert focus("short", ["x"], 200) == (0, 5)
    assert focus("z" * 1000, ["absent"], 100) == (0, 100)


def test_prose_and_the_users_words_are_embedded_only_whole():
    prose = "\n".join(f"Step {w}: the {w} stage looked fine, nothing to report." for w in ("one", "two", "three"))
    user = Message("user", "A question\nsaved x -> y.parquet\n" * 3)
    for message in (user, Message("tool", prose, tool_call_id="c")):
        chunks = message_chunks(message)
        assert [t for _, t in embedding_inputs(message, chunks)] == [c.text for c in chunks]


def field_listing(seed: int, planted: str | None = None, lines: int = 60) -> str:
    """A data dictionary as a tool prints it: one line per field, all of one pattern, maybe one line that is not."""
    rng = random.Random(seed)
    kinds, notes = ["int64", "float64", "object"], ["legacy id", "derived value", "free text", "source code"]
    rows = [f"field_{seed}_{i:<20} {rng.choice(kinds)}   {rng.choice(notes)} {i}" for i in range(lines)]
    if planted is not None:
        rows.insert(lines // 2, planted)
    return "\n".join(rows)


def test_a_line_that_stands_out_among_lines_of_one_pattern_is_embedded_on_its_own_too():
    saved = "saved review holdout sample -> s3_exports/x11_q18.parquet"
    output = Message("tool", field_listing(1, saved), tool_call_id="c1", name="python")
    chunks = message_chunks(output)

    texts = [text for _, text in embedding_inputs(output, chunks)]

    assert texts == [c.text for c in chunks] + [saved]  # every chunk whole, as before, and the line alone


def test_each_line_that_stands_out_after_a_table_is_embedded_alone_even_in_its_short_last_chunk():
    rng = random.Random(3)
    rows = [f"{r:<6}" + "  ".join(f"{rng.uniform(0, 900):11.2f}" for _ in range(6)) for r in range(12)]
    footer, saved = "[12 rows x 6 columns]  batch_323", "saved warehouse lookup table -> s3_exports/x60_h14.parquet"
    output = Message("tool", "\n".join([*rows, "", footer, saved]), tool_call_id="c1", name="python")
    chunks = message_chunks(output)
    assert sum(1 for line in chunks[-1].text.splitlines() if line[:1].isdigit()) < 3  # few rows share its chunk

    texts = [text for _, text in embedding_inputs(output, chunks)]

    # Joined, the footer and the saved line drown each other as the rows do: each is embedded on its own.
    assert texts == [c.text for c in chunks] + [footer, saved]


def test_a_standout_line_printed_again_later_in_the_session_is_embedded_once():
    seen: set[int] = set()
    printed = [Message("tool", field_listing(1, "saved x -> out.parquet"), tool_call_id=f"c{n}") for n in range(3)]

    extra = [len(embedding_inputs(m, message_chunks(m), seen)) - len(message_chunks(m)) for m in printed]

    assert extra == [1, 0, 0]


@pytest.mark.skipif(local_model_files() is None, reason="the local extra is not installed")
def test_a_question_in_other_words_finds_the_one_line_that_differs_inside_a_listing(store):
    said = [
        "Batch checked (3 steps); nothing unusual. The payment median came out fine.",
        "Check the payment data for anything new.",
        "The supplier invoices were paid on time.",
        "How much did the marketing spend grow?",
    ]
    messages = [Message("assistant", text, session="s", seq=n, turn=n) for n, text in enumerate(said)]
    for n in range(4, 7):  # the listing with the line between two without: the sentences above are what compete
        planted = "refund total: 2,531,148" if n == 5 else None
        messages.append(Message("tool", field_listing(n, planted), session="s", seq=n, turn=n, tool_call_id=f"c{n}"))
    embedder = LocalEmbedder()
    index(store, embedder, "s", messages, timeout=600)

    passages = Recall(store.search, embedder).search("s", "how much did we pay back in reimbursements?", 3)

    # Embedded only with the field lines around it, the line scores 0.23 and every sentence above comes first.
    found = [p for p in passages if "2,531,148" in p.hit.snippet]
    assert found and found[0].cosine is not None and found[0].cosine > 0.45
    assert "field_5_" in found[0].hit.snippet  # the snippet is the chunk as the output printed it


def test_message_chunks_cover_the_whole_text_in_order():
    text = "\n".join(f"line {i} " + random.Random(i).choice("abc") * 40 for i in range(300))
    message = Message("tool", text, tool_call_id="call_1", name="python", seq=4, turn=2)

    chunks = message_chunks(message)

    assert chunks[0].offset == 0 and chunks[-1].offset + len(chunks[-1].text) == len(text)
    assert all(c.text == text[c.offset : c.offset + len(c.text)] for c in chunks)
    assert {(c.tool_call_id, c.seq, c.turn, c.role) for c in chunks} == {("call_1", 4, 2, "tool")}


@pytest.mark.lance
def test_stopping_the_indexer_drops_queued_work_and_nothing_is_written_afterwards(store):
    embedder = KeywordEmbedder()
    embedder.gate = threading.Event()
    indexer = RecallIndexer(store, embedder)
    indexer.vectors.embed_batch = 2
    indexer.add("s", [Message("user", f"cat note {i}", session="s", seq=i) for i in range(10)], {})
    assert embedder.entered.wait(10)
    indexer.add("s", [Message("user", "queued cat", session="s", seq=99)], {})

    stopper = threading.Thread(target=indexer.stop, kwargs={"timeout": 10})
    stopper.start()
    while not indexer.queue.stopping:
        time.sleep(0.01)
    embedder.gate.set()
    stopper.join(10)
    version = store.tables.table_version("embeddings_7")
    time.sleep(0.3)

    assert store.tables.table_version("embeddings_7") == version
    assert "queued cat" in {h.snippet for h in store.search.search_chunks("s", "queued", 5)}  # its words went at once
    assert len(embedder.calls) == 1
    indexer.add("s", [Message("user", "after stop", session="s", seq=100)], {})
    assert indexer.flush(timeout=1)


@pytest.mark.lance
def test_each_step_is_searchable_by_its_words_at_once_and_back_to_back_steps_share_one_vector_write(store):
    embedder = KeywordEmbedder()
    indexer = RecallIndexer(store, embedder)
    for i in range(3):
        indexer.add("s", [Message("user", f"step {i} cat note", session="s", seq=i)], {})
        assert len(store.search.search_chunks("s", f"step {i}", 5)) >= 1  # no waiting: the words are written
        time.sleep(0.05)
    assert indexer.flush(timeout=10)

    assert store.tables.table_stats()["embeddings_7"]["fragments"] == 1
    assert len(store.search.embedded_ids("s", model=embedder.name, dims=embedder.dims)) == 3


def etl_log(seed: int, planted: str | None = None, lines: int = 300) -> str:
    rng = random.Random(seed)
    rows = [
        f"[etl {seed}] {rng.choice(['extract', 'clean', 'join'])} batch {i}: {rng.randrange(9999)} records"
        f" in {rng.randrange(5, 900)} ms"
        for i in range(lines)
    ]
    if planted is not None:
        rows.insert(lines // 2, planted)
    return "\n".join(rows)


@pytest.mark.skipif(local_model_files() is None, reason="the local extra is not installed")
def test_a_question_in_other_words_finds_the_line_inside_the_middle_of_a_long_saved_output(store):
    planted, value = "exported the quarterly invoices -> out/q3_inv_8812.csv", "out/q3_inv_8812.csv"
    question = "which file got the billing statements for those three months?"
    messages, full_texts = [], {}
    for n in range(3):  # the planted log between two others: every log's chunks score alike for the question
        messages.append(Message("user", "Look at the nightly logs.", session="s", seq=2 * n, turn=n))
        full = full_texts[f"call_{n}"] = etl_log(n, planted if n == 1 else None)
        messages.append(tool_result("s", full, f"call_{n}", 2 * n + 1))
    store.save_raw_outputs("s", full_texts)
    embedder = LocalEmbedder()
    index(
        store, embedder, "s", messages, timeout=600, full_texts=full_texts
    )  # about 230 chunks to embed on a busy machine
    assert value not in messages[3].content

    passages = Recall(store.search, embedder).search("s", question, 6)

    assert any(value in p.hit.snippet and p.hit.tool_call_id == "call_1" for p in passages)


def test_a_request_repeated_many_times_comes_back_once_and_leaves_room_for_the_answer(store):
    asked = [Message("user", "Clean up the date columns.", session="s", seq=i, turn=i) for i in range(8)]
    dictionary = "\n".join(f"field_{i:<24} int64   legacy id {i}" for i in range(40))
    dictionary += "\npayment_date_17              float64   payment date"
    output = Message("tool", dictionary, session="s", seq=9, turn=9, tool_call_id="call_dict", name="python")
    index(store, None, "s", [*asked, output])

    passages = Recall(store.search, None).search("s", "which column has the payment date?", 3)

    snippets = [p.hit.snippet for p in passages]
    assert len(snippets) == len(set(snippets))
    assert any("payment_date_17" in s for s in snippets)


def test_each_chunk_of_a_log_starts_at_a_line_start_so_a_line_stays_with_the_words_that_describe_it():
    text = etl_log(3, "$ make job-4312 TARGET=wa    # retrain the web session data: ok")

    spans = chunk_spans(text)

    assert len(spans) > 10
    assert all(start == 0 or text[start - 1] == "\n" for start, _ in spans)
    line = "$ make job-4312 TARGET=wa    # retrain the web session data: ok"
    assert all(line in text[s:e] for s, e in spans if "retrain the web session" in text[s:e])


def test_a_passage_holding_the_identifier_asked_about_comes_first_when_the_vectors_tie(store):
    notes = [
        Message("user", f"Order ORD-{n} shipped to city {chr(65 + i)} with a damaged pallet.", session="s", seq=i)
        for i, n in enumerate(random.Random(3).sample(range(10_000, 99_999), 20))
    ]
    embedder = KeywordEmbedder()
    index(store, embedder, "s", notes)
    recall = Recall(store.search, embedder)

    for note in notes:
        order = note.content.split()[1]
        assert [p.hit.message_id for p in recall.search("s", f"Where did {order} ship to?", 1)] == [note.id]


def test_history_a_kernel_stored_but_never_indexed_is_found_once_a_new_indexer_meets_the_session(store):
    said = [
        Message("user", f"note {i}: the churn raw extract is data/raw/churn_{i}.parquet", session="s", seq=i)
        for i in range(3)
    ]
    store.append_messages(said)  # a kernel stopped (or crashed) before indexing these
    assert store.search.search_chunks("s", "churn", 5) == []
    embedder = KeywordEmbedder()

    index(store, embedder, "s", [Message("user", "revenue by region", session="s", seq=3)])

    assert {h.message_id for h in store.search.search_chunks("s", "churn raw extract", 5)} == {m.id for m in said}
    assert {m.id for m in said} <= store.search.embedded_ids("s", model=embedder.name, dims=embedder.dims)
    passages = Recall(store.search, embedder).search("s", "where is the churn raw extract", 3)
    assert "data/raw/churn_0.parquet" in " ".join(p.hit.snippet for p in passages)


class RenamedEmbedder(KeywordEmbedder):
    name = "keywords-v2"


def test_after_the_embedding_model_changes_earlier_messages_get_vectors_from_the_new_one(store):
    earlier = stored_notes(store, 4)
    index(store, KeywordEmbedder(), "s", earlier)
    renamed = RenamedEmbedder()

    index(store, renamed, "s", [Message("user", "revenue by region", session="s", seq=4)])

    assert {m.id for m in earlier} <= store.search.embedded_ids("s", model=renamed.name, dims=renamed.dims)
    hits = store.search.search_embeddings("s", renamed.embed(["cat"])[0], 2, model=renamed.name)
    assert hits and hits[0].message_id in {m.id for m in earlier}


@pytest.mark.lance
def test_a_session_whose_history_is_all_indexed_costs_its_new_indexer_no_writes(store):
    earlier = stored_notes(store, 4)
    index(store, KeywordEmbedder(), "s", earlier)
    versions = (store.tables.table_version("recall_text"), store.tables.table_version("embeddings_7"))
    embedder = KeywordEmbedder()

    index(store, embedder, "s", [])

    assert (store.tables.table_version("recall_text"), store.tables.table_version("embeddings_7")) == versions
    assert embedder.calls == []


def test_a_session_reopened_with_recall_on_says_it_is_catching_up_and_then_its_earlier_turns_are_found(store):
    from monad_notebook import Session
    from monad_notebook.cell.status import status_sentences
    from monad_notebook.config import Config
    from monad_notebook.testing import ScriptedModel, tool_call

    off = Config.model_validate({"context": {"recall": {"enabled": False}}})
    first = Session("s", config=off, store=store, model=ScriptedModel(["noted"] * 3, context_window=100_000))
    for i in range(3):
        first.ask(f"cat note {i}: the churn raw extract is data/raw/churn_{i}.parquet")
    first.close()
    embedder = KeywordEmbedder()
    embedder.gate = threading.Event()
    model = ScriptedModel(["ok", tool_call("recall", {"query": "churn raw extract"}), "done"], context_window=100_000)
    folds = Config.model_validate({"context": {"summarize": {"keepRecent": 2}}})
    second = Session("s", config=folds, store=store, model=model, embedder=embedder)

    second.ask("hello again")
    assert embedder.entered.wait(10)
    busy = status_sentences(second.status(), approval="ask", allowed_for_session=False)
    embedder.gate.set()
    second.wait_for_background(30)
    settled = status_sentences(second.status(), approval="ask", allowed_for_session=False)
    assert second.compact()  # the earlier turns leave the window
    second.ask("where was the churn raw extract?")
    second.close()

    assert "by their words only" in busy and "Recall finds" not in settled
    answer = model.calls[-1].messages[-1]["content"]
    assert "data/raw/churn_0.parquet" in answer


def test_after_a_restart_the_status_counts_what_waits_for_its_vectors_and_how_long_it_takes(store):
    from monad_notebook import Session
    from monad_notebook.cell.status import indexing_sentences, status_sentences
    from monad_notebook.config import Config
    from monad_notebook.testing import ScriptedModel

    off = Config.model_validate({"context": {"recall": {"enabled": False}}})
    first = Session("s", config=off, store=store, model=ScriptedModel(["noted"], context_window=100_000))
    first.ask("cat note: the churn raw extract is data/raw/churn.parquet")
    first.close()
    embedder = KeywordEmbedder()
    embedder.gate = threading.Event()  # the earlier history waits for the embedder
    model = ScriptedModel(["ok", "ok"], context_window=100_000)
    second = Session("s", config=Config(), store=store, model=model, embedder=embedder)
    second.ask("hello again")
    assert embedder.entered.wait(10)
    waiting = status_sentences(second.status(), approval="ask", allowed_for_session=False)
    embedder.gate.set()
    second.ask("and now?")
    second.wait_for_background(30)
    settled = status_sentences(second.status(), approval="ask", allowed_for_session=False)
    second.close()

    assert "Recall finds 4 messages by their words only for now" in waiting
    assert "at the present pace" in waiting
    assert "Recall" not in settled
    assert "data/raw/churn.parquet" in "".join(
        h.snippet for h in store.search.search_chunks("s", "churn raw extract", 3)
    )
    assert indexing_sentences({"recall_checking": True}) == [
        "Recall is still comparing this session's earlier history with its index."
    ]
    assert "in about 2 min" in indexing_sentences({"unindexed": 900, "index_eta_seconds": 125.0})[0]


class LearningEmbedder(KeywordEmbedder):
    """Like a remote model of unknown width: ``dims`` is 0 until its first answer."""

    def __init__(self) -> None:
        super().__init__()
        self.dims = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = super().embed(texts)
        self.dims = len(vectors[0]) if vectors else self.dims
        return vectors


@pytest.mark.lance
def test_a_new_kernels_first_step_is_searchable_at_once_while_its_history_is_checked_in_the_background(store):
    earlier = stored_notes(store, 2000)
    index(store, KeywordEmbedder(), "s", earlier)
    indexer = RecallIndexer(store, KeywordEmbedder())
    new = Message("user", "revenue by region", session="s", seq=2000)
    store.append_messages([new])

    indexer.meet("s")
    indexer.add("s", [new], {})

    assert [h.message_id for h in store.search.search_chunks("s", "revenue region", 1)] == [new.id]
    assert indexer.flush(timeout=30)
    assert not indexer.checking and indexer.waiting == 0
    indexer.stop(10)


def test_a_new_kernel_does_not_embed_again_what_a_model_of_unknown_width_already_embedded(store):
    earlier = stored_notes(store, 6)
    index(store, LearningEmbedder(), "s", earlier)
    embedder = LearningEmbedder()

    index(store, embedder, "s", [Message("user", "revenue by region", session="s", seq=6)])

    assert [text for call in embedder.calls for text in call] == ["revenue by region"]


def test_with_words_only_a_new_kernel_reads_no_message_texts_again(store, monkeypatch):
    earlier = stored_notes(store, 6)
    first = RecallIndexer(store, KeywordEmbedder(), embed_max_chars=0)
    first.add("s", earlier, {})
    assert first.flush(timeout=30)
    indexer = RecallIndexer(store, KeywordEmbedder(), embed_max_chars=0)
    loaded: list[object] = []
    original = store.load_messages
    monkeypatch.setattr(store, "load_messages", lambda *a, **k: loaded.append(k) or original(*a, **k))

    indexer.add("s", [], {})
    assert indexer.flush(timeout=30)

    assert loaded == []
