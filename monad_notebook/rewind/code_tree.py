"""The code a call or cell runs, read as Python reads it, for the rewind's readers of code (what it writes, what it
may change in place, what it depends on outside the kernel): nothing of it runs."""

from __future__ import annotations

import ast


def code_tree(code: str) -> ast.Module | None:
    """The code's syntax tree, IPython's magics and shell escapes turned into calls first; None when it is not
    Python."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        code = TransformerManager().transform_cell(code)
    except Exception:  # IPython absent, or a cell it cannot transform: read the code as it is
        pass
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None


def callee(func: ast.expr) -> str:
    """The name a call is made by: ``f`` of ``f(...)``, ``m`` of ``x.m(...)``; "" otherwise."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
