"""The ledger keeps what matters, not what is newest: salience, token budget, where each item was seen."""

from __future__ import annotations

import json

from monad_notebook.context.compaction.ledger import IdentifierLedger, extract_handles, note
from monad_notebook.context.compaction.ledger_text import LEDGER_HEADING, ledger_line, parse_ledger, parse_notes
from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.messages import Message, ToolCall
from tests.context.cascades import make_cascade

COUNTER = TokenCounter("gpt-4o")


class Transcript:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.turn = 0
        self.calls = 0

    def add(self, message: Message) -> Message:
        message.session, message.seq, message.turn = "s", len(self.messages), self.turn
        self.messages.append(message)
        return message

    def user(self, text: str) -> Transcript:
        self.turn += 1
        self.add(Message("user", text))
        return self

    def python(self, code: str, output: str, tool: str = "python") -> Transcript:
        self.calls += 1
        call_id = f"call_{self.calls}"
        self.add(Message("assistant", "", tool_calls=[ToolCall(call_id, tool, json.dumps({"code": code}))]))
        self.add(Message("tool", output, tool_call_id=call_id, name=tool))
        return self

    def answer(self, text: str) -> Transcript:
        self.add(Message("assistant", text))
        return self


def shown(ledger: IdentifierLedger, budget: int = 400, items: int = 200) -> list[str]:
    return ledger.top(budget, items, COUNTER.count_text)[0]


def test_a_file_the_user_named_outlives_two_hundred_files_read_one_per_step():
    t = Transcript().user("The churn raw extract is data/raw/churn_extract_q3.parquet, start there.")
    for i in range(200):
        t.python(f'part_{i} = pd.read_parquet("data/parts/part_{i:03d}.parquet")', f"part_{i}: DataFrame")
    ledger = IdentifierLedger()

    ledger.add_span(t.messages)

    top = shown(ledger, budget=300)
    assert top[0] == "data/raw/churn_extract_q3.parquet"
    assert len(top) < 50


def test_names_that_differ_only_in_digits_share_one_line_and_leave_room_for_the_rest():
    t = Transcript().user("go")
    for i in range(200):
        t.python(f'part_{i} = pd.read_parquet("data/parts/part_{i:03d}.parquet")', f"part_{i}: DataFrame")
    t.python("holdout_frame = pd.read_parquet('data/holdout.parquet')", "holdout_frame: DataFrame")
    ledger = IdentifierLedger()
    ledger.add_span(t.messages)

    items, notes = ledger.top(600, 200, COUNTER.count_text)

    assert "data/parts/part_*.parquet" in items
    assert notes["data/parts/part_*.parquet"] == "200 file names like this, turns 1-1"
    assert sum(i.startswith("data/parts/part_") for i in items) == 2
    assert {"holdout_frame", "data/holdout.parquet"} <= set(items)


def test_what_the_user_named_ranks_over_reported_results_over_code_over_what_tools_printed():
    t = Transcript().user("Use `orders_v2` please.")
    t.python("df_clean = orders_v2.dropna()", "  tenure_days: int64\nmemory usage: 3.2 MB")
    t.answer("The holdout AUC came out at 0.8731.")
    ledger = IdentifierLedger()

    ledger.add_span(t.messages)

    top = shown(ledger)
    order = [top.index(i) for i in ("orders_v2", "0.8731", "df_clean", "tenure_days", "3.2 MB")]
    assert order == sorted(order)


def test_an_open_error_ranks_high_until_a_clean_run_of_the_same_tool_closes_it():
    t = Transcript().user("go").python("load()", "Traceback ...\nSchemaMismatchError: column count differs")
    t.python("x_1 = 1", "ok").python("y_2 = 2", "ok")
    ledger = IdentifierLedger()
    ledger.add_span(t.messages[:3])
    error = ledger.entries["SchemaMismatchError"]
    assert error.open and error.score > ledger.entries["load()"].score
    assert note(error).endswith("id call_1; open")

    ledger.add_span(t.messages[3:5])

    assert not ledger.entries["SchemaMismatchError"].open
    assert ledger.entries["SchemaMismatchError"].score < ledger.entries["x_1"].score


def test_a_recurring_identifier_gains_on_one_seen_once():
    t = Transcript().user("go")
    for i in range(4):
        t.python(f"a_{i} = pd.read_csv('data/shared.csv')", "ok")
    t.python("b = pd.read_csv('data/once.csv')", "ok")
    ledger = IdentifierLedger()

    ledger.add_span(t.messages)

    assert ledger.entries["data/shared.csv"].count == 4
    assert ledger.entries["data/shared.csv"].score > ledger.entries["data/once.csv"].score


def test_the_shown_part_fits_its_token_budget_and_handles_take_at_most_a_quarter():
    t = Transcript().user("go")
    for i in range(60):
        t.python(f"frame_{i} = load({i})", f"loaded table_{i} from data/t_{i}.csv")
    ledger = IdentifierLedger()
    ledger.add_span(t.messages)

    items, notes = ledger.top(500, 500, COUNTER.count_text)

    lines = [ledger_line(i, notes[i]) for i in items]
    assert sum(COUNTER.count_text(line) + 1 for line in lines) <= 500
    handles = [line for line in lines if "read_tool_output id=" in line]
    assert 0 < sum(COUNTER.count_text(line) + 1 for line in handles) <= 125


def test_an_item_written_out_inside_another_of_the_same_message_is_shown_once():
    t = Transcript().user("To retrain, run python jobs/retrain_payment.py --since 2024-09-01 and report.")
    ledger = IdentifierLedger()
    ledger.add_span(t.messages)

    items = shown(ledger)

    assert "python jobs/retrain_payment.py --since 2024-09-01" in items
    assert "jobs/retrain_payment.py" not in items
    assert "jobs/retrain_payment.py" in ledger.entries


def test_each_item_says_where_it_was_seen():
    t = Transcript().user("Load data/a.csv").python("b_frame = 1", "  net_margin: float64", tool="describe")
    ledger = IdentifierLedger()
    ledger.add_span(t.messages)

    _, notes = ledger.top(400, 50, COUNTER.count_text)

    assert notes["data/a.csv"] == "file; user, turn 1"
    assert notes["b_frame"] == "variable; describe call, turn 1"
    assert notes["net_margin"] == "column; describe output, turn 1, id call_1"


class UselessSummarizer:
    def summarize(self, previous: str | None, span: list[Message]) -> str:
        return "## Objective\n- keep going\n"

    def reflect(self, summary: str, target_tokens: int) -> str:
        return summary


def test_the_full_ledger_lives_in_the_store_and_the_summary_shows_its_most_salient_part(store):
    t = Transcript().user("The churn raw extract is data/raw/churn_q3.parquet.")
    for i in range(120):
        t.python(f"step_frame_{i} = load('data/steps/s_{i}.csv')", f"rows_{i}: DataFrame")
    settings = {"summarize": {"reflectAtTokens": 8000, "ledgerMaxItems": 400, "ledgerMaxTokens": 600}}
    cascade, _ = make_cascade(store, "s", t.messages, summarizer=UselessSummarizer(), context=settings)
    for keep in (160, 80, 10):
        assert cascade.compact("soft", keep_recent=keep)
    summary = cascade.window.summary

    shown_items = parse_ledger(summary.text)
    stored = {e.item for e in store.load_ledger("s")}
    block = summary.text.split(LEDGER_HEADING, 1)[1]
    assert COUNTER.count_text(block) <= 600 + 10
    assert shown_items[0] == "data/raw/churn_q3.parquet"
    assert parse_notes(summary.text)[shown_items[0]] == "file; user, turn 1"
    assert {i for i in shown_items if "*" not in i} < stored and len(stored) > 3 * len(shown_items)
    assert "step_frame_0" in stored


def test_what_truncation_hid_is_read_from_the_saved_output_and_ranks_that_outputs_handle():
    hidden = (
        "\n".join(f"[etl] batch {i}: ok" for i in range(200)) + "\nsaved churn holdout -> data/holdout_q3.parquet\n"
    )
    t = Transcript().user("go").python("run()", "[etl] batch 0: ok\n[... 4000 characters omitted ...]\ndone")
    t.python("other()", "[etl] batch 9: ok")
    ledger = IdentifierLedger()

    ledger.add_span(t.messages, raw={"call_1": hidden})

    entry = ledger.entries["data/holdout_q3.parquet"]
    assert (entry.kind, entry.tool_call_id) == ("file", "call_1")
    handles = sorted((e for e in ledger.entries.values() if e.kind == "output"), key=lambda e: -e.score)
    assert handles[0].item == "read_tool_output id=call_1"
    assert handles[0].score > handles[1].score
    assert note(handles[0]) == "python output; holds data/holdout_q3.parquet, turn 1"


def test_folded_results_leave_a_handle_naming_their_exact_id():
    call = ToolCall("call_42", "read_file", '{"path": "data/sales.csv"}')
    result = Message("tool", "rows", tool_call_id="call_42", name="read_file")
    span = [
        Message("assistant", "", tool_calls=[call]),
        result,
        Message("tool", "[REDACTED:github]", tool_call_id="call_43", name="python", redacted=True),
    ]
    assert extract_handles(span) == [("read_tool_output id=call_42", result)]
