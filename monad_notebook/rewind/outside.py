"""What a piece of code depends on outside the kernel, read from the code: a rebuild says it before it reruns.

Rerunning a call gives back what it made only if what it read is the same: a download may differ or
fail, an unseeded random generator or the clock gives other values, a file read may have changed
since the call first ran, or be gone. None of this can be known for sure without running the code,
so the rebuild says what the code shows: modules that reach the network and addresses it names, random
generators used without a seed in sight, the clock, ``input()``, and the files it names that changed
after it ran or are no longer there.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from monad_notebook.rewind.code_tree import callee, code_tree

NETWORK_MODULES = frozenset(
    {
        "requests", "urllib", "urllib3", "httpx", "http", "socket", "aiohttp", "boto3", "botocore", "s3fs",
        "gcsfs", "ftplib", "smtplib", "paramiko", "openai", "yfinance", "kaggle", "datasets", "websocket",
    }
)  # fmt: skip
_ADDRESS = re.compile(r"^(?:https?|s3|gs|gcs|ftp|az|abfss?)://", re.I)
_RANDOM = frozenset({"random", "rand", "randn", "randint", "choice", "shuffle", "sample", "permutation", "uuid4"})
_SEEDED = re.compile(r"\bseed\s*\(|random_state\s*=|default_rng\s*\(\s*\d|Random\s*\(\s*\d|manual_seed\s*\(")
_CLOCK = frozenset({"now", "today", "utcnow", "time", "time_ns", "perf_counter"})


def outside(code: str, root: Path | None, ran_at: float = 0.0) -> list[str]:
    """What ``code`` depends on outside the kernel, each said in a few words (``ran_at``: when it first ran)."""
    tree = code_tree(code)
    if tree is None:
        return []
    found: dict[str, None] = {}
    modules = _modules(tree)
    for name in sorted(modules & NETWORK_MODULES):
        found.setdefault(f"the network ({name})")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _ADDRESS.match(node.value.strip()):
            found.setdefault(f"the network ({node.value.strip()[:80]})")
        elif isinstance(node, ast.Call):
            called = callee(node.func)
            if called in _RANDOM and not _SEEDED.search(code):
                found.setdefault("a random generator with no seed in sight")
            elif called in _CLOCK and _clocked(node.func):
                found.setdefault("the clock")
            elif called == "input":
                found.setdefault("what is typed at input()")
    for note in _files(tree, root, ran_at):
        found.setdefault(note)
    return list(found)


def _modules(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _clocked(func: ast.expr) -> bool:
    """``datetime.now()``, ``time.time()``, ``pd.Timestamp.now()``: a clock read through its module or class."""
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
    return name in {"time", "datetime", "date", "Timestamp", "dt"}


def _files(tree: ast.AST, root: Path | None, ran_at: float) -> list[str]:
    """Files the code names under ``root`` that changed after ``ran_at``, or that are gone though a read names
    them."""
    if root is None:
        return []
    notes = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and callee(node.func).startswith(("read", "load", "open"))):
            continue
        if _writes(node):
            continue
        for arg in node.args[:1]:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)) or _ADDRESS.match(arg.value):
                continue
            path = Path(os.path.expanduser(arg.value))
            full = path if path.is_absolute() else root / path
            try:
                modified = full.stat().st_mtime
            except OSError:
                notes.append(f"{arg.value} (no longer there)")
                continue
            if ran_at and modified > ran_at:
                notes.append(f"{arg.value} (changed since the call first ran)")
    return notes


def _writes(call: ast.Call) -> bool:
    """``open(path, "w")`` and the like: the file is made, not read."""
    modes = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
    return any(isinstance(m, ast.Constant) and isinstance(m.value, str) and set(m.value) & set("wax") for m in modes)
