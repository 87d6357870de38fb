"""Earlier values of the names a change binds, rebinds, deletes or changes in place, kept in memory.

Before the code runs, the names it mentions (and the globals the notebook's own functions it calls
read or write, from their code objects) are noted with a reference to what each holds: free in time,
and enough to give back a value that is rebound or deleted. A name the code may change in place
(``in_place.py``) is copied first when its value is of a kind copied without running anyone's code
and within ``rewind.maxValueBytes``: a pandas frame, series or index (``copy(deep=True)``), a numpy
array (``copy()``), a list, dict, set, tuple or bytearray of plain values (``copy.deepcopy``, which
only meets builtins there). After the code, each noted name is compared by identity: bound, rebound,
deleted, or the same object, and then its copy is compared with it (pandas' ``equals``, numpy's
``array_equal``, ``==`` for builtins) and dropped when nothing changed. What was neither referenced
nor copied is said: changed in place, earlier value not kept.

The costs behind these rules are measured by ``benchmarks/rewind.py --costs``: a reference costs no
time but keeps the old object alive (memory, counted against ``rewind.maxValuesBytes``); a copy costs
about a memcpy, a pickle several times that, so nothing is pickled.
"""

from __future__ import annotations

import copy
import sys
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from monad_notebook.rewind.in_place import changed_in_place
from monad_notebook.workspace.description import SHELL_NAMES, family, made_by_known, signature
from monad_notebook.workspace.snapshot import mentioned

MISSING: Any = object()
_PLAIN = (bool, int, float, complex, str, bytes, type(None))
_CONTAINERS = (list, dict, set, frozenset, tuple, bytearray)
MAX_PLAIN_ITEMS = 100_000  # items of a builtin container looked at before it is copied
MAX_FUNCTION_GLOBALS = 200


@dataclass
class Noted:
    """A name as it was before the change: its value (``MISSING``: unbound), its O(1) signature and, if made, a
    copy of it."""

    value: Any
    copy: Any = MISSING
    size: int = 0
    why: str = ""  # why no copy was made of a value the code may change in place
    sig: Any = None


@dataclass
class NameChange:
    """One name a change touched: what it held before (``before`` is ``absent``, ``kept`` with ``value``, or
    ``unkept`` with ``why``), the identity of what it left (None: deleted), and who made the earlier value."""

    name: str
    before: str
    value: Any = None
    size: int = 0
    why: str = ""
    left: int | None = None
    earlier_made_by: str = ""
    earlier_turn: int = 0


def is_tracked(name: str, hidden: Mapping[str, Any], value: Any) -> bool:
    """Every name the user's code binds, modules and functions too; not IPython's own (``_``, ``In``, ``_i3``)."""
    return not name.startswith("_") and name not in SHELL_NAMES and not (name in hidden and hidden[name] is value)


def size_of(value: Any) -> int:
    """Bytes a value holds, told from its type without running anyone's code (what a reference keeps alive)."""
    of = family(type(value))
    try:
        if of == "frame":
            return int(value.memory_usage(index=True, deep=False).sum())
        if of == "series":
            return int(value.memory_usage(index=True, deep=False))
        if of == "array":
            return int(value.nbytes)
    except Exception:
        return sys.getsizeof(value, 0)
    if isinstance(value, _CONTAINERS) and type(value).__module__ == "builtins":
        items = value.items() if isinstance(value, dict) else value
        total = sys.getsizeof(value, 0)
        for count, item in enumerate(items):
            if count >= MAX_PLAIN_ITEMS:
                break
            total += sum(sys.getsizeof(part, 0) for part in (item if isinstance(value, dict) else (item,)))
        return total
    return sys.getsizeof(value, 0) if type(value).__module__ == "builtins" else 0


def _known_method(kind: type, name: str) -> bool:
    """The method ``name`` of ``kind`` is pandas' or numpy's own (read through ``type``'s descriptors)."""
    for cls in _mro(kind):
        if name in _own(cls):
            return made_by_known(cls)
    return False


_mro = type.__dict__["__mro__"].__get__
_own = type.__dict__["__dict__"].__get__


def copied(value: Any, max_bytes: int) -> tuple[Any, int, str]:
    """A copy of ``value`` made without running anyone's code, its size, and why not when none was made."""
    kind = type(value)
    of, size = family(kind), size_of(value)
    if size > max_bytes:
        return MISSING, size, f"too large to copy ({size / 1e6:,.1f} MB over rewind.maxValueBytes)"
    if of in ("frame", "series") and _known_method(kind, "copy") and _known_method(kind, "equals"):
        return value.copy(deep=True), size, ""
    if of == "array" and _known_method(kind, "copy"):
        return value.copy(), size, ""
    if _plain(value, depth=0):
        return copy.deepcopy(value), size, ""
    return MISSING, size, f"a {type(value).__name__} is not copied (only frames, arrays and plain containers are)"


def _plain(value: Any, depth: int) -> bool:
    """Builtins all the way down (bounded): deepcopy meets no one else's ``__deepcopy__``."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind not in _CONTAINERS or depth > 4:
        return False
    items = [*value.keys(), *value.values()] if kind is dict else value
    return len(items) <= MAX_PLAIN_ITEMS and all(_plain(item, depth + 1) for item in items)


def unchanged(value: Any, kept: Any) -> bool:
    """The value equals the copy made before the change (only the known makers' ``equals`` run)."""
    of = family(type(value))
    try:
        if of in ("frame", "series"):
            return type(value) is type(kept) and bool(value.equals(kept))
        if of == "array":
            import numpy

            return value.dtype == kept.dtype and bool(
                numpy.array_equal(value, kept, equal_nan=value.dtype.kind in "fc")
            )
        if _plain(value, depth=0):
            return bool(value == kept)
    except Exception:
        return False
    return False


class ValueNotes:
    """One change's names: noted before the code runs, compared after."""

    def __init__(self, namespace: Mapping[str, Any], hidden: Mapping[str, Any], code: str, max_value_bytes: int):
        self.namespace, self.hidden = namespace, hidden
        self.names = list(dict.fromkeys([*mentioned(code), *self._globals_of_functions(mentioned(code))]))
        self.in_place = changed_in_place(code, namespace) if code else set()
        self.noted: dict[str, Noted] = {}
        self.before = _keys(namespace)
        for name in self.names:
            value = namespace.get(name, MISSING)
            if value is MISSING or not is_tracked(name, hidden, value):
                self.noted[name] = Noted(MISSING)
                continue
            noted = Noted(value, size=size_of(value), sig=signature(value, family(type(value))))
            if name in self.in_place:
                noted.copy, noted.size, noted.why = copied(value, max_value_bytes)
            self.noted[name] = noted

    def _globals_of_functions(self, names: Iterable[str]) -> list[str]:
        """The globals the notebook's own functions that the code names read or write (``co_names``)."""
        found: list[str] = []
        for name in names:
            value = self.namespace.get(name)
            if type(value) is types.FunctionType:
                stack = [value.__code__]
                while stack and len(found) < MAX_FUNCTION_GLOBALS:
                    code = stack.pop()
                    found.extend(code.co_names)
                    stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        return found

    def changes(self) -> list[NameChange]:
        """What the code did to each noted name, and to the names it added."""
        out = []
        for name in [*self.noted, *self._added()]:
            noted = self.noted.get(name) or Noted(MISSING)
            now = self.namespace.get(name, MISSING)
            if now is not MISSING and not is_tracked(name, self.hidden, now):
                continue
            change = self._compare(name, noted, now)
            if change is not None:
                out.append(change)
        return out

    def _compare(self, name: str, noted: Noted, now: Any) -> NameChange | None:
        left = None if now is MISSING else id(now)
        if noted.value is MISSING:
            return None if now is MISSING else NameChange(name, "absent", left=left)
        if now is not noted.value:  # rebound or deleted: the copy if one was made (changed, then rebound)
            value = noted.value if noted.copy is MISSING else noted.copy
            return NameChange(name, "kept", value, noted.size, left=left)
        if noted.copy is not MISSING:
            return None if unchanged(now, noted.copy) else NameChange(name, "kept", noted.copy, noted.size, left=left)
        if isinstance(
            now, types.ModuleType
        ):  # ``os.remove(path)`` reads like a list's ``remove``; a module is no value
            return None
        if name in self.in_place or signature(now, family(type(now))) != noted.sig:
            why = noted.why or "changed in place by code that does not show it (its size moved), so it was not copied"
            return NameChange(name, "unkept", why=why, left=left)
        return None

    def _added(self) -> list[str]:
        """Keys added since the change began (at most 1,000). Every key is looked at: a key the code (or Python
        itself, as ``__warningregistry__``) deleted or put back leaves no mark of where the new ones begin."""
        found: list[str] = []
        if self.before is None:
            return found
        try:
            for key in self.namespace:
                if type(key) is str and key not in self.before and key not in self.noted:
                    found.append(key)
                    if len(found) >= 1_000:
                        break
        except (RuntimeError, TypeError):
            pass
        return found


def _keys(namespace: Mapping[str, Any]) -> frozenset[Any] | None:
    """The namespace's keys now; None if they cannot be read (changed meanwhile by another thread)."""
    try:
        return frozenset(namespace)
    except (RuntimeError, TypeError):
        return None
