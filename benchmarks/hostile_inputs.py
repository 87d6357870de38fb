"""How many hostile inputs of each kind the test suite tries, and how many got through or hung.

The inputs are counted from the corpora the tests use; then each group's tests run (pytest, in
a subprocess with a timeout), so "0 leaks, 0 hangs" means every one of those tests passed within
its own time limits. A failed or timed-out group is reported as such, never as a pass.

    python benchmarks/hostile_inputs.py [--slow]     # --slow adds the real-browser checks
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import hostile  # noqa: E402
from tests.agent import text_call_replies  # noqa: E402
from tests.context import hostile_corpus  # noqa: E402
from tests.memory import corpus as memory_corpus  # noqa: E402
from tests.reliability import test_hostile_config, test_hostile_files, test_tool_call_ids  # noqa: E402


@dataclass
class Group:
    kind: str
    inputs: str
    tests: list[str]
    select: str = ""


def groups() -> list[Group]:
    secrets = sum(len(v) for v in hostile_corpus.HOSTILE_SECRETS.values())
    shown = [*text_call_replies.TUNING, *text_call_replies.HELD_OUT]
    return [
        Group(
            "code shown for approval with hidden lines or characters",
            f"{len(hostile.HIDDEN_CODE)} forms, each in the terminal prompt and the panel",
            ["tests/agent/tools/test_python.py", "tests/widget/test_approval.py"],
        ),
        Group(
            "model Markdown that would load something (images, frames, styles, refresh)",
            f"{len(hostile.MARKDOWN_LOADS)} forms",
            ["tests/test_safe_markdown.py", "tests/test_magics.py"],
        ),
        Group(
            "secrets the redaction engine must find (keys without headers or behind line numbers, "
            "command-line and sentence passwords, placeholder look-alikes)",
            f"{secrets} secrets, plus a mixing property test",
            ["tests/context/test_redaction_hostile.py", "tests/context/test_redaction.py"],
        ),
        Group(
            "secrets in files read or searched by the model",
            f"{len(test_hostile_files.SECRETS)} planted secrets through {len(test_hostile_files.FILE_CALLS)} calls",
            ["tests/reliability/test_hostile_files.py"],
            "keys_and_tokens",
        ),
        Group(
            "attempts to hang the kernel (ReDoS patterns, FIFOs and devices, escaping globs)",
            f"{len(test_hostile_files.REDOS)} patterns x 2 line sizes, FIFOs, a socket, 3 devices, "
            f"{len(test_hostile_files.ESCAPING)} globs",
            ["tests/reliability/test_hostile_files.py"],
            "not keys_and_tokens",
        ),
        Group(
            "broken or hostile agents.json",
            f"{len(test_hostile_config.HOSTILE)} files, each at start and as a mid-session edit",
            ["tests/reliability/test_hostile_config.py", "tests/test_config.py"],
        ),
        Group(
            "memory facts that read as instructions or hide a credential",
            f"{len(memory_corpus.HOSTILE)} instructions, {len(memory_corpus.SECRET_FACTS)} secrets "
            f"(and {len(memory_corpus.BENIGN)} benign facts that must be kept)",
            ["tests/memory"],
        ),
        Group(
            "two kernels on one session, taking turns and at once",
            "2 real processes: 12 alternating turns, then 10 s of simultaneous turns; a lease held by a killed kernel",
            ["tests/reliability/test_shared_session.py", "tests/store/test_claims.py"],
        ),
        Group(
            "a store that fails mid-turn, is full, read-only or not writable by this user",
            "writes failing in each table, disk full, permission denied, read-only file system",
            ["tests/reliability/test_storage_faults.py"],
        ),
        Group(
            "tool-call ids repeated, reused, empty or unportable",
            f"{len(test_tool_call_ids.HOSTILE_IDS)} id shapes, within a step, across steps and turns",
            ["tests/reliability/test_tool_call_ids.py"],
        ),
        Group(
            "replies that show a tool call without making it (an example, a call disowned)",
            f"{sum(not call for _, call in shown)} such replies, and {sum(call for _, call in shown)} written "
            f"calls plus {len(text_call_replies.REAL)} a real small model wrote, which must stay calls",
            ["tests/agent/test_text_calls.py"],
        ),
        Group(
            "cells the agent asks to run that would start a turn (the running cell, magics, the API)",
            "the running cell, 5 cells calling monad; with --slow, a magic named at run time and Session.ask in a "
            "queued cell",
            ["tests/notebook/test_cell_tools.py", "tests/e2e/test_notebook_kernel.py"],
            "execute_cell or queued",
        ),
    ]


def run(group: Group, slow: bool, timeout: float) -> tuple[str, float]:
    marker = [] if slow else ["-m", "not slow"]
    select = ["-k", group.select] if group.select else []
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *marker, *select, *group.tests]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:.0f} s", timeout
    seconds = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()[-200:]
    summary = re.sub(r"=+", "", tail).strip()
    return (summary if done.returncode == 0 else f"FAILED: {summary}"), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", action="store_true", help="also run the real-browser and real-kernel checks")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per group")
    args = parser.parse_args()
    print(f"`python benchmarks/hostile_inputs.py{' --slow' if args.slow else ''}`\n")
    print("| hostile input | tried | tests | seconds |")
    print("|---|---|---|---:|")
    for group in groups():
        outcome, seconds = run(group, args.slow, args.timeout)
        print(f"| {group.kind} | {group.inputs} | {outcome} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
