"""Files the session's code wrote, put back by a rewind: real IPython, real LanceDB, real files on disk.

A rewind to before a turn restores every file that turn overwrote byte for byte, moves the files it
created aside (never deletes them), says which file was too large to keep, sets aside a version the
user wrote since, never touches a file the session never touched, and can itself be undone.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monad_notebook.notebook.agent_runs import AGENT_RUNS
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing import ScriptedModel
from tests.rewind.session_kit import make, python, result_of, unhook

pytestmark = pytest.mark.lance

FIRST = """\
import pickle
import pandas as pd
sales = pd.DataFrame({'region': ['n', 's'], 'amount': [1, 2]})
sales.to_csv('sales.csv', index=False)
sales.to_parquet('sales.parquet')
with open('model.pkl', 'wb') as f:
    pickle.dump({'w': [1, 2]}, f)
with open('big.bin', 'wb') as f:
    f.write(bytes(1_500_000))
"""
SECOND = """\
sales['amount'] = sales['amount'] * 10
sales.to_csv('sales.csv', index=False)
sales.to_parquet('sales.parquet')
with open('model.pkl', 'wb') as f:
    pickle.dump({'w': [3]}, f)
sales.to_csv('out/new.csv')
with open('big.bin', 'wb') as f:
    f.write(b'x' * 1_500_000)
"""
KEPT = ("sales.csv", "sales.parquet", "model.pkl")


def contents(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the set-aside folder, by relative path."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".monad-rewind/"):
            found[rel] = path.read_bytes()
    return found


def test_a_rewound_turn_gives_back_each_file_it_changed_and_the_rewind_can_be_undone(store, shell, isolated_env):
    root = isolated_env
    (root / "out").mkdir()
    (root / "notes.txt").write_text("mine, never the session's")
    untouched = os.stat(root / "notes.txt")
    model = ScriptedModel([python(FIRST, "call_1"), "wrote them", python(SECOND, "call_2"), "changed them"])
    session = make(store, shell, model, maxFileBytes=1_000_000)
    session.ask("write the files")
    before_second = contents(root)
    session.ask("change them")

    note = (
        "big.bin: not kept: 1.5 MB is over rewind.maxFileBytes (1.0 MB); a rewind cannot bring back its earlier bytes"
    )
    assert note in result_of(model, "call_2")
    shell.run_cell("open('sales.csv', 'a').write('mine,3\\n')", store_history=True)  # the user's edit since
    users = (root / "sales.csv").read_bytes()
    after_second = contents(root)

    report = session.rewind.restore(before_turn=2)

    now = contents(root)
    assert {name: now[name] for name in KEPT} == {name: before_second[name] for name in KEPT}
    assert "out/new.csv" not in now
    aside = Path(report.aside_folder)
    assert (aside / "out" / "new.csv").read_bytes() == after_second["out/new.csv"]
    assert (aside / "sales.csv").read_bytes() == users
    assert report.files_yours == ["sales.csv"]
    assert now["big.bin"] == after_second["big.bin"] and not report.complete
    assert "not restored: big.bin: 1.5 MB is over rewind.maxFileBytes (1.0 MB)" in report.lines()
    same = os.stat(root / "notes.txt")
    assert (same.st_mtime_ns, same.st_ino, now["notes.txt"]) == (
        untouched.st_mtime_ns,
        untouched.st_ino,
        b"mine, never the session's",
    )

    session.rewind.undo(report)
    assert contents(root) == after_second
    unhook(shell, session)


def test_the_journal_outlives_the_kernel_so_a_new_session_puts_back_the_first_turns_files(store, shell, isolated_env):
    model = ScriptedModel([python(FIRST, "call_1"), "wrote them"])
    session = make(store, shell, model)
    session.ask("write the files")
    unhook(shell, session)
    session.close()
    (isolated_env / "notes.txt").write_text("written after, by the user")

    again = make(LanceStore(store.tables.uri), shell, ScriptedModel([]))
    report = again.rewind.restore(before_turn=1)

    assert contents(isolated_env) == {"notes.txt": b"written after, by the user"}
    moved = {name for name, _ in report.files_set_aside}
    assert moved == {"sales.csv", "sales.parquet", "model.pkl", "big.bin"} and report.complete
    unhook(shell, again)


class Kernel:
    """The kernel as the extension's hooks read it: the id of the request it runs now."""

    def __init__(self, msg_id: str) -> None:
        self.msg_id = msg_id

    def get_parent(self) -> dict:
        return {"header": {"msg_id": self.msg_id}}


def test_a_cell_the_agent_queued_is_undone_with_the_turn_that_queued_it(store, shell, isolated_env, monkeypatch):
    session = make(store, shell, ScriptedModel(["I queued cell c7"]))
    session.ask("run the cell that rewrites sales.csv")
    (isolated_env / "sales.csv").write_text("amount\n1\n")
    AGENT_RUNS.queue("c7", session.rewind.cell_keeper())  # what execute_cell hands the notebook in that turn
    monkeypatch.setattr(shell, "kernel", Kernel("request-7"), raising=False)
    shell.events.register("pre_run_cell", AGENT_RUNS.before_cell)
    shell.events.register("post_run_cell", AGENT_RUNS.after_cell)
    try:
        shell.run_cell("open('sales.csv', 'w').write('amount\\n2\\n')\nfrom_cell = 2", store_history=True, cell_id="c7")
    finally:
        shell.events.unregister("pre_run_cell", AGENT_RUNS.before_cell)
        shell.events.unregister("post_run_cell", AGENT_RUNS.after_cell)

    report = session.rewind_kernel(1)

    assert (isolated_env / "sales.csv").read_text() == "amount\n1\n" and "from_cell" not in shell.user_ns
    assert report.files_restored == ["sales.csv"] and report.names_removed == ["from_cell"]
    unhook(shell, session)
