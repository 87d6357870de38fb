"""``Session.rebuild`` after a restart, in a real IPython shell on real LanceDB: one approval for one script, then
each step's outcome; a step that fails or depends on the outside said plainly; an interrupted rebuild goes on."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel, tool_calls
from tests.rewind.session_kit import make, python, unhook

pytestmark = [pytest.mark.lance, pytest.mark.slow]

CALLS = {
    "call_base": "import pandas as pd\nbase = 10\nsales = pd.DataFrame({'amount': [1, 2]})",
    "call_scale": (
        "import os, time\ntime.sleep(float(os.environ.get('REBUILD_PAUSE', '0')))\n"
        "sales['scaled'] = sales['amount'] * base\nscaled_total = int(sales['scaled'].sum())"
    ),
    "call_notes": "notes = open('notes.txt').read()",
    "call_words": "note_words = notes.split()",
    "call_draw": "import random\ndraw = random.random()",
    "call_broken": "broken = undefined_name",
}
LOST = ["pd", "base", "sales", "os", "time", "scaled_total", "notes", "note_words", "random", "draw"]


def test_a_rebuild_asks_once_reports_each_step_and_an_interrupted_one_goes_on(store, shell, isolated_env, monkeypatch):
    (isolated_env / "notes.txt").write_text("north grew fastest")
    model = ScriptedModel([tool_calls(*(python(code, call_id) for call_id, code in CALLS.items())), "done"])
    first = make(store, shell, model)
    first.ask("run them")
    unhook(shell, first)
    first.close()
    for name in LOST:  # the kernel restarted: it holds none of them
        shell.user_ns.pop(name, None)
    (isolated_env / "notes.txt").unlink()

    asked: list[str] = []
    second = make(LanceStore(store.tables.uri), shell, ScriptedModel([]), approval="ask")
    second.approve = lambda code, **_: asked.append(code) or True
    monkeypatch.setenv("REBUILD_PAUSE", "30")
    threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()  # the stop button, in the second step
    stopped = second.rebuild()

    script = stopped.plan.script()
    assert asked == [script] and "broken" not in script
    assert [step.made_by for step in stopped.plan.steps] == [c for c in CALLS if c != "call_broken"]
    said = "\n".join(stopped.lines())
    assert "step 1 of 5, call_base (turn 1): ok" in said and stopped.interrupted
    assert "interrupted at step 2 of 5: what ran stays; %monad rebuild again goes on with what is still lost" in said
    assert {"base", "sales"} <= set(stopped.back) and "scaled_total" in stopped.still_lost

    monkeypatch.setenv("REBUILD_PAUSE", "0")
    again = second.rebuild()

    assert [step.made_by for step in again.plan.steps] == ["call_scale", "call_notes", "call_words", "call_draw"]
    assert len(asked) == 2
    said = "\n".join(again.lines())
    assert "step 1 of 4, call_scale (turn 1): ok" in said
    assert "step 2 of 4, call_notes (turn 1): error: FileNotFoundError: [Errno 2] No such file or directory" in said
    assert "  it depends on notes.txt (no longer there): which may be why" in said
    assert "step 3 of 4, call_words (turn 1): skipped: needs notes, which a failed step makes" in said
    assert "step 4 of 4, call_draw (turn 1): ok\n  it depends on a random generator with no seed in sight" in said
    assert shell.user_ns["scaled_total"] == 30 and list(shell.user_ns["sales"]["scaled"]) == [10, 20]
    assert set(again.still_lost) == {"notes", "note_words"} and len(again.back) == 2
    unhook(shell, second)
