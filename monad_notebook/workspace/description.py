"""What a name in the user's namespace holds, told without copying the value or calling its repr.

The record notes a value's type and size (rows x columns, length, shape and dtype), a
DataFrame's first column names and a figure's number: never the value, so a secret in a string
or a frame's contents never reaches the store or the model. Everything read here is O(1) in the
value's size (``df.shape``, ``df.columns[:40]``), so a frame of ten million rows costs what a
small one does, and a value is sorted into its family once per type, so a namespace of
thousands of names is fingerprinted in about a microsecond per name.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SHELL_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
MAX_COLUMNS = 40  # of a DataFrame's columns, the first ones named in the record
MAX_COLUMN_CHARS = 80  # of a column's name, what the record keeps (after redacting the whole name)
MAX_NAME_CHARS = 4_096  # of a column's name, what is read: a name this long is no name, and a key is shorter
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_SCALARS = (bool, int, float, complex, type(None))
_FAMILIES: dict[type, str] = {}


@dataclass(frozen=True)
class Description:
    """What the record says of one value."""

    type: str
    shape: str = ""
    columns: tuple[str, ...] = ()
    columns_total: int = 0


def is_user_value(name: str, value: Any, hidden: Mapping[str, Any], main: str | None) -> bool:
    """A name the user (or the agent) made: not ``_``-prefixed, not IPython's own, not a module, not an
    imported function or class (``main``: the namespace's ``__name__``)."""
    if name[:1] == "_" or name in SHELL_NAMES or isinstance(value, types.ModuleType):
        return False
    if name in hidden and hidden[name] is value:
        return False
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return getattr(value, "__module__", None) in (None, "__main__", main)
    return True


def family(kind: type) -> str:
    """frame | series | array | sized | scalar | figure | other, decided once per type."""
    found = _FAMILIES.get(kind)
    if found is None:
        found = _FAMILIES[kind] = _classify(kind)
    return found


def _classify(kind: type) -> str:
    pandas, numpy = sys.modules.get("pandas"), sys.modules.get("numpy")
    figure = sys.modules.get("matplotlib.figure")
    if pandas is not None and issubclass(kind, pandas.DataFrame):
        return "frame"
    if pandas is not None and issubclass(kind, pandas.Series):
        return "series"
    if numpy is not None and issubclass(kind, numpy.ndarray):
        return "array"
    if figure is not None and issubclass(kind, figure.Figure):
        return "figure"
    if issubclass(kind, _SCALARS):
        return "scalar"
    if issubclass(kind, _SIZED):
        return "sized"
    return "other"


def signature(value: Any, of: str) -> Any:
    """What changes when a value is changed in place (a column added, rows appended, a list grown): O(1)."""
    try:
        if of == "frame":
            return value.shape, id(value.columns)
        if of == "series":
            return value.shape, value.name
        if of == "array":
            return value.shape, value.dtype.str
        if of == "sized":
            return len(value)
        if of == "figure":
            return len(value.axes)
    except Exception:
        return None
    return None


def describe(value: Any) -> Description:
    """Type and size, and a frame's first column names (unredacted and uncut: the record redacts, then cuts)."""
    kind = type(value)
    of = family(kind)
    try:
        if of == "frame":
            rows, cols = value.shape
            names = tuple(str(c)[:MAX_NAME_CHARS] for c in value.columns[:MAX_COLUMNS])
            return Description("DataFrame", f"{rows:,} rows x {cols:,} cols", names, cols)
        if of == "series":
            named = () if value.name is None else (str(value.name)[:MAX_NAME_CHARS],)
            return Description("Series", f"{len(value):,} values, {value.dtype}", named, len(named))
        if of == "array":
            return Description("ndarray", f"shape {value.shape} {value.dtype}")
        if of == "sized":
            return Description(kind.__name__, f"len {len(value):,}")
        if of == "figure":
            number = getattr(value, "number", None)
            handle = f"#{number}, " if isinstance(number, int) else ""
            return Description("Figure", f"{handle}{len(value.axes)} axes")
    except Exception:
        return Description(kind.__qualname__)
    if isinstance(value, type):
        return Description("class")
    if isinstance(value, types.FunctionType):
        return Description("function")
    return Description(kind.__qualname__)
