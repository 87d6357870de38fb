"""Rewind and rebuild, kernel side, on a scripted session: files byte for byte, names, what it costs.

    python benchmarks/rewind.py [--turns 12] [--rows 20000] [--costs]

A real ``Session`` (LanceDB in a temporary directory, IPython's in-process shell running the agent's
code, the notebook's directory a temporary one) is driven by a scripted model through ``--turns``
turns. Each turn binds a name of its own, rebinds one, changes a DataFrame and a list in place, and
writes or overwrites files of three kinds (CSV with ``to_csv``, Parquet with pyarrow's writer, a
pickle); every fourth turn also deletes a file, and one turn runs a second call, which fails. At the
start of each turn the benchmark snapshots every file's bytes and a copy of every name.

Then the session is rewound to before each turn in turn, last to first, each rewind compared with
that turn's snapshot (files byte-identical, the same names, values equal where kept; a name listed
as not kept counts as a miss), then undone and compared with the final state. Reported: the time of
a rewind and of its undo (median and largest), the bytes kept per turn, and every miss.

Then a kernel restart is simulated (a new session on the same store, every name gone) and
``Session.rebuild`` runs: the share of lost names it brings back, of those made by code that ran
without an error, and its time. ``--costs`` adds what keeping a value costs, by size: a reference
(free), a copy (``DataFrame.copy``, ``ndarray.copy``) and a pickle, which is how ``rewind.*`` chose
to copy and not pickle.

Cells and the conversation are the conversation side's; this measures files and names.
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
    from monad_notebook.store.lance import LanceStore
    from monad_notebook.testing import ScriptedModel, tool_call

    shell = globalipapp.get_ipython()
    ns, hidden = shell.user_ns, shell.user_ns_hidden
    work = Path(tempfile.mkdtemp(prefix="rewind-bench-"))
    root = work / "nb"
    root.mkdir()
    os.chdir(root)
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}})
    store = LanceStore(work / "db")
    model = ScriptedModel([tool_call("python", {"code": SETUP.replace("ROWS", str(rows))}, id="call_setup"), "ready"])
    session = Session("bench", config=config, store=store, model=model, shell=shell, fast_model=ScriptedModel([]))
    session.ask("set up")
    snaps = {}
    for turn in range(1, turns + 1):
        model.queue(tool_call("python", {"code": turn_code(turn, rows)}, id=f"call_{turn}"))
        if turn == turns // 2:  # a second call in this turn, which fails
            model.queue(tool_call("python", {"code": "broken = no_such_name"}, id="call_fails"))
        model.queue(f"turn {turn} done")
    for turn in range(2, turns + 2):  # turn 1 set up; turns 2.. are the measured ones
        snaps[turn] = (files_of(root), names_of(ns, hidden))
        session.ask(f"turn {turn}")
    final = (files_of(root), names_of(ns, hidden))

    print(f"session: {turns} turns of {rows:,}-row frames; files: {len(final[0])}, names: {len(final[1])}")
    rewind_every_turn(session, root, ns, hidden, snaps, final, turns)
    session.close()
    store.close()
    rebuild(store, config, shell, ns, hidden, final[1])


def rewind_every_turn(session: Any, root: Path, ns: dict, hidden: dict, snaps: dict, final: tuple, turns: int) -> None:
    """Rewind to before each turn, last to first, compare with its snapshot, undo, compare with the final state."""
    rewinds, undos, misses = [], [], {}
    for turn in range(turns + 1, 1, -1):
        started = time.perf_counter()
        report = session.rewind_kernel(turn)
        rewinds.append(time.perf_counter() - started)
        missed = compare(root, ns, hidden, snaps[turn])
        if missed or not report.complete:
            misses[turn] = missed + [f"said: {line}" for line in report.lines() if "not" in line]
        started = time.perf_counter()
        session.undo_rewind(report.epoch)
        undos.append(time.perf_counter() - started)
        left = compare(root, ns, hidden, final)
        if left:
            misses[f"undo {turn}"] = left
    journal = session.rewind.journal
    kept = [journal.added.get(e.seq, 0) for e in journal.epochs if e.kind == "turn" and e.turn > 1]
    rewound = turns - sum(isinstance(k, int) for k in misses)
    undone = turns - sum(isinstance(k, str) for k in misses)
    print(f"rewind to each turn compared with its snapshot: {rewound}/{turns} identical")
    print(f"undo back to the final state: {undone}/{turns} identical")
    for key, missed in misses.items():
        print(f"  {key}: {'; '.join(missed)}")
    print(f"rewind: median {statistics.median(rewinds) * 1000:.0f} ms, largest {max(rewinds) * 1000:.0f} ms")
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
