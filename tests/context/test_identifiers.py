from __future__ import annotations

import json
import time

from monad_notebook.context.compaction.identifiers import (
    MAX_ITEMS_PER_OUTPUT,
    SCAN_CAP_CHARS,
    extract_identifiers,
    message_items,
)
from monad_notebook.messages import Message, ToolCall


def run_python(code: str, call_id: str = "call_1") -> Message:
    return Message("assistant", "", tool_calls=[ToolCall(call_id, "run_python", json.dumps({"code": code}))])


def test_extracts_paths_columns_urls_errors_and_numbers_with_units_from_prose():
    message = Message(
        "user",
        "Load data/sales.csv and /tmp/out/report.parquet, docs at https://example.com/api/v2.html. "
        'The `revenue` column and df["region"] matter. We hit a ValueError: bad shape. '
        "The file is 12.5 MB, it took 3 s, growth was 20.9% and it cost $1,200.",
    )

    items = extract_identifiers([message])

    for expected in (
        "data/sales.csv",
        "/tmp/out/report.parquet",
        "https://example.com/api/v2.html",
        "revenue",
        "region",
        "ValueError",
        "12.5 MB",
        "3 s",
        "20.9%",
        "$1,200",
    ):
        assert expected in items


def test_method_calls_are_not_mistaken_for_files_but_bare_data_files_are():
    items = extract_identifiers([Message("assistant", "I used df.head and np.mean on sales.csv and run.py.")])

    assert "sales.csv" in items
    assert "run.py" in items
    assert "df.head" not in items
    assert "np.mean" not in items


def test_reads_commands_variables_and_columns_from_code_arguments():
    code = (
        "import pandas as pd\n"
        "# load the data\n"
        'sales = pd.read_csv("data/sales.csv")\n'
        "!pip install pyarrow\n"
        'top = sales.groupby("region")["revenue"].sum()\n'
        "x = 1\n"
    )

    items = extract_identifiers([run_python(code)])

    assert 'sales = pd.read_csv("data/sales.csv")' in items
    assert "!pip install pyarrow" in items
    assert 'top = sales.groupby("region")["revenue"].sum()' in items
    assert {"sales", "top", "region", "revenue", "data/sales.csv"} <= set(items)
    assert "# load the data" not in items
    assert "x" not in items


def test_tool_output_gives_errors_paths_numbers_variables_columns_and_pins_and_other_names_last():
    output = Message(
        "tool",
        'Traceback (most recent call last):\nKeyError: \'revenue\'\n{"some_key": "some_value"}\n'
        "memory usage: 3.2 MB\nwrote out/summary.json\n"
        "orders: DataFrame, 4812 rows x 3 columns\n  order_id: int64\n  net_margin: float64\n"
        "Index(['cust_tenure', 'region'], dtype='object')\nSuccessfully installed lightgbm-4.3.0\n",
        tool_call_id="call_1",
        name="describe",
    )

    kinds = dict(message_items(output)[0])

    assert {k: kinds.get(k) for k in ("KeyError", "out/summary.json", "3.2 MB", "orders", "order_id")} == {
        "KeyError": "error",
        "out/summary.json": "file",
        "3.2 MB": "number",
        "orders": "variable",
        "order_id": "column",
    }
    assert (kinds["net_margin"], kinds["cust_tenure"], kinds["lightgbm-4.3.0"]) == ("column", "column", "package")
    assert (kinds["some_key"], kinds["some_value"]) == ("name", "name")


def test_a_chatty_log_cannot_flood_the_ledger_and_keeps_its_errors():
    log = "\n".join(f"step {i} took 512 ms, wrote out/part_{i}.csv, Value{i}Error" for i in range(100))
    items = dict(message_items(Message("tool", log, tool_call_id="c", name="python"))[0])
    assert len(items) == MAX_ITEMS_PER_OUTPUT
    assert {f"Value{i}Error" for i in range(MAX_ITEMS_PER_OUTPUT)} == set(items)


def test_prose_gives_the_names_ids_and_result_numbers_a_user_or_an_answer_states():
    said = Message("assistant", "Holdout AUC is 0.8731 on 4,812,337 rows; churn_flag_90d drives it (see ORD-48213).")

    kinds = dict(message_items(said)[0])

    assert kinds == {
        "0.8731": "number",
        "4,812,337 rows": "number",
        "churn_flag_90d": "name",
        "ORD-48213": "id",
    }


def test_code_names_packages_apart_from_shell_commands_and_assignments_apart_from_commands():
    code = 'df = pd.read_csv("a.csv")\n!pip install lightgbm==4.3.0\n!ls data/raw\n%timeit df.sum()\n'

    kinds = dict(message_items(run_python(code))[1])

    assert kinds['df = pd.read_csv("a.csv")'] == "code"
    assert kinds["!pip install lightgbm==4.3.0"] == "package"
    assert (kinds["!ls data/raw"], kinds["%timeit df.sum()"], kinds["df"]) == ("command", "command", "variable")


def test_identifiers_come_in_order_of_first_appearance_without_duplicates():
    messages = [
        Message("user", "Open `a.csv` then `b.csv`."),
        Message("assistant", "Done with b.csv and a.csv; next c.csv."),
    ]

    assert extract_identifiers(messages) == ["a.csv", "b.csv", "c.csv"]
    assert extract_identifiers(messages) == extract_identifiers(messages)


def test_scanning_stops_at_the_per_message_cap():
    late = Message("tool", "x" * SCAN_CAP_CHARS + " late/file.csv", name="run_python")

    assert extract_identifiers([late]) == []


def test_pathological_text_is_scanned_in_linear_time():
    nasty = [
        Message("user", "a/" * 100_000),
        Message("user", "A" * 200_000 + "Error"),
        Message("user", "1," * 100_000),
        Message("tool", "`" * 150_000 + "." * 50_000, name="t"),
        run_python("f(" * 100_000),
    ]

    started = time.perf_counter()
    extract_identifiers(nasty)

    assert time.perf_counter() - started < 3


def test_a_command_written_out_in_a_sentence_is_kept_whole_up_to_where_prose_resumes():
    said = Message("user", "To backfill the refund data, run make job-126 TARGET=wd. Then python is fine.")
    answered = Message("assistant", "I ran python jobs/export_churn.py --since 2024-05-01 to export the churn data.")

    assert ("make job-126 TARGET=wd", "command") in message_items(said)[0]
    assert ("python jobs/export_churn.py --since 2024-05-01", "command") in message_items(answered)[0]
    assert not any(kind == "command" for _, kind in message_items(Message("user", "We use python for it."))[0])


def test_a_command_echoed_in_a_tool_output_is_a_command():
    output = Message("tool", "$ make job-42 TARGET=w1    # backfill: ok\n>>> df.shape\n(10, 2)", name="python")

    kinds = dict(message_items(output)[0])

    assert (kinds["make job-42 TARGET=w1"], kinds["df.shape"]) == ("command", "command")
