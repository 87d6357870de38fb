"""What a name in the user's namespace holds, told from its type without running the user's code.

The record notes a value's type and size (rows x columns, length, shape and dtype), a
DataFrame's first column names and a figure's number: never the value, so a secret in a string
or a frame's contents never reaches the store or the model. Everything read here is O(1) in the
value's size (``df.shape``, ``df.columns[:40]``), so a frame of ten million rows costs what a
small one does.

Nothing here runs code the user wrote, since a ``__len__`` that sleeps would stop the kernel.
A value is sorted into its family by its real type (``type(value)``, which no ``__class__``
property can fake), once per type, and a family is read only through methods whose makers are
known: the builtins' ``len``, pandas' and numpy's ``shape``, ``columns`` and ``dtype``,
matplotlib's ``axes``. A subclass from elsewhere that redefines what would be read (its own
``__len__``, a ``shape`` property, a ``__getattribute__``) is told by its type's name only, and
so is a column label or a dtype those libraries did not make. Types are read through ``type``'s
own descriptors, so a metaclass's ``__getattribute__`` or ``__hash__`` never runs either.
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
KNOWN_MAKERS = frozenset({"builtins", "pandas", "numpy", "matplotlib"})  # whose methods the record may call
_SIZED = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_SCALARS = (bool, int, float, complex, type(None))
_READS = {  # what each family reads from a value: a class from elsewhere that redefines one is not read
    "frame": ("shape", "columns", "__getattribute__"),  # found on the class: a __getattr__ is never asked
    "series": ("shape", "name", "dtype", "__len__", "__getattribute__"),
    "array": ("shape", "dtype", "__getattribute__"),
    "figure": ("axes", "number", "__getattribute__", "__getattr__"),  # a figure may have no number
    "sized": ("__len__",),  # len() takes the type's slot: attribute hooks are never asked
}
_FAMILIES: dict[int, tuple[type, str]] = {}  # by the type's id: hashing a type may run its metaclass's __hash__
_qualname = type.__dict__["__qualname__"].__get__
_module = type.__dict__["__module__"].__get__
_mro = type.__dict__["__mro__"].__get__
_own = type.__dict__["__dict__"].__get__


@dataclass(frozen=True)
class Description:
    """What the record says of one value."""

    type: str
    shape: str = ""
    columns: tuple[str, ...] = ()
    columns_total: int = 0


def type_name(kind: type) -> str:
    """A type's qualified name, read without asking the type (or its metaclass) anything."""
    return str.__str__(_qualname(kind))


def made_by_known(kind: type) -> bool:
    """The type comes from the builtins, pandas, numpy or matplotlib: its methods are theirs."""
    module = _module(kind)
    return type(module) is str and module.partition(".")[0] in KNOWN_MAKERS


def is_user_value(name: str, value: Any, hidden: Mapping[str, Any], main: str | None) -> bool:
    """A name the user (or the agent) made: not ``_``-prefixed, not IPython's own, not a module, not an
    imported function or class (``main``: the namespace's ``__name__``). ``name`` is a plain ``str``."""
    kind = type(value)
    if name[:1] == "_" or name in SHELL_NAMES or issubclass(kind, types.ModuleType):
        return False
    if name in hidden and hidden[name] is value:
        return False
    if issubclass(kind, type):
        return _made_here(_module(value), main)
    if kind is types.FunctionType or kind is types.BuiltinFunctionType:
        return _made_here(value.__module__, main)
    return True


def _made_here(module: Any, main: Any) -> bool:
    """A function or class defined in the namespace itself (compared as plain strings only)."""
    return module is None or (type(module) is str and (module == "__main__" or (type(main) is str and module == main)))


def family(kind: type) -> str:
    """frame | series | array | sized | scalar | figure | other, decided once per type."""
    found = _FAMILIES.get(id(kind))
    if found is None or found[0] is not kind:
        found = _FAMILIES[id(kind)] = (kind, _classify(kind))
    return found[1]


def _classify(kind: type) -> str:
    pandas, numpy = sys.modules.get("pandas"), sys.modules.get("numpy")
    figure = sys.modules.get("matplotlib.figure")
    bases = [
        ("frame", getattr(pandas, "DataFrame", None)),
        ("series", getattr(pandas, "Series", None)),
        ("array", getattr(numpy, "ndarray", None)),
        ("figure", getattr(figure, "Figure", None)),
    ]
    for of, base in bases:
        if base is not None and issubclass(kind, base):
            return of if _reads_known(kind, base, _READS[of]) else "other"
    if issubclass(kind, _SCALARS):
        return "scalar"
    base = next((b for b in _SIZED if issubclass(kind, b)), None)
    if base is not None:
        return "sized" if _reads_known(kind, base, _READS["sized"]) else "other"
    return "other"


def _reads_known(kind: type, base: type, reads: tuple[str, ...]) -> bool:
    """No class between ``kind`` and ``base``, other than the known makers', redefines what is read."""
    for cls in _mro(kind):
        if cls is base:
            return True
        if not made_by_known(cls) and any(name in _own(cls) for name in reads):
            return False
    return True


def signature(value: Any, of: str) -> Any:
    """What changes when a value is changed in place (a column added, rows appended, a list grown): O(1).

    Plain ints and strings only, so comparing two signatures runs no one's ``__eq__``."""
    try:
        if of == "frame":
            return value.shape, id(value.columns)
        if of == "series":
            return value.shape, id(value.name)
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
            names = tuple(label(c) for c in value.columns[:MAX_COLUMNS])
            return Description("DataFrame", f"{rows:,} rows x {cols:,} cols", names, cols)
        if of == "series":
            named = () if value.name is None else (label(value.name),)
            return Description("Series", f"{len(value):,} values, {dtype_text(value.dtype)}", named, len(named))
        if of == "array":
            return Description("ndarray", f"shape {value.shape} {dtype_text(value.dtype)}")
        if of == "sized":
            return Description(type_name(kind), f"len {len(value):,}")
        if of == "figure":
            number = getattr(value, "number", None)
            handle = f"#{number}, " if type(number) is int else ""
            return Description("Figure", f"{handle}{len(value.axes)} axes")
    except Exception:
        return Description(type_name(kind))
    if issubclass(kind, type):
        return Description("class")
    if kind is types.FunctionType:
        return Description("function")
    return Description(type_name(kind))


def label(value: Any) -> str:
    """A column label or a series' name as text, uncut but bounded (the record redacts it whole, then cuts it): a
    label the known makers did not make is named by its type."""
    kind = type(value)
    try:
        if kind is tuple:  # a MultiIndex column
            return ("(" + ", ".join(label(part) for part in value[:8]) + ")")[:MAX_NAME_CHARS]
        if made_by_known(kind):
            return str(value)[:MAX_NAME_CHARS]
    except Exception:  # an int too long to print, say
        pass
    return f"<{type_name(kind)}>"


def dtype_text(dtype: Any) -> str:
    """numpy's and pandas' dtypes as they print; another library's extension dtype by its type's name."""
    return str(dtype) if made_by_known(type(dtype)) else type_name(type(dtype))
