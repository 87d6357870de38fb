"""The agent's change on top of the user's edit: merged where the two touch different lines, refused where they do."""

from __future__ import annotations

import time

import pytest

from monad_notebook.notebook.merge import merge_on_top

BASE = "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.head()"
AGENT = "import pandas as pd\ndf = pd.read_csv('sales.csv')\ndf.describe()"


@pytest.mark.parametrize(
    ("edited", "merged"),
    [
        ("# load the sales\n" + BASE, "# load the sales\n" + AGENT),  # a comment above
        (BASE + "\n# look at it", AGENT + "\n# look at it"),  # a line after the changed last line
        (BASE.replace("pd.read_csv", "pd.read_parquet"), AGENT.replace("pd.read_csv", "pd.read_parquet")),
        (BASE.replace("import pandas as pd\n", ""), AGENT.replace("import pandas as pd\n", "")),  # a line removed
        (AGENT, AGENT),  # the user made the same change
    ],
)
def test_edits_of_other_lines_merge_with_both_changes_in_place(edited, merged):
    assert merge_on_top(BASE, edited, AGENT).source == merged


@pytest.mark.parametrize(
    ("base", "edited", "proposed", "where"),
    [
        (BASE, BASE.replace("head()", "tail()"), AGENT, "line 3"),  # the same line changed two ways
        ("a\nb\nc", "a\nX\nb\nc", "a\nb2\nc", None),  # adjacent: an insertion before the line the agent changes
        ("a\nb\nc", "a\nb\nX\nc", "a\nB\nC", "line 3"),  # an insertion inside the stretch the agent replaces
        ("a\nb", "a\nX\nb", "a\nY\nb", "line 2"),  # two insertions at one place: the order is unknown
        ("a\nb\nc", "a\nc", "a\nb2\nc", "line 2"),  # the user removed the line the agent changes
    ],
)
def test_edits_that_touch_the_agents_lines_do_not_merge_and_say_where(base, edited, proposed, where):
    merged = merge_on_top(base, edited, proposed)
    if where is None:
        assert merged.source == "a\nX\nb2\nc"
        return
    assert merged.source is None and merged.overlap.startswith("your edit and the agent's change touch the same lines")
    assert f"({where} of the cell now)" in merged.overlap


def test_every_character_outside_the_changed_lines_survives_as_it_was():
    base = "x = 1\r\ny = 2\n"  # a carriage return and a final newline
    merged = merge_on_top(base, "# mine\n" + base, "x = 1\r\ny = 3\n")
    assert merged.source == "# mine\nx = 1\r\ny = 3\n"


def test_a_large_repetitive_cell_merges_in_bounded_time():
    base = "\n".join(["total += 1"] * 5_000 + ["print(total)"])
    edited = "# counting\n" + base
    proposed = base.replace("print(total)", "print(total, flush=True)")
    started = time.perf_counter()
    merged = merge_on_top(base, edited, proposed)
    assert time.perf_counter() - started < 1.0
    assert merged.source == "# counting\n" + proposed
