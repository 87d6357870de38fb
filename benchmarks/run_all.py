"""Rerun every benchmark and collect their markdown into one report.

    python benchmarks/run_all.py [--quick] [--long] [--out BENCHMARKS-latest.md] [--only NAME ...] [--timeout S]

Each script in ``benchmarks/`` runs as its own subprocess with its own timeout, so one
that hangs or crashes costs only its own section. The report opens with the machine and
the date (figures are only comparable on like machines), then a status table, then each
script's output as it printed it. It is rewritten after every script, so an interrupted
run still leaves what finished. ``--quick`` passes small sizes to the scripts that take
them (a smoke run in minutes, not a source of figures); the long reliability runs and the
cost benchmark's full trace (hours here) are skipped unless ``--long``. Exits non-zero if any
script failed or timed out.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Not benchmarks: what they use, and the fixture tools (they fetch large models; see "Benchmark fixtures").
HELPERS = {
    "run_all",
    "trace",
    "fidelity_session",
    "recall_lag_facts",
    "raw_replies",
    "fixtures",
    "fixture_server",
    "fixture_check",
    "gemma_gguf",
    "gemma_reference",
    "gemma_check",
}
# local_model: a real 1.5B model on the CPU, an hour or more; locomo: a dataset not shipped (see its docstring)
LONG = {"reliability_long", "cost", "local_model", "locomo"}
ORDER = [
    "startup",
    "loop_overhead",
    "store_versions",
    "tails",
    "fragments",
    "redaction",
    "eviction",
    "token_estimate",
    "real_server",
    "retrieval",
    "recall_lag",
    "reference_trace",
    "fidelity",
    "locomo",
    "workspace",
    "workspace_cost",
    "rewind",
    "cost",
    "images",
    "panel_latency",
    "hostile_inputs",
    "cell_diff",
    "reliability_long",
]
QUICK: dict[str, dict[str, list[str]]] = {
    "startup": {"--runs": ["1"]},
    "rewind": {"--turns": ["4"], "--rows": ["2000"]},
    "loop_overhead": {"--sizes": ["200", "1000"], "--turns": ["4"]},
    "tails": {"--sizes": ["1000"], "--turns": ["4"], "--queries": ["4"]},
    "fragments": {"--size": ["5000"], "--writes": ["5"]},
    "cost": {"--steps": ["60"], "--windows": ["32000"], "--discounts": ["0.1"]},
    "images": {"--steps": ["45"], "--windows": ["32000"], "--discounts": ["0.1"]},
    "store_versions": {"--steps": ["150"]},
    "real_server": {"--turns": ["3"]},
    "retrieval": {
        "--sizes": ["2000"],
        "--queries": ["20"],
        "--distractors": ["60"],
        "--needle-scale": ["5000"],
        "--recall-scale": ["5000"],
    },
    "fidelity": {"--turns": ["12"], "--summarizers": ["failing"]},
    "workspace": {"--turns": ["12"], "--summarizers": ["failing"]},
    "workspace_cost": {"--calls": ["20"], "--sizes": ["10", "1000"], "--big-rows": ["10000"]},
    "recall_lag": {"--sessions": ["2"], "--paced-sessions": ["1"], "--turns": ["5"], "--sets": ["tuning"]},
    "reference_trace": {"--steps": ["60"], "--windows": ["32000"], "--sizes": ["1000"], "--turns": ["5"]},
    "panel_latency": {"--events": ["300"]},
    "cell_diff": {"--sizes": ["1200"]},
    "reliability_long": {"--kills": ["10"], "--compactions": ["3"], "--procs": ["2"], "--seconds": ["15"]},
    "local_model": {"--part": ["session"], "--turns": ["2"]},
    "locomo": {"--split": ["tuning"], "--k": ["10"]},
}
TIMEOUTS = {
    "full": 1800.0,
    "quick": 300.0,
    "reliability_long": 3600.0,
    "cost": 4 * 3600.0,
    "local_model": 4 * 3600.0,
    "locomo": 4 * 3600.0,
}
PACKAGES = [
    "monad-notebook",
    "lancedb",
    "pyarrow",
    "tiktoken",
    "bpe-openai",
    "google-re2",
    "onnxruntime",
    "openai",
    "ipython",
    "anywidget",
    "langchain",
    "playwright",
]


@dataclass
class Outcome:
    """One script's run: what it printed and how it ended."""

    name: str
    command: list[str]
    status: str = "skipped"
    seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "skipped")


def discover(directory: Path = HERE) -> list[str]:
    """Runnable scripts (those with a ``__main__`` block), in the report's order, new ones last."""
    found = {
        path.stem
        for path in directory.glob("*.py")
        if path.stem not in HELPERS and "__main__" in path.read_text(encoding="utf-8")
    }
    return [n for n in ORDER if n in found] + sorted(found - set(ORDER))


def script_args(name: str, quick: bool, source: str) -> list[str]:
    """Quick sizes for the flags this script really has: a flag it lacks is left out, not guessed."""
    args: list[str] = []
    if quick:
        for flag, values in QUICK.get(name, {}).items():
            if f'"{flag}"' in source:
                args += [flag, *values]
    if name == "panel_latency" and '"--no-browser"' in source and not _has_browser():
        args.append("--no-browser")
    return args


def _has_browser() -> bool:
    if not (shutil.which("chromium") or Path("/usr/bin/chromium").exists()):
        return False
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return True


def run_script(name: str, args: list[str], timeout: float) -> Outcome:
    """Run one script from the repository root in its own process group, killed whole on timeout."""
    command = [sys.executable, str(HERE / f"{name}.py"), *args]
    outcome = Outcome(name, command)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        outcome.stdout, outcome.stderr = process.communicate(timeout=timeout)
        outcome.status = "ok" if process.returncode == 0 else f"failed (exit {process.returncode})"
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        outcome.stdout, outcome.stderr = process.communicate()
        outcome.status = f"timed out after {timeout:.0f} s"
    outcome.seconds = time.perf_counter() - started
    return outcome


def machine() -> list[str]:
    """What the figures depend on: cores, memory, load, Python and the package versions."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    packages = ", ".join(f"{name} {_version(name)}" for name in PACKAGES)
    return [
        f"- machine: {platform.node() or 'unknown'}, {platform.platform()}, {platform.machine()}",
        f"- cores: {os.cpu_count()} (usable: {_usable_cores()})",
        f"- memory: {_memory_gib()}",
        f"- load average at start: {load}",
        f"- Python {platform.python_version()} ({platform.python_implementation()})",
        f"- packages: {packages}",
        f"- commit: {_commit()}",
    ]


def _usable_cores() -> str:
    return str(len(os.sched_getaffinity(0))) if hasattr(os, "sched_getaffinity") else "unknown"


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _memory_gib() -> str:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "unknown"
    return f"{total / 2**30:.1f} GiB"


def _commit() -> str:
    """The checked-out commit (and whether the tree has edits), read-only; ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    if head.returncode != 0:
        return "unknown"
    return head.stdout.strip() + (" with uncommitted changes" if dirty.stdout.strip() else "")


def render(outcomes: list[Outcome], header: list[str], mode: str) -> str:
    """The whole report: header, status table, then each script's own markdown."""
    lines = [*header, "", "| script | status | seconds | arguments |", "|---|---|---:|---|"]
    for o in outcomes:
        arguments = "-" if o.status == "skipped" else " ".join(o.command[2:]) or "(defaults)"
        lines.append(f"| {o.name} | {o.status} | {o.seconds:.1f} | {arguments} |")
    for o in outcomes:
        lines += ["", f"## {o.name}", ""]
        if o.status in ("skipped", "queued"):
            lines.append(f"Skipped: {'; '.join(o.notes)}." if o.notes else "Not run yet.")
            continue
        lines += [f"`{' '.join(['python', f'benchmarks/{o.name}.py', *o.command[2:]])}`", ""]
        lines.append(_as_markdown(o.stdout))
        if not o.ok:
            tail = "\n".join(o.stderr.rstrip().splitlines()[-30:])
            lines += ["", f"{o.status}; the end of its stderr:", "", "```text", tail, "```"] if tail else ["", o.status]
    if mode == "quick":
        lines += ["", "Quick mode: small sizes, for checking that every script runs; quote figures from a full run."]
    return "\n".join(lines) + "\n"


def _as_markdown(output: str) -> str:
    """Tables and headings pass through; column-aligned plain text is fenced so it stays aligned."""
    text = output.rstrip()
    if not text:
        return "(no output)"
    if any(line.lstrip().startswith(("|", "#")) for line in text.splitlines()):
        return text
    return f"```text\n{text}\n```"


def plan(args: argparse.Namespace) -> list[Outcome]:
    """Every script to report, each either queued (with its arguments) or skipped with the reason."""
    names = discover()
    unknown = sorted(set(args.only or []) - set(names))
    if unknown:
        raise SystemExit(f"no benchmark named {', '.join(unknown)}; choose from: {', '.join(names)}")
    outcomes = []
    for name in names:
        source = (HERE / f"{name}.py").read_text(encoding="utf-8")
        outcome = Outcome(name, [sys.executable, f"benchmarks/{name}.py", *script_args(name, args.quick, source)])
        if args.only and name not in args.only:
            outcome.notes.append("not selected with --only")
        elif name in LONG and not args.long:
            outcome.notes.append("a long run; pass --long to include it")
        else:
            outcome.status = "queued"
        outcomes.append(outcome)
    return outcomes


def timeout_for(name: str, args: argparse.Namespace) -> float:
    if args.timeout is not None:
        return args.timeout
    return TIMEOUTS.get(name, TIMEOUTS["quick" if args.quick else "full"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes where a script takes them")
    parser.add_argument("--long", action="store_true", help="include the long reliability runs and cost.py")
    parser.add_argument("--out", type=Path, default=Path("BENCHMARKS-latest.md"), help="the report file")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these scripts (names without .py)")
    parser.add_argument("--timeout", type=float, help="seconds allowed per script (default: 1800, quick 300)")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = [f"# Benchmarks, {mode} run, {stamp}", "", *machine()]
    outcomes = plan(args)
    out = args.out.expanduser().absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    for index, outcome in enumerate(outcomes):
        if outcome.status != "queued":
            continue
        print(f"[{index + 1}/{len(outcomes)}] {outcome.name} ...", file=sys.stderr, flush=True)
        done = run_script(outcome.name, outcome.command[2:], timeout_for(outcome.name, args))
        outcomes[index] = done
        print(f"    {done.status} in {done.seconds:.1f} s", file=sys.stderr, flush=True)
        out.write_text(render(outcomes, header, mode), encoding="utf-8")
    out.write_text(render(outcomes, header, mode), encoding="utf-8")
    failed = [o.name for o in outcomes if not o.ok]
    print(f"report: {out}" + (f"; failed: {', '.join(failed)}" if failed else "; all ran"), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
