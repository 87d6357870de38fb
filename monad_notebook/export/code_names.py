"""Which names a cell's code needs from before it and which it makes, read from the code, never run.

An exported notebook runs top to bottom only if every name a cell reads was made by a cell above it;
this is how the export finds the names the session's code took from the kernel. Statements are read in
the order Python runs them (an assignment's value before its targets, a loop's iterable before its
variable), so ``sales = sales.dropna()`` needs ``sales``. Names a function reads from the globals are
needed when it is called, so they are reported apart (``later``).
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

# What a fresh IPython kernel holds before any cell runs, besides the builtins.
KERNEL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "display", "_", "__", "___", "_oh", "_dh", "_ih"})
_HISTORY_NAME = re.compile(r"_i{1,3}|_i?\d+")


@dataclass(frozen=True)
class Names:
    """What one cell's code needs before it runs (``reads``, in the order it first reads them), what it binds
    at the top level, and what the functions it defines read from the globals when called (``later``)."""

    reads: tuple[str, ...]
    binds: frozenset[str]
    later: frozenset[str]


def is_given(name: str) -> bool:
    """A name every fresh kernel has: a builtin, or one IPython defines."""
    return name in KERNEL_NAMES or hasattr(builtins, name) or bool(_HISTORY_NAME.fullmatch(name))


def names_of(source: str) -> Names | None:
    """The names ``source`` (a cell as typed, magics included) needs and makes; None when it is not Python."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, ImportError):
        return None
    reader = _Reader()
    for statement in tree.body:
        reader.visit(statement)
    reads = tuple(n for n in reader.reads if not is_given(n))
    later = frozenset(n for n in reader.later if not is_given(n) and n not in reader.bound)
    return Names(reads, frozenset(reader.bound), later)


class _Reader(ast.NodeVisitor):
    """The module level of one cell, statement by statement, in the order Python evaluates it."""

    def __init__(self, bound: set[str] | None = None) -> None:
        self.bound: set[str] = set(bound or ())
        self.reads: list[str] = []
        self.later: set[str] = set()

    def read(self, name: str) -> None:
        if name not in self.bound and name not in self.reads:
            self.reads.append(name)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load | ast.Del):
            self.read(node.id)
        else:
            self.bound.add(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.read(node.target.id)
        self.visit(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for statement in [*node.body, *node.orelse]:
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":
                self.bound.add(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bound.add(node.name)
        for statement in node.body:
            self.visit(statement)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.pattern is not None:
            self.visit(node.pattern)
        if node.name:
            self.bound.add(node.name)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.bound.add(node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        """Decorators and defaults are read now; the body reads the globals when the function is called."""
        for expression in [*getattr(node, "decorator_list", []), *node.args.defaults, *node.args.kw_defaults]:
            if expression is not None:
                self.visit(expression)
        self.later |= _globals_read(node)
        if not isinstance(node, ast.Lambda):
            self.bound.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """A class body runs now, in its own scope."""
        for expression in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(expression)
        body = _Reader(self.bound)
        for statement in node.body:
            body.visit(statement)
        for name in body.reads:
            self.read(name)
        self.later |= body.later
        self.bound.add(node.name)

    def visit_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        """The first iterable is read here; the rest runs in the comprehension's own scope."""
        self.visit(node.generators[0].iter)
        inner = _globals_read(node, skip_first_iter=True)
        for name in sorted(inner):
            self.read(name)

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp
    visit_DictComp = visit_ListComp


def _globals_read(scope: ast.AST, *, skip_first_iter: bool = False) -> set[str]:
    """The names a function, lambda or comprehension reads that it does not bind itself (a comprehension's
    first iterable, read by the enclosing scope, left out with ``skip_first_iter``)."""
    skipped = scope.generators[0].iter if skip_first_iter else None  # type: ignore[attr-defined]
    local: set[str] = set()
    loads: set[str] = set()
    declared: set[str] = set()
    for node in _walk(scope, skipped):
        if isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else local).add(node.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            local.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node is not scope:
            local.add(node.name)
    return loads - (local - declared)


def _walk(node: ast.AST, skipped: ast.AST | None) -> list[ast.AST]:
    """Every node under ``node`` but those under ``skipped``."""
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        if current is skipped:
            continue
        found.append(current)
        stack.extend(ast.iter_child_nodes(current))
    return found
