"""What redacting the python tool's live output costs per write, in a real kernel: prints the table in BENCHMARKS.md.

Run from the repository root: ``python benchmarks/python_output.py``. It starts a Jupyter kernel
(jupyter_client, as a frontend does, draining every message it sends), and in it runs loops of
writes through the python tool with the session's default redactor, with redaction turned off,
and as a plain cell (no tool). Times are taken in the kernel, the best of ``--runs``; CPU seconds
are the whole kernel process's (its output thread and the redaction's timer included).

The code measured is whatever ``monad_notebook`` the kernel imports: to compare two versions,
run this script with ``PYTHONPATH`` pointing at each (the kernel inherits it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform

N = 100_000
FLUSHED = 10_000  # each flush waits for the kernel's output thread: slow in a plain cell too
LOOPS = {  # name -> (iterations, code, writes: print writes its ``end`` too, even "")
    "short lines, `print(i)`": (N, f"for i in range({N}):\n    print(i)", 2 * N),
    "progress redrawn, `print(f'\\r{i}', end='')`": (N, f"for i in range({N}):\n    print(f'\\r{{i}}', end='')", 2 * N),
    "lines in 2 pieces, `print('step', end=' '); print(i)`": (
        N,
        f"for i in range({N}):\n    print('step', end=' ')\n    print(i)",
        4 * N,
    ),
    "log lines the rules read (`token`, `password`, `key=`)": (
        N,
        f"for i in range({N}):\n    print(f'step {{i}}: token refreshed, password check ok, key=value{{i % 7}}')",
        2 * N,
    ),
    "flushed lines, `print(i, flush=True)`": (
        FLUSHED,
        f"for i in range({FLUSHED}):\n    print(i, flush=True)",
        2 * FLUSHED,
    ),
}

KERNEL_SIDE = """
import json as _json, time as _time
from monad_notebook.agent.tools.base import ToolContext as _Ctx
from monad_notebook.agent.tools.python import python as _python
from monad_notebook.redaction.redactor import Redactor as _Redactor

def _bench(code, mode, runs):
    best_wall = best_cpu = float("inf")
    for _ in range(runs):
        ctx = _Ctx(session="bench", namespace=get_ipython().user_ns, root=".", shell=get_ipython(),
                   python_approval="auto", redactor=_Redactor(enabled=mode == "tool"))
        wall, cpu = _time.perf_counter(), _time.process_time()
        if mode == "plain cell":
            exec(code, get_ipython().user_ns)
        else:
            _python.run(ctx, {"code": code})
        best_wall = min(best_wall, _time.perf_counter() - wall)
        best_cpu = min(best_cpu, _time.process_time() - cpu)
    print("\\nBENCH " + _json.dumps({"wall": best_wall, "cpu": best_cpu}))
"""


class Kernel:
    """A kernel driven as a frontend drives it: every message it sends is read."""

    def __init__(self) -> None:
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(kernel_name="python3")

    def run(self, code: str) -> str:
        """Run ``code``; the text of every stream message it sent."""
        printed: list[str] = []

        def output(msg: dict) -> None:
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])

        reply = self.kc.execute_interactive(code, timeout=1800, output_hook=output)
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(printed)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def measure(kernel: Kernel, code: str, mode: str, runs: int) -> dict[str, float]:
    out = kernel.run(f"_bench({code!r}, {mode!r}, {runs})")
    line = next(line for line in reversed(out.splitlines()) if line.startswith("BENCH "))
    return json.loads(line[len("BENCH ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load average {load:.1f}\n")
    kernel = Kernel()
    try:
        where = kernel.run(KERNEL_SIDE + "\nimport monad_notebook\nprint(monad_notebook.__file__)").strip()
        print(f"monad_notebook from {where}\n")
        print("| loop | writes | run as | wall s | CPU s | µs CPU per write |", flush=True)
        print("|---|---:|---|---:|---:|---:|", flush=True)
        for name, (iterations, code, writes) in LOOPS.items():
            for mode in ("plain cell", "tool, redaction off", "tool"):
                took = measure(kernel, code, mode, args.runs)
                per_write = 1e6 * took["cpu"] / writes
                times = f"{took['wall']:.2f} | {took['cpu']:.2f} | {per_write:.2f}"
                print(f"| {iterations:,} {name} | {writes:,} | {mode} | {times} |", flush=True)
    finally:
        kernel.close()


if __name__ == "__main__":
    main()
