"""The reference trace: a long, tool-heavy data-exploration session with planted identifiers.

Every strategy in ``reference_trace.py`` replays this same trace, so their token counts and
what they still remember at the end are comparable. The trace is deterministic for a given
seed and step count. Identifiers that a later step would need verbatim (paths, names,
commands, URLs, error types, numbers with units) are planted once, early, in the kinds of
places they occur in real sessions: the user's request, the agent's code, the head of a
short output and the middle of a long one (the part truncation hides).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

COLUMNS = [
    *("order_id", "customer_id", "region", "product_sku", "order_date", "ship_date", "qty", "unit_price"),
    *("discount_pct", "channel", "warehouse_id", "returned", "margin_usd", "tax_usd"),
]
REGIONS = ["North", "South", "East", "West", "Central", "Overseas"]
CHANNELS = ["web", "store", "partner", "phone"]
REQUESTS = [
    "Load the quarterly order extracts and check the schema against last quarter.",
    "Find out why the join with the customer table drops rows.",
    "Profile the numeric columns and flag outliers in unit_price and qty.",
    "Look at the ETL logs from last night's run and tell me what failed.",
    "Compare return rates by region and channel.",
    "Read the pipeline config and the loader module; is the date parsing right?",
    "Build a monthly margin table per warehouse.",
    "Check the discount distribution for the partner channel.",
    "Re-run the cleaning steps and verify the row counts at each stage.",
    "Summarize what we know so far about the revenue gap.",
]
ERRORS = [
    ("KeyError", "'ship_dt'"),
    ("ValueError", "could not convert string to float: 'N/A'"),
    ("TypeError", "unsupported operand type(s) for -: 'str' and 'Timestamp'"),
    ("MemoryError", "Unable to allocate 2.31 GiB for an array with shape (310000000,) and data type int64"),
    ("FileNotFoundError", "[Errno 2] No such file or directory: 'data/tmp/stage_3.parquet'"),
]
KIND_WEIGHTS = {
    "csv_head": 15,
    "dataframe": 15,
    "describe": 8,
    "info": 5,
    "traceback": 12,
    "file_read": 15,
    "log": 15,
    "groupby": 15,
}


@dataclass
class Planted:
    """One identifier a later step might need verbatim, and where it was put."""

    value: str
    kind: str  # path | name | command | url | error | number
    step: int  # the tool step it belongs to (1-based); user/answer plants use the turn's first step
    carrier: str  # user | note | code | output-head | output-middle | output-tail
    probe: str = ""  # a question naming its context, not the identifier


@dataclass
class TraceStep:
    index: int  # 1-based, over the whole trace
    kind: str
    code: str  # what the agent ran, as it appears in the tool call's arguments
    note: str  # the assistant's short text before the call
    output: str

    @property
    def call_id(self) -> str:
        return f"call_s{self.index:04d}"


@dataclass
class TraceTurn:
    user: str
    steps: list[TraceStep]
    answer: str


@dataclass
class Trace:
    turns: list[TraceTurn]
    planted: list[Planted] = field(default_factory=list)

    @property
    def steps(self) -> list[TraceStep]:
        return [step for turn in self.turns for step in turn.steps]

    def output_chars(self) -> int:
        return sum(len(step.output) for step in self.steps)


# --- output generators -----------------------------------------------------------------


def _value(rng: random.Random, column: str, row: int) -> str:
    if column == "order_id":
        return f"O-{1_000_000 + row * 7 + rng.randrange(7)}"
    if column == "customer_id":
        return f"C{rng.randrange(10_000, 99_999)}"
    if column == "region":
        return rng.choice(REGIONS)
    if column == "channel":
        return rng.choice(CHANNELS)
    if column == "product_sku":
        return f"SKU-{rng.randrange(100, 999)}-{rng.choice('ABCDEFGH')}"
    if column in ("order_date", "ship_date"):
        return f"2024-{rng.randrange(7, 10):02d}-{rng.randrange(1, 29):02d}"
    if column == "returned":
        return rng.choice(["False", "False", "False", "True"])
    if column in ("qty", "warehouse_id"):
        return str(rng.randrange(1, 60))
    return f"{rng.uniform(0, 900):.2f}"


def _table(rng: random.Random, rows: int, columns: list[str], *, sep: str | None = None) -> str:
    """A CSV block (``sep``) or a right-aligned DataFrame repr, the two shapes tables take in tool output."""
    data = [[_value(rng, c, r) for c in columns] for r in range(rows)]
    if sep is not None:
        return "\n".join([sep.join(columns), *(sep.join(row) for row in data)])
    index = [str(r) for r in range(rows)]
    widths = [max(len(c), *(len(row[i]) for row in data)) for i, c in enumerate(columns)]
    pad = max(len(i) for i in index)
    lines = [" " * pad + "  " + "  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    for label, row in zip(index, data, strict=True):
        lines.append(label.ljust(pad) + "  " + "  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))
    lines.append(f"\n[{rows} rows x {len(columns)} columns]")
    return "\n".join(lines)


def _describe(rng: random.Random) -> str:
    numeric = ["qty", "unit_price", "discount_pct", "margin_usd", "tax_usd"]
    stats = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
    lines = ["       " + "  ".join(c.rjust(13) for c in numeric)]
    for stat in stats:
        lines.append(stat.ljust(7) + "  ".join(f"{rng.uniform(0, 5000):13.6f}" for _ in numeric))
    return "\n".join(lines)


def _info(rng: random.Random, name: str) -> str:
    lines = [f"<class 'pandas.core.frame.DataFrame'>  # {name}", f"RangeIndex: {rng.randrange(10**5, 10**6)} entries"]
    lines.append(f"Data columns (total {len(COLUMNS)} columns):")
    lines.append(" #   Column         Non-Null Count   Dtype  ")
    for i, column in enumerate(COLUMNS):
        dtype = "object" if column in ("region", "channel", "product_sku", "customer_id", "order_id") else "float64"
        lines.append(f" {i:<3} {column:<14} {rng.randrange(90_000, 99_999)} non-null   {dtype}")
    lines.append(f"memory usage: {rng.uniform(10, 90):.1f}+ MB")
    return "\n".join(lines)


def _traceback(rng: random.Random, error: tuple[str, str]) -> str:
    frames = []
    for depth in range(rng.randrange(4, 9)):
        module = rng.choice(["pandas/core/frame.py", "pandas/core/indexes/base.py", "pipeline/clean.py", "loader.py"])
        frames.append(
            f'  File "/opt/conda/lib/python3.11/site-packages/{module}", line {rng.randrange(40, 4000)}, in f{depth}\n'
            f"    result = self._engine.get_loc(casted_key{depth})"
        )
    return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{error[0]}: {error[1]}"


def _source_file(rng: random.Random, lines: int) -> str:
    out = ['"""Loader for the quarterly order extracts."""', "import pandas as pd", "import numpy as np", ""]
    for i in range(lines // 6):
        column = rng.choice(COLUMNS)
        out += [
            f"def step_{i}(df: pd.DataFrame) -> pd.DataFrame:",
            f'    """Normalise {column} (see ticket DATA-{rng.randrange(100, 999)})."""',
            f'    df["{column}"] = df["{column}"].fillna({rng.randrange(0, 9)})',
            f'    df = df[df["{column}"].notna()]',
            "    return df",
            "",
        ]
    return "\n".join(out)


def _log(rng: random.Random, lines: int) -> str:
    levels = ["INFO"] * 8 + ["WARNING", "DEBUG"]
    out = []
    for i in range(lines):
        stage = rng.choice(["extract", "clean", "join", "aggregate", "export"])
        out.append(
            f"2024-10-0{rng.randrange(1, 9)}T0{rng.randrange(0, 9)}:{i % 60:02d}:{rng.randrange(0, 60):02d} "
            f"{rng.choice(levels):<7} etl.{stage}: processed batch {i} "
            f"({rng.randrange(1000, 9999)} records, {rng.randrange(5, 900)} ms)"
        )
    return "\n".join(out)


def _groupby(rng: random.Random) -> str:
    lines = ["region    channel   orders   return_rate   margin_usd"]
    for region in REGIONS:
        for channel in rng.sample(CHANNELS, 2):
            lines.append(
                f"{region:<9} {channel:<9} {rng.randrange(100, 9000):>6}   {rng.uniform(0, 0.3):>11.4f}"
                f"   {rng.uniform(1e3, 1e6):>10.2f}"
            )
    return "\n".join(lines)


def _make_output(rng: random.Random, kind: str) -> tuple[str, str]:
    """(code, output) of one tool step of ``kind``."""
    if kind == "csv_head":
        return "!head -n 20 data/extracts/orders.csv", _table(rng, 20, COLUMNS[:9], sep=",")
    if kind == "dataframe":
        rows = rng.randrange(30, 70)
        return f"orders.sample({rows})", _table(rng, rows, rng.sample(COLUMNS, 9))
    if kind == "describe":
        return "orders.describe()", _describe(rng)
    if kind == "info":
        return "orders.info()", _info(rng, "orders")
    if kind == "traceback":
        return "orders['ship_dt'] - orders['order_date']", _traceback(rng, rng.choice(ERRORS))
    if kind == "file_read":
        return "print(open('pipeline/loader.py').read())", _source_file(rng, rng.randrange(80, 1400))
    if kind == "log":
        return "!tail -n 600 logs/etl_nightly.log", _log(rng, rng.randrange(60, 600))
    return "orders.groupby(['region', 'channel']).agg(...)", _groupby(rng)


# --- planting --------------------------------------------------------------------------

# (value, kind, carrier, step offset within the planting span, what the text next to it says, probe)
# The probe names the context, never the identifier: what a model that forgot it would ask.
PLANTS: list[tuple[str, str, str, int, str, str]] = [
    (
        "data/raw/sales_2024_q3.csv",
        "path",
        "user",
        0,
        "the raw Q3 sales export is",
        "which file held the raw third-quarter sales export?",
    ),
    (
        "https://data.example.org/exports/q3/sales.parquet",
        "url",
        "user",
        0,
        "the public mirror of the sales data is",
        "where is the public copy of the sales data published?",
    ),
    (
        "df_orders_clean",
        "name",
        "code",
        1,
        "deduplicated orders table",
        "what is the deduplicated orders table called?",
    ),
    (
        "pip install pyarrow==17.0.0",
        "command",
        "code",
        2,
        "pin the parquet engine",
        "how did we pin the parquet engine version?",
    ),
    (
        "net_revenue_eur",
        "name",
        "output-head",
        2,
        "revenue net of tax in euros, column",
        "which column has revenue after tax in euros?",
    ),
    ("12.7 MB", "number", "output-head", 3, "size of the cleaned extract", "how big was the cleaned extract?"),
    ("SchemaMismatchError", "error", "output-tail", 4, "loader failure type", "what error did the loader fail with?"),
    ("config/etl_settings.yaml", "path", "note", 5, "the ETL settings live in", "where are the ETL settings kept?"),
    (
        "churn_flag_90d",
        "name",
        "output-middle",
        6,
        "ninety-day churn indicator column",
        "which column marks customers who churned within ninety days?",
    ),
    (
        "4,812,337 rows",
        "number",
        "output-middle",
        6,
        "left after the dedup step",
        "how many rows were left after deduplication?",
    ),
    (
        "python scripts/rebuild_index.py --since 2024-07-01",
        "command",
        "code",
        7,
        "rebuild the search index from July",
        "what command rebuilds the search index?",
    ),
    (
        "https://internal.example.com/wiki/RevenueDefinitions",
        "url",
        "output-middle",
        8,
        "revenue definitions wiki page",
        "where are the revenue definitions documented?",
    ),
    (
        "cust_segment_v2",
        "name",
        "output-head",
        9,
        "customer segmentation column, second version",
        "which column holds the new customer segmentation?",
    ),
    (
        "/mnt/shared/exports/ledger_2019-2024.feather",
        "path",
        "output-middle",
        10,
        "historical ledger export",
        "where is the historical ledger export?",
    ),
    (
        "DuplicateKeyWarning",
        "error",
        "output-head",
        11,
        "warning raised on the merge",
        "what warning did the merge raise?",
    ),
    ("2,347 ms", "number", "output-tail", 12, "time of the slowest join", "how long did the slowest join take?"),
    (
        "data/interim/customers_dedup.parquet",
        "path",
        "code",
        13,
        "deduplicated customers",
        "which file holds the deduplicated customers?",
    ),
    (
        "ArrowInvalid",
        "error",
        "output-middle",
        14,
        "arrow conversion failure",
        "what error did the arrow conversion raise?",
    ),
    (
        "93.4%",
        "number",
        "note",
        15,
        "share of orders matched to a customer",
        "what share of orders matched a customer?",
    ),
    (
        "fx_rate_table",
        "name",
        "output-tail",
        16,
        "currency conversion rates table",
        "what is the exchange rate table called?",
    ),
]


def _plant_in_output(output: str, value: str, carrier: str, context: str) -> str:
    lines = output.splitlines()
    line = f"note: {context}: {value}"
    if carrier == "output-head":
        lines.insert(min(2, len(lines)), line)
    elif carrier == "output-tail":
        lines.append(line)
    else:
        lines.insert(len(lines) // 2, line)
    return "\n".join(lines)


def _code_line(value: str, kind: str, context: str) -> str:
    if kind == "command":
        return f"# {context}\n!{value}"
    if kind == "path":
        return f"# {context}\ncustomers = pd.read_parquet({value!r})"
    return f"# {context}\n{value} = orders.drop_duplicates(subset=['order_id'])"


def _plant(turns: list[TraceTurn], plant_span: int) -> list[Planted]:
    """Put every planted identifier into the first ``plant_span`` steps; return where they went."""
    steps = [step for turn in turns for step in turn.steps]
    planted = []
    for value, kind, carrier, offset, context, probe in PLANTS:
        step = steps[min(len(steps) - 1, offset * (plant_span - 1) // 16)]
        if carrier == "user":
            turn = next(t for t in turns if step in t.steps)
            turn.user = f"{turn.user} Note: {context} {value}."
            step = turn.steps[0]
        elif carrier == "note":
            step.note = f"{step.note} Keep in mind: {context} {value}."
        elif carrier == "code":
            step.code = f"{step.code}\n{_code_line(value, kind, context)}"
        else:
            if carrier == "output-middle" and len(step.output) < 60_000:
                filler = _log(random.Random(step.index), 900)
                step.output = f"{step.output}\n{filler}"
            step.output = _plant_in_output(step.output, value, carrier, context)
        planted.append(Planted(value, kind, step.index, carrier, probe))
    return planted


def generate_trace(steps: int = 300, seed: int = 7, steps_per_turn: int = 10) -> Trace:
    """A deterministic trace of ``steps`` tool steps in turns of about ``steps_per_turn``.

    Identifiers are planted in the first tenth of the trace (at least its first 17 steps).
    """
    if steps < 1:
        raise ValueError("a trace needs at least one step")
    rng = random.Random(seed)
    kinds = list(KIND_WEIGHTS)
    weights = list(KIND_WEIGHTS.values())
    turns: list[TraceTurn] = []
    index = 0
    while index < steps:
        count = min(steps - index, max(1, steps_per_turn + rng.randrange(-3, 4)))
        turn_steps = []
        for _ in range(count):
            index += 1
            kind = rng.choices(kinds, weights)[0]
            code, output = _make_output(rng, kind)
            note = f"Step {index}: checking {kind.replace('_', ' ')} next."
            turn_steps.append(TraceStep(index, kind, code, note, output))
        request = REQUESTS[len(turns) % len(REQUESTS)]
        answer = (
            f"Done with this part ({count} tool calls). The outputs are consistent with the previous stage; "
            f"next I will look at {rng.choice(COLUMNS)} by {rng.choice(['region', 'channel', 'warehouse_id'])}."
        )
        turns.append(TraceTurn(request, turn_steps, answer))
    planted = _plant(turns, max(17, steps // 10))
    return Trace(turns, planted)


# --- the trace as chat messages --------------------------------------------------------


def tool_call_message(step: TraceStep) -> dict[str, Any]:
    """The assistant message of a step in OpenAI form: its note and one ``replay`` call."""
    arguments = json.dumps({"step": step.index, "code": step.code})
    return {
        "role": "assistant",
        "content": step.note,
        "tool_calls": [
            {"id": step.call_id, "type": "function", "function": {"name": "replay", "arguments": arguments}}
        ],
    }


def tool_result_message(step: TraceStep) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": step.call_id, "content": step.output}


def replay_events(trace: Trace) -> list[tuple[str, Any]]:
    """The trace in the order an agent loop meets it: ("user", text), ("step", TraceStep), ("answer", text).

    Every "step" and "answer" is preceded by exactly one model request.
    """
    events: list[tuple[str, Any]] = []
    for turn in trace.turns:
        events.append(("user", turn.user))
        events.extend(("step", step) for step in turn.steps)
        events.append(("answer", turn.answer))
    return events
