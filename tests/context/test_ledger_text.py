"""The ledger block a summary carries: written once, read back unchanged, and the rest of its section kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook.context.compaction.ledger_text import (
    LEDGER_HEADING,
    parse_ledger,
    parse_notes,
    render_ledger,
    strip_ledger,
)


def test_ledger_round_trips_through_a_summary_section():
    items = ["data/sales.csv", "KeyError", "df[`weird`]", "`ticked`", "12.5 MB"]
    summary = "## Files & State\n- loaded the data\n\n" + render_ledger(items) + "\n\n## Open Tasks\n- plot it\n"

    assert parse_ledger(summary) == items
    assert render_ledger([]) == ""


def test_notes_say_where_an_item_was_seen_and_survive_a_round_trip():
    notes = {"data/sales.csv": "file; user, turn 3", "KeyError": "error; python output, turn 4, id call_1; open"}
    block = render_ledger(["data/sales.csv", "KeyError", "plain"], notes)

    assert block.splitlines()[1] == "- `data/sales.csv` (file; user, turn 3)"
    assert parse_ledger(block) == ["data/sales.csv", "KeyError", "plain"]
    assert parse_notes(block) == {**notes, "plain": ""}


def test_lists_outside_the_ledger_are_not_read_as_identifiers():
    summary = f"## Decisions & Facts\n- North grew fastest\n\n## Files & State\n{LEDGER_HEADING}\n- `a.csv`\n\n- other"

    assert parse_ledger(summary) == ["a.csv"]


def test_strip_ledger_keeps_the_rest_of_the_section():
    section = "- loaded `sales`\n" + render_ledger(["a.csv", "b.csv"]) + "\n\n- wrote out.csv"

    assert strip_ledger(section) == "- loaded `sales`\n\n- wrote out.csv"
    assert parse_ledger(section) == ["a.csv", "b.csv"]


single_line = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=60).map(
    lambda s: " ".join(s.split())
)


@settings(max_examples=200, deadline=None)
@given(st.lists(single_line.filter(bool), max_size=20, unique=True))
def test_any_ledger_survives_render_and_parse(items):
    assert parse_ledger("## Files & State\n" + render_ledger(items)) == items
