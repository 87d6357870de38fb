"""The paths a call's code hands to a writer, read from the code before it runs.

Writers in C or C++ (pyarrow's ``to_parquet``, ``write_table``, ``write_dataset``, its CSV and
Feather writers; polars, DuckDB, HDF5) open their files themselves, so no audit event says a file is
about to change. What such a call writes is almost always named in it: a string, a name holding a
string or a ``Path``, a ``Path`` joined with ``/``, an ``os.path.join``. So before the code runs,
every argument of a call whose function is named like a writer (``to_*``, ``write*``, ``save*``,
``dump*``, ``export*``, ``sink_*``, ``tofile``) is read as a path where it can be without running
anything: constants, names the code itself assigns a path to, names the namespace already holds
(a ``str`` or a path object, nothing else is asked), ``/`` and ``os.path.join`` of those. A piece
that cannot be read whole (an f-string's value) leaves its constant parts, which name a file when
one under the notebook's directory ends with them.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import PurePath
from typing import Any

from monad_notebook.rewind.code_tree import callee, code_tree

_WRITER = re.compile(r"^(?:to|write|save|dump|export|sink|tofile)(?:_|$)|^(?:savez|savetxt|savefig)", re.I)
MAX_PATHS = 64  # candidate paths read from one call's code
_JOINERS = frozenset({"join", "Path", "PurePath", "PosixPath"})


def writer_paths(code: str, namespace: Mapping[str, Any]) -> list[str]:
    """What ``code`` hands to writers as paths: whole paths where they can be read, else their constant parts."""
    tree = code_tree(code)
    if tree is None:
        return []
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
    found: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _WRITER.search(callee(node.func)):
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                for path in _read(argument, assigned, namespace, depth=0):
                    found.setdefault(path)
                    if len(found) >= MAX_PATHS:
                        return list(found)
    return list(found)


def _read(
    node: ast.expr, assigned: dict[str, list[ast.expr]], namespace: Mapping[str, Any], depth: int
) -> Iterator[str]:
    """The path texts ``node`` stands for: whole when every piece is known, else the constant pieces."""
    if depth > 4:
        return
    whole = _whole(node, assigned, namespace, depth)
    if whole is not None:
        yield whole
        return
    for inner in ast.walk(node):
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.strip():
            yield inner.value
        elif isinstance(inner, ast.Name) and inner is not node:
            yield from _read(inner, assigned, namespace, depth + 1)


def _whole(node: ast.expr, assigned: dict[str, list[ast.expr]], namespace: Mapping[str, Any], depth: int) -> str | None:
    """The whole path ``node`` stands for, or None when a piece of it is not a known text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        value = namespace.get(node.id)
        if type(value) is str or issubclass(type(value), PurePath):  # nothing of the value is asked but its type
            return os.fspath(value)
        for source in assigned.get(node.id, [])[-1:]:
            return _whole(source, assigned, namespace, depth + 1) if depth < 4 else None
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = (_whole(side, assigned, namespace, depth + 1) for side in (node.left, node.right))
        return os.path.join(left, right) if left is not None and right is not None else None
    if isinstance(node, ast.Call) and not node.keywords and callee(node.func) in (*_JOINERS, "joinpath"):
        pieces = [node.func.value] if callee(node.func) == "joinpath" else []  # type: ignore[attr-defined]
        parts = [_whole(arg, assigned, namespace, depth + 1) for arg in [*pieces, *node.args]]
        if parts and all(part is not None for part in parts):
            return os.path.join(*parts)  # type: ignore[arg-type]
    return None
