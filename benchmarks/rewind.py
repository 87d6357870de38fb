"""Rewind and rebuild on a scripted session: cells, the conversation, files byte for byte, names, what it costs.

    python benchmarks/rewind.py [--turns 12] [--rows 20000] [--costs]

A real ``Session`` (LanceDB in a temporary directory, IPython's in-process shell running the agent's
code, the notebook's directory a temporary one) is driven by a scripted model through ``--turns``
turns. Each turn binds a name of its own, rebinds one, changes a DataFrame and a list in place, and
writes or overwrites files of three kinds (CSV with ``to_csv``, Parquet with pyarrow's writer, a
pickle); every fourth turn also deletes a file, and one turn runs a second call, which fails. Each turn
also works in the notebook, open in the extension's side played in Python (``tests/notebook/
fake_extension.py``, the real ``NotebookFrontend`` on the kernel's side, the cells approved at once):
it inserts a cell, every second turn rewrites the Markdown notes, every third turn rewrites the plot
cell; half-way through, between two turns, the user edits the plot cell by hand. At the start of each turn the benchmark
snapshots every file's bytes, a copy of every name, the notebook's cells and the stored conversation.

Then the session is rewound to before each turn in turn, last to first, as ``%monad rewind`` does it
(``cell.rewind.rewind_session``), and every cell it proposes back is accepted, as the user would at the
cells. Each rewind is compared with that turn's snapshot: the cells identical (ids, order, sources;
the user's own edit, made after that turn began, stays unless an undone turn had changed that cell
before it, since a rewind takes back the agent's changes, not the user's),
the conversation's copy holding exactly the messages stored before that turn while the session it
came from still holds every turn, files byte-identical, the same names, values equal where kept (a
name listed as not kept counts as a miss). Then the kernel's side is undone and compared with the
final state, and the notebook put back as it was at the end (as the user's own undo there would).
Reported: the time of a rewind (everything above but the clicks) and of its undo, the cells proposed
back, the bytes kept per turn, and every miss.

Then a kernel restart is simulated (a new session on the same store, every name gone) and
``Session.rebuild`` runs: the share of lost names it brings back, of those made by code that ran
without an error, and its time. ``--costs`` adds what keeping a value costs, by size: a reference
(free), a copy (``DataFrame.copy``, ``ndarray.copy``) and a pickle, which is how ``rewind.*`` chose
to copy and not pickle.

"""

from __future__ import annotations

import argparse
import copy
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CELLS = [
    ("load", "code", "import pandas as pd\nsales = pd.read_csv('data/sales_0.csv')"),
    ("notes", "markdown", "# Notes"),
    ("plot", "code", "sales.plot()"),
    ("monad", "code", "%%monad\nkeep going"),
]
MY_EDIT = "sales.plot(kind='bar')  # the user's own edit"


def turn_code(turn: int, rows: int) -> str:
    """The agent's code of one turn: what it binds, rebinds, changes in place and writes."""
    lines = [
        f"rng = np.random.default_rng({turn})",
        f"part_{turn} = pd.DataFrame({{'x': np.arange({rows}) * {turn}, 'y': rng.random({rows})}})",
        f"latest = {turn}",
        f"sales['amount'] = sales['amount'] + {turn}",
        f"log.append('turn {turn}')",
        f"sales.to_csv('data/sales_{turn % 3}.csv', index=False)",
        f"pq.write_table(pa.Table.from_pandas(part_{turn}), 'data/part_{turn % 4}.parquet')",
        f"with open('state.pkl', 'wb') as f:\n    pickle.dump({{'turn': {turn}, 'log': list(log)}}, f)",
    ]
    if turn % 4 == 0:
        gone = f"'data/sales_{(turn + 1) % 3}.csv'"
        lines.append(f"os.remove({gone}) if os.path.exists({gone}) else None")
    return "\n".join(lines)


def cell_calls(turn: int) -> list[Any]:
    """The agent's notebook calls of one turn: a new cell, and now and then a cell rewritten (read first)."""
    from monad_notebook.testing import tool_call

    anchor = "load" if turn % 2 else "notes"
    new = {"cell_type": "code", "cell_source": f"part_{turn}.describe()", "cell_id": anchor}
    calls = [tool_call("insert_cell", new)]
    rewrites = {"notes": f"# Notes\nturn {turn}: amounts raised by {turn}", "plot": f"sales.plot(title='turn {turn}')"}
    for cell, every in (("notes", 2), ("plot", 3)):
        if turn % every == 0:
            calls.append(tool_call("read_cell", {"cell_id": cell}))
            calls.append(tool_call("overwrite_cell_source", {"cell_id": cell, "cell_source": rewrites[cell]}))
    return calls


def expected_cells(cells: list[tuple[str, str, str]], turn: int, edit_turn: int) -> list[tuple[str, str, str]]:
    """The cells as they were when ``turn`` began, but for the user's own edit, made before ``edit_turn``: it stays
    unless an undone turn had changed that cell before it (a rewind takes back the agent's changes, not the user's).
    The agent rewrites the plot cell in turns 4, 7, 10... (every third turn after the setup)."""
    if turn >= edit_turn or any((undone - 1) % 3 == 0 for undone in range(turn, edit_turn)):
        return cells
    return [(cell, kind, MY_EDIT if cell == "plot" else source) for cell, kind, source in cells]


def timed(call: Any, spent: list[float]) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            spent.append(time.perf_counter() - started)

    return run


def cells_of(page: Any) -> list[tuple[str, str, str]]:
    return [(c["id"], c["type"], c["source"]) for c in page.cells]


def messages_of(store: Any, session: str) -> list[tuple]:
    """The stored conversation as the model would be given it: roles, texts, the calls and their results."""
    return [
        (m.role, m.content, m.tool_call_id, tuple(c.id for c in m.tool_calls)) for m in store.load_messages(session)
    ]


SETUP = """\
import os, pickle
import numpy as np, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
os.makedirs('data', exist_ok=True)
sales = pd.DataFrame({'amount': np.arange(ROWS)})
log = []
"""


def files_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.relative_to(root).as_posix().startswith(".monad-rewind/")
    }


def names_of(ns: dict[str, Any], hidden: dict[str, Any]) -> dict[str, Any]:
    """A copy of every name the user's code bound (modules by identity)."""
    out = {}
    for name, value in ns.items():
        if (
            name.startswith("_")
            or (name in hidden and hidden[name] is value)
            or name in ("In", "Out", "exit", "quit", "get_ipython")
        ):
            continue
        out[name] = value if type(value).__name__ == "module" else _copy(value)
    return out


def _copy(value: Any) -> Any:
    if hasattr(value, "copy") and type(value).__module__.startswith(("pandas", "numpy")):
        return value.copy()
    try:
        return copy.deepcopy(value)
    except Exception:
        return value


def equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if hasattr(a, "equals") and type(a).__module__.startswith("pandas"):
        return type(a) is type(b) and bool(a.equals(b))
    try:
        if bool(a == b):
            return True
        return type(a) is type(b) and pickle.dumps(a) == pickle.dumps(b)  # a generator: equal when its state is
    except Exception:
        return False


def compare(root: Path, ns: dict[str, Any], hidden: dict[str, Any], snap: tuple[dict, dict]) -> list[str]:
    files, names = snap
    now_files, now_names = files_of(root), names_of(ns, hidden)
    misses = [f"file {k}" for k in sorted(set(files) | set(now_files)) if files.get(k) != now_files.get(k)]
    misses += [f"name {k}" for k in sorted(set(names) ^ set(now_names))]
    misses += [f"value {k}" for k in sorted(set(names) & set(now_names)) if not equal(names[k], now_names[k])]
    return misses


def run(turns: int, rows: int) -> None:
    from IPython.testing import globalipapp

    from monad_notebook import Session
    from monad_notebook.config import Config
    from monad_notebook.notebook.frontend import NotebookFrontend
    from monad_notebook.store.lance import LanceStore
    from monad_notebook.testing import ScriptedModel, tool_call
    from tests.notebook.fake_extension import FakeExtension, FakeKernel

    shell = globalipapp.get_ipython()
    ns, hidden = shell.user_ns, shell.user_ns_hidden
    work = Path(tempfile.mkdtemp(prefix="rewind-bench-"))
    root = work / "nb"
    root.mkdir()
    os.chdir(root)
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}, "notebook": {"approval": "auto"}}})
    store = LanceStore(work / "db")
    frontend = NotebookFrontend(shell, FakeKernel())
    page = FakeExtension(frontend, list(CELLS))
    model = ScriptedModel([tool_call("python", {"code": SETUP.replace("ROWS", str(rows))}, id="call_setup"), "ready"])
    session = Session(
        "bench", config=config, store=store, model=model, shell=shell, fast_model=ScriptedModel([]), notebook=frontend
    )
    session.ask("set up")
    snaps, cells_at, said_at = {}, {}, {}
    for turn in range(1, turns + 1):
        model.queue(tool_call("python", {"code": turn_code(turn, rows)}, id=f"call_{turn}"))
        if turn == turns // 2:  # a second call in this turn, which fails
            model.queue(tool_call("python", {"code": "broken = no_such_name"}, id="call_fails"))
        model.queue(*cell_calls(turn), f"turn {turn} done")
    edit_turn = turns // 2 + 2
    for turn in range(2, turns + 2):  # turn 1 set up; turns 2.. are the measured ones
        if turn == edit_turn:
            page.type_into("plot", MY_EDIT)  # the user's own edit between two turns
        snaps[turn] = (files_of(root), names_of(ns, hidden))
        cells_at[turn], said_at[turn] = cells_of(page), messages_of(store, "bench")
        session.ask(f"turn {turn}")
    final = (files_of(root), names_of(ns, hidden))
    cells_at["final"], said_at["final"] = copy.deepcopy(page.cells), messages_of(store, "bench")
    cells_at["edit"] = edit_turn

    print(
        f"session: {turns} turns of {rows:,}-row frames; files: {len(final[0])}, names: {len(final[1])}, "
        f"cells: {len(page.cells)} (from {len(CELLS)}), messages: {len(said_at['final'])}"
    )
    rewind_every_turn(session, page, root, ns, hidden, (snaps, cells_at, said_at), final, turns)
    session.close()
    store.close()
    rebuild(store, config, shell, ns, hidden, final[1])


def rewind_every_turn(
    session: Any, page: Any, root: Path, ns: dict, hidden: dict, taken: tuple, final: tuple, turns: int
) -> None:
    """Rewind to before each turn, last to first, accept the cells proposed back, compare with its snapshot; undo the
    kernel's side and compare with the final state; put the notebook back as it was at the end."""
    from monad_notebook.cell.rewind import rewind_session, rewound_mark

    snaps, cells_at, said_at = taken
    rewinds, undos, misses, proposed = [], [], {}, []
    parts: dict[str, list[float]] = {"rewind_kernel": [], "branch": []}
    for part, spent in parts.items():  # the files and names, and the conversation's copy, timed apart
        setattr(session, part, timed(getattr(session, part), spent))
    started = time.perf_counter()
    session.cascade.wait()  # a rewind's copy waits for background work in flight (a compaction, pending embeddings)
    print(f"the last turn's background work landed {time.perf_counter() - started:.2f} s after it ended")
    for turn in range(turns + 1, 1, -1):
        started = time.perf_counter()
        name, lines = rewind_session(session, turn)
        rewinds.append(time.perf_counter() - started)
        proposed.append(len(page.pending))
        for proposal in list(page.pending):
            page.click(proposal, accept=True)
        missed = compare(root, ns, hidden, snaps[turn])
        missed += ["cells"] if cells_of(page) != expected_cells(cells_at[turn], turn, cells_at["edit"]) else []
        missed += ["the copy's conversation"] if messages_of(session.store, name) != said_at[turn] else []
        missed += ["the original's conversation"] if messages_of(session.store, "bench") != said_at["final"] else []
        if missed or not any("everything put back" in line for line in lines):
            misses[turn] = missed + [f"said: {line}" for line in lines[1:] if "not " in line]
        started = time.perf_counter()
        session.undo_rewind(int(rewound_mark(session.store, name)["epoch"]))
        undos.append(time.perf_counter() - started)
        left = compare(root, ns, hidden, final)
        if left:
            misses[f"undo {turn}"] = left
        page.cells = copy.deepcopy(cells_at["final"])
    journal = session.rewind.journal
    kept = [journal.added.get(e.seq, 0) for e in journal.epochs if e.kind == "turn" and e.turn > 1]
    rewound = turns - sum(isinstance(k, int) for k in misses)
    undone = turns - sum(isinstance(k, str) for k in misses)
    print(
        f"rewind to each turn compared with its snapshot (cells, conversation, files, names): {rewound}/{turns} "
        f"identical; cells proposed back per rewind: {min(proposed)} to {max(proposed)}, {sum(proposed)} in all"
    )
    print(f"undo back to the final state: {undone}/{turns} identical")
    for key, missed in misses.items():
        print(f"  {key}: {'; '.join(missed)}")
    print(f"rewind: median {statistics.median(rewinds) * 1000:.0f} ms, largest {max(rewinds) * 1000:.0f} ms "
          f"(last turn first: {', '.join(f'{t * 1000:.0f}' for t in rewinds)} ms)")  # fmt: skip
    kernel, branch = (statistics.median(parts[p]) * 1000 for p in ("rewind_kernel", "branch"))
    print(f"  of which files and names: median {kernel:.0f} ms; the conversation's copy: median {branch:.0f} ms")
    print(f"undo: median {statistics.median(undos) * 1000:.0f} ms, largest {max(undos) * 1000:.0f} ms")
    print(f"bytes kept per turn: median {statistics.median(kept) / 1e3:,.0f} kB, largest {max(kept) / 1e3:,.0f} kB, "
          f"all {sum(kept) / 1e6:.1f} MB")  # fmt: skip


def rebuild(
    store: Any, config: Any, shell: Any, ns: dict[str, Any], hidden: dict[str, Any], final: dict[str, Any]
) -> None:
    from monad_notebook import Session
    from monad_notebook.store.lance import LanceStore
    from monad_notebook.testing import ScriptedModel

    for name in list(names_of(ns, hidden)):
        del ns[name]
    again = Session("bench", config=config, store=LanceStore(store.tables.uri), model=ScriptedModel([]), shell=shell)
    lost = [entry.key for entry in again.workspace.live()[2]]
    started = time.perf_counter()
    report = again.rebuild()
    took = time.perf_counter() - started
    back = [name for name in lost if name in ns]
    same = [name for name in back if name in final and equal(final[name], ns[name])]
    share = len(back) / max(len(lost), 1)
    print(f"rebuild after a restart: {len(back)}/{len(lost)} lost names back ({share:.0%}), {len(same)} equal to their "
          f"value before the restart, in {took:.2f} s ({len(report.plan.steps)} steps)")  # fmt: skip
    if report.still_lost:
        print(f"  still lost: {', '.join(report.still_lost)}")
    if len(same) < len(back):
        print(f"  other values: {', '.join(sorted(set(back) - set(same)))}")
    again.close()
    again.store.close()


def costs() -> None:
    """What keeping a value costs: a reference, a copy, a pickle, by size."""
    import numpy as np
    import pandas as pd

    print("keeping a value before an in-place change (median of 5):")
    for megabytes in (1, 16, 64, 256):
        rows = megabytes * 1_000_000 // 16
        frame = pd.DataFrame({"a": np.arange(rows, dtype="float64"), "b": np.arange(rows, dtype="int64")})
        timings = {}
        for label, keep in (
            ("copy", lambda f=frame: f.copy(deep=True)),
            ("pickle", lambda f=frame: pickle.dumps(f, protocol=5)),
        ):
            runs = []
            for _ in range(5):
                started = time.perf_counter()
                keep()
                runs.append(time.perf_counter() - started)
            timings[label] = statistics.median(runs)
        print(f"  {megabytes:>4} MB frame: reference 0 ms, copy {timings['copy'] * 1000:,.1f} ms, "
              f"pickle {timings['pickle'] * 1000:,.1f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--costs", action="store_true")
    args = parser.parse_args()
    run(args.turns, args.rows)
    if args.costs:
        costs()


if __name__ == "__main__":
    main()
