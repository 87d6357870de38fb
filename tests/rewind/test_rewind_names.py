"""Names the session's code bound, rebound or changed in place, put back by a rewind in a real IPython shell."""

from __future__ import annotations

import pytest

from monad_notebook.testing import ScriptedModel
from tests.rewind.session_kit import make, python, unhook

pytestmark = pytest.mark.lance

FIRST = """\
import os
import numpy as np
import pandas as pd
class Model:
    fitted = False
sales = pd.DataFrame({'amount': [1, 2]})
counts = {'a': 1}
threshold = 0.5
model = Model()
weights = np.zeros(400_000)
open('scratch.txt', 'w').close()
"""
SECOND = """\
sales['amount'] = sales['amount'] * 10
counts['b'] = 2
threshold = 0.9
model.fitted = True
weights += 1
fresh = sales.amount.sum()
os.remove('scratch.txt')
"""


def test_a_rewind_across_a_compaction_removes_what_the_turn_bound_and_gives_back_what_it_changed(
    store, shell, isolated_env
):
    model = ScriptedModel([python(FIRST, "call_1"), "made", python(SECOND, "call_2"), "changed"])
    session = make(store, shell, model, maxValueBytes=1_000_000)
    session.ask("make them")
    ns = shell.user_ns
    sales, counts, fitted_before = ns["sales"].copy(), dict(ns["counts"]), ns["model"]
    session.ask("change them")
    assert session.compact()  # the turns rewound are folded into the summary: their changes are still kept

    report = session.rewind.restore(before_turn=2)

    assert "fresh" not in ns and report.names_removed == ["fresh"]
    assert ns["sales"].equals(sales) and ns["counts"] == counts and ns["threshold"] == 0.5
    assert set(report.names_restored) == {"sales", "counts", "threshold"}
    kept_not = {n.key: n for n in report.names_not_restored}
    assert set(kept_not) == {"model", "weights"} and ns["model"] is fitted_before
    lines = "\n".join(report.lines())
    assert "changed by an undone turn, earlier value not kept: weights (too large to copy (3.2 MB over" in lines
    assert "its earlier value was made by call_1, turn 1)\n    import os\n    import numpy as np" in lines
    assert "model (a Model is not copied (only frames, arrays and plain containers are)" in lines

    session.rewind.undo(report)
    assert ns["threshold"] == 0.9 and ns["counts"] == {"a": 1, "b": 2} and ns["fresh"] == 30
    assert list(ns["sales"]["amount"]) == [10, 20]
    unhook(shell, session)


def test_names_an_earlier_turn_bound_stay_when_the_namespaces_last_name_went_away_meanwhile(store, shell, isolated_env):
    """The turn deletes the name bound last before it (as Python itself does with ``__warningregistry__``)."""
    model = ScriptedModel(
        [
            *(python("alpha = 1", "call_alpha"), "a"),
            *(python("scratch = 0", "call_s"), "s"),
            *(python("del scratch\ngamma = 3", "call_gamma"), "g"),
        ]
    )
    session = make(store, shell, model)
    for question in ("bind alpha", "bind scratch", "tidy up"):
        session.ask(question)

    report = session.rewind_kernel(3)

    assert report.names_removed == ["gamma"] and report.names_restored == ["scratch"]
    assert shell.user_ns["alpha"] == 1 and shell.user_ns["scratch"] == 0 and "gamma" not in shell.user_ns
    unhook(shell, session)
