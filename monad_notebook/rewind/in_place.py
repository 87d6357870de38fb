"""Which names a piece of code may change in place, read from the code before it runs.

A rebound or deleted name keeps its earlier value for free: the old object is still there, a
reference is enough. A value changed in place is gone unless it was copied first, and copying
costs time and memory, so only the names the code may change in place are copied: a name whose
item or attribute is assigned or deleted (``df["x"] = ...``, ``df.loc[...] = ...``, ``m.coef_ = ...``),
augmented in place (``xs += [1]``), whose method is one that changes its object (``append``,
``update``, ``fit``, ``sort``... or any call with ``inplace=True``), or that is handed to a function
defined in the notebook (which may do any of these) or to one of the library functions that change
their argument (``np.random.shuffle``, ``np.copyto``...).

What this cannot see: a function defined elsewhere that changes its argument, a method that
changes its object under another name, code reached through ``exec``. A name changed that way is
noticed after the call when its size moved (``workspace/description.signature``) and reported as
changed in place with its earlier value not kept.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from typing import Any

from monad_notebook.rewind.code_tree import callee, code_tree

MUTATORS = frozenset(
    {
        # list, dict, set, bytearray, deque
        "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
        "popitem", "add", "discard", "difference_update", "intersection_update", "symmetric_difference_update",
        "appendleft", "extendleft", "popleft", "rotate",
        # numpy
        "fill", "resize", "put", "itemset", "setflags", "partition", "byteswap",
        # pandas (what changes its object without inplace=True)
        "set_axis", "rename_axis", "__setitem__",
        # estimators and models
        "fit", "partial_fit", "fit_transform", "fit_predict", "set_params", "train", "load_state_dict", "step",
        "zero_grad", "requires_grad_",
    }
)  # fmt: skip
ARGUMENT_MUTATORS = frozenset({"shuffle", "copyto", "place", "putmask", "fill_diagonal", "put_along_axis", "seed"})


def changed_in_place(code: str, namespace: Mapping[str, Any] | None = None) -> set[str]:
    """The names ``code`` may change in place (``namespace``: to tell the notebook's own functions)."""
    tree = code_tree(code)
    if tree is None:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                names.update(_stored_through(target, augmented=isinstance(node, ast.AugAssign)))
        elif isinstance(node, ast.Call):
            names.update(_called(node, namespace or {}))
    return names


def _stored_through(target: ast.expr, *, augmented: bool) -> set[str]:
    """``x[...] = ``, ``x.a = ``, ``x.a[...] = `` change ``x``; ``x += `` may (a list, an array)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return {name for element in target.elts for name in _stored_through(element, augmented=augmented)}
    if isinstance(target, ast.Starred):
        return _stored_through(target.value, augmented=augmented)
    if isinstance(target, ast.Name):
        return {target.id} if augmented else set()
    base = _base(target)
    return {base} if base else set()


def _base(node: ast.expr) -> str:
    """The name at the root of ``a.b[c].d``."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _called(call: ast.Call, namespace: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    func = call.func
    in_place = any(k.arg == "inplace" and isinstance(k.value, ast.Constant) and k.value.value for k in call.keywords)
    if isinstance(func, ast.Attribute) and (func.attr in MUTATORS or in_place):
        base = _base(func.value)
        if base:
            names.add(base)
    if callee(func) in ARGUMENT_MUTATORS or in_place or _defined_here(func, namespace):
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            base = _base(argument.value if isinstance(argument, ast.Starred) else argument)
            if base:
                names.add(base)
    return names


def _defined_here(func: ast.expr, namespace: Mapping[str, Any]) -> bool:
    """A function the notebook itself defined (it may change what it is handed); only its type is asked."""
    if not isinstance(func, ast.Name):
        return False
    value = namespace.get(func.id)
    if type(value) is not types.FunctionType:
        return False
    main = namespace.get("__name__")
    return value.__module__ in (None, "__main__") or (type(main) is str and value.__module__ == main)
