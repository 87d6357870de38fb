from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.agent.tools.recovery import TOOLS, read_tool_output
from monad_notebook.context.lossless.truncation import truncate_tool_output
from monad_notebook.errors import ToolError
from monad_notebook.messages import Message, ToolCall
from monad_notebook.redaction.redactor import Redactor

HEADER = re.compile(r"\A\[read_tool_output id=(\".*?\") chars (\d+)\.\.(\d+) of (\d+)\]\n")
NEXT = re.compile(r"\n\[more remains: read_tool_output\((\{.*\})\)\]\Z")
CALL = re.compile(r"read_tool_output\((\{.*?\})\)")


class RawOutputStore:
    """The raw-output part of the Store protocol, in memory, keyed by (session, tool_call_id)."""

    def __init__(self) -> None:
        self.outputs: dict[tuple[str, str], str] = {}
        self.lookups: list[tuple[str, str]] = []
        self.calls: dict[tuple[str, str], list[Message]] = {}

    def save_raw_outputs(self, session: str, outputs: dict[str, str]) -> None:
        self.outputs.update({(session, k): v for k, v in outputs.items()})

    def get_raw_output(self, session: str, tool_call_id: str) -> str | None:
        self.lookups.append((session, tool_call_id))
        return self.outputs.get((session, tool_call_id))

    def call_messages(self, session: str, tool_call_id: str) -> list[Message]:
        return self.calls.get((session, tool_call_id), [])


@pytest.fixture
def store() -> RawOutputStore:
    return RawOutputStore()


def context(store: RawOutputStore, *, session: str = "analysis", cap: int | None = None) -> ToolContext:
    extra = {} if cap is None else {"output_max_chars": cap}
    return ToolContext(session=session, namespace={}, root=Path.cwd(), store=store, **extra)


def call(ctx: ToolContext, **arguments) -> str:
    """Run the tool the way the agent loop does: JSON arguments validated against its schema."""
    return read_tool_output.run(ctx, json.loads(json.dumps(arguments)))


def big_output() -> str:
    rows = [f"{i},région-{i % 7},{i * 3.5:.2f},😀" if i % 50 else f"ERROR row {i} failed" for i in range(12000)]
    return "\n".join(rows) + "\n"


def test_paging_through_a_big_output_reconstructs_it_exactly(store):
    raw = big_output()
    store.save_raw_outputs("analysis", {"call_1": raw})
    ctx = context(store)
    pieces, answers = [], []
    arguments = {"id": "call_1", "offset": 0}
    while arguments:
        answer = call(ctx, **arguments)
        answers.append(answer)
        header = HEADER.match(answer)
        start, end, total = (int(g) for g in header.groups()[1:])
        assert start == arguments["offset"] and total == len(raw)
        pieces.append(answer[header.end() : header.end() + end - start])
        following = NEXT.search(answer)
        arguments = json.loads(following.group(1)) if following else None
        assert (following is None) == (end == total)
    assert "".join(pieces) == raw
    assert len(answers) == -(-len(raw) // 20000)
    assert all(len(a) <= 24000 for a in answers)


def test_the_call_quoted_by_a_truncation_marker_pages_the_middle_back(store):
    raw = big_output()
    shown = truncate_tool_output(raw, tool_call_id="call_7", recoverable=True)
    store.save_raw_outputs("analysis", {"call_7": raw})
    arguments = json.loads(CALL.search(shown).group(1))
    offset, limit = arguments["offset"], arguments["limit"]
    middle = []
    while limit > 0:
        answer = call(context(store), id="call_7", offset=offset, limit=limit)
        header = HEADER.match(answer)
        start, end = int(header.group(2)), int(header.group(3))
        middle.append(answer[header.end() : header.end() + end - start])
        offset, limit = end, limit - (end - start)
    head_len = arguments["offset"]
    tail_len = len(raw) - arguments["offset"] - arguments["limit"]
    assert shown[:head_len] + "".join(middle) + shown[len(shown) - tail_len :] == raw


def test_pages_are_shortened_to_fit_a_small_cap(store):
    raw = "abcdefghij" * 1000
    store.save_raw_outputs("analysis", {"call_1": raw})
    answer = call(context(store, cap=500), id="call_1", offset=100, limit=5000)
    header = HEADER.match(answer)
    start, end = int(header.group(2)), int(header.group(3))
    assert len(answer) <= 500 and start == 100 and 300 < end - start < 500
    assert answer[header.end() : header.end() + end - start] == raw[start:end]
    assert json.loads(NEXT.search(answer).group(1))["offset"] == end


def test_grep_returns_matching_lines_with_numbers_and_offsets(store):
    raw = "alpha\nERROR: disk full\nbeta\nerror: lower case\nERROR: again\n"
    store.save_raw_outputs("analysis", {"call_1": raw})
    answer = call(context(store), id="call_1", grep="ERROR")
    lines = answer.splitlines()
    assert "2 matching lines, showing 2" in lines[0]
    assert lines[1:] == ["line 2 @6: ERROR: disk full", "line 5 @46: ERROR: again"]
    assert raw[6:].startswith("ERROR: disk full") and raw[46:].startswith("ERROR: again")


def test_grep_is_a_literal_substring_not_a_pattern(store):
    store.save_raw_outputs("analysis", {"call_1": "axb\na.b\n[x]\n"})
    assert call(context(store), id="call_1", grep="a.b").splitlines()[1:] == ["line 2 @4: a.b"]
    assert call(context(store), id="call_1", grep="[x]").splitlines()[1:] == ["line 3 @8: [x]"]


def test_grep_without_a_match_says_so(store):
    store.save_raw_outputs("analysis", {"call_1": "nothing here\n"})
    answer = call(context(store), id="call_1", grep="needle")
    assert "no line contains it" in answer and "\n" not in answer


def test_grep_with_many_matches_stays_under_the_cap_and_says_how_many(store):
    store.save_raw_outputs("analysis", {"call_1": big_output()})
    answer = call(context(store, cap=2000), id="call_1", grep="région")
    assert len(answer) <= 2000
    count, shown = map(int, re.search(r"(\d+) matching lines, showing (\d+)", answer).groups())
    assert count == 12000 - 240 and 0 < shown < count and len(answer.splitlines()) == shown + 1
    assert "more specific grep" in answer


def test_grep_clips_a_huge_line_around_the_match(store):
    store.save_raw_outputs("analysis", {"call_1": "x" * 50_000 + "NEEDLE" + "y" * 50_000})
    answer = call(context(store), id="call_1", grep="NEEDLE")
    assert "NEEDLE" in answer and len(answer) < 1000


def test_unknown_id_is_not_found_in_one_line(store):
    answer = call(context(store), id="call_404")
    assert answer.startswith('No tool call or saved output with id "call_404"') and "\n" not in answer


def test_another_sessions_output_is_not_found(store):
    store.save_raw_outputs("other", {"call_1": "private bytes"})
    answer = call(context(store, session="analysis"), id="call_1")
    assert answer.startswith("No tool call or saved output") and "private" not in answer
    assert store.lookups == [("analysis", "call_1")]


@pytest.mark.parametrize(
    "hostile",
    ["", "'; DROP TABLE tool_raw_outputs; --", '" OR 1=1 --', "call_1' OR session != 'x", "a\nb", "c" * 10_000],
)
def test_hostile_ids_are_just_not_found(store, hostile):
    store.save_raw_outputs("analysis", {"call_1": "secret-free bytes"})
    answer = call(context(store), id=hostile)
    assert answer.startswith("No tool call or saved output") and "\n" not in answer and len(answer) < 300


def test_empty_and_overlong_ids_never_reach_the_store(store):
    call(context(store), id="")
    call(context(store), id="c" * 10_000)
    assert store.lookups == []


def test_offset_past_the_end_says_so(store):
    store.save_raw_outputs("analysis", {"call_1": "short"})
    assert "past the end" in call(context(store), id="call_1", offset=99)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [({"offset": -1}, "offset must be 0 or more"), ({"limit": -5}, "limit must be 1 or more"), ({"limit": 0}, "limit")],
)
def test_negative_offset_or_empty_limit_is_a_tool_error(store, arguments, message):
    store.save_raw_outputs("analysis", {"call_1": "short"})
    with pytest.raises(ToolError, match=message):
        call(context(store), id="call_1", **arguments)


def test_is_exposed_with_a_schema_the_model_can_call():
    schema = TOOLS[0].schema()["function"]
    assert TOOLS[0] is read_tool_output and [t.name for t in TOOLS] == ["read_tool_output", "search_tool_outputs"]
    assert schema["name"] == "read_tool_output"
    assert schema["parameters"]["required"] == ["id"]
    assert schema["parameters"]["properties"]["grep"]["type"] == ["string", "null"]


def made_call(store: RawOutputStore, code: str, output: str, *, call_id: str = "call_df", turn: int = 3) -> None:
    """The two messages of one python call as the transcript keeps them: the assistant's call and its result."""
    asked = Message(
        "assistant",
        "",
        session="analysis",
        turn=turn,
        tool_calls=[ToolCall(call_id, "python", json.dumps({"code": code}))],
    )
    result = Message("tool", output, session="analysis", turn=turn, tool_call_id=call_id, name="python")
    store.calls[("analysis", call_id)] = [asked, result]


def test_a_call_never_truncated_shows_its_code_and_its_output(store):
    code = "import pandas as pd\nsales = pd.read_csv('data/sales_2023.csv')\nprint(sales.shape)"
    made_call(store, code, "(48210, 7)")
    answer = call(context(store), id="call_df")
    assert answer.startswith(f'[call id="call_df": python, turn 3]\n{code}\n[end of call]\n')
    assert answer.endswith("\n(48210, 7)") and '[read_tool_output id="call_df" chars 0..10 of 10]' in answer


def test_a_saved_output_shows_the_code_on_its_first_page_only_and_every_page_fits(store):
    raw = big_output()
    store.save_raw_outputs("analysis", {"call_df": raw})
    made_call(store, "for row in rows: print(row)", raw[:500] + "\n[... truncated ...]")
    first = call(context(store, cap=3000), id="call_df")
    assert first.startswith('[call id="call_df": python, turn 3]\nfor row in rows: print(row)\n[end of call]\n')
    page = first[first.index("[read_tool_output") :]
    offset, end = map(int, HEADER.match(page).groups()[1:3])
    assert offset == 0 and page[HEADER.match(page).end() :].startswith(raw[:end]) and len(first) <= 3000
    later = call(context(store, cap=3000), id="call_df", offset=end)
    assert later.startswith("[read_tool_output") and "for row in rows" not in later
    grepped = call(context(store, cap=3000), id="call_df", grep="ERROR row 50")
    assert grepped.startswith("[read_tool_output") and "line 51" in grepped


def test_a_huge_call_is_clipped_so_its_output_still_shows(store):
    made_call(store, "x = 1\n" * 5000, "done")
    answer = call(context(store, cap=4000), id="call_df")
    assert len(answer) <= 4000 and "more chars of the call not shown" in answer and answer.endswith("\ndone")


def test_a_secret_in_the_code_is_redacted_before_it_is_shown(store):
    key = "sk-proj-Zq8vN2mK7xR4tL9wB3cF6hJ1dS5gA0pY"
    made_call(store, f"client = Client(api_key='{key}')", "ok")
    ctx = context(store)
    ctx.redactor = Redactor(env={})
    answer = call(ctx, id="call_df")
    assert key not in answer and "[REDACTED:" in answer and answer.endswith("\nok")


def test_a_call_whose_result_was_never_stored_still_shows_its_code(store):
    made_call(store, "train(model)", "")
    store.calls[("analysis", "call_df")].pop()  # the kernel died before the result was written
    answer = call(context(store), id="call_df")
    assert (
        answer
        == '[call id="call_df": python, turn 3]\ntrain(model)\n[end of call]\n[no output was stored for this call]'
    )
